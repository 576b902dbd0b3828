"""The NNAPI model as the importer reads it: the NeuralNetworks.h (API level 27) enums, the Model
(operands, operations, inputs/outputs; its JSON form) and NNAPIError with the C API's ResultCodes.

The public API (estuary.nnapi) re-exports all of it; misuse raises NNAPIError carrying the
ResultCode the C API would return (BAD_DATA, BAD_STATE, UNEXPECTED_NULL, ...).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
import enum
import json
import os
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from estuary.base.errors import EstuaryError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

Array = npt.NDArray[Any]


class ReadableMemory(Protocol):
    """What `set_operand_value_from_memory` reads from: the API's ANeuralNetworksMemory
    (estuary.nnapi.Memory; the importers do not import the API layer)."""

    def read(self, offset: int, length: int) -> bytes: ...


class OperandCode(enum.IntEnum):
    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5


class OperationCode(enum.IntEnum):
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28


class FuseCode(enum.IntEnum):
    FUSED_NONE = 0
    FUSED_RELU = 1
    FUSED_RELU1 = 2
    FUSED_RELU6 = 3


class PaddingCode(enum.IntEnum):
    PADDING_SAME = 1
    PADDING_VALID = 2


class ResultCode(enum.IntEnum):
    NO_ERROR = 0
    OUT_OF_MEMORY = 1
    INCOMPLETE = 2
    UNEXPECTED_NULL = 3
    BAD_DATA = 4
    OP_FAILED = 5
    UNMAPPABLE = 5
    BAD_STATE = 6
    OUTPUT_INSUFFICIENT_SIZE = 8  # API 29: an output buffer smaller than the result's run-time shape


MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128

SCALARS: dict[OperandCode, type[np.generic]] = {OperandCode.FLOAT32: np.float32, OperandCode.INT32: np.int32, OperandCode.UINT32: np.uint32}
TENSORS: dict[OperandCode, type[np.generic]] = {OperandCode.TENSOR_FLOAT32: np.float32, OperandCode.TENSOR_INT32: np.int32,
           OperandCode.TENSOR_QUANT8_ASYMM: np.uint8}


class NNAPIError(EstuaryError):
    """An NNAPI call failed; `.code` is the ResultCode the C API returns."""

    def __init__(self, code: int, message: str) -> None:
        self.code = ResultCode(code)
        super().__init__(f"{self.code.name}: {message}")


def _bad_data(message: str) -> NNAPIError:
    return NNAPIError(ResultCode.BAD_DATA, message)


def _bad_state(message: str) -> NNAPIError:
    return NNAPIError(ResultCode.BAD_STATE, message)


class Operand:
    """One operand: its type (code, dimensions, scale, zero point) and, for constants, its value."""

    def __init__(self, code: OperandCode, dimensions: Iterable[int], scale: float, zero_point: int) -> None:
        self.code = code
        self.dimensions = list(dimensions)
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.value: Array | None = None  # for constants
        self.omitted = False  # optional operand given as NULL

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(SCALARS.get(self.code) or TENSORS[self.code])

    @property
    def is_tensor(self) -> bool:
        return self.code in TENSORS

    def byte_length(self) -> int:
        n = 1
        for d in self.dimensions:
            n *= d
        return n * self.dtype.itemsize

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.code.name, "dimensions": self.dimensions}
        if self.code == OperandCode.TENSOR_QUANT8_ASYMM or self.scale or self.zero_point:
            d["scale"], d["zeroPoint"] = self.scale, self.zero_point
        if self.omitted:
            d["value"] = None
        elif self.value is not None:
            d["value"] = self.value.reshape(-1).tolist()
        return d


def _check_operand_type(code: int, dimensions: Iterable[int] | None, scale: float,
                        zero_point: int) -> tuple[OperandCode, list[int]]:
    try:
        code = OperandCode(code)
    except ValueError:
        raise _bad_data(f"unknown operand type {code!r}") from None
    dims = list(dimensions or [])
    if any(not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
        raise _bad_data(f"dimensions must be non-negative integers, got {dims}")
    if code in SCALARS and dims:
        raise _bad_data(f"scalar operand type {code.name} takes no dimensions, got {dims}")
    if code == OperandCode.TENSOR_QUANT8_ASYMM:
        if not scale > 0:
            raise _bad_data(f"TENSOR_QUANT8_ASYMM needs scale > 0, got {scale}")
        if not 0 <= zero_point <= 255:
            raise _bad_data(f"TENSOR_QUANT8_ASYMM zero point must be in [0, 255], got {zero_point}")
    elif code == OperandCode.TENSOR_INT32:
        if scale < 0:
            raise _bad_data(f"TENSOR_INT32 scale must be >= 0, got {scale}")
    elif scale or zero_point:
        raise _bad_data(f"{code.name} takes no scale/zero point")
    return code, [int(d) for d in dims]


class Model:
    """ANeuralNetworksModel."""

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        self.operations: list[tuple[OperationCode, list[int], list[int]]] = []  # (code, inputs, outputs)
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.finished = False
        self._identified = False

    def _modifiable(self) -> None:
        if self.finished:
            raise _bad_state("the model is finished and cannot be modified")

    def _index(self, index: int, what: str = "operand") -> int:
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.operands):
            raise _bad_data(f"{what} index {index!r} out of range (model has {len(self.operands)} operands)")
        return int(index)

    def add_operand(self, type: int, dimensions: Iterable[int] | None = None, scale: float = 0.0,
                    zero_point: int = 0) -> int:
        """Add an operand; returns its index."""
        self._modifiable()
        code, dims = _check_operand_type(type, dimensions, scale, zero_point)
        self.operands.append(Operand(code, dims, scale, zero_point))
        return len(self.operands) - 1

    def set_operand_value(self, index: int, value: npt.ArrayLike | ReadableBuffer | None) -> None:
        """Constant value (array, scalar, bytes); None marks an optional operand as omitted."""
        self._modifiable()
        op = self.operands[self._index(index)]
        if value is None:
            op.value, op.omitted = None, True
            return
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            if op.is_tensor and 0 in op.dimensions:
                raise _bad_data(f"operand {index}: constant tensors need fully specified dimensions")
            if len(raw) != (op.byte_length() if op.is_tensor else op.dtype.itemsize):
                raise _bad_data(f"operand {index}: {len(raw)} bytes given, {op.code.name} of "
                                f"{op.dimensions} needs {op.byte_length() if op.is_tensor else op.dtype.itemsize}")
            arr = np.frombuffer(raw, dtype=op.dtype.newbyteorder("<")).astype(op.dtype)
        else:
            arr = np.asarray(value)
            if isinstance(value, enum.IntEnum):
                arr = np.asarray(int(value))
            if arr.dtype.kind not in "biuf":
                raise _bad_data(f"operand {index}: value must be numeric, got {arr.dtype}")
            expected = op.dimensions if op.is_tensor else []
            if op.is_tensor and 0 in expected:
                raise _bad_data(f"operand {index}: constant tensors need fully specified dimensions")
            if int(np.prod(expected)) != arr.size:
                raise _bad_data(f"operand {index}: value has {arr.size} elements, {op.code.name} "
                                f"of {expected} needs {int(np.prod(expected))}")
            cast = arr.astype(op.dtype)
            if arr.dtype.kind == "f" and op.dtype.kind != "f" and not np.array_equal(cast, arr):
                raise _bad_data(f"operand {index}: non-integer value for {op.code.name}")
            arr = cast
        op.value = arr.reshape(op.dimensions if op.is_tensor else ())
        op.omitted = False

    def set_operand_value_from_memory(self, index: int, memory: ReadableMemory | None, offset: int,
                                      length: int) -> None:
        self._modifiable()
        if memory is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "memory is NULL")
        self.set_operand_value(index, memory.read(offset, length))

    def add_operation(self, type: int, inputs: Iterable[int], outputs: Iterable[int]) -> None:
        self._modifiable()
        try:
            code = OperationCode(type)
        except ValueError:
            raise _bad_data(f"unknown operation type {type!r}") from None
        ins = [self._index(i, "input operand") for i in inputs]
        outs = [self._index(i, "output operand") for i in outputs]
        if not outs:
            raise _bad_data(f"{code.name} needs at least one output")
        self.operations.append((code, ins, outs))

    def identify_inputs_and_outputs(self, inputs: Iterable[int], outputs: Iterable[int]) -> None:
        self._modifiable()
        ins = [self._index(i, "model input") for i in inputs]
        outs = [self._index(i, "model output") for i in outputs]
        if set(ins) & set(outs):
            raise _bad_data(f"operands {sorted(set(ins) & set(outs))} cannot be both input and output")
        for i in ins:
            if self.operands[i].value is not None:
                raise _bad_data(f"operand {i} has a constant value and cannot be a model input")
        self.inputs, self.outputs, self._identified = ins, outs, True

    def finish(self) -> None:
        """Validate the graph (each operand written once, inputs defined) and freeze the model."""
        self._modifiable()
        if not self._identified:
            raise _bad_state("identify_inputs_and_outputs must be called before finish")
        written: set[int] = set()
        for code, _, outs in self.operations:
            for o in outs:
                if o in written or o in self.inputs or self.operands[o].value is not None:
                    raise _bad_data(f"operand {o} is written more than once ({code.name})")
                written.add(o)
        known = set(self.inputs) | written | {i for i, op in enumerate(self.operands)
                                               if op.value is not None or op.omitted}
        for code, ins, _ in self.operations:
            for i in ins:
                if i not in known:
                    raise _bad_data(f"{code.name} reads operand {i}, which is neither a model input, "
                                    "a constant nor an operation output")
        for o in self.outputs:
            if o not in written:
                raise _bad_data(f"model output {o} is not written by any operation")
        self.finished = True

    # ---------------------------------------------------------------- JSON

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The model as JSON text (operands with type/dimensions/scale/zeroPoint/value); with
        `path`, also written there, as WebNN's `MLGraph.to_json(path)` does."""
        doc = {"format": "nnapi", "version": 27,
               "operands": [op.to_json() for op in self.operands],
               "operations": [{"type": c.name, "inputs": i, "outputs": o} for c, i, o in self.operations],
               "inputs": self.inputs, "outputs": self.outputs}
        text = json.dumps(doc)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    @staticmethod
    def from_json(text: str | bytes | Mapping[str, Any], finish: bool = True) -> Model:
        """Rebuild a Model from `to_json` output (a JSON string or dict); errors carry BAD_DATA."""
        try:
            doc = json.loads(text) if isinstance(text, (str, bytes)) else text
            m = Model()
            for od in doc["operands"]:
                idx = m.add_operand(OperandCode[od["type"]], od.get("dimensions", []),
                                    od.get("scale", 0.0), od.get("zeroPoint", 0))
                if "value" in od:
                    m.set_operand_value(idx, None if od["value"] is None else np.asarray(od["value"]))
            for op in doc["operations"]:
                m.add_operation(OperationCode[op["type"]], op["inputs"], op["outputs"])
            m.identify_inputs_and_outputs(doc["inputs"], doc["outputs"])
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            if isinstance(e, NNAPIError):
                raise
            raise _bad_data(f"malformed NNAPI model JSON ({type(e).__name__}: {e})") from None
        if finish:
            m.finish()
        return m

    def free(self) -> None:
        pass
