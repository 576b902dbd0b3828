"""Test helpers: build WebNN JSON graphs, compile and run them, compare against oracles.

Oracles are independent of Estuary: onnxruntime on an equivalent ONNX graph (`run_onnx`), or
torch on CPU where a test needs it. Tolerances follow the WebNN conformance convention.
"""
import os

import numpy as np

import estuary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
_MODELS = {}

# ESTUARY_TEST_TARGET=vulkan-spirv runs the op tests that use `run_graph` on that target (CI runs
# tests/ops on lavapipe this way). Tests of CPU-only behaviour carry @pytest.mark.cpu_only.
TARGET = os.environ.get("ESTUARY_TEST_TARGET", "llvm-cpu")
ON_GPU = TARGET != "llvm-cpu"
# Vulkan lets exp, log and the like err by several ULP (3 + 2|x| for exp); lavapipe was within 7
GPU_ULP = 8


def tile_lanes():
    """The float32 vector lanes cpu-tiles retiles for on this host (what the target `host`
    resolves to): 16 with AVX-512, 8 with AVX2, else None (IREE's tiles stay)."""
    from estuary.backends.llvm_cpu import host as host_cpu

    return host_cpu.vector_lanes("host") if host_cpu.measured("host") else None


def graph(inputs, operators, outputs, constants=None):
    """A WebNN JSON graph dict. inputs: {name: array-or-(shape, dtype)}; constants: {name: array}."""
    doc = {"inputs": {}, "operators": operators, "outputs": list(outputs)}
    for name, v in inputs.items():
        shape, dtype = (list(v.shape), str(v.dtype)) if isinstance(v, np.ndarray) else v
        doc["inputs"][name] = {"descriptor": {"shape": list(shape), "dataType": dtype}}
    for name, arr in (constants or {}).items():
        arr = np.asarray(arr)
        doc["inputs"][name] = {"descriptor": {"shape": list(arr.shape), "dataType": str(arr.dtype)},
                               "data": arr.reshape(-1).tolist(), "constant": True}
    return doc


def op(name, *args, outputs="y", **options):
    """One operator entry: op("conv2d", ("input", "x"), ("filter", "w"), padding=[1,1,1,1])."""
    arguments = [{k: v} for k, v in args]
    if options:
        arguments.append({"options": options})
    return {"name": name, "arguments": arguments, "outputs": outputs}


def run_model(source, feeds, format, target=None, device=None, shapes=None):
    """Compile a model for `target` (default TARGET, Vulkan's device for vulkan-spirv) and run it."""
    target = target or TARGET
    art = estuary.compile(source, target=target, format=format, shapes=shapes)
    model = estuary.load(art, device=device or ("vulkan" if target == "vulkan-spirv" else None))
    return model.run(feeds)


# ESTUARY_TEST_DYNAMIC=1 compiles the graphs of `run_graph` with every input dimension larger
# than 1 dynamic (a symbol per input and axis, bounded by twice its size) and runs the artefact
# at the test's shapes: the families whose options do not fix shapes (element-wise, activation,
# math, normalization, reduction) check their dynamic lowering against the same oracles.
DYNAMIC = os.environ.get("ESTUARY_TEST_DYNAMIC") == "1"


def dynamic_inputs(doc):
    """`doc` with each non-constant input's dimensions > 1 as MLDynamicDimensions."""
    import copy

    doc = copy.deepcopy(doc)
    for name, entry in doc["inputs"].items():
        if entry.get("constant"):
            continue
        desc = entry["descriptor"]
        desc["shape"] = [d if d == 1 else {"name": f"{name}_{i}".replace("-", "_"), "maxSize": 2 * d}
                         for i, d in enumerate(desc["shape"])]
    return doc


def run_graph(doc, feeds, target=None, device=None):
    """Compile a WebNN graph dict for `target` (default TARGET) and run it on `feeds`."""
    return run_model(dynamic_inputs(doc) if DYNAMIC else doc, feeds, "webnn", target, device)


