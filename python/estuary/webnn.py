"""The WebNN API in Python, mirroring the JS interfaces so WebNN code ports line by line.

    from estuary import webnn
    ctx = webnn.ML().createContext({"deviceType": "cpu"})        # "gpu" runs on Vulkan
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 32, 32]})
    w = b.constant({"dataType": "float32", "shape": [8, 3, 3, 3]}, weights)
    y = b.relu(b.conv2d(x, w, {"padding": [1, 1, 1, 1]}))
    graph = b.build({"y": y})
    outs = ctx.compute(graph, {"x": arr})                          # {"y": ndarray}

The current spec's execution model works on device tensors (MLTensor), which stay on the device
between dispatches (estuary.mltensor):

    tx = ctx.createTensor({"dataType": "float32", "shape": [1, 3, 32, 32], "writable": True})
    ty = ctx.createTensor({"dataType": "float32", "shape": [1, 8, 32, 32], "readable": True})
    ctx.writeTensor(tx, arr)
    ctx.dispatch(graph, {"x": tx}, {"y": ty})
    y = ctx.readTensor(ty)                                         # ndarray (or readTensor(ty, out))

An input's shape may hold MLDynamicDimensions, `{"name": "seq", "maxSize": 128}`: one graph then
runs at every length up to maxSize (compute() takes arrays of those shapes, dispatch() tensors).
`MLOperand.shape` reports them, a derived dimension as `{"name": "2*seq", "maxSize": 256}`, and
reshape/expand/slice take them back (importers/webnn/dynamic.py, docs/dynamic-shapes.md).

Every operation of the importer's registry (`registry.OPS`) is an MLGraphBuilder method that runs
the very mapping the JSON importer runs, so both validate alike. Calls are synchronous (the JS
promises resolve in place). The spec's TypeError and InvalidStateError are `TypeError_` and
`InvalidStateError` (EstuaryErrors); invalid operands or options of an operation raise the
importer's VerificationError. A built MLGraph *is* its WebNN JSON document (a dict), so
`estuary.compile(graph)` and `graph.to_json()` work on it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import copy
import json
import os
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from estuary.base import dims, dtypes
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph, free_session, spec_of
from estuary.base.errors import EstuaryError, RuntimeInputError
from estuary.importers.webnn import MAX_ELEMENTS, OPS, load_graph
from estuary.importers.webnn import dynamic, four_bit
from estuary.shapes import ShapeRules
from estuary.importers.webnn.converter import OpContext, options_of

if TYPE_CHECKING:
    from iree.compiler import ir

    from estuary.dialects.graph import NNModule
    from estuary.importers.registry import Entry as WebNNOp
    from estuary.mltensor import DeviceTensor
    from estuary.runtime import Model

Array = npt.NDArray[Any]
# Every WebNN data type: Estuary's, and int4 / uint4 (int8 / uint8 values inside; four_bit.py).
DATA_TYPES = (*dtypes.ALL, *four_bit.FOUR_BIT)
# An MLOperandDescriptor: {"dataType": WebNN data type name, "shape": [int or {"name", "maxSize"}, ...]}.
MLOperandDescriptor = dict[str, Any]
# the arguments whose entries may be dynamic dimensions (importers/webnn/dynamic.py)
_SHAPE_PARAMETERS = ("newShape", "starts", "sizes")


class TypeError_(EstuaryError):
    """The JS API's TypeError: an invalid argument (descriptor, operand of another builder, ...)."""


class InvalidStateError(EstuaryError):
    """The JS API's InvalidStateError: the builder has already built its graph, or the context,
    graph or tensor was destroyed."""


def _check(cond: object, message: str, error: type[EstuaryError] = TypeError_) -> None:
    if not cond:
        raise error(message)


def _descriptor(desc: Mapping[str, Any]) -> MLOperandDescriptor:
    """A validated MLOperandDescriptor with a concrete shape (the spec's "check dimensions")."""
    _check(isinstance(desc, dict) and "dataType" in desc and "shape" in desc,
           f"an MLOperandDescriptor needs 'dataType' and 'shape', got {desc!r}")
    _check(desc["dataType"] in DATA_TYPES, f"unsupported dataType {desc['dataType']!r}; one of {list(DATA_TYPES)}")
    shape = desc["shape"]
    dims_ok = isinstance(shape, (list, tuple, np.ndarray)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in shape)
    dynamic_hint = " (only graph inputs take dynamic dimensions)" if isinstance(shape, (list, tuple)) and any(
        isinstance(d, dict) for d in shape) else ""
    _check(dims_ok, f"shape {shape!r} must be a list of positive integers{dynamic_hint}")
    _check(int(np.prod(shape, dtype=object)) <= MAX_ELEMENTS, f"shape {list(shape)} is too large")
    return {"dataType": desc["dataType"], "shape": [int(d) for d in shape]}


def _input_descriptor(desc: Mapping[str, Any], symbols: Mapping[str, dims.Sym],
                      name: str) -> tuple[MLOperandDescriptor, list[dims.Value]]:
    """An input's MLOperandDescriptor, whose dimensions may be MLDynamicDimensions {"name",
    "maxSize"} (`symbols`: those earlier inputs declared; a name keeps its maxSize), and its shape
    as dimension values. The size check counts a dynamic dimension at its maxSize."""
    shape = desc.get("shape") if isinstance(desc, dict) else None
    if not isinstance(shape, (list, tuple)) or not any(isinstance(d, dict) for d in shape):
        plain = _descriptor(desc)
        return plain, list(plain["shape"])
    _check("dataType" in desc and desc["dataType"] in DATA_TYPES,
           f"input {name!r}: unsupported dataType {desc.get('dataType')!r}; one of {list(DATA_TYPES)}")
    for i, d in enumerate(shape):
        _check(not isinstance(d, dict) or "name" in d and "maxSize" in d,
               f"input {name!r}: dimension {i} ({d!r}) is an MLDynamicDimension, which needs 'name' and 'maxSize'")
    try:
        values = [dynamic.input_dimension(int(d) if isinstance(d, np.integer) else d, name, i, symbols)
                  for i, d in enumerate(shape)]
    except ValueError as e:
        raise TypeError_(f"input {name!r}: {e}") from None
    _check(dims.upper(dims.size(values)) <= MAX_ELEMENTS, f"input {name!r}: shape {list(shape)} is too large at "
           "its maxSizes")
    return {"dataType": desc["dataType"], "shape": dynamic.ml_shape(values)}, values


