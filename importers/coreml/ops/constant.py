"""Core ML layers whose values are known at compile time: loadConstant(ND), getShape, fill*, range*."""
import math

import numpy as np

from estuary.importers.coreml.nd import constant_input, int_list, shape_of
from estuary.importers.coreml.ops import OPS


@OPS.op("loadConstant")
def load_constant(c, layer):
    p = layer.loadConstant
    shape = [int(d) for d in p.shape]
    c.check(len(shape) == 3, f"shape must be [C, H, W], got {shape}")
    data = c.weights(p.data, shape, "data")
    return c.const(data.reshape(([1, 1] if not c.nd else []) + shape))


def _fill_value(c, value, shape, dtype="float32"):
    shape = [int(d) for d in shape]
    c.check(len(shape) > 0 and all(d > 0 for d in shape), f"target shape {shape} must be non-empty and positive")
    return c.const(np.full(shape, value, dtype=np.dtype(dtype)))


def _range(c, start, end, step):
    c.check(step != 0, "stepSizeValue must not be 0")
    count = math.ceil((end - start) / step)
    c.check(count > 0, f"range from {start} to {end} by {step} is empty")
    return c.const((np.float64(start) + np.arange(count) * np.float64(step)).astype(np.float32))


@OPS.op("rangeStatic")
def convert_range_static(c, layer):
    p = layer.rangeStatic
    return _range(c, float(np.float32(p.startValue)), float(np.float32(p.endValue)),
                  float(np.float32(p.stepSizeValue)))


@OPS.op("rangeDynamic")
def convert_range_dynamic(c, layer):
    """end from input 0; start and step from inputs 1 and 2 when present, else the parameters."""
    p = layer.rangeDynamic
    values = [float(np.float32(p.startValue)), float(np.float32(p.stepSizeValue))]
    names = ["endValue", "startValue", "stepSizeValue"]
    got = []
    for k in range(min(len(layer.input), 3)):
        a = constant_input(c, layer, k, names[k])
        c.check(a.size == 1 and a.ndim <= 1, f"{names[k]} must be a scalar or of shape (1,), got {list(a.shape)}")
        got.append(float(a.reshape(-1)[0]))
    c.check(len(got) >= 1, "needs the endValue input")
    end = got[0]
    start = got[1] if len(got) > 1 else values[0]
    step = got[2] if len(got) > 2 else values[1]
    return _range(c, start, end, step)


@OPS.op("getShape")
def convert_get_shape(c, layer):
    return c.const(np.asarray(shape_of(c, c.input(layer)), dtype=np.float32))


@OPS.op("fillLike")
def convert_fill_like(c, layer):
    return _fill_value(c, layer.fillLike.value, shape_of(c, c.input(layer)))


@OPS.op("fillStatic")
def convert_fill_static(c, layer):
    return _fill_value(c, layer.fillStatic.value, layer.fillStatic.targetShape)


@OPS.op("fillDynamic")
def convert_fill_dynamic(c, layer):
    shape = int_list(c, constant_input(c, layer, 0, "the target shape"), "target shape")
    return _fill_value(c, layer.fillDynamic.value, shape)


@OPS.op("loadConstantND")
def convert_load_constant_nd(c, layer):
    shape = tuple(int(d) for d in layer.loadConstantND.shape)
    c.check(len(shape) > 0 and all(d > 0 for d in shape), f"shape {list(shape)} must be non-empty and positive")
    return c.const(c.weights(layer.loadConstantND.data, shape, what="data"))
