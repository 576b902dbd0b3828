"""Runtime API: load, signature, input checking, dtype round trips, targets."""
import numpy as np
import pytest

import estuary
from estuary.base.errors import EstuaryError, RuntimeInputError
from helpers import graph, op


@pytest.fixture(scope="module")
def art():
    doc = graph({"x": ((2, 3), "float32"), "k": ((3,), "uint8")},
                [op("mul", ("a", "x"), ("b", "x"), outputs="sq"), op("neg", ("input", "sq"), outputs="out"),
                 op("greater", ("a", "k"), ("b", "k"), outputs="flag")], ["out", "flag"])
    return estuary.compile(doc)


def test_signature_and_run(art, tmp_path):
    path = art.save(tmp_path / "m.vmfb")
    model = estuary.load(path)  # the .vmfb alone carries names, shapes, dtypes
    assert model.inputs == [("x", (2, 3), "float32"), ("k", (3,), "uint8")]
    assert model.outputs == [("out", (2, 3), "float32"), ("flag", (3,), "uint8")]
    assert model.format == "webnn"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    outs = model.run({"x": x, "k": np.array([200, 1, 255], np.uint8)})
    np.testing.assert_array_equal(outs["out"], -(x * x))
    assert outs["flag"].dtype == np.uint8 and outs["flag"].tolist() == [0, 0, 0]