def _np(data_type: str) -> np.dtype[Any]:
    """The numpy dtype of a WebNN data type's values (int4 / uint4: int8 / uint8, four_bit.py)."""
    return dtypes.to_numpy(four_bit.storage(data_type))


def _cast_number(x: float | np.number[Any], data_type: str) -> Array:
    """The spec's "cast a number" (§8.2): floats round to nearest (overflow to infinity); integers
    clamp to the type's range, then round half to even, NaN giving 0 (uint32 clamps unsigned: the
    spec's "signed" there is a typo)."""
    x = float(x) if isinstance(x, (float, np.floating)) else int(x)
    if data_type in dtypes.FLOATS:
        with np.errstate(over="ignore"):
            return np.array(x, dtype=dtypes.to_numpy(data_type))
    info = np.iinfo(_np(data_type))
    lo, hi = four_bit.value_range(data_type) or (int(info.min), int(info.max))
    return np.array(0 if x != x else round(min(max(x, lo), hi)), dtype=info.dtype)


def _jsonable(v: object) -> Any:
    if isinstance(v, (np.ndarray, np.generic)):
        return v.reshape(-1).tolist() if v.ndim else v.item()  # flat lists, as in the JSON layout
    raise TypeError(f"{type(v).__name__} is not a number, string or list")


def _plain(value: object, what: str) -> Any:
    """A non-operand argument exactly as the JSON loader sees it (lists, numbers, strings)."""
    try:
        return json.loads(json.dumps(value, default=_jsonable))
    except TypeError as e:
        raise TypeError_(f"{what}: {e}") from None


class MLOperand:
    """An operand of one builder's graph: read-only `.dataType` and `.shape`."""

    def __init__(self, builder: MLGraphBuilder, value: ir.Value, producer: _Operator | None = None,
                 data: Array | None = None) -> None:
        self._builder, self._producer, self._data = builder, producer, data
        self._value: ir.Value | None = value  # None once the builder has built its graph
        spec = spec_of(value)
        data_type = four_bit.kind(builder._graph, value) or spec.dtype  # int4 / uint4 are marked
        self._desc: MLOperandDescriptor = {"dataType": data_type, "shape": dynamic.ml_shape(spec.shape)}

    @property
    def dataType(self) -> str:  # noqa: N802 (WebNN spelling)
        return self._desc["dataType"]

    @property
    def shape(self) -> list[int | dict[str, Any]]:
        """The dimensions: ints, and for dynamic ones {"name", "maxSize"} (a derived dimension's
        name is its expression, `2*seq`; importers/webnn/dynamic.py)."""
        return copy.deepcopy(self._desc["shape"])

    def __repr__(self) -> str:
        return f"MLOperand({self.dataType}, {self.shape})"


class MLGraph(dict[str, Any]):
    """A built graph: the WebNN JSON document (this dict), bound to its context. Holds the `nn`
    module until the first compute() compiles it; the compiled model is cached."""

    def __init__(self, doc: Mapping[str, Any], context: MLContext, outputs: dict[str, MLOperandDescriptor],
                 nn: NNModule | None) -> None:
        super().__init__(doc)
        self._context, self._outputs, self._nn = context, outputs, nn
        self._model: Model | None = None
        # the dynamic dimensions' bounds and rules: what compute() and dispatch() check of shapes
        self._rules = ShapeRules(nn.signature(), "MLGraph") if nn is not None else None

    @property
    def inputDescriptors(self) -> dict[str, MLOperandDescriptor]:  # noqa: N802
        return {n: dict(e["descriptor"]) for n, e in self["inputs"].items() if not e.get("constant")}

    @property
    def outputDescriptors(self) -> dict[str, MLOperandDescriptor]:  # noqa: N802
        return copy.deepcopy(self._outputs)

    def __repr__(self) -> str:
        return f"MLGraph(inputs={self.inputDescriptors}, outputs={self._outputs})"

    def destroy(self) -> None:
        """Release the compiled model; the graph cannot be dispatched afterwards."""
        self._destroyed = True
        if self._model is not None:
            self._model.close()
        self._model = None
        if self._nn is not None:
            self._nn.close()
            self._nn = None

    _destroyed = False

    def to_json(self, path: str | os.PathLike[str] | None = None, weights_file: str | None = None) -> str:
        """The JSON text, constants inline as lists; with `path`, also written there. With
        `weights_file` (a file name, written beside `path`) constants become {"file", "byteOffset"}
        references into that little-endian side file."""
        doc = {**self, "inputs": {n: dict(e) for n, e in self["inputs"].items()}}
        if weights_file is not None:
            if path is None:
                raise TypeError_("to_json(weights_file=...) needs the JSON path too")
            blob = bytearray()
            for entry in doc["inputs"].values():
                if entry.get("constant"):
                    blob += bytes(-len(blob) % 8)  # 8-byte aligned tensors
                    array, entry["data"] = entry["data"], {"file": os.path.basename(weights_file), "byteOffset": len(blob)}
                    blob += array.astype(array.dtype.newbyteorder("<")).tobytes()
            with open(os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(weights_file)), "wb") as f:
                f.write(blob)
        text = json.dumps(doc, default=_jsonable)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def _feeds(self, inputs: Mapping[str, npt.ArrayLike]) -> dict[str, Array]:
        """`inputs` checked like the spec's "validate buffer with descriptor" (same data type, same
        element count) and shaped as the descriptors say; an input with dynamic dimensions takes
        the array's shape, which `shapes` checks."""
        _check(isinstance(inputs, dict), f"compute() inputs must be a dict name -> array, got {type(inputs).__name__}")
        want = self.inputDescriptors
        missing, unknown = [n for n in want if n not in inputs], sorted(set(inputs) - set(want))
        _check(not missing and not unknown, f"compute() inputs do not match the graph: missing {missing}, "
               f"unexpected {unknown}; the graph takes {list(want)}")
        feeds = {}
        for name, desc in want.items():
            arr = np.asarray(inputs[name])
            _check(arr.dtype == _np(desc["dataType"]),
                   f"input {name!r} has dtype {arr.dtype}, the graph expects {desc['dataType']}")
            if any(isinstance(d, dict) for d in desc["shape"]):
                feeds[name] = arr
                continue
            _check(arr.size == int(np.prod(desc["shape"])), f"input {name!r} has {arr.size} elements "
                   f"(shape {list(arr.shape)}), the graph expects shape {desc['shape']}")
            feeds[name] = arr.reshape(desc["shape"])
        self.shapes({n: a.shape for n, a in feeds.items()}, "compute()")
        return feeds

    def shapes(self, inputs: Mapping[str, Sequence[int]], what: str = "dispatch()") -> dict[str, list[int]]:
        """The outputs' shapes for inputs of these concrete shapes; TypeError_ when a shape does not
        fit its descriptor: a fixed dimension differs, a dynamic one is outside 1..maxSize, two
        inputs give one name different values, or a rule of the graph fails."""
        if self._rules is None or not self._rules.dynamic:
            return {n: list(d["shape"]) for n, d in self._outputs.items()}
        try:
            outs = self._rules.bind([tuple(inputs[n]) for n, _ in self._rules.inputs])
        except RuntimeInputError as e:
            raise TypeError_(str(e).replace("MLGraph:", f"{what}:", 1)) from None
        return {n: list(s) for (n, _), s in zip(self._rules.outputs, outs)}


