"""The Android Neural Networks API (NeuralNetworks.h, API level 27) in Python.

Client code ports call for call: `ANeuralNetworksModel_addOperand(model, &type)` becomes
`model.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[...])`, and so on. Enum members keep the
C names without the `ANEURALNETWORKS_` prefix and the same values. Misuse raises `NNAPIError`
carrying the ResultCode the C API would return (BAD_DATA, BAD_STATE, UNEXPECTED_NULL, ...).

A finished Model compiles with Estuary (`Compilation.finish()` or `estuary.compile(model)`); its
runtime inputs are named input0, input1, ... and outputs output0, ... in the order given to
`identify_inputs_and_outputs`.
"""
import enum
import json
import mmap
import os

import numpy as np

from estuary.errors import EstuaryError


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


class PreferenceCode(enum.IntEnum):
    PREFER_LOW_POWER = 0
    PREFER_FAST_SINGLE_ANSWER = 1
    PREFER_SUSTAINED_SPEED = 2


class ResultCode(enum.IntEnum):
    NO_ERROR = 0
    OUT_OF_MEMORY = 1
    INCOMPLETE = 2
    UNEXPECTED_NULL = 3
    BAD_DATA = 4
    OP_FAILED = 5
    UNMAPPABLE = 5
    BAD_STATE = 6


MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128

SCALARS = {OperandCode.FLOAT32: np.float32, OperandCode.INT32: np.int32, OperandCode.UINT32: np.uint32}
TENSORS = {OperandCode.TENSOR_FLOAT32: np.float32, OperandCode.TENSOR_INT32: np.int32,
           OperandCode.TENSOR_QUANT8_ASYMM: np.uint8}


class NNAPIError(EstuaryError):
    """An NNAPI call failed; `.code` is the ResultCode the C API returns."""

    def __init__(self, code, message):
        self.code = ResultCode(code)
        super().__init__(f"{self.code.name}: {message}")


def _bad_data(message):
    return NNAPIError(ResultCode.BAD_DATA, message)


def _bad_state(message):
    return NNAPIError(ResultCode.BAD_STATE, message)


class Operand:
    """One operand: its type (code, dimensions, scale, zero point) and, for constants, its value."""

    def __init__(self, code, dimensions, scale, zero_point):
        self.code = code
        self.dimensions = list(dimensions)
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.value = None  # numpy array for constants
        self.omitted = False  # optional operand given as NULL

    @property
    def dtype(self):
        return np.dtype(SCALARS.get(self.code) or TENSORS[self.code])

    @property
    def is_tensor(self):
        return self.code in TENSORS

    def byte_length(self):
        n = 1
        for d in self.dimensions:
            n *= d
        return n * self.dtype.itemsize

    def to_json(self):
        d = {"type": self.code.name, "dimensions": self.dimensions}
        if self.code == OperandCode.TENSOR_QUANT8_ASYMM or self.scale or self.zero_point:
            d["scale"], d["zeroPoint"] = self.scale, self.zero_point
        if self.omitted:
            d["value"] = None
        elif self.value is not None:
            d["value"] = self.value.reshape(-1).tolist()
        return d


def _check_operand_type(code, dimensions, scale, zero_point):
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


class Memory:
    """ANeuralNetworksMemory: a read-only mmap of (part of) a file descriptor."""

    def __init__(self, size, protect, fd, offset):
        if size <= 0:
            raise _bad_data(f"memory size must be positive, got {size}")
        if offset % mmap.ALLOCATIONGRANULARITY:
            raise _bad_data(f"offset {offset} is not aligned to the page size {mmap.ALLOCATIONGRANULARITY}")
        try:
            file_size = os.fstat(fd).st_size
        except OSError as e:
            raise _bad_data(f"bad file descriptor {fd}: {e.strerror}") from None
        if offset + size > file_size:
            raise _bad_data(f"memory of {size} bytes at offset {offset} exceeds the file's {file_size} bytes")
        self.size = size
        self._fd = os.dup(fd)
        self._map = mmap.mmap(self._fd, size, prot=mmap.PROT_READ, offset=offset)

    @classmethod
    def create_from_fd(cls, size, protect, fd, offset):
        return cls(size, protect, fd, offset)

    def read(self, offset, length):
        if offset < 0 or length < 0 or offset + length > self.size:
            raise _bad_data(f"region [{offset}, {offset + length}) is outside the memory of {self.size} bytes")
        return bytes(self._map[offset:offset + length])

    def free(self):
        if self._map is not None:
            self._map.close()
            os.close(self._fd)
            self._map = None


