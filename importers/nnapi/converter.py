"""The NNAPI conversion context `Converter` (`c` in importers/nnapi/ops/): walks a Model's operations
in order and maps each onto nn ops through its registered converter `fn(c, ins, outs)` (operand
indices of its inputs and outputs). A model input's dimension given as 0 is dynamic, the symbol
`input<n>_<axis>`, unless `shapes` fixes it (docs/dynamic-shapes.md)."""
import numpy as np

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph
from estuary.base.errors import VerificationError
from estuary.importers.context import ConversionContext
from estuary.importers.nnapi.ops import OPS


_DTYPES = {"TENSOR_FLOAT32": "float32", "TENSOR_INT32": "int32", "TENSOR_QUANT8_ASYMM": "uint8"}

# Operations whose API 27 definition accepts TENSOR_QUANT8_ASYMM tensors (DEQUANTIZE: as its input).
QUANT8_OPS = {"ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE",
              "DEQUANTIZE", "FULLY_CONNECTED", "LOGISTIC", "MAX_POOL_2D", "MUL", "RELU", "RELU1", "RELU6",
              "RESHAPE", "SOFTMAX", "SPACE_TO_DEPTH"}
# Operations that are float32 only in API 27.
FLOAT_ONLY_OPS = {"FLOOR", "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION", "RNN", "TANH"}