class MLTensor:
    """A device tensor of an MLContext (MLContext.createTensor / createConstantTensor): `.dataType`,
    `.shape`, `.readable`, `.writable`, `.constant`; `destroy()` frees its device memory."""

    def __init__(self, context: MLContext, desc: MLOperandDescriptor, readable: bool, writable: bool,
                 constant: bool) -> None:
        from estuary.mltensor import DeviceTensor

        self._context, self._desc = context, desc
        self.readable, self.writable, self.constant = readable, writable, constant
        storage = four_bit.storage(desc["dataType"])
        self._device: DeviceTensor | None = DeviceTensor(context.driver, desc["shape"], storage)

    @property
    def dataType(self) -> str:  # noqa: N802 (WebNN spelling)
        return self._desc["dataType"]

    @property
    def shape(self) -> list[int]:
        return list(self._desc["shape"])

    def destroy(self) -> None:
        if self._device is not None:
            self._device.release()
        self._device = None

    def _live(self, what: str) -> Any:
        _check(self._device is not None, f"{what} is a destroyed MLTensor")
        return self._device

    def __repr__(self) -> str:
        state = "destroyed" if self._device is None else "constant" if self.constant else \
            "+".join(f for f, on in (("readable", self.readable), ("writable", self.writable)) if on) or "device-only"
        return f"MLTensor({self.dataType}, {self.shape}, {state})"


def _fits(shape: Sequence[int], want: Sequence[int | dict[str, Any]]) -> bool:
    """Whether a concrete shape fits a descriptor's: the same rank and fixed dimensions (the
    dynamic ones' values are checked by MLGraph.shapes)."""
    return len(shape) == len(want) and all(isinstance(w, dict) or w == d for d, w in zip(shape, want))


def _tensor_data(tensor: MLTensor, data: Any, what: str) -> Array:
    """`data` (an ndarray, or any bytes-like buffer) as the tensor's array: its byte length must be
    the tensor's, as the spec's "validate buffer with descriptor" asks."""
    np_type = _np(tensor.dataType)
    size = int(np.prod(tensor.shape, dtype=np.int64))
    if isinstance(data, np.ndarray):
        _check(data.dtype == np_type, f"{what}: an array of dtype {data.dtype}, the tensor is {tensor.dataType}")
        _check(data.size == size, f"{what}: {data.size} elements, the tensor {tensor.shape} has {size}")
        return np.ascontiguousarray(data).reshape(tensor.shape)
    try:
        raw = memoryview(data).cast("B")
    except TypeError:
        raise TypeError_(f"{what}: a numpy array or a bytes-like buffer, got {type(data).__name__}") from None
    _check(raw.nbytes == size * np_type.itemsize,
           f"{what}: {raw.nbytes} bytes, the tensor {tensor.dataType}{tensor.shape} has {size * np_type.itemsize}")
    return np.frombuffer(raw, dtype=np_type).reshape(tensor.shape)