class Model:
    """ANeuralNetworksModel."""

    def __init__(self):
        self.operands = []
        self.operations = []  # (OperationCode, [inputs], [outputs])
        self.inputs = []
        self.outputs = []
        self.finished = False
        self._identified = False

    def _modifiable(self):
        if self.finished:
            raise _bad_state("the model is finished and cannot be modified")

    def _index(self, index, what="operand"):
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.operands):
            raise _bad_data(f"{what} index {index!r} out of range (model has {len(self.operands)} operands)")
        return int(index)

    def add_operand(self, type, dimensions=None, scale=0.0, zero_point=0):
        """Add an operand; returns its index."""
        self._modifiable()
        code, dims = _check_operand_type(type, dimensions, scale, zero_point)
        self.operands.append(Operand(code, dims, scale, zero_point))
        return len(self.operands) - 1

    def set_operand_value(self, index, value):
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

    def set_operand_value_from_memory(self, index, memory, offset, length):
        self._modifiable()
        if memory is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "memory is NULL")
        self.set_operand_value(index, memory.read(offset, length))

    def add_operation(self, type, inputs, outputs):
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

    def identify_inputs_and_outputs(self, inputs, outputs):
        self._modifiable()
        ins = [self._index(i, "model input") for i in inputs]
        outs = [self._index(i, "model output") for i in outputs]
        if set(ins) & set(outs):
            raise _bad_data(f"operands {sorted(set(ins) & set(outs))} cannot be both input and output")
        for i in ins:
            if self.operands[i].value is not None:
                raise _bad_data(f"operand {i} has a constant value and cannot be a model input")
        self.inputs, self.outputs, self._identified = ins, outs, True

    def finish(self):
        """Validate the graph (each operand written once, inputs defined) and freeze the model."""
        self._modifiable()
        if not self._identified:
            raise _bad_state("identify_inputs_and_outputs must be called before finish")
        written = set()
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

    def to_json(self):
        """The model as a JSON string (operands with type/dimensions/scale/zeroPoint/value)."""
        doc = {"format": "nnapi", "version": 27,
               "operands": [op.to_json() for op in self.operands],
               "operations": [{"type": c.name, "inputs": i, "outputs": o} for c, i, o in self.operations],
               "inputs": self.inputs, "outputs": self.outputs}
        return json.dumps(doc)

    @staticmethod
    def from_json(text, finish=True):
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

    def free(self):
        pass


class Compilation:
    """ANeuralNetworksCompilation: compiles a finished Model with Estuary at `finish`."""

    def __init__(self, model, target="llvm-cpu", device=None):
        if model is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "model is NULL")
        if not model.finished:
            raise _bad_state("the model must be finished before it is compiled")
        self.model = model
        self.target = target
        self.device = device
        self.preference = PreferenceCode.PREFER_FAST_SINGLE_ANSWER
        self.finished = False
        self.compiled = None

    def set_preference(self, preference):
        if self.finished:
            raise _bad_state("the compilation is finished")
        try:
            self.preference = PreferenceCode(preference)
        except ValueError:
            raise _bad_data(f"unknown preference {preference!r}") from None

    def finish(self):
        import estuary

        if self.finished:
            raise _bad_state("the compilation is already finished")
        try:
            art = estuary.compile(self.model, target=self.target, format="nnapi")
            self.compiled = estuary.load(art, device=self.device)
        except NNAPIError:
            raise
        except EstuaryError as e:
            raise NNAPIError(ResultCode.BAD_DATA, str(e)) from None
        self.finished = True

    def free(self):
        self.compiled = None


