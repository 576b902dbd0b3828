"""The Android Neural Networks API (NeuralNetworks.h, API level 27) in Python.

Client code ports call for call: `ANeuralNetworksModel_addOperand(model, &type)` becomes
`model.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[...])`, and so on. Enum members keep the
C names without the `ANEURALNETWORKS_` prefix and the same values. Misuse raises `NNAPIError`
carrying the ResultCode the C API would return (BAD_DATA, BAD_STATE, UNEXPECTED_NULL, ...).

A finished Model compiles with Estuary (`Compilation.finish()` or `estuary.compile(model)`); its
runtime inputs are named input0, input1, ... and outputs output0, ... in the order given to
`identify_inputs_and_outputs`.

A model input dimension given as 0 is dynamic (the symbol `input<n>_<axis>`; one artefact for
every size): each execution gives it in `set_input(i, buffer, type=(code, dimensions))` (or by
the array's shape), and reads the outputs' shapes with `get_output_operand_dimensions` (API 29's
call). `estuary.compile(model, shapes={"input0": [...]})` still fixes them at compile time.
"""
from __future__ import annotations

from collections.abc import Sequence
import enum
import mmap
import os
from typing import TYPE_CHECKING, Any, Self, cast

import numpy as np
import numpy.typing as npt

from estuary.base.errors import EstuaryError
from estuary.importers.nnapi.model import (  # noqa: F401  (re-exported: the API's model and enums)
    FuseCode,
    MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES,
    Model,
    NNAPIError,
    Operand,
    OperandCode,
    OperationCode,
    PaddingCode,
    ResultCode,
    SCALARS,
    TENSORS,
    _bad_data,
    _bad_state,
)

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

    from estuary import runtime

Array = npt.NDArray[Any]
# An operand type as `set_input`/`set_output` take it: a code, or (code, dimensions); None: the model's.
OperandType = int | tuple[int, Sequence[int]] | None


class PreferenceCode(enum.IntEnum):
    PREFER_LOW_POWER = 0
    PREFER_FAST_SINGLE_ANSWER = 1
    PREFER_SUSTAINED_SPEED = 2


class Memory:
    """ANeuralNetworksMemory: a read-only mmap of (part of) a file descriptor."""

    def __init__(self, size: int, protect: int, fd: int, offset: int) -> None:
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
        self._map: mmap.mmap | None = mmap.mmap(self._fd, size, prot=mmap.PROT_READ, offset=offset)

    @classmethod
    def create_from_fd(cls, size: int, protect: int, fd: int, offset: int) -> Self:
        return cls(size, protect, fd, offset)

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise _bad_data(f"region [{offset}, {offset + length}) is outside the memory of {self.size} bytes")
        return bytes(cast(mmap.mmap, self._map)[offset:offset + length])  # not yet freed

    def free(self) -> None:
        if self._map is not None:
            self._map.close()
            os.close(self._fd)
            self._map = None


class Compilation:
    """ANeuralNetworksCompilation: compiles a finished Model with Estuary at `finish`."""

    def __init__(self, model: Model | None, target: str = "llvm-cpu", device: str | None = None) -> None:
        if model is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "model is NULL")
        if not model.finished:
            raise _bad_state("the model must be finished before it is compiled")
        self.model = model
        self.target = target
        self.device = device
        self.preference = PreferenceCode.PREFER_FAST_SINGLE_ANSWER
        self.finished = False
        self.compiled: runtime.Model | None = None

    def set_preference(self, preference: int) -> None:
        if self.finished:
            raise _bad_state("the compilation is finished")
        try:
            self.preference = PreferenceCode(preference)
        except ValueError:
            raise _bad_data(f"unknown preference {preference!r}") from None

    def finish(self) -> None:
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

    def free(self) -> None:
        self.compiled = None


class Event:
    """ANeuralNetworksEvent: execution is synchronous, so `wait` reports how it ended."""

    def __init__(self, error: NNAPIError | None = None) -> None:
        self._error = error

    def wait(self) -> ResultCode:
        if self._error is not None:
            raise self._error
        return ResultCode.NO_ERROR

    def free(self) -> None:
        pass