def run_onnx(nodes, inputs, outputs, initializers=None, opset=21):
    """Run an ONNX graph with onnxruntime (the oracle).

    nodes: onnx NodeProtos; inputs: {name: array}; outputs: [(name, numpy dtype, shape or None)].
    initializers: {name: array} constants.
    """
    from onnx import helper, numpy_helper
    import onnxruntime as ort

    def vi(name, dtype, shape):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)

    g = helper.make_graph(
        nodes, "oracle",
        [vi(n, a.dtype, list(a.shape)) for n, a in inputs.items()],
        [vi(n, d, s) for n, d, s in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in (initializers or {}).items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    res = sess.run([n for n, _, _ in outputs], dict(inputs))
    return dict(zip([n for n, _, _ in outputs], res))


def ulp_distance(a, b):
    """Elementwise distance in units of last place (float32/float16), NaN==NaN counts as 0."""
    a = np.asarray(a)
    b = np.asarray(b).astype(a.dtype)
    tiny = np.finfo(a.dtype).tiny  # denormals may be flushed to zero: compare them as zero
    a = np.where(np.abs(a) < tiny, np.zeros((), a.dtype), a)
    b = np.where(np.abs(b) < tiny, np.zeros((), b.dtype), b)
    itype = {2: np.int16, 4: np.int32}[a.dtype.itemsize]
    ai = a.view(itype).astype(np.int64)
    bi = b.view(itype).astype(np.int64)
    sign = np.int64(1) << (a.dtype.itemsize * 8 - 1)
    ai = np.where(ai < 0, sign - ai, ai)  # map to a monotonic integer line
    bi = np.where(bi < 0, sign - bi, bi)
    d = np.abs(ai - bi)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, d)


def assert_ulp(actual, expected, ulp):
    """Float results within `ulp` units of last place (WebNN conformance style)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype or expected.dtype.kind == actual.dtype.kind
    if ON_GPU:
        ulp = max(ulp, GPU_ULP)
    d = ulp_distance(actual, expected.astype(actual.dtype))
    bad = d > ulp
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements beyond {ulp} ULP; worst "
                           f"{d.max()} ULP: got {actual[bad][:5]}, expected {expected.astype(actual.dtype)[bad][:5]}")


def assert_exact(actual, expected):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f":
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype))
    else:
        np.testing.assert_array_equal(actual, expected.astype(actual.dtype))


def assert_accumulated(actual, expected, n, ulp_per_term=2):
    """Conv/matmul/reduction results: tolerance grows with the accumulation length `n`.

    Combines an ULP budget (ulp_per_term * n) with an absolute floor scaled by the magnitude of
    the data, since cancellation makes pure-ULP comparisons of sums meaningless near zero."""
    actual = np.asarray(actual)
    expected = np.asarray(expected).astype(actual.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    eps = np.finfo(actual.dtype).eps
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    atol = ulp_per_term * n * eps * scale
    ok = (ulp_distance(actual, expected) <= ulp_per_term * n) | (np.abs(actual - expected) <= atol)
    ok |= np.isnan(actual) & np.isnan(expected)
    assert ok.all(), (f"{(~ok).sum()} of {ok.size} elements off (n={n}, atol={atol:.3g}); got "
                      f"{actual[~ok][:5]}, expected {expected[~ok][:5]}")


def onnx_model_case(model, feeds, where, form):
    """An ONNX model (benchmarks/models.py style, output "y") written as WebNN JSON, a Core ML
    model or an NNEF folder (form "webnn", "coreml", "nnef") under `where`, with onnxruntime's
    output as the expected value: (path, feeds, expected)."""
    import os
    import sys

    import onnxruntime as ort
    import pytest

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import onnx_to_coreml
    import onnx_to_nnef
    import onnx_to_webnn

    if form == "webnn":
        path = onnx_to_webnn.convert(model, str(where / "net.json"))
    elif form == "nnef":
        pytest.importorskip("nnef_tools")
        path = onnx_to_nnef.convert(model, str(where / "net.nnef"))
    else:
        pytest.importorskip("coremltools")
        path = onnx_to_coreml.convert(model, str(where / "net.mlmodel"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return path, feeds, sess.run(["y"], feeds)[0]


def optimized_ops(path, view, disable=()):
    """[view(op) for each op of a model's main function] after the nn-level optimizations
    (`disable`: passes to leave out), for the tests of those passes. `view` must return plain
    data: the module is freed on return."""
    from estuary.importers import import_model
    from estuary.backends import pipeline

    nn = import_model(path)
    pipeline.run(nn, ["nn-verify"] + [p for p in pipeline.OPTIMIZATIONS if p not in disable])
    return [view(op) for op in nn.module.body.operations[0].regions[0].blocks[0].operations]