class Event:
    """ANeuralNetworksEvent: execution is synchronous, so `wait` reports how it ended."""

    def __init__(self, error=None):
        self._error = error

    def wait(self):
        if self._error is not None:
            raise self._error
        return ResultCode.NO_ERROR

    def free(self):
        pass


class Execution:
    """ANeuralNetworksExecution: bind inputs/outputs (numpy arrays, bytes or Memory), then compute."""

    def __init__(self, compilation):
        if compilation is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "compilation is NULL")
        if not compilation.finished:
            raise _bad_state("the compilation must be finished before executions are created")
        self.compilation = compilation
        self.model = compilation.model
        self._inputs = {}
        self._outputs = {}
        self.started = False

    def _operand(self, index, which):
        indices = self.model.inputs if which == "input" else self.model.outputs
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(indices):
            raise _bad_data(f"{which} index {index!r} out of range (model has {len(indices)} {which}s)")
        return self.model.operands[indices[index]]

    def _check_type(self, op, type, index, which):
        if type is None:
            return
        code, dims = type if isinstance(type, tuple) else (type, None)
        if OperandCode(code) != op.code or (dims is not None and len(dims) != len(op.dimensions)):
            raise _bad_data(f"{which} {index}: type differs from the model's operand type")

    def set_input(self, index, buffer, type=None):
        if self.started:
            raise _bad_state("the execution has started")
        op = self._operand(index, "input")
        self._check_type(op, type, index, "input")
        if buffer is None:
            raise _bad_data(f"input {index}: omitting a model input is not supported (it has no default)")
        if isinstance(buffer, (bytes, bytearray, memoryview)):
            arr = np.frombuffer(bytes(buffer), dtype=op.dtype.newbyteorder("<")).astype(op.dtype)
            if arr.size * op.dtype.itemsize != len(bytes(buffer)) or arr.size != int(np.prod(op.dimensions)):
                raise _bad_data(f"input {index}: {len(bytes(buffer))} bytes do not match {op.code.name} {op.dimensions}")
            arr = arr.reshape(op.dimensions)
        else:
            arr = np.asarray(buffer)
        if 0 not in op.dimensions and list(arr.shape) != op.dimensions:
            raise _bad_data(f"input {index}: shape {list(arr.shape)} does not match {op.dimensions}")
        self._inputs[index] = arr

    def set_input_from_memory(self, index, memory, offset, length, type=None):
        if memory is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "memory is NULL")
        self.set_input(index, memory.read(offset, length), type)

    def set_output(self, index, buffer, type=None):
        if self.started:
            raise _bad_state("the execution has started")
        op = self._operand(index, "output")
        self._check_type(op, type, index, "output")
        if buffer is not None:
            view = memoryview(buffer)
            if view.readonly:
                raise _bad_data(f"output {index}: buffer is read-only")
            if view.nbytes < op.byte_length():
                raise _bad_data(f"output {index}: buffer of {view.nbytes} bytes is too small for "
                                f"{op.code.name} {op.dimensions} ({op.byte_length()} bytes)")
        self._outputs[index] = buffer

    def start_compute(self):
        """Run the model; returns an Event whose `wait()` reports the outcome."""
        if self.started:
            raise _bad_state("start_compute may be called once per execution")
        missing = [i for i in range(len(self.model.inputs)) if i not in self._inputs]
        if missing:
            raise _bad_data(f"inputs {missing} are not set")
        self.started = True
        try:
            feeds = {f"input{i}": self._inputs[i] for i in range(len(self.model.inputs))}
            outs = self.compilation.compiled.run(feeds)
        except EstuaryError as e:
            return Event(NNAPIError(ResultCode.OP_FAILED, str(e)))
        for i, buffer in self._outputs.items():
            if buffer is None:
                continue
            data = outs[f"output{i}"]
            dst = np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
            dst[:data.nbytes] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        self.results = [outs[f"output{i}"] for i in range(len(self.model.outputs))]
        return Event()

    def compute(self):
        """Convenience: start_compute().wait(), returning the outputs as arrays."""
        self.start_compute().wait()
        return self.results

    def free(self):
        pass
