"""ML Program containers and bad input: .mlpackage folders, .mlmodel files of type mlProgram,
MLModel objects and specs; corrupt packages (Manifest, weights, offsets, opsets, unknown ops) are
one clear error naming the package, function and op."""
import json
import os
import shutil

import numpy as np
import pytest

import estuary
from estuary.base.errors import EstuaryError, ModelImportError, UnsupportedOpError
from estuary.importers import detect_format, import_model
from tests.importers.mlprogram.util import ct

W = np.arange(6, dtype=np.float32).reshape(1, 6) / 10  # small enough to stay inline in the spec
BIG = (np.arange(40 * 6, dtype=np.float32).reshape(40, 6) % 7 - 3) / 4  # large enough for weight.bin


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    from coremltools.converters.mil import Builder as mb

    c = ct()

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 6))], opset_version=c.target.iOS17)
    def prog(x):
        return mb.relu(x=mb.linear(x=x, weight=BIG), name="y")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS17,
                      compute_precision=c.precision.FLOAT32)
    path = str(tmp_path_factory.mktemp("pkg") / "model.mlpackage")
    model.save(path)
    return path, model


def expected(x):
    return np.maximum(x.astype(np.float64) @ BIG.T.astype(np.float64), 0)


X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)


def copy(package, tmp_path):
    dst = str(tmp_path / "copy.mlpackage")
    shutil.copytree(package, dst)
    return dst


def spec_path(pkg):
    return os.path.join(pkg, "Data", "com.apple.CoreML", "model.mlmodel")


def test_forms_of_the_model(package, tmp_path):
    path, model = package
    assert detect_format(path) in ("coreml", "mlprogram")
    for source in (path, model):
        got = estuary.load(estuary.compile(source)).run({"x": X})["y"]
        np.testing.assert_allclose(got, expected(X), rtol=1e-6, atol=1e-6)
    # an .mlmodel file of type mlProgram with its weights folder beside it
    folder = tmp_path / "loose"
    shutil.copytree(os.path.dirname(spec_path(path)), folder)
    got = estuary.load(estuary.compile(str(folder / "model.mlmodel"))).run({"x": X})["y"]
    np.testing.assert_allclose(got, expected(X), rtol=1e-6, atol=1e-6)
    # a bare spec has no weight file: a clear error
    with pytest.raises(ModelImportError, match="without its files"):
        import_model(model.get_spec())


def test_small_weights_inline_spec():
    from coremltools.converters.mil import Builder as mb

    c = ct()

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 6))], opset_version=c.target.iOS17)
    def prog(x):
        return mb.linear(x=x, weight=W, name="y")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS17,
                      compute_precision=c.precision.FLOAT32)
    got = estuary.load(estuary.compile(model.get_spec())).run({"x": X})["y"]
    np.testing.assert_allclose(got, X.astype(np.float64) @ W.T.astype(np.float64), rtol=1e-6, atol=1e-6)


