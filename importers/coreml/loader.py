"""Reading .mlmodel files with coremltools' protobuf schema (coremltools is an optional extra)."""
import importlib
import importlib.util
import os
import sys
import types

from estuary.base.errors import ModelImportError

# The newest specification version this importer knows (coremltools 9: iOS 26 = 10).
MAX_SPEC_VERSION = 10
NN_KINDS = ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor")


_PROTO_PACKAGE = "_estuary_coreml_proto"


def model_pb2():
    """coremltools' generated Model_pb2 schema module.

    Only the generated `coremltools/proto` modules are loaded, as a package of their own: importing
    `coremltools` itself runs its whole start-up (converters, and torch when installed: seconds and
    hundreds of MB per compile) for nothing a spec reader needs. A process that has already
    imported coremltools' schema gets that module, so its messages stay the same classes.
    """
    for name in ("coremltools.proto.Model_pb2", _PROTO_PACKAGE + ".Model_pb2"):
        if name in sys.modules:
            return sys.modules[name]
    spec = importlib.util.find_spec("coremltools")  # locates the package without running it
    proto_dir = os.path.join(os.path.dirname(spec.origin), "proto") if spec and spec.origin else None
    if proto_dir is None or not os.path.isfile(os.path.join(proto_dir, "Model_pb2.py")):
        raise ModelImportError("reading Core ML models needs coremltools (pip install estuary-nn installs it)")
    package = types.ModuleType(_PROTO_PACKAGE)
    package.__path__ = [proto_dir]
    sys.modules[_PROTO_PACKAGE] = package
    try:
        return importlib.import_module(_PROTO_PACKAGE + ".Model_pb2")
    except Exception as e:  # an incompatible protobuf runtime, a broken install
        raise ModelImportError(f"cannot load coremltools' Core ML schema from {proto_dir}: {e}") from None


def is_model_message(source):
    """Whether `source` is a Core ML Model protobuf message (ours or coremltools' own class)."""
    return getattr(getattr(source, "DESCRIPTOR", None), "full_name", None) == "CoreML.Specification.Model"


def read_model(source):
    """(Model protobuf, path) of a .mlmodel path, bytes or an already parsed Model message."""
    pb = model_pb2()
    if is_model_message(source):  # re-read if it is coremltools' class rather than this schema's
        model = source if isinstance(source, pb.Model) else pb.Model.FromString(source.SerializeToString())
        return model, "<coreml model>"
    if isinstance(source, (bytes, bytearray)):
        data, path = bytes(source), "<coreml bytes>"
    else:
        path = os.fspath(source)
        if os.path.isdir(path):
            raise ModelImportError(f"{path}: is a directory (an .mlpackage / ML Program?); "
                                   f"only .mlmodel NeuralNetwork files are supported")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelImportError(f"{path}: cannot read ({e.strerror})") from None
    if not data:
        raise ModelImportError(f"{path}: empty file, not a Core ML model")
    model = pb.Model()
    try:
        model.ParseFromString(data)
    except Exception as e:  # google.protobuf DecodeError and friends
        raise ModelImportError(f"{path}: not a valid Core ML model (corrupt or truncated protobuf: {e})") from None
    check_model(model, path)
    return model, path


def check_model(model, path):
    """Spec version and model type checks with clear messages."""
    v = model.specificationVersion
    kind = model.WhichOneof("Type")
    if v < 1 or v > MAX_SPEC_VERSION:
        raise ModelImportError(f"{path}: unknown Core ML specification version {v} "
                               f"(supported: 1..{MAX_SPEC_VERSION}); corrupt file?")
    if kind is None:
        raise ModelImportError(f"{path}: the Core ML model has no model type (corrupt or truncated file?)")
    if kind not in NN_KINDS:
        raise ModelImportError(f"{path}: unsupported Core ML model type {kind!r}; Estuary imports "
                               f"{', '.join(NN_KINDS)} models")
