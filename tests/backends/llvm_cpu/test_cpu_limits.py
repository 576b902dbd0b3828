"""Host-independent compiles: the tile limits every llvm-cpu target gets (backends/llvm_cpu
retune.py `_retune_reduction_consumers`), checked as pure rules and by compiling a pre-LayerNorm
transformer block for a sample of the CPUs in scripts/compile_matrix.py (the whole matrix runs
from that script). Artefacts the host can execute are run and compared with onnxruntime."""
import os
import sys

import numpy as np
import pytest

import estuary
from estuary.backends.llvm_cpu import host, tile_rules

from helpers import ROOT  # noqa: E402 - the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
import run as bench  # noqa: E402

AARCH64 = "--iree-llvmcpu-target-triple=aarch64-unknown-linux-gnu"
# (cpu, extra flags, host flags needed to run the artefact here)
SAMPLE = [("x86-64-v2", (), {"sse4_2"}), ("haswell", (), {"avx2", "fma"}), ("znver4", (), {"avx512f", "avx512bw", "avx512vl", "avx512dq"}),
          ("skylake-avx512", (), {"avx512f", "avx512bw", "avx512vl", "avx512dq"}), ("apple-m1", (AARCH64,), None)]


def test_inner_vectors_are_one_register():
    """An op fused after a row reduction steps one register along its row: 8 or 16 lanes, a
    pack's outer loop over tiles of 16 one tile, and a divisor of an odd extent."""
    assert tile_rules.inner_vector(256, 8) == 8
    assert tile_rules.inner_vector(256, 16) == 16
    assert tile_rules.inner_vector(256, 16, packed=16) == 1
    assert tile_rules.inner_vector(256, 8, packed=1) == 8
    assert tile_rules.inner_vector(12, 8) == 6
    assert tile_rules.inner_vector(7, 4) == 1


def test_reduction_rows_fit_the_stack():
    """IREE's 16 workgroup rows and 8 vector rows over 256-wide rows with four fused values
    (2 x 16 + 4 x 8 = 64 rows of 1 KiB) overflow 32 KiB: the rule halves them until they fit 24
    rows' worth; narrow rows keep IREE's choice; rows too wide for any tiling are left alone."""
    rows, step = tile_rules.reduction_rows(256, 16, 8, 4)
    assert (rows, step) == (8, 2)
    assert 2 * rows + 4 * step <= tile_rules.STACK_LIMIT * tile_rules.STACK_SHARE // 1024
    assert tile_rules.reduction_rows(64, 16, 8, 4) is None
    assert tile_rules.reduction_rows(16384, 16, 8, 4) is None


@pytest.fixture(scope="module")
def prenorm(tmp_path_factory):
    model, feeds, _ = models.transformer_prenorm()
    path = bench.emit(model, "transformer_prenorm", "webnn", str(tmp_path_factory.mktemp("prenorm")))
    return model, feeds, path


@pytest.mark.parametrize("cpu,flags,needs", SAMPLE, ids=[s[0] for s in SAMPLE])
def test_prenorm_transformer_compiles_for(prenorm, cpu, flags, needs):
    """The block compiles for each sampled CPU (it overflowed IREE's stack at its LayerNorm on
    znver4, haswell and x86-64-v3, depending on IREE's run-to-run choice of tiles; on x86-64-v2
    IREE's own vector-size check failed, and the compile is retried without data tiling), and
    where the host can run the code the result matches onnxruntime."""
    import onnxruntime as ort

    model, feeds, path = prenorm
    art = estuary.compile(path, cpu=cpu, extra_flags=list(flags))
    have = host._cpuinfo_flags()
    if needs is None or have is None or not needs <= have:
        return
    out = model.graph.output[0].name
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run([out], feeds)[0]
    got = estuary.load(art).run(feeds)[out]
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_leading_rows_are_bounded_in_order():
    """The rows of a reduction over [H, W, width] are counted over both leading loops and cut from
    the innermost one outwards; an untiled loop (0) stays untiled."""
    from estuary.backends.llvm_cpu.retune import _within

    assert _within([8, 28], 4) == [1, 4]
    assert _within([8, 28], 56) == [2, 28]
    assert _within([16], 8) == [8]
    assert _within([0, 28], 4) == [0, 4]


def test_windowed_layernorm_compiles():
    """Swin-T's shifted-window block: a roll (a gather in the ML Program coremltools writes), a
    residual add and a LayerNorm over [1, 56, 56, 96] feeding a data-tiled product, fused by IREE
    into one dispatch rooted at a 3-loop reduction whose 224 workgroup rows overflowed IREE's stack
    on AVX-512 (as Swin-T did, 90304 bytes); its rows are now bounded like a 2-D LayerNorm's.
    Compared with torch."""
    torch = pytest.importorskip("torch")
    ct = pytest.importorskip("coremltools")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(96)
            self.fc = torch.nn.Linear(96, 384)

        def forward(self, x, y):
            s = torch.roll(x, shifts=(-3, -3), dims=(1, 2)) + y
            return self.fc(self.norm(s)).sum(-1, keepdim=True) + s

    torch.manual_seed(0)
    block = Block().eval()
    with torch.no_grad():
        block.norm.weight.normal_()
        block.norm.bias.normal_()
    x, y = (torch.randn(1, 56, 56, 96) for _ in range(2))
    traced = torch.jit.trace(block, (x, y))
    ml = ct.convert(traced, inputs=[ct.TensorType(name="x", shape=x.shape), ct.TensorType(name="y", shape=y.shape)],
                    convert_to="mlprogram", compute_precision=ct.precision.FLOAT32, minimum_deployment_target=ct.target.iOS15)
    got = list(estuary.load(estuary.compile(ml)).run({"x": x.numpy(), "y": y.numpy()}).values())[0]
    with torch.no_grad():
        want = block(x, y).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