class Converter(ConversionContext):
    """Walks an NNAPI model's operations in order and maps each onto nn ops."""

    def __init__(self, model, path, shapes=None):
        super().__init__(Graph(path, "nnapi"), path)
        self.model = model
        self.shapes = shapes or {}  # "input<n>" -> dims for the inputs' free (0) dimensions
        self.values = {}  # operand index -> nn Value
        self.code = None

    # ------------------------------------------------------------ helpers for converters

    def operand(self, i):
        return self.model.operands[i]

    def error_prefix(self):
        return f"{self.path}: operation {self.label}"

    def scalar(self, i, kind=None):
        """The constant value of scalar operand `i` (a Python number)."""
        op = self.operand(i)
        self.check(op.value is not None, f"operand {i} must be a constant scalar")
        self.check(not op.is_tensor, f"operand {i} must be a scalar, got {op.code.name}")
        return op.value.item()

    def omitted(self, i):
        return self.operand(i).omitted

    def tensor(self, i):
        """The nn Value of tensor operand `i` (model input, constant or an earlier result)."""
        if i in self.values:
            return self.values[i]
        op = self.operand(i)
        self.check(op.is_tensor, f"operand {i} must be a tensor, got {op.code.name}")
        if op.value is None:
            self.fail(f"operand {i} is read before it is written")
        self.check(op.code.name != "TENSOR_QUANT8_ASYMM" or self._quant_ok(),
                   "TENSOR_QUANT8_ASYMM operands are not supported by this operation")
        v = self.const(op.value, _DTYPES[op.code.name], name=f"operand{i}")
        self.values[i] = v
        return v

    def _quant_ok(self):
        return self.code is not None and self.code.name in QUANT8_OPS

    # ------------------------------------------------------------ TENSOR_QUANT8_ASYMM helpers

    def quant(self, i):
        """(scale, zero_point) of operand `i` if it is TENSOR_QUANT8_ASYMM, else None."""
        op = self.operand(i)
        return (op.scale, op.zero_point) if op.code.name == "TENSOR_QUANT8_ASYMM" else None

    def require_quant(self, i, what):
        q = self.quant(i)
        if q is None:
            self.fail(f"{what} (operand {i}) must be TENSOR_QUANT8_ASYMM like the input, "
                      f"got {self.operand(i).code.name}")
        return q

    def quant_range(self, code, q):
        """[lo, hi] of a FuseCode activation in the quantized domain of q = (scale, zero_point), as
        Android's reference computes it (real bounds divided by the scale, rounded half away from zero)."""
        scale, zp = q

        def at(real):
            return zp + int(np.sign(real) * np.floor(abs(real) / scale + 0.5))

        bounds = {0: (0, 255), 1: (max(0, zp), 255), 2: (max(0, at(-1.0)), min(255, at(1.0))),
                  3: (max(0, zp), min(255, at(6.0)))}
        if code not in bounds:
            self.fail(f"invalid fused activation code {code}")
        return bounds[code]

    def requant(self, value, q_in, q_out, lo=0, hi=255):
        """Re-express uint8 `value` quantized as q_in in q_out, clamped to [lo, hi] (a no-op when the
        parameters agree and the range is full)."""
        if q_in == q_out and (lo, hi) == (0, 255):
            return value
        return self.op("requantize", [value], input_zero_point=q_in[1], multiplier=q_in[0] / q_out[0],
                       output_zero_point=q_out[1], output_min=lo, output_max=hi)

    def f32(self, value, name):
        """A float32 constant named '<label>/<name>'."""
        return self.const(np.asarray(value, np.float32), name=f"{self.label}/{name}")

    def fuse(self, value, code, recurrent=False):
        """Apply a FuseCode activation (NONE, RELU, RELU1, RELU6; recurrent ops also accept 4 = tanh,
        as Android's reference implementation does)."""
        bounds = {0: None, 1: (0.0, float("inf")), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
        if recurrent and code == 4:
            return self.op("tanh", [value])
        if code not in bounds:
            self.fail(f"invalid fused activation code {code}")
        if bounds[code] is None:
            return value
        lo, hi = bounds[code]
        return self.op("clamp", [value], min_value=lo, max_value=hi)

    def set_output(self, i, value):
        op = self.operand(i)
        got = self.spec(value)
        if op.dimensions and 0 not in op.dimensions and list(got.shape) != op.dimensions:
            # a dynamic dimension may be declared with its value: the runtime then checks the inputs give it
            with dims.unifying(self.graph.unifier):
                fits = len(got.shape) == len(op.dimensions) and all(
                    isinstance(g, dims.Dim) and dims.same(g, d) is not None or g == d
                    for g, d in zip(got.shape, op.dimensions))
            if not fits:
                self.fail(f"output operand {i} is declared {op.dimensions}, the operation produces {list(got.shape)}")
        self.values[i] = value

    # ------------------------------------------------------------ conversion

    def build(self):
        """The nn module of the whole model."""
        unknown = sorted(set(self.shapes) - {f"input{n}" for n in range(len(self.model.inputs))})
        if unknown:
            raise VerificationError(f"{self.path}: no input named {unknown[0]!r} (NNAPI inputs are input0.."
                                    f"input{len(self.model.inputs) - 1})")
        for n, i in enumerate(self.model.inputs):
            op = self.operand(i)
            if not op.is_tensor:
                raise VerificationError(f"{self.path}: model input {n} (operand {i}) must be a tensor")
            shape = list(op.dimensions)
            given = self.shapes.get(f"input{n}")
            if given is not None:
                if len(given) != len(shape) or any(d and d != g for d, g in zip(shape, given)):
                    raise VerificationError(f"{self.path}: shape {list(given)} for input{n} does not fit its "
                                            f"declared dimensions {shape} (0 marks a free one)")
                shape = list(given)
            spec = TensorSpec(free_dimensions(n, shape), _DTYPES[op.code.name])
            self.values[i] = self.graph.input(f"input{n}", spec)
        for k, (code, ins, outs) in enumerate(self.model.operations):
            self.code, self.label, self.op_type = code, f"#{k} {code.name}", code.name
            if code.name in FLOAT_ONLY_OPS:
                for i in ins:
                    self.check(self.operand(i).code.name != "TENSOR_QUANT8_ASYMM",
                               f"operand {i}: TENSOR_QUANT8_ASYMM is not supported by {code.name} (float32 only)")
            self.convert(self.label, code.name, OPS[code].fn, ins, outs)
            for o in outs:
                self.check(o in self.values, f"converter did not produce output operand {o}")
        outputs = [(f"output{n}", self.values[i]) for n, i in enumerate(self.model.outputs)]
        return self.graph.finish(outputs)


# the largest free dimension: a WebIDL `long`, the largest dimension the nn type rules accept (one
# less than dims.MAX_BOUND, which nn.reshape's new_shape refuses as a dimension's upper bound)
MAX_FREE = (1 << 31) - 1


def free_dimensions(n: int, shape: list[int]) -> list[dims.Value]:
    """Model input `n`'s dimensions with each one given as 0 (free: set per execution, API 27's
    ANeuralNetworksExecution_setInput type) as the symbol `input<n>_<axis>`, 1..MAX_FREE."""
    return [Dim.symbol(f"input{n}_{axis}", 1, MAX_FREE) if d == 0 else d for axis, d in enumerate(shape)]


def np_dtype(code_name):
    return np.dtype(_DTYPES[code_name])
