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