class MLContext:
    """A device: "cpu" (llvm-cpu on local-task) or "gpu" (vulkan-spirv on Vulkan). The current
    spec chooses with `accelerated` (True asks for the GPU) and has no `deviceType`; the earlier
    `deviceType` is still accepted and wins when both are given."""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        options = {} if options is None else options
        _check(isinstance(options, dict), f"createContext() options must be a dict, got {type(options).__name__}")
        accelerated = options.get("accelerated", False)
        _check(isinstance(accelerated, bool), f"accelerated must be a boolean, got {accelerated!r}")
        self.deviceType = options.get("deviceType", "gpu" if accelerated else "cpu")  # noqa: N815
        self.powerPreference = options.get("powerPreference", "default")  # noqa: N815
        _check(self.deviceType in ("cpu", "gpu"), f"deviceType must be 'cpu' or 'gpu', got {self.deviceType!r}")
        _check(self.powerPreference in ("default", "high-performance", "low-power"),
               f"unknown powerPreference {self.powerPreference!r}")
        self.target: str
        self.device: str | None
        self.target, self.device = ("vulkan-spirv", "vulkan") if self.deviceType == "gpu" else ("llvm-cpu", None)
        self.driver = "vulkan" if self.deviceType == "gpu" else "local-task"
        self.accelerated = self.deviceType == "gpu"
        self._lost: str | None = None  # the MLContextLostInfo message once destroyed
        self._tensors: list[MLTensor] = []
        self._graphs: list[MLGraph] = []

    @property
    def lost(self) -> dict[str, str] | None:
        """The spec's `lost` promise, resolved: None while the context lives, then {"message"}."""
        return None if self._lost is None else {"message": self._lost}

    def _alive(self) -> None:
        _check(self._lost is None, "this MLContext was destroyed", InvalidStateError)

    def _model(self, graph: MLGraph, what: str) -> Model:
        """The graph's compiled model (compiled on first use)."""
        import estuary

        self._alive()
        _check(isinstance(graph, MLGraph) and graph._context is self,
               f"{what}() needs an MLGraph built by an MLGraphBuilder of this MLContext")
        _check(not graph._destroyed, f"{what}(): the MLGraph was destroyed", InvalidStateError)
        if graph._model is None:
            nn, graph._nn = graph._nn, None  # compiling lowers the module in place: it serves once
            try:
                art = estuary.compile(nn if nn is not None else dict(graph), target=self.target)
            finally:
                if nn is not None:
                    nn.close()  # its MLIR context and weights (NNModule.close)
            graph._model = estuary.load(art, device=self.device)
            self._graphs.append(graph)
        return graph._model

    def compute(self, graph: MLGraph, inputs: Mapping[str, npt.ArrayLike]) -> dict[str, Array]:
        """Run `graph` on `inputs` ({name: array}); returns {output name: ndarray} (the earlier
        spec's convenience: host arrays in, host arrays out)."""
        _check(isinstance(graph, MLGraph), "compute() needs an MLGraph built by an MLGraphBuilder of this MLContext")
        feeds = graph._feeds(inputs)
        return self._model(graph, "compute").run(feeds)

    # ------------------------------------------------------------ MLTensor

    def createTensor(self, descriptor: Mapping[str, Any]) -> MLTensor:  # noqa: N802
        """A zero-filled device tensor: {"dataType", "shape", "readable"?, "writable"?}."""
        self._alive()
        flags = {k: descriptor.get(k, False) for k in ("readable", "writable")} if isinstance(descriptor, dict) else {}
        for k, v in flags.items():
            _check(isinstance(v, bool), f"{k} must be a boolean, got {v!r}")
        tensor = MLTensor(self, _descriptor(descriptor), flags["readable"], flags["writable"], False)
        self._tensors.append(tensor)
        return tensor

    def createConstantTensor(self, descriptor: Mapping[str, Any], data: Any) -> MLTensor:  # noqa: N802
        """A device tensor holding `data` for good (neither readable nor writable); a builder's
        constant(tensor) takes it."""
        self._alive()
        tensor = MLTensor(self, _descriptor(descriptor), False, False, True)
        cast(Any, tensor._device).write(_tensor_data(tensor, data, "createConstantTensor() data"))
        self._tensors.append(tensor)
        return tensor

    def _mine(self, tensor: object, what: str) -> MLTensor:
        self._alive()
        _check(isinstance(tensor, MLTensor), f"{what} must be an MLTensor, got {type(tensor).__name__}")
        tensor = cast(MLTensor, tensor)
        _check(tensor._context is self, f"{what} is an MLTensor of another MLContext")
        tensor._live(what)
        return tensor

    def writeTensor(self, tensor: MLTensor, data: Any) -> None:  # noqa: N802
        """Copy `data` (an ndarray of the tensor's type and size, or a buffer of its byte length) in."""
        tensor = self._mine(tensor, "writeTensor() tensor")
        _check(tensor.writable, "writeTensor(): the MLTensor was not created writable")
        tensor._live("writeTensor() tensor").write(_tensor_data(tensor, data, "writeTensor() data"))

    def readTensor(self, tensor: MLTensor, out: Any = None) -> Array | None:  # noqa: N802
        """The tensor's contents as a new ndarray; with `out` (a writable buffer or ndarray of the
        tensor's byte length) copied there instead, returning None."""
        tensor = self._mine(tensor, "readTensor() tensor")
        _check(tensor.readable, "readTensor(): the MLTensor was not created readable")
        array = tensor._live("readTensor() tensor").read()
        if out is None:
            return array
        try:
            buffer: Any = out.reshape(-1).view(np.uint8) if isinstance(out, np.ndarray) else out
            target = memoryview(buffer).cast("B")
        except TypeError:
            raise TypeError_(f"readTensor() output: a writable buffer, got {type(out).__name__}") from None
        _check(not target.readonly, "readTensor() output buffer is read-only")
        _check(target.nbytes == array.nbytes, f"readTensor() output buffer has {target.nbytes} bytes, "
               f"the tensor has {array.nbytes}")
        target[:] = array.reshape(-1).view(np.uint8)
        return None

    def dispatch(self, graph: MLGraph, inputs: Mapping[str, MLTensor], outputs: Mapping[str, MLTensor]) -> None:
        """Run `graph` with its inputs and outputs in device tensors ({name: MLTensor}); nothing
        is copied to or from the host."""
        from estuary.mltensor import dispatch

        model = self._model(graph, "dispatch")
        shapes: dict[str, list[int]] = {}
        for kind, given, want in (("inputs", inputs, graph.inputDescriptors), ("outputs", outputs, graph._outputs)):
            _check(isinstance(given, dict), f"dispatch() {kind} must be a dict name -> MLTensor")
            missing, unknown = [n for n in want if n not in given], sorted(set(given) - set(want))
            _check(not missing and not unknown, f"dispatch() {kind} do not match the graph: missing {missing}, "
                   f"unexpected {unknown}; the graph has {list(want)}")
            if kind == "outputs":  # the inputs' concrete shapes give the outputs' (dynamic dimensions)
                shapes = graph.shapes({n: t.shape for n, t in inputs.items()})
            for name, desc in want.items():
                t = self._mine(given[name], f"dispatch() {kind[:-1]} {name!r}")
                fits = _fits(t.shape, desc["shape"]) if kind == "inputs" else t.shape == shapes[name]
                _check(t.dataType == desc["dataType"] and fits, f"dispatch() {kind[:-1]} {name!r} is a "
                       f"{t.dataType}{t.shape} tensor, the graph's is {desc['dataType']}"
                       f"{desc['shape'] if kind == 'inputs' else shapes[name]}")
        outs = list(outputs.values())
        _check(len({id(t) for t in outs}) == len(outs), "dispatch(): one MLTensor is given for two outputs")
        _check(not {id(t) for t in outs} & {id(t) for t in inputs.values()},
               "dispatch(): an MLTensor cannot be both an input and an output")
        _check(not any(t.constant for t in outs), "dispatch(): a constant MLTensor cannot be an output")
        dispatch(model, {n: t._live(n) for n, t in inputs.items()}, {n: t._live(n) for n, t in outputs.items()})

    def destroy(self) -> None:
        """Destroy the context with its tensors and graphs; `lost` then holds the reason."""
        if self._lost is not None:
            return
        for t in self._tensors:
            t.destroy()
        for g in self._graphs:
            g.destroy()
        self._tensors, self._graphs = [], []
        self._lost = "the MLContext was destroyed"

    def opSupportLimits(self) -> dict[str, Any]:  # noqa: N802
        """MLOpSupportLimits: per operation, the data types and rank range of each operand and the
        data types of the output(s), found by running each operation's type rules on sample
        operands: what the importer accepts, less what this context's target cannot compile."""
        return _support_limits(self.target)


