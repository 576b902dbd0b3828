"""Model kinds around the layer graph: inputs (multi-arrays and images), image preprocessing,
outputs, and the classifier's class labels / predicted label.

Runtime layouts (the compiled model's signature):
- multi-array inputs: the description's shape; FLOAT32/DOUBLE arrays are fed as float32 (Core ML
  neural networks compute in float32), FLOAT16 as float16 and INT32 as int32 (both cast to float32
  on entry). Flexible shapes (flexible.py): `shapes={name: shape}` fixes one shape; else a range
  gives dynamic dimensions; else the description's default shape (coremltools writes the default
  into `shape`; the converters compile one function per enumerated shape, passing it as shapes=),
  else the first enumerated shape.
- image inputs: float32 [C, H, W] (C = 3 for RGB/BGR, 1 for grayscale), pixel values as Core ML
  sees them (0..255 for 8-bit images), channels in the model's colour order (BGR models: B, G, R).
  Flexible image sizes: `shapes={name: [C, H, W]}`, else a size range gives dynamic H and W, else
  the description's default width/height.
- inside the network, rank-5 models (RANK5_ARRAY_MAPPING) see arrays [C] / [C,H,W] / [S,B,C,H,W]
  as [1,1,C,1,1] / [1,1,C,H,W] / [S,B,C,H,W]; ND models (EXACT_ARRAY_MAPPING) see them as declared.
  Images become [1,1,C,H,W] (RANK5_IMAGE_MAPPING) or [1,C,H,W] (RANK4_IMAGE_MAPPING).
- outputs: a rank-5 blob is returned in the description's shape when that has the same number
  of elements; otherwise [C,H,W] when S = B = 1, else all five axes. ND blobs are returned as is.
- classifiers: the probability output (named `predictedProbabilitiesName`) is a float32 vector
  [number of classes]; the predicted label output (`predictedFeatureName`) is compiled as an int32
  class index [1] and `estuary.Model.run` maps it to the label (numpy str or int64 array [1]); the
  labels travel in the signature ("class_labels", "label_outputs").
"""
import numpy as np

from estuary.base import dims
from estuary.dialects.core import TensorSpec
from estuary.base.errors import ModelImportError
from estuary.importers.coreml import flexible

_ARRAY_DTYPES = {65568: "float32", 65600: "float32", 65552: "float16", 131104: "int32"}
_COLOR = {10: ("GRAYSCALE", 1), 20: ("RGB", 3), 30: ("BGR", 3), 40: ("GRAYSCALE_FLOAT16", 1)}


def network(model):
    """(kind, NeuralNetwork-like message) of a neural network model."""
    kind = model.WhichOneof("Type")
    return kind, getattr(model, kind)


def _array_shape(feature, t, shapes, path):
    name = feature.name
    if shapes and name in shapes:
        return [int(d) for d in shapes[name]]
    dynamic = flexible.dynamic_shape(feature, [0] * len(t.shapeRange.sizeRanges), path)
    if dynamic is not None:
        return dynamic
    if len(t.shape):
        return [int(d) for d in t.shape]
    flex = t.WhichOneof("ShapeFlexibility")
    if flex == "enumeratedShapes" and len(t.enumeratedShapes.shapes):
        return [int(d) for d in t.enumeratedShapes.shapes[0].shape]
    raise ModelImportError(f"{path}: input {name!r} has no shape; pass shapes={{{name!r}: [...]}}")