def corrupt(pkg, what):
    manifest = os.path.join(pkg, "Manifest.json")
    weights = os.path.join(pkg, "Data", "com.apple.CoreML", "weights", "weight.bin")
    if what == "manifest-root":
        doc = json.load(open(manifest))
        doc["rootModelIdentifier"] = "nope"
        json.dump(doc, open(manifest, "w"))
    elif what == "manifest-escape":
        doc = json.load(open(manifest))
        doc["itemInfoEntries"][doc["rootModelIdentifier"]]["path"] = "../../../etc/passwd"
        json.dump(doc, open(manifest, "w"))
    elif what == "manifest-json":
        open(manifest, "w").write("{not json")
    elif what == "manifest-missing":
        os.remove(manifest)
    elif what == "manifest-no-entries":
        doc = json.load(open(manifest))
        del doc["itemInfoEntries"]
        json.dump(doc, open(manifest, "w"))
    elif what == "spec-symlink-out":  # the spec path stays inside, but the file links outside
        outside = os.path.join(os.path.dirname(pkg), "outside.mlmodel")
        shutil.move(spec_path(pkg), outside)
        os.symlink(outside, spec_path(pkg))
    elif what in ("blob-sentinel", "weights-version"):
        data = bytearray(open(weights, "rb").read())
        if what == "blob-sentinel":
            data[64:68] = b"\0\0\0\0"  # the first blob's metadata record follows the 64-byte header
        else:
            data[4:8] = (7).to_bytes(4, "little")
        open(weights, "wb").write(bytes(data))
    elif what == "truncated-weights":
        data = open(weights, "rb").read()
        open(weights, "wb").write(data[: len(data) - 100])
    elif what == "missing-weights":
        os.remove(weights)
    elif what == "missing-spec":
        os.remove(spec_path(pkg))
    elif what == "truncated-spec":
        data = open(spec_path(pkg), "rb").read()
        open(spec_path(pkg), "wb").write(data[: len(data) // 2])
    else:
        m = ct().proto.Model_pb2.Model()
        m.ParseFromString(open(spec_path(pkg), "rb").read())
        f = m.mlProgram.functions["main"]
        block = f.block_specializations[f.opset]
        if what == "blob-offset":
            for op in block.operations:
                if op.type == "const" and op.attributes["val"].WhichOneof("value") == "blobFileValue":
                    op.attributes["val"].blobFileValue.offset = 1 << 20
        elif what == "wrong-opset":
            f.block_specializations["CoreML99"].CopyFrom(block)
            f.opset = "CoreML99"
        elif what == "unknown-op":
            for op in block.operations:
                if op.type == "relu":
                    op.type = "frobnicate"
        elif what == "missing-function":
            m.description.defaultFunctionName = "encode"
        elif what == "missing-block":
            f.block_specializations["CoreML6"].CopyFrom(block)
            del f.block_specializations[f.opset]
        elif what == "undefined-input":
            for op in block.operations:
                if op.type == "relu":
                    op.inputs["x"].arguments[0].name = "ghost"
        open(spec_path(pkg), "wb").write(m.SerializeToString())


BAD = {
    "manifest-root": "rootModelIdentifier", "manifest-escape": "leaves the package", "manifest-json": "malformed",
    "truncated-weights": "runs past the end|outside", "missing-weights": "missing", "missing-spec": "missing",
    "truncated-spec": "corrupt or truncated", "blob-offset": "outside", "wrong-opset": "CoreML99",
    "unknown-op": r"unsupported MIL op frobnicate \(iOS17, op 'y'\)",
    "manifest-missing": "Manifest.json", "manifest-no-entries": "malformed.*itemInfoEntries",
    "spec-symlink-out": "leaves the package", "blob-sentinel": "bad sentinel", "weights-version": "version 7",
    "missing-function": "no function 'encode'.*functions: main", "missing-block": "no block for its opset 'CoreML7'",
    "undefined-input": "'ghost' is used before any operation defines it",
}
# errors raised while converting one operation name the function and the operation
AT_OP = {"truncated-weights": "const", "blob-offset": "const", "blob-sentinel": "const",
         "undefined-input": "relu"}


@pytest.mark.parametrize("what", list(BAD))
def test_corrupt_packages(package, tmp_path, what):
    pkg = copy(package[0], tmp_path)
    corrupt(pkg, what)
    with pytest.raises(EstuaryError, match=BAD[what]) as info:
        import_model(pkg)
    assert "copy.mlpackage" in str(info.value)
    if what == "unknown-op":
        assert isinstance(info.value, UnsupportedOpError) and "function 'main'" in str(info.value)
    if what in AT_OP:
        assert "function 'main'" in str(info.value) and f"({AT_OP[what]})" in str(info.value), str(info.value)


def test_flexible_shapes(tmp_path):
    from coremltools.converters.mil import Builder as mb

    c = ct()

    from coremltools.converters.mil.mil import get_new_symbol

    @mb.program(input_specs=[mb.TensorSpec(shape=(get_new_symbol(), 6))], opset_version=c.target.iOS17)
    def prog(x):
        return mb.reduce_sum(x=mb.mul(x=x, y=2.0), axes=[-1], name="y")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS17,
                      compute_precision=c.precision.FLOAT32,
                      inputs=[c.TensorType(name="x", shape=(c.RangeDim(1, 8, default=2), 6))])
    path = str(tmp_path / "flex.mlpackage")
    model.save(path)
    x = np.ones((5, 6), np.float32)
    got = estuary.load(estuary.compile(path, shapes={"x": [5, 6]})).run({"x": x})["y"]
    np.testing.assert_allclose(got, np.full(5, 12.0))
    got = estuary.load(estuary.compile(path)).run({"x": x[:2]})["y"]  # the default shape
    np.testing.assert_allclose(got, np.full(2, 12.0))
    with pytest.raises(EstuaryError, match="outside"):
        import_model(path, shapes={"x": [9, 6]})


def test_float16_inputs_and_outputs(tmp_path):
    """iOS16+ models may declare fp16 inputs and outputs: they are float16 arrays at the boundary."""
    from coremltools.converters.mil import Builder as mb

    c = ct()

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3), dtype=c.converters.mil.mil.types.fp16)],
                opset_version=c.target.iOS16)
    def prog(x):
        return mb.mul(x=x, y=np.float16(3.0), name="y")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS16)
    path = str(tmp_path / "fp16io.mlpackage")
    model.save(path)
    x = np.array([[1.5, -2.0, 0.25], [4.0, 8.0, -0.5]], np.float16)
    got = estuary.load(estuary.compile(path)).run({"x": x})["y"]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, (x.astype(np.float64) * 3).astype(np.float16))