class ML:
    """`navigator.ml`."""

    def createContext(self, options: Mapping[str, Any] | None = None) -> MLContext:  # noqa: N802
        return MLContext(options)


class _Operator:
    """One recorded builder call: method name, arguments as given (MLOperands inside), results."""

    def __init__(self, index: int, name: str, args: list[tuple[str, Any]], multi: bool) -> None:
        self.index, self.name, self.args, self.multi = index, name, args, multi
        self.results: list[MLOperand] = []


def _operands_in(v: object) -> list[MLOperand]:
    if isinstance(v, MLOperand):
        return [v]
    items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else []
    return [o for x in items for o in _operands_in(x)]


def _refs(v: object, names: Mapping[MLOperand, str]) -> Any:
    """An argument with its MLOperands replaced by their names (the JSON form)."""
    if isinstance(v, MLOperand):
        return names[v]
    if isinstance(v, (list, dict)):
        return {k: _refs(x, names) for k, x in v.items()} if isinstance(v, dict) else [_refs(x, names) for x in v]
    return v


class MLGraphBuilder:
    """Builds a graph call by call; `build(outputs)` seals it. Every operation of `registry.OPS` is
    a method taking the spec's parameters: `b.conv2d(input, filter, {"bias": operand, ...})`."""

    def __init__(self, context: MLContext) -> None:
        _check(isinstance(context, MLContext), "MLGraphBuilder needs an MLContext (ML().createContext())")
        context._alive()
        self._context = context
        # scratch module: types and validation; dropped once the graph is built
        self._graph: Graph | None = Graph("<MLGraphBuilder>", "webnn")
        self._inputs: dict[str, MLOperand] = {}
        self._constants: list[MLOperand] = []
        self._operators: list[_Operator] = []
        self._built = False

    def _check_state(self) -> Graph:
        """The scratch graph; InvalidStateError once the builder has built its graph."""
        _check(not self._built, "this MLGraphBuilder has already built its graph", InvalidStateError)
        return cast(Graph, self._graph)  # set until built

    def _own(self, v: object, what: str) -> MLOperand:
        _check(isinstance(v, MLOperand), f"{what} must be an MLOperand, got {type(v).__name__}")
        v = cast(MLOperand, v)
        _check(v._builder is self, f"{what} is an MLOperand of another MLGraphBuilder")
        return v

    def input(self, name: str, descriptor: Mapping[str, Any]) -> MLOperand:
        graph = self._check_state()
        _check(isinstance(name, str) and name, f"input name must be a non-empty string, got {name!r}")
        _check(name not in self._inputs, f"the graph already has an input named {name!r}")
        desc, shape = _input_descriptor(descriptor, graph.symbols, name)
        value = graph.input(name, TensorSpec(shape, four_bit.storage(desc["dataType"])))
        self._inputs[name] = MLOperand(self, four_bit.mark(graph, value, desc["dataType"]))
        return self._inputs[name]

    def constant(self, descriptor: str | Mapping[str, Any] | MLTensor, value: Any = None) -> MLOperand:
        """constant(descriptor, data): an ndarray of the descriptor's type, a list of numbers or a
        bytes-like buffer of the descriptor's byte length. constant(dataType, number): a scalar.
        constant(tensor): the contents of a constant MLTensor."""
        graph = self._check_state()
        if isinstance(descriptor, MLTensor):  # constant(tensor): a constant MLTensor of this context
            tensor = descriptor
            _check(tensor.constant and tensor._context is self._context,
                   "constant(tensor) takes a constant MLTensor (createConstantTensor) of the builder's MLContext")
            array = tensor._live("constant(tensor)").read()
            desc = dict(tensor._desc)
            v = graph.constant(array, TensorSpec(desc["shape"], four_bit.storage(desc["dataType"])), name="constant")
            four_bit.mark(graph, v, desc["dataType"])
            self._constants.append(MLOperand(self, v, data=array))
            return self._constants[-1]
        if isinstance(descriptor, str):
            desc = _descriptor({"dataType": descriptor, "shape": []})
            array = _cast_number(value, desc["dataType"])
        else:
            desc = _descriptor(descriptor)
            array = _constant_data(desc, value)
        v = graph.constant(array, TensorSpec(desc["shape"], four_bit.storage(desc["dataType"])), name="constant")
        four_bit.mark(graph, v, desc["dataType"])
        self._constants.append(MLOperand(self, v, data=array))
        return self._constants[-1]

    def __getattr__(self, method: str) -> Callable[..., MLOperand | list[MLOperand]]:
        if method.startswith("_") or method not in OPS:
            raise AttributeError(f"MLGraphBuilder has no operation {method!r}")

        def call(*args: Any, **kwargs: Any) -> MLOperand | list[MLOperand]:
            return self._call(OPS[method], args, kwargs)

        call.__name__, call.__doc__ = method, f"{method}({', '.join(OPS[method].params)})"
        return call

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {str(name) for name in OPS})  # WebNN names are strings

    def _call(self, op: WebNNOp, args: Sequence[Any], kwargs: Mapping[str, Any]) -> MLOperand | list[MLOperand]:
        """Make the mapping call the JSON loader makes (GraphLoader._call) and record it."""
        graph = self._check_state()
        _check(len(args) <= len(op.params), f"{op.name}() takes at most {len(op.params)} arguments "
               f"({', '.join(op.params)}), got {len(args)}")
        given = dict(zip(op.params, args))
        for k, v in kwargs.items():
            _check(k in op.params and k not in given, f"{op.name}() got an unexpected or repeated argument {k!r}")
            given[k] = v
        index, options = len(self._operators), given.get("options")
        label = (isinstance(options, dict) and options.get("label")) or f"{op.name}_{index}"
        c = OpContext(graph, str(op.name), label)
        values: list[Any] = []
        recorded: list[tuple[str, Any]] = []
        for p in op.params:
            _check(p in given or p in op.defaults or p == "options", f"{op.name}() is missing argument {p!r} "
                   f"({', '.join(op.params)})")
            v = given[p] if p in given else op.defaults.get(p, {})
            what = f"{op.name}() argument {p!r}"
            if p in op.operands:
                v = [self._own(x, what) for x in v] if isinstance(v, (list, tuple)) else self._own(v, what)
                value = [x._value for x in v] if isinstance(v, list) else v._value
            elif p == "options":
                v = {k: self._own(x, f"{op.name}() option {k!r}") if k in op.option_operands and x is not None
                     else _plain(x, f"{op.name}() option {k!r}") for k, x in options_of(c, op, v).items()}
                value = {k: x._value if isinstance(x, MLOperand) else x for k, x in v.items()}
            else:
                v = value = _plain(v, what)
                if p in _SHAPE_PARAMETERS and isinstance(v, list):  # MLOperand.shape entries given back
                    v = value = [dynamic.shape_entry(x) for x in v]
            values.append(value)
            if p in given:
                recorded.append((p, v))
        result = op.fn(c, *values)
        record = _Operator(index, str(op.name), recorded, isinstance(result, list))
        record.results = [MLOperand(self, r, record) for r in (result if record.multi else [result])]
        self._operators.append(record)
        return list(record.results) if record.multi else record.results[0]

    def build(self, outputs: Mapping[str, MLOperand]) -> MLGraph:
        """Seal the graph: the named outputs and the operators, inputs and constants they need."""
        self._check_state()
        _check(isinstance(outputs, dict) and outputs, "build() needs a non-empty dict {name: MLOperand}")
        for name, operand in outputs.items():
            _check(isinstance(name, str) and name, f"output names must be non-empty strings, got {name!r}")
            self._own(operand, f"output {name!r}")
            _check(operand._producer is not None, f"output {name!r} is a graph input or constant; outputs "
                   "must be operation results (use identity())")
        used: set[MLOperand] = set()
        stack = list(outputs.values())
        while stack:  # walk back from the outputs, as the spec's build steps do
            o = stack.pop()
            if o not in used:
                used.add(o)
                stack += _operands_in(o._producer.args) if o._producer else []
        inputs = {n: o for n, o in self._inputs.items() if o in used}
        clash = sorted(set(outputs) & set(inputs))
        _check(not clash, f"output name(s) {clash} are also input names; the WebNN JSON form has one name space")
        names, taken = {o: n for n, o in inputs.items()}, set(outputs) | set(inputs)

        def fresh(base: str) -> str:  # internal names: stable (creation index), never a user's name
            while base in taken:
                base += "_"
            taken.add(base)
            return base

        for name, o in outputs.items():
            names.setdefault(o, name)
        doc: dict[str, Any] = {"inputs": {n: {"descriptor": dict(o._desc)} for n, o in inputs.items()}, "operators": [],
               "outputs": list(outputs)}
        for i, o in enumerate(self._constants):
            if o in used:
                names[o] = fresh(f"constant_{i}")
                doc["inputs"][names[o]] = {"descriptor": dict(o._desc), "data": o._data, "constant": True}
        for rec in self._operators:
            if any(r in used for r in rec.results):
                for k, r in enumerate(rec.results):
                    if r not in names:
                        names[r] = fresh(f"{rec.name}_{rec.index}" + (f"_{k}" if rec.multi else ""))
                outs = [names[r] for r in rec.results]
                doc["operators"].append({"name": rec.name, "arguments": [{p: _refs(v, names)} for p, v in rec.args],
                                         "outputs": outs if rec.multi else outs[0]})
        for name, o in outputs.items():  # an operand named twice: the other names through identity
            if names[o] != name:
                doc["operators"].append({"name": "identity", "arguments": [{"input": names[o]}], "outputs": name})
        graph = MLGraph(doc, self._context, {n: dict(o._desc) for n, o in outputs.items()}, load_graph(doc))
        self._built = True
        self._free_scratch()
        return graph

    def _free_scratch(self) -> bool:
        """Once built, the scratch module has served: drop the operands' values in it and free
        its MLIR context and the constants it holds (`free_session`), which otherwise lived as
        long as the process."""
        for o in [*self._inputs.values(), *self._constants, *(r for rec in self._operators for r in rec.results)]:
            o._value = None
        session, self._graph = cast(Graph, self._graph).session, None
        return free_session(session)


