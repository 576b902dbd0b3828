"""The estuary / estuary-opt command lines: happy paths and clear errors (no tracebacks)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import graph, op

BIN = os.path.dirname(sys.executable)


def cli(*args, cwd=None):
    exe = os.path.join(BIN, args[0])
    return subprocess.run([exe, *map(str, args[1:])], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture
def model(tmp_path):
    doc = graph({"x": ((2, 2), "float32")}, [op("exp", ("input", "x"), outputs="e"),
                                             op("add", ("a", "e"), ("b", "x"), outputs="out/1")], ["out/1"])
    p = tmp_path / "m.json"
    p.write_text(json.dumps(doc))
    return p


def test_import_prints_nn(model):
    r = cli("estuary", "import", model)
    assert r.returncode == 0, r.stderr
    assert '"nn.exp"' in r.stdout and '"nn.add"' in r.stdout


def test_compile_run_info(model, tmp_path):
    vmfb = tmp_path / "m.vmfb"
    r = cli("estuary", "compile", model, "-o", vmfb)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and vmfb.exists()
    x = np.array([[0, 1], [2, 3]], np.float32)
    np.save(tmp_path / "x.npy", x)
    out_dir = tmp_path / "outs"
    r = cli("estuary", "run", vmfb, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", out_dir)
    assert r.returncode == 0, r.stderr
    assert "out/1: float32[2, 2]" in r.stdout and "latency" in r.stdout
    # the output name contains '/', which must not escape the output folder
    assert sorted(os.listdir(out_dir)) == ["out_1.npy"]
    np.testing.assert_allclose(np.load(out_dir / "out_1.npy"), np.exp(x) + x, rtol=1e-6)
    r = cli("estuary", "info", vmfb)
    assert r.returncode == 0 and "input  x: float32[2, 2]" in r.stdout and "llvm-cpu" in r.stdout
    r = cli("estuary", "info", model)
    assert r.returncode == 0 and "nn.exp" in r.stdout


def test_bench(model, tmp_path):
    vmfb = tmp_path / "m.vmfb"
    assert cli("estuary", "compile", model, "-o", vmfb, "--quiet").returncode == 0
    r = cli("estuary", "bench", vmfb, "--iterations", "5", "--warmup", "1")
    assert r.returncode == 0 and "p50" in r.stdout


def test_errors_are_messages_not_tracebacks(tmp_path, model):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = cli("estuary", "compile", bad)
    assert r.returncode == 1 and "invalid JSON" in r.stderr and "Traceback" not in r.stderr
    r = cli("estuary", "compile", tmp_path / "absent.json")
    assert r.returncode == 1 and "no such file" in r.stderr
    r = cli("estuary", "run", tmp_path / "absent.vmfb")
    assert r.returncode == 1 and "cannot read" in r.stderr
    vmfb = tmp_path / "m.vmfb"
    assert cli("estuary", "compile", model, "-o", vmfb, "--quiet").returncode == 0
    np.save(tmp_path / "wrong.npy", np.zeros((3,), np.float32))
    r = cli("estuary", "run", vmfb, "--input", f"x={tmp_path / 'wrong.npy'}")
    assert r.returncode == 1 and "has shape [3], the model expects [2, 2]" in r.stderr
    assert "Traceback" not in r.stderr
    np.savez(tmp_path / "x.npz", x=np.zeros((2, 2), np.float32))  # an archive is not one input
    (tmp_path / "junk.npy").write_bytes(b"\x80\x04junk")  # numpy would call this pickled data
    for name in ("x.npz", "junk.npy"):
        r = cli("estuary", "run", vmfb, "--input", f"x={tmp_path / name}")
        assert r.returncode == 1 and "no .npy header" in r.stderr, r.stderr


def test_unwritable_outputs_are_messages(tmp_path, model):
    missing = tmp_path / "no_such_dir"
    r = cli("estuary", "compile", model, "-o", missing / "m.vmfb", "--quiet")
    assert r.returncode == 1 and f"cannot write {missing / 'm.vmfb'}" in r.stderr, r.stderr
    r = cli("estuary", "import", model, "-o", missing / "m.mlir")
    assert r.returncode == 1 and "cannot write" in r.stderr, r.stderr
    vmfb = tmp_path / "m.vmfb"
    assert cli("estuary", "compile", model, "-o", vmfb, "--quiet").returncode == 0
    np.save(tmp_path / "x.npy", np.zeros((2, 2), np.float32))
    r = cli("estuary", "run", vmfb, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", vmfb)
    assert r.returncode == 1 and "cannot write outputs" in r.stderr, r.stderr
    assert not missing.exists() and "internal error" not in r.stderr


def test_opt_runs_named_passes(tmp_path):
    src = tmp_path / "a.mlir"
    src.write_text('func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n'
                   '  %0 = "nn.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n')
    r = cli("estuary-opt", src, "--nn-verify", "--lower-nn-to-tosa")
    assert r.returncode == 0, r.stderr
    assert "tosa.exp" in r.stdout and "nn.exp" not in r.stdout


def test_compile_accepts_mlir(tmp_path):
    src = tmp_path / "a.mlir"
    src.write_text('func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n'
                   '  %0 = "nn.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n')
    r = cli("estuary", "compile", src, "-o", tmp_path / "a.vmfb", "--quiet")
    assert r.returncode == 0, r.stderr
    import estuary
    m = estuary.load(tmp_path / "a.vmfb")
    assert m.inputs == [("input0", (4,), "float32")]
    np.testing.assert_allclose(m.run({"input0": np.zeros(4, np.float32)})["output0"], np.ones(4))


def test_vmfb_for_other_target(model, tmp_path):
    r = cli("estuary", "compile", model, "--target", "cuda", "-o", tmp_path / "m_cuda.vmfb", "--quiet")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "m_cuda.vmfb").stat().st_size > 1000


def test_internal_errors_exit_2_and_model_errors_1(capsys):
    """A bug in Estuary (InternalError, or any other exception) exits 2 and asks for a report; an
    error in the user's model exits 1."""
    from estuary.cli import _guarded
    from estuary.errors import InternalError, ModelImportError

    def fails(err):
        def fn(args):
            raise err
        return fn

    assert _guarded(fails(InternalError("m.json: operation 'c' (conv2d)", TypeError("boom"))), None, False) == 2
    assert "please report it" in capsys.readouterr().err
    assert _guarded(fails(ModelImportError("m.json: truncated")), None, False) == 1
    assert _guarded(fails(KeyError("x")), None, False) == 2
