"""Seed models for fuzzing, one small model per format and form, written into a folder.

The seeds are the kinds of models the repository's tests build (tests/helpers.py's WebNN graphs,
NNAPI models through estuary.nnapi, Core ML NeuralNetworkBuilder models and an ML Program
.mlpackage, NNEF folders and archives with §5.2 tensor files, and the repository's example Core ML
model), kept small so that each mutant compiles in about a second."""
from __future__ import annotations

import io
import json
import os
import struct
import tarfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("webnn", "nnapi", "nnef", "coreml", "artefact")


def _webnn_seeds(out: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 2, 3, 3)).round(3).tolist()
    conv = {
        "inputs": {"x": {"descriptor": {"dataType": "float32", "shape": [1, 2, 6, 6]}},
                   "w": {"descriptor": {"dataType": "float32", "shape": [4, 2, 3, 3]},
                         "data": np.asarray(w).reshape(-1).tolist(), "constant": True}},
        "operators": [
            {"name": "conv2d", "arguments": [{"input": "x"}, {"filter": "w"}, {"options": {"padding": [1, 1, 1, 1]}}],
             "outputs": "c"},
            {"name": "relu", "arguments": [{"input": "c"}], "outputs": "r"},
            {"name": "maxPool2d", "arguments": [{"input": "r"}, {"options": {"windowDimensions": [2, 2],
                                                                             "strides": [2, 2]}}], "outputs": "p"},
            {"name": "reshape", "arguments": [{"input": "p"}, {"newShape": [1, 36]}], "outputs": "f"},
            {"name": "softmax", "arguments": [{"input": "f"}, {"axis": 1}], "outputs": "y"}],
        "outputs": ["y"]}
    misc = {
        "inputs": {"a": {"descriptor": {"dataType": "float32", "shape": [3, 4]}},
                   "i": {"descriptor": {"dataType": "int32", "shape": [2]}}},
        "operators": [
            {"name": "gather", "arguments": [{"input": "a"}, {"indices": "i"}, {"options": {"axis": 1}}],
             "outputs": "g"},
            {"name": "transpose", "arguments": [{"input": "g"}], "outputs": "t"},
            {"name": "reduceSum", "arguments": [{"input": "t"}, {"options": {"axes": [1], "keepDimensions": True}}],
             "outputs": "s"},
            {"name": "slice", "arguments": [{"input": "a"}, {"starts": [1, 0]}, {"sizes": [2, 3]}], "outputs": "l"},
            {"name": "argMax", "arguments": [{"input": "l"}, {"axis": 1}], "outputs": "m"}],
        "outputs": ["s", "m"]}
    paths = []
    for name, doc in (("conv", conv), ("misc", misc)):
        p = out / f"{name}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    return paths


def _nnapi_seeds(out: Path) -> list[Path]:
    from estuary import nnapi
    from estuary.nnapi import OperandCode as T, OperationCode as Op

    rng = np.random.default_rng(1)
    m = nnapi.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, dimensions=[1, 5, 5, 2])
    w = m.add_operand(T.TENSOR_FLOAT32, dimensions=[3, 3, 3, 2])
    m.set_operand_value(w, rng.standard_normal((3, 3, 3, 2)).astype(np.float32).round(3))
    b = m.add_operand(T.TENSOR_FLOAT32, dimensions=[3])
    m.set_operand_value(b, np.zeros(3, np.float32))
    scalars = []
    for v in (1, 1, 1, 1, 1, 1, 1):  # pads l r t b, strides w h, fused relu
        s = m.add_operand(T.INT32)
        m.set_operand_value(s, v)
        scalars.append(s)
    c = m.add_operand(T.TENSOR_FLOAT32, dimensions=[1, 5, 5, 3])
    m.add_operation(Op.CONV_2D, [x, w, b] + scalars, [c])
    y = m.add_operand(T.TENSOR_FLOAT32, dimensions=[1, 5, 5, 3])
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [c, c, act], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    p = out / "conv.nnapi.json"
    p.write_text(m.to_json())
    q = nnapi.Model()
    a = q.add_operand(T.TENSOR_QUANT8_ASYMM, dimensions=[1, 4, 4, 1], scale=0.5, zero_point=10)
    o = q.add_operand(T.TENSOR_QUANT8_ASYMM, dimensions=[1, 2, 2, 1], scale=0.5, zero_point=10)
    ins = [a]
    for v in (0, 0, 0, 0, 2, 2, 2, 2, 0):  # pads, strides, filter, no activation
        s = q.add_operand(T.INT32)
        q.set_operand_value(s, v)
        ins.append(s)
    q.add_operation(Op.AVERAGE_POOL_2D, ins, [o])
    q.identify_inputs_and_outputs([a], [o])
    q.finish()
    p2 = out / "pool_quant8.nnapi.json"
    p2.write_text(q.to_json())
    return [p, p2]


def dat_bytes(array: np.ndarray) -> bytes:
    """An NNEF §5.2 tensor file of float32 data."""
    a = np.asarray(array, "<f4")
    head = b"N\xef\x01\x00" + struct.pack("<II", a.nbytes, a.ndim)
    head += struct.pack("<8I", *(list(a.shape) + [0] * (8 - a.ndim))) + struct.pack("<II", 32, 0)
    return head.ljust(128, b"\0") + a.tobytes()


