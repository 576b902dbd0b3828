"""Reading .mlmodel files with coremltools' protobuf schema (coremltools is an optional extra)."""
import logging
import os
import warnings

from estuary.errors import ModelImportError

# The newest specification version this importer knows (coremltools 9: iOS 26 = 10).
MAX_SPEC_VERSION = 10
NN_KINDS = ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor")


def model_pb2():
    """coremltools.proto.Model_pb2, imported quietly (its Linux build lacks the prediction library
    and says so on import; that does not matter for reading specs)."""
    loggers = [logging.getLogger(n) for n in ("coremltools", "coremltools.models.model",
                                                  "coremltools.models.compute_plan")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from coremltools.proto import Model_pb2
    except ImportError as e:
        raise ModelImportError(f"reading Core ML models needs coremltools (pip install estuary[coreml]): {e}") \
            from None
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)
    return Model_pb2


def read_model(source):
    """(Model protobuf, path) of a .mlmodel path, bytes or an already parsed Model message."""
    pb = model_pb2()
    if isinstance(source, pb.Model):
        return source, "<coreml model>"
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