def test_function_selection(tmp_path):
    """A multifunction package: the default function, or one chosen by name; an unknown name is a
    clear error listing the functions."""
    from coremltools.converters.mil import Builder as mb

    c = ct()
    paths = []
    for name, factor in (("double", 2.0), ("triple", 3.0)):
        @mb.program(input_specs=[mb.TensorSpec(shape=(3,))], opset_version=c.target.iOS18)
        def prog(x):
            return mb.mul(x=x, y=factor, name="y")

        model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS18,
                          compute_precision=c.precision.FLOAT32)
        paths.append(str(tmp_path / f"{name}.mlpackage"))
        model.save(paths[-1])
    desc = c.utils.MultiFunctionDescriptor()
    desc.add_function(paths[0], src_function_name="main", target_function_name="double")
    desc.add_function(paths[1], src_function_name="main", target_function_name="triple")
    desc.default_function_name = "triple"
    multi = str(tmp_path / "multi.mlpackage")
    c.utils.save_multifunction(desc, multi)
    from estuary.importers import mlprogram

    x = np.array([1.0, -2.0, 0.5], np.float32)
    got = estuary.load(estuary.compile(multi)).run({"x": x})["y"]
    np.testing.assert_array_equal(got, x * 3)
    got = estuary.load(estuary.compile(mlprogram.load_model(multi, function="double"))).run({"x": x})["y"]
    np.testing.assert_array_equal(got, x * 2)
    with pytest.raises(ModelImportError, match="no function 'quadruple'.*double, triple"):
        mlprogram.load_model(multi, function="quadruple")


def test_enumerated_shapes(tmp_path):
    """ct.EnumeratedShapes from a torch module: each listed shape compiles (shapes=), matching torch;
    a shape outside the set is refused."""
    torch = pytest.importorskip("torch")
    c = ct()

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, -1) * 2 + x.mean(1, keepdim=True) + torch.cumsum(x, 1)

    model = Model().eval()
    shapes = c.EnumeratedShapes(shapes=[(2, 5, 3), (1, 7, 3)], default=(2, 5, 3))
    ml = c.convert(torch.jit.trace(model, torch.randn(2, 5, 3)), inputs=[c.TensorType(name="x", shape=shapes)],
                   convert_to="mlprogram", compute_precision=c.precision.FLOAT32)
    path = str(tmp_path / "enum.mlpackage")
    ml.save(path)
    for shape in ((2, 5, 3), (1, 7, 3)):
        x = torch.randn(*shape)
        got = estuary.load(estuary.compile(path, shapes={"x": list(shape)})).run({"x": x.numpy()})
        np.testing.assert_allclose(next(iter(got.values())), model(x).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(EstuaryError, match="enumerated shapes"):
        import_model(path, shapes={"x": [3, 3, 3]})