@pytest.mark.parametrize("flags, is_async", [((), True), (["--iree-execution-model=async-internal"], False)])
@pytest.mark.parametrize("device", [None, "local-sync"])
def test_async_and_synchronous_artefacts_run(flags, is_async, device):
    """Artefacts take a wait and a signal fence (the runtime polls the signal fence on the CPU);
    a .vmfb with IREE's synchronous ABI still runs."""
    doc = graph({"x": ((2, 3), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y"])
    model = estuary.load(estuary.compile(doc, extra_flags=flags), device=device)
    assert model._async is is_async
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(3):
        np.testing.assert_array_equal(model.run({"x": x})["y"], -x)


class _Unconvertible:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("boom")


@pytest.mark.parametrize("feeds,message", [
    ({"x": np.zeros((2, 3), np.float32)}, r"missing \['k'\]"),
    ({"x": np.zeros((2, 3), np.float32), "k": np.zeros(3, np.uint8), "z": 1}, r"unexpected \['z'\]"),
    ({"x": np.zeros((2, 3), np.float32), "k": np.zeros(3, np.uint8), 3: 1, "z": 1}, r"unexpected \['z', 3\]"),
    ({"x": np.zeros((2, 3), np.float64), "k": np.zeros(3, np.uint8)}, "has dtype float64, the model expects float32"),
    ({"x": np.zeros((3, 2), np.float32), "k": np.zeros(3, np.uint8)}, r"has shape \[3, 2\], the model expects \[2, 3\]"),
    ({"x": [[1.0, 2.0], [3.0]], "k": np.zeros(3, np.uint8)}, r"input 'x' is not an array \(ValueError"),
    ({"x": np.zeros((2, 3), np.float32), "k": _Unconvertible()}, r"input 'k' is not an array \(RuntimeError: boom"),
])
def test_bad_inputs(art, feeds, message):
    model = estuary.load(art)
    with pytest.raises(RuntimeInputError, match=message):
        model.run(feeds)


def test_not_a_vmfb(tmp_path):
    p = tmp_path / "junk.vmfb"
    p.write_bytes(b"not a flatbuffer at all" * 10)
    with pytest.raises(EstuaryError, match="junk.vmfb"):
        estuary.load(p)


def test_inputs_off_the_fast_path(art):
    """Non-contiguous or big-endian arrays and dict subclasses take the fully checked path and
    give the same results as contiguous native arrays in a plain dict."""
    import collections

    model = estuary.load(art)
    x = np.arange(6, dtype=np.float32).reshape(3, 2).T  # a transposed view
    k = np.array([3, 0, 200, 0, 255, 0], np.uint8)[::2]  # a strided view
    want = model.run({"x": np.ascontiguousarray(x), "k": np.ascontiguousarray(k)})
    np.testing.assert_array_equal(want["out"], -(x * x))
    np.testing.assert_array_equal(want["flag"], np.array([0, 0, 0], np.uint8))
    for feeds in ({"x": x, "k": k}, collections.OrderedDict(x=x, k=k), {"x": x.astype(">f4"), "k": k}):
        got = model.run(feeds)
        np.testing.assert_array_equal(got["out"], want["out"])
        np.testing.assert_array_equal(got["flag"], want["flag"])


def test_load_from_bytes(art):
    """A .vmfb's bytes load as well as its path; junk bytes and other types are clear errors."""
    model = estuary.load(art.vmfb)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(model.run({"x": x, "k": np.zeros(3, np.uint8)})["out"], -(x * x))
    assert estuary.load(bytearray(art.vmfb)).inputs == model.inputs
    with pytest.raises(EstuaryError, match="no integrity record"):
        estuary.load(b"\0junk" * 100)
    with pytest.raises(EstuaryError, match="takes an Artifact, a .vmfb path or its bytes, got int"):
        estuary.load(3)


def test_missing_file(tmp_path):
    with pytest.raises(EstuaryError, match="cannot read"):
        estuary.load(tmp_path / "absent.vmfb")


def test_unknown_device(art):
    with pytest.raises(EstuaryError, match="unknown device"):
        estuary.load(art, device="tpu")


@pytest.mark.parametrize("device", ["vulkan", "cuda"])  # cuda: a device this machine cannot open
def test_cpu_artifact_refuses_other_devices(art, device):
    with pytest.raises(EstuaryError, match="compiled for target 'llvm-cpu'"):
        estuary.load(art, device=device)


@pytest.mark.parametrize("target", ["cuda", "rocm", "metal-spirv"])
def test_compile_only_targets(target):
    doc = graph({"x": ((4,), "float32")}, [op("exp", ("input", "x"))], ["y"])
    art = estuary.compile(doc, target=target)
    assert len(art.vmfb) > 1000 and art.signature["target"] == target


def test_unknown_target():
    doc = graph({"x": ((4,), "float32")}, [op("exp", ("input", "x"))], ["y"])
    with pytest.raises(EstuaryError, match="unknown target"):
        estuary.compile(doc, target="tpu")


@pytest.mark.vulkan
def test_vulkan_run_matches_cpu():
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    doc = graph({"x": x}, [op("exp", ("input", "x"), outputs="e"), op("add", ("a", "e"), ("b", "x"))], ["y"])
    vk = estuary.load(estuary.compile(doc, target="vulkan-spirv"), device="vulkan").run({"x": x})["y"]
    np.testing.assert_allclose(vk, np.exp(x) + x, rtol=1e-5)  # GPU exp: a few ULP


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", "float16"])
def test_dtype_round_trip(dtype):
    x = (np.arange(6) % 5).astype(dtype)
    doc = graph({"x": x}, [op("add", ("a", "x"), ("b", "x"))], ["y"])
    y = estuary.load(estuary.compile(doc)).run({"x": x})["y"]
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, x + x)


_THREADS_SCRIPT = r"""
import sys, numpy as np, estuary
from estuary.base.errors import ExecutionError
model = estuary.load(sys.argv[1], threads=1)
x = np.arange(6, dtype=np.float32).reshape(2, 3)
assert (model.run({"x": x})["y"] == -x).all()
estuary.load(sys.argv[1], threads=1)  # the same count again is fine
estuary.load(sys.argv[1])             # so is the process's own count
for bad in (2, 0, 1.5):
    try:
        estuary.load(sys.argv[1], threads=bad)
    except ExecutionError as e:
        print(e)
"""


def test_thread_count_is_fixed_per_process(tmp_path):
    """IREE creates the CPU workers once per process: asking for another count later is a clear
    error (it used to be silently ignored), and a count below 1 is refused."""
    import subprocess
    import sys

    doc = graph({"x": ((2, 3), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y"])
    path = estuary.compile(doc).save(tmp_path / "neg.vmfb")
    r = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    assert "already runs 1 worker thread(s)" in lines[0] and "threads=1" in lines[0]
    assert "at least 1, got 0" in lines[1] and "got 1.5" in lines[2]


@pytest.mark.parametrize("threads, flags", [
    (None, ("--task_topology_group_count=0", "--task_topology_max_group_count=64")),
    (1, ("--task_topology_group_count=1", "--task_topology_max_group_count=64")),
    (2, ("--task_topology_group_count=0", "--task_topology_max_group_count=2")),
])
def test_topology_flags(threads, flags):
    """One worker is unpinned (IREE's `group_count`), so one-thread processes do not all share core
    0; more workers keep IREE's pinning, one per core (README, "Python API")."""
    from estuary.devices import _topology_flags

    assert _topology_flags(threads) == flags


def test_output_storage_runs_are_independent():
    """CPU artefacts write results into caller-passed buffers (compiler.output_storage) that the
    runtime reuses; each run's arrays are its own, and concurrent runs do not share buffers."""
    from concurrent.futures import ThreadPoolExecutor

    doc = graph({"x": ((64, 32), "float32")}, [op("neg", ("input", "x"), outputs="y"),
                                                op("relu", ("input", "x"), outputs="r")], ["y", "r"])
    art = estuary.compile(doc)
    assert art.signature["output_storage"] is True
    model = estuary.load(art)
    xs = [np.random.default_rng(i).standard_normal((64, 32)).astype(np.float32) for i in range(8)]
    first = model.run({"x": xs[0]})
    model.run({"x": xs[1]})
    np.testing.assert_array_equal(first["y"], -xs[0])  # not overwritten by the next run
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda x: model.run({"x": x}), xs * 4))
    for x, out in zip(xs * 4, outs):
        np.testing.assert_array_equal(out["y"], -x)
        np.testing.assert_array_equal(out["r"], np.maximum(x, 0))


def test_output_storage_is_cpu_only():
    doc = graph({"x": ((2, 3), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y"])
    assert "output_storage" not in estuary.compile(doc, target="vulkan-spirv").signature