class Execution:
    """ANeuralNetworksExecution: bind inputs/outputs (numpy arrays, bytes or Memory), then compute."""

    results: list[Array]  # the outputs, once computed

    def __init__(self, compilation: Compilation | None) -> None:
        if compilation is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "compilation is NULL")
        if not compilation.finished:
            raise _bad_state("the compilation must be finished before executions are created")
        self.compilation = compilation
        self.model = compilation.model
        self._inputs: dict[int, Array] = {}
        self._outputs: dict[int, WriteableBuffer | None] = {}
        self.started = False

    def _operand(self, index: int, which: str) -> Operand:
        indices = self.model.inputs if which == "input" else self.model.outputs
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(indices):
            raise _bad_data(f"{which} index {index!r} out of range (model has {len(indices)} {which}s)")
        return self.model.operands[indices[index]]

    def _dimensions(self, op: Operand, type: OperandType, index: int, which: str) -> list[int]:
        """The operand's dimensions for this execution: the model's, those given as 0 (free) taken
        from `type` (code, dimensions) when it gives them; BAD_DATA when `type` differs from the
        model's operand elsewhere."""
        if type is None:
            return list(op.dimensions)
        code, given = type if isinstance(type, tuple) else (type, None)
        if OperandCode(code) != op.code or (given is not None and len(given) != len(op.dimensions)):
            raise _bad_data(f"{which} {index}: type differs from the model's operand type")
        if given is None:
            return list(op.dimensions)
        if any(not isinstance(g, (int, np.integer)) or g < 0 or d and g != d for d, g in zip(op.dimensions, given)):
            raise _bad_data(f"{which} {index}: dimensions {list(given)} do not fit the model's {op.dimensions} "
                            f"(only those given as 0 may be set)")
        return [int(g) for g in given]

    def set_input(self, index: int, buffer: npt.ArrayLike | ReadableBuffer | None, type: OperandType = None) -> None:
        """Bind input `index` to `buffer` (an array, or bytes in the operand's layout). An input
        whose model dimensions include 0 takes them per execution: from `type` (code,
        dimensions), as the C API's type argument gives them, or from an array's shape."""
        if self.started:
            raise _bad_state("the execution has started")
        op = self._operand(index, "input")
        shape = self._dimensions(op, type, index, "input")
        if buffer is None:
            raise _bad_data(f"input {index}: omitting a model input is not supported (it has no default)")
        if isinstance(buffer, (bytes, bytearray, memoryview)):
            if 0 in shape:
                raise _bad_data(f"input {index}: dimensions {shape} are not all known; give them with "
                                f"type=({op.code.name}, [d0, d1, ...])")
            data = bytes(buffer)
            if len(data) != op.dtype.itemsize * int(np.prod(shape)):
                raise _bad_data(f"input {index}: {len(data)} bytes do not match {op.code.name} {shape}")
            arr = np.frombuffer(data, dtype=op.dtype.newbyteorder("<")).astype(op.dtype).reshape(shape)
        else:
            arr = np.asarray(buffer)
        if arr.ndim != len(shape) or any(d and g != d for d, g in zip(shape, arr.shape)):
            raise _bad_data(f"input {index}: shape {list(arr.shape)} does not match {shape}")
        self._inputs[index] = arr

    def set_input_from_memory(self, index: int, memory: Memory | None, offset: int, length: int,
                              type: OperandType = None) -> None:
        if memory is None:
            raise NNAPIError(ResultCode.UNEXPECTED_NULL, "memory is NULL")
        self.set_input(index, memory.read(offset, length), type)

    def set_output(self, index: int, buffer: WriteableBuffer | None, type: OperandType = None) -> None:
        """Bind output `index` to a writable buffer; an output whose dimensions depend on free
        input dimensions needs a buffer large enough for this execution's result (else the run
        reports OUTPUT_INSUFFICIENT_SIZE); `get_output_operand_dimensions` gives its shape."""
        if self.started:
            raise _bad_state("the execution has started")
        op = self._operand(index, "output")
        shape = self._dimensions(op, type, index, "output")
        if buffer is not None:
            try:
                view = memoryview(buffer)
            except TypeError:
                raise _bad_data(f"output {index}: needs a writable buffer (bytearray, numpy array), "
                                f"got {buffer.__class__.__name__}") from None
            if view.readonly:
                raise _bad_data(f"output {index}: buffer is read-only")
            if not view.c_contiguous:
                raise _bad_data(f"output {index}: buffer is not contiguous")
            need = op.dtype.itemsize * int(np.prod(shape))
            if view.nbytes < need:
                raise _bad_data(f"output {index}: buffer of {view.nbytes} bytes is too small for "
                                f"{op.code.name} {shape} ({need} bytes)")
        self._outputs[index] = buffer

    def start_compute(self) -> Event:
        """Run the model; returns an Event whose `wait()` reports the outcome."""
        if self.started:
            raise _bad_state("start_compute may be called once per execution")
        missing = [i for i in range(len(self.model.inputs)) if i not in self._inputs]
        if missing:
            raise _bad_data(f"inputs {missing} are not set")
        self.started = True
        try:
            feeds = {f"input{i}": self._inputs[i] for i in range(len(self.model.inputs))}
            outs = cast("runtime.Model", self.compilation.compiled).run(feeds)  # set by finish()
        except EstuaryError as e:
            return Event(NNAPIError(ResultCode.OP_FAILED, str(e)))
        self.results = [outs[f"output{i}"] for i in range(len(self.model.outputs))]
        for i, buffer in self._outputs.items():
            if buffer is None:
                continue
            data = outs[f"output{i}"]
            dst = np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
            if dst.nbytes < data.nbytes:
                return Event(NNAPIError(ResultCode.OUTPUT_INSUFFICIENT_SIZE, f"output {i}: the result "
                                        f"{list(data.shape)} needs {data.nbytes} bytes, the buffer has {dst.nbytes}"))
            dst[:data.nbytes] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        return Event()

    def get_output_operand_rank(self, index: int) -> int:
        """ANeuralNetworksExecution_getOutputOperandRank (API 29): the rank of output `index`."""
        return len(self.get_output_operand_dimensions(index))

    def get_output_operand_dimensions(self, index: int) -> list[int]:
        """ANeuralNetworksExecution_getOutputOperandDimensions (API 29): output `index`'s
        dimensions in this execution (those the model gives as 0 known only now). Also after an
        OUTPUT_INSUFFICIENT_SIZE failure, to size a larger buffer."""
        self._operand(index, "output")
        results = getattr(self, "results", None)
        if results is None:
            raise _bad_state("the execution has not computed its outputs")
        return [int(d) for d in results[index].shape]

    def compute(self) -> list[Array]:
        """Convenience: start_compute().wait(), returning the outputs as arrays."""
        self.start_compute().wait()
        return self.results

    def free(self) -> None:
        pass