def input_spec(feature, shapes, path):
    """(kind, runtime TensorSpec, extra) of a model input; kind 'array' or 'image' (extra = colour)."""
    name, ft = feature.name, feature.type
    which = ft.WhichOneof("Type")
    if which == "multiArrayType":
        t = ft.multiArrayType
        dtype = _ARRAY_DTYPES.get(t.dataType)
        if dtype is None:
            raise ModelImportError(f"{path}: input {name!r} has an unsupported array data type {t.dataType}")
        return "array", TensorSpec(_array_shape(feature, t, shapes, path), dtype), None
    if which == "imageType":
        t = ft.imageType
        if t.colorSpace not in _COLOR:
            raise ModelImportError(f"{path}: input {name!r} has an unsupported image colour space {t.colorSpace}")
        color, channels = _COLOR[t.colorSpace]
        if shapes and name in shapes:
            shape = [int(d) for d in shapes[name]]
            if len(shape) != 3 or shape[0] != channels:
                raise ModelImportError(f"{path}: shapes[{name!r}] must be [{channels}, H, W] for this {color} image")
        elif flexible.ranges(feature) is not None:
            shape = flexible.dynamic_shape(feature, [channels, 0, 0], path)
        else:
            w, h = int(t.width), int(t.height)
            if (w == 0 or h == 0) and t.WhichOneof("SizeFlexibility") == "enumeratedSizes" \
                    and len(t.enumeratedSizes.sizes):
                w, h = int(t.enumeratedSizes.sizes[0].width), int(t.enumeratedSizes.sizes[0].height)
            if w <= 0 or h <= 0:
                raise ModelImportError(f"{path}: image input {name!r} has no size; pass shapes={{{name!r}: [C,H,W]}}")
            shape = [channels, h, w]
        return "image", TensorSpec(shape, "float32"), color
    raise ModelImportError(f"{path}: input {name!r} has type {which!r}; Estuary supports multi-array and "
                           f"image inputs of neural networks")


def internal_shape(kind, shape, nd, rank4_images, path, name):
    """The blob shape a runtime input of `shape` has inside the network."""
    shape = list(shape)
    if kind == "image":
        return ([1] if rank4_images else [1, 1]) + shape
    if nd:
        return shape
    if len(shape) == 1:
        return [1, 1, shape[0], 1, 1]
    if len(shape) == 3:
        return [1, 1] + shape
    if len(shape) == 5:
        return shape
    raise ModelImportError(f"{path}: input {name!r} has shape {shape}; rank-5 (spec <= 3 / RANK5_ARRAY_MAPPING) "
                           f"models take arrays of rank 1 [C], 3 [C,H,W] or 5 [S,B,C,H,W]")


def preprocess(c, value, feature_name, color, preprocessing):
    """Apply the NeuralNetworkPreprocessing entries for one image input."""
    channels = c.spec(value).shape[-3]
    for pre in preprocessing:
        if pre.featureName and pre.featureName != feature_name:
            continue
        kind = pre.WhichOneof("preprocessor")
        if kind == "scaler":
            s = pre.scaler
            if channels == 1:
                bias = [s.grayBias]
            elif color == "BGR":
                bias = [s.blueBias, s.greenBias, s.redBias]
            else:
                bias = [s.redBias, s.greenBias, s.blueBias]
            rank = c.spec(value).rank
            shape = [channels, 1, 1]
            scale = s.channelScale
            value = c.op("mul", [value, c.const(np.float32(scale))])
            value = c.op("add", [value, c.const(np.asarray(bias, np.float32).reshape([1] * (rank - 3) + shape))])
        elif kind == "meanImage":
            mean = np.asarray(pre.meanImage.meanImage, np.float32)
            shape = list(c.spec(value).shape[-3:])
            if mean.size != dims.size(shape):
                raise ModelImportError(f"{c.path}: mean image of input {feature_name!r} has {mean.size} values, "
                                       f"the image {shape} has {dims.size(shape)}")
            value = c.op("sub", [value, c.const(mean.reshape([1] * (c.spec(value).rank - 3) + shape))])
    return value


def class_labels(nn):
    """The classifier's labels as a list of str or int, or None."""
    which = nn.WhichOneof("ClassLabels")
    if which == "stringClassLabels":
        return [str(s) for s in nn.stringClassLabels.vector]
    if which == "int64ClassLabels":
        return [int(v) for v in nn.int64ClassLabels.vector]
    return None


def metadata(model):
    """A Core ML model's metadata (author, short description, version, license, user-defined
    entries) for the signature, as `estuary info` shows it; empty fields are left out."""
    m = model.description.metadata
    out = {k: v for k, v in (("author", m.author), ("short_description", m.shortDescription),
                             ("version", m.versionString), ("license", m.license)) if v}
    if m.userDefined:
        out["user_defined"] = dict(sorted(m.userDefined.items()))
    return out


def with_metadata(nn, model):
    """`nn` with the model's metadata in its signature (when it has any)."""
    meta = metadata(model)
    if meta:
        nn.extra_signature = dict(getattr(nn, "extra_signature", None) or {}, metadata=meta)
        nn.write_signature()
    return nn