def _constant_data(desc: MLOperandDescriptor, value: Any) -> Array:
    """Constant data as an array of the descriptor's type and shape (the spec's "validate buffer")."""
    np_type, size = _np(desc["dataType"]), int(np.prod(desc["shape"]))
    if isinstance(value, (bytes, bytearray, memoryview)):
        _check(len(bytes(value)) == size * np_type.itemsize,
               f"constant buffer has {len(bytes(value))} bytes, the descriptor needs {size * np_type.itemsize}")
        return np.frombuffer(bytes(value), dtype=np_type).reshape(desc["shape"])
    raw = np.asarray(value)
    _check(raw.dtype == np_type if isinstance(value, np.ndarray) else raw.dtype.kind in "biuf",
           f"constant data of dtype {raw.dtype} does not match the descriptor's {desc['dataType']}")
    array = raw.astype(np_type)  # a copy, as the spec takes one
    _check(np_type.kind == "f" or np.array_equal(array, raw), f"constant data does not fit {desc['dataType']}")
    lo_hi = four_bit.value_range(desc["dataType"])
    _check(lo_hi is None or not array.size or lo_hi[0] <= array.min() and array.max() <= lo_hi[1],
           f"constant data does not fit {desc['dataType']}")
    _check(array.size == size, f"constant data has {array.size} elements, the descriptor needs {size}")
    return array.reshape(desc["shape"])