NNEF_GRAPH = """version 1.0;
extension KHR_enable_fragment_definitions;

fragment block( input: tensor<scalar>, w: tensor<scalar> ) -> ( output: tensor<scalar> )
{
    c = conv(input, w, padding = [(1, 1), (1, 1)]);
    output = relu(c);
}

graph G( x ) -> ( y, z )
{
    x = external<scalar>(shape = [1, 2, 5, 5]);
    w = variable<scalar>(shape = [3, 2, 3, 3], label = 'w');
    b = block(x, w);
    p = max_pool(b, size = [1, 1, 2, 2], stride = [1, 1, 2, 2], border = 'ignore');
    y = reshape(p, shape = [1, -1]);
    m = mean_reduce(b, axes = [2, 3]);
    h = constant<scalar>(shape = [1, 3, 1, 1], value = [0.5]);
    z = select(gt(m, 0.0), m, h);
}
"""


def _nnef_seeds(out: Path) -> list[Path]:
    folder = out / "nnef_model"
    folder.mkdir(exist_ok=True)
    (folder / "graph.nnef").write_text(NNEF_GRAPH)
    w = np.random.default_rng(2).standard_normal((3, 2, 3, 3)).astype(np.float32).round(3)
    (folder / "w.dat").write_bytes(dat_bytes(w))
    tgz = out / "nnef_model.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name in ("graph.nnef", "w.dat"):
            data = (folder / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return [folder, tgz]


def _coreml_seeds(out: Path) -> list[Path]:
    import coremltools.models.datatypes as dt
    from coremltools.models.neural_network import NeuralNetworkBuilder

    rng = np.random.default_rng(3)
    b = NeuralNetworkBuilder([("x", dt.Array(2, 5, 5))], [("y", None)])
    b.add_convolution("conv", 2, 3, 3, 3, 1, 1, "same", 1, rng.standard_normal((3, 3, 2, 3)).astype(np.float32),
                      rng.standard_normal(3).astype(np.float32), True, input_name="x", output_name="c")
    b.add_activation("relu", "RELU", "c", "r")
    b.add_pooling("pool", 2, 2, 2, 2, "MAX", "VALID", "r", "p")
    b.add_flatten("flat", 0, "p", "f")
    b.add_inner_product("fc", rng.standard_normal((4, 12)).astype(np.float32), None, 12, 4, False, "f", "y")
    classic = out / "classic.mlmodel"
    classic.write_bytes(b.spec.SerializeToString())
    nd = NeuralNetworkBuilder([("a", dt.Array(3, 4))], [("y", None)], disable_rank5_shape_mapping=True)
    nd.add_softmax_nd("sm", "a", "s", axis=-1)
    nd.add_reduce_sum("rs", "s", "r", axes=[1], keepdims=True)
    nd.add_argmax("am", "a", "m", axis=1, keepdims=True)
    nd.add_elementwise("add", ["r", "m"], "y", "ADD")
    ndp = out / "nd.mlmodel"
    ndp.write_bytes(nd.spec.SerializeToString())
    paths = [classic, ndp, _mlpackage_seed(out)]
    example = ROOT / "examples" / "resnet_tiny.mlmodel"
    if example.exists():
        paths.append(example)
    return paths


def _mlpackage_seed(out: Path) -> Path:
    """An ML Program .mlpackage (MIL builder, ct.convert): model proto, weight blob, manifest."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    w = np.random.default_rng(4).standard_normal((4, 2, 3, 3)).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 2, 6, 6))], opset_version=ct.target.iOS17)
    def prog(x):
        r = mb.relu(x=mb.conv(x=x, weight=w, pad_type="same"))
        p = mb.max_pool(x=r, kernel_sizes=[2, 2], strides=[2, 2], pad_type="valid")
        return mb.softmax(x=mb.reshape(x=p, shape=[1, 36]), axis=1)

    path = out / "program.mlpackage"
    ct.convert(prog, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
               minimum_deployment_target=ct.target.iOS17).save(str(path))
    return path


def _artefact_seeds(out: Path) -> list[Path]:
    import estuary

    doc = json.loads((out / "misc.json").read_text())
    p = out / "misc.vmfb"
    estuary.compile(doc).save(p)
    return [p]


def write(out: str | os.PathLike[str], formats: tuple[str, ...] = FORMATS) -> dict[str, list[Path]]:
    """Write the seeds for `formats` into folder `out`; {format: [seed paths]}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    makers = {"webnn": _webnn_seeds, "nnapi": _nnapi_seeds, "nnef": _nnef_seeds, "coreml": _coreml_seeds}
    seeds: dict[str, list[Path]] = {}
    webnn = _webnn_seeds(out)
    for fmt in formats:
        if fmt == "artefact":
            seeds[fmt] = _artefact_seeds(out)
        else:
            seeds[fmt] = webnn if fmt == "webnn" else makers[fmt](out)
    return seeds