# opSupportLimits runs every registered mapping on small operands in a scratch graph. Most ops
# take operands of one shape (rank 2, or 4 for conv/pool); these need their own (hiddenSize 1).
_PROBE_SHAPES: dict[str, dict[str, list[int]]] = {
    "batchNormalization": {"input": [2, 2, 2, 2], "mean": [2], "variance": [2]},
    "gru": {"input": [1, 1, 2], "weight": [1, 3, 2], "recurrentWeight": [1, 3, 1]},
    "lstm": {"input": [1, 1, 2], "weight": [1, 4, 2], "recurrentWeight": [1, 4, 1]},
    "gruCell": {"input": [1, 2], "weight": [3, 2], "recurrentWeight": [3, 1], "hiddenState": [1, 1]},
    "lstmCell": {"input": [1, 2], "weight": [4, 2], "recurrentWeight": [4, 1], "hiddenState": [1, 1], "cellState": [1, 1]},
    "scatterND": {"input": [2, 2], "indices": [2, 1], "updates": [2, 2]},
}
MAX_RANK = 8  # the highest operand rank opSupportLimits offers (tested up to it)
# operands that take int4 / uint4 (as int8 / uint8 values; four_bit.py)
_FOUR_BIT_OPERANDS = {"dequantizeLinear": ("input", "zeroPoint"), "quantizeLinear": ("zeroPoint", "output")}
MAX_TENSOR_BYTES = MAX_ELEMENTS * 8
_LIMITS: dict[str, Any] | None = None


def _sample(param: str, shape: Sequence[dims.Value]) -> Any:
    """A valid value of a non-operand parameter, for operands of `shape` (a dynamic dimension as
    the {"name"} entry shape arguments take)."""
    zeros = [0] * len(shape)
    entries = dynamic.ml_shape(list(shape))
    return {"axis": 0, "newShape": entries, "starts": zeros, "sizes": entries, "splits": 1, "beginningPadding": zeros,
            "endingPadding": zeros, "steps": 1, "hiddenSize": 1, "type": "float32", "repetitions": [1] * len(shape)}[param]


def _probe(graph: Graph, op: WebNNOp, shapes: Mapping[str, Sequence[dims.Value]], types: Mapping[str, str],
           extra: Mapping[str, Any]) -> tuple[list[str], bool] | None:
    """(output dtypes, multi-output?) of one mapping call with operands of `types`, or None."""
    try:
        args = []
        for p in op.params:
            if p in extra or p not in op.operands:
                args.append(extra[p] if p in extra else {} if p == "options" else _sample(p, next(iter(shapes.values()))))
            else:
                v = graph.input(p, TensorSpec(shapes[p], types[p]))
                args.append([v, v] if p == "inputs" else v)  # concat's inputs: the one list parameter
        result = op.fn(OpContext(graph, str(op.name), "probe"), *args)
    except Exception:  # any rejection means "not supported"
        return None
    return [spec_of(r).dtype for r in (result if isinstance(result, list) else [result])], isinstance(result, list)


def _op_limits(graph: Graph, op: WebNNOp) -> dict[str, Any] | None:
    """{operand: {"dataTypes"}, ..., "output(s)": ...} for one op (None if no probe fits). An
    operand's types are those that work with all operands alike or with one operand changed (so
    gather's indices and where's condition show up). Option operands (bias, scale, ...) take the
    input's type in every WebNN op: they get the first operand's types."""
    params = [p for p in op.params if p in op.operands]
    variants: list[dict[str, Any]] = [{}]
    if "type" in op.params:
        variants = [{"type": t} for t in dtypes.ALL]
    elif "outputDataType" in (op.options or ()):
        variants = [{"options": {"outputDataType": t}} for t in dtypes.ALL]
    everyone = [dict.fromkeys(params, t) for t in dtypes.ALL]
    one_off = [{**d, q: s} for d in everyone for q in params for s in dtypes.ALL if len(params) > 1 and s != d[q]]
    fixed = str(op.name) in _PROBE_SHAPES
    for shapes in [_PROBE_SHAPES[str(op.name)]] if fixed else \
            [dict.fromkeys(params, shape) for shape in ([2, 2], [2, 2, 2, 2])]:
        accepted: dict[str, set[str]] = {p: set() for p in params}
        outputs: set[str] = set()
        multi = False
        working: tuple[Mapping[str, str], Mapping[str, Any]] | None = None
        for types in everyone + one_off:
            for extra in variants:
                found = _probe(graph, op, shapes, types, extra)
                if found is None:
                    continue
                working = working or (types, extra)
                outputs.update(found[0])
                multi = found[1]
                for p in params:
                    accepted[p].add(types[p])
        if working is not None:
            ranks = [len(next(iter(shapes.values())))]
            if not fixed and len(ranks) == 1:  # one rank for every operand: which ranks work
                ranks = [r for r in range(MAX_RANK + 1)
                         if _probe(graph, op, dict.fromkeys(params, [2] * r), working[0], working[1]) is not None]
            rank_of = {p: ({"min": len(shapes[p]), "max": len(shapes[p])} if fixed else
                           {"min": min(ranks), "max": max(ranks)}) for p in params}

            def listed(ts: set[str], p: str) -> dict[str, Any]:
                return {"dataTypes": [t for t in dtypes.ALL if t in ts], "rankRange": dict(rank_of[p])}

            limits = {p: listed(accepted[p], p) for p in params}
            limits.update({p: {"dataTypes": limits[params[0]]["dataTypes"]} for p in sorted(op.option_operands)})
            limits["outputs" if multi else "output"] = {"dataTypes": [t for t in dtypes.ALL if t in outputs]}
            return limits
    return None


# Operations whose int64 / uint64 forms IREE's vulkan-spirv target cannot compile: Estuary's Vulkan
# target has no Int64 capability, so 64-bit integers are emulated with 32-bit pairs, which covers
# add, mul, comparisons, most reductions, casts and data movement but not these. Found by building
# the operations whose limits list int64 / uint64 with such operands on lavapipe (2026-11-27).
NO_64BIT_ON_GPU = frozenset({"abs", "div", "reduceL1"})
_WIDE = ("int64", "uint64")


def _support_limits(target: str = "llvm-cpu") -> dict[str, Any]:
    """MLOpSupportLimits for `target`, computed once (it probes every mapping), returned as a fresh
    copy; GPU targets drop the 64-bit integer forms they cannot compile."""
    limits = copy.deepcopy(_importer_limits())
    if target != "llvm-cpu":
        for name in NO_64BIT_ON_GPU & set(limits):
            for operand in limits[name].values():
                operand["dataTypes"] = [t for t in operand["dataTypes"] if t not in _WIDE]
    return limits


_DYNAMIC: list[str] | None = None


def dynamic_operations() -> list[str]:
    """The operations that take operands with dynamic dimensions (their nn ops' type rules and
    lowering do: `dynamic=True`), found by calling each mapping with its first operand's first
    (or last) dimension dynamic, in a configuration that works with fixed shapes. The JS builder refuses a
    dynamic operand of any other operation, so both sides refuse alike."""
    global _DYNAMIC
    if _DYNAMIC is None:
        graph = Graph("<dynamic operations>", "webnn")
        _DYNAMIC = []
        for i, op in enumerate(OPS.values()):
            params = [p for p in op.params if p in op.operands]
            fixed = _fixed_probe(graph, op, params)
            if fixed is None or not fixed[0][params[0]]:
                continue
            shapes, types = fixed
            symbol = dims.Dim.symbol(f"probe{i}", 1, 8)  # its own: a probe may bind it (to 2)
            first = shapes[params[0]]
            # split cuts the first axis, which must stay fixed; quantizeLinear's scale must be 1 there
            for axis, ones in ((0, False), (len(first) - 1, False), (0, True)):
                grown: dict[str, list[dims.Value]] = {
                    p: [1 if ones and a == axis and len(sh) == len(first) else d for a, d in enumerate(sh)]
                    for p, sh in shapes.items()}
                grown[params[0]] = [symbol if a == axis else d for a, d in enumerate(first)]
                if _probe(graph, op, grown, types, {}) is not None:
                    _DYNAMIC.append(str(op.name))
                    break
    return list(_DYNAMIC)


def _fixed_probe(graph: Graph, op: WebNNOp, params: list[str]
                 ) -> tuple[dict[str, list[int]], dict[str, str]] | None:
    """(shapes, types) of operands with which the mapping accepts a call, or None."""
    if not params:
        return None
    candidates = [_PROBE_SHAPES[str(op.name)]] if str(op.name) in _PROBE_SHAPES else \
        [dict.fromkeys(params, shape) for shape in ([2, 2], [2, 2, 2, 2])]
    everyone = [dict.fromkeys(params, t) for t in dtypes.ALL]
    one_off = [{**d, q: t} for d in everyone for q in params[1:] for t in dtypes.ALL if t != d[q]]
    for shapes in candidates:
        for types in everyone + one_off:  # one operand's type may differ (quantizeLinear's zeroPoint)
            if _probe(graph, op, shapes, types, {}) is not None:
                return {p: list(shapes[p]) for p in params}, types
    return None


def _importer_limits() -> dict[str, Any]:
    """What the importer accepts, probed once (not copied: callers copy)."""
    global _LIMITS
    if _LIMITS is None:
        graph = Graph("<opSupportLimits>", "webnn")
        # graph inputs, constants and outputs list Estuary's storage types; int4 / uint4 show up
        # where an operation takes them (the Python builder accepts them as int8 / uint8 values)
        every: dict[str, Any] = {"dataTypes": list(dtypes.ALL), "rankRange": {"min": 0, "max": MAX_RANK}}
        # a 4-bit constant is usable where an operation lists int4 / uint4 (dequantizeLinear)
        constant = {**every, "dataTypes": [*dtypes.ALL, *four_bit.FOUR_BIT]}
        _LIMITS = {"preferredInputLayout": "nchw", "maxTensorByteLength": MAX_TENSOR_BYTES,
                   "input": every, "constant": constant, "output": every}
        _LIMITS.update({str(op.name): lim for op in OPS.values() if (lim := _op_limits(graph, op)) is not None})
        for op_name, operands in _FOUR_BIT_OPERANDS.items():  # int4 / uint4 ride on int8 / uint8
            for p in operands:
                if op_name in _LIMITS and p in _LIMITS[op_name]:
                    _LIMITS[op_name][p]["dataTypes"] += list(four_bit.FOUR_BIT)
    return _LIMITS
