"""The WebNN API in Python, mirroring the JS interfaces so WebNN code ports line by line.

    from estuary import webnn
    ctx = webnn.ML().createContext({"deviceType": "cpu"})        # "gpu" runs on Vulkan
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 32, 32]})
    w = b.constant({"dataType": "float32", "shape": [8, 3, 3, 3]}, weights)
    y = b.relu(b.conv2d(x, w, {"padding": [1, 1, 1, 1]}))
    graph = b.build({"y": y})
    outs = ctx.compute(graph, {"x": arr})                          # {"y": ndarray}

Every MLGraphBuilder operation comes from the importer's registry (one registration per op), so
the builder validates exactly like the JSON importer. A built MLGraph *is* the JSON document
(a dict), so `estuary.compile(graph)` and `graph.to_json()` work on it.
"""
import itertools
import json
import os

import numpy as np

from estuary import dtypes
from estuary.errors import EstuaryError


class TypeError_(EstuaryError):
    """The JS API's TypeError: invalid arguments."""


class InvalidStateError(EstuaryError):
    """The JS API's InvalidStateError: the builder was already used to build a graph."""


def _descriptor(desc):
    if not isinstance(desc, dict) or "dataType" not in desc or "shape" not in desc:
        raise TypeError_(f"an MLOperandDescriptor needs 'dataType' and 'shape', got {desc!r}")
    if desc["dataType"] not in dtypes.NUMPY:
        raise TypeError_(f"unsupported dataType {desc['dataType']!r}; one of {list(dtypes.NUMPY)}")
    shape = list(desc["shape"])
    if not all(isinstance(d, (int, np.integer)) and d > 0 for d in shape):
        raise TypeError_(f"shape {shape} must be a list of positive integers")
    return {"dataType": desc["dataType"], "shape": [int(d) for d in shape]}


class MLOperand:
    """An operand of one builder's graph: `.dataType`, `.shape`."""

    def __init__(self, builder, name, value):
        self._builder = builder
        self._name = name
        self._value = value
        spec = builder._graph_spec(value)
        self._desc = {"dataType": spec.dtype, "shape": list(spec.shape)}

    @property
    def dataType(self):  # noqa: N802 (WebNN spelling)
        return self._desc["dataType"]

    @property
    def shape(self):
        return list(self._desc["shape"])

    def __repr__(self):
        return f"MLOperand({self._name!r}, {self.dataType}{self.shape})"


class MLGraph(dict):
    """A built graph: the WebNN JSON document, plus its input/output descriptors."""

    @property
    def inputDescriptors(self):  # noqa: N802
        return {n: e["descriptor"] for n, e in self["inputs"].items() if not e.get("constant")}

    def to_json(self, path=None, weights_file=None):
        """The JSON text; with `path`, write it there (constants to `weights_file` beside it if given)."""
        doc = json.loads(json.dumps(self, default=_jsonable))
        if path is not None and weights_file is not None:
            blob = bytearray()
            for name, entry in doc["inputs"].items():
                if entry.get("constant"):
                    arr = np.asarray(self["inputs"][name]["data"], dtype=dtypes.to_numpy(entry["descriptor"]["dataType"]))
                    entry["data"] = {"file": os.path.basename(weights_file), "byteOffset": len(blob)}
                    blob += arr.astype(arr.dtype.newbyteorder("<")).tobytes()
            with open(os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(weights_file)), "wb") as f:
                f.write(bytes(blob))
        text = json.dumps(doc)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text


def _jsonable(v):
    if isinstance(v, np.ndarray):
        return v.reshape(-1).tolist()
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"not JSON serializable: {type(v).__name__}")


class MLContext:
    """A device: "cpu" (llvm-cpu, local-task) or "gpu" (vulkan-spirv on Vulkan)."""

    def __init__(self, options=None):
        options = options or {}
        self.deviceType = options.get("deviceType", "cpu")  # noqa: N815
        if self.deviceType not in ("cpu", "gpu"):
            raise TypeError_(f"deviceType must be 'cpu' or 'gpu', got {self.deviceType!r}")

    @property
    def target(self):
        return "vulkan-spirv" if self.deviceType == "gpu" else "llvm-cpu"

    @property
    def device(self):
        return "vulkan" if self.deviceType == "gpu" else None

    def compute(self, graph, inputs, outputs=None):
        """Run `graph` on `inputs` ({name: ndarray}); returns {output name: ndarray}."""
        import estuary

        if not isinstance(graph, MLGraph):
            raise TypeError_("compute() takes an MLGraph built by an MLGraphBuilder")
        model = graph.__dict__.get("_model")
        if model is None or graph.__dict__.get("_model_device") != self.deviceType:
            model = estuary.load(estuary.compile(graph, target=self.target, format="webnn"), device=self.device)
            graph.__dict__.update(_model=model, _model_device=self.deviceType)
        return model.run({k: np.asarray(v) for k, v in inputs.items()})

    def opSupportLimits(self):  # noqa: N802
        """MLOpSupportLimits: data types accepted per operation and operand (probed from the type rules)."""
        return dict(_support_limits())


class ML:
    def createContext(self, options=None):  # noqa: N802
        return MLContext(options)


_counter = itertools.count()


class MLGraphBuilder:
    """Builds a graph operation by operation; `build(outputs)` seals it."""

    def __init__(self, context):
        from estuary.dialects.graph import Graph

        if not isinstance(context, MLContext):
            raise TypeError_("MLGraphBuilder needs an MLContext")
        self.context = context
        self._graph = Graph("<webnn builder>", "webnn")
        self._doc = {"inputs": {}, "operators": []}
        self._built = False
        self._names = set()

    # ------------------------------------------------------------ helpers

    def _graph_spec(self, value):
        from estuary.dialects.graph import spec_of

        return spec_of(value)

    def _check_state(self):
        if self._built:
            raise InvalidStateError("this MLGraphBuilder has already built a graph")

    def _fresh(self, prefix):
        while True:
            name = f"{prefix}{next(_counter)}"
            if name not in self._names:
                self._names.add(name)
                return name

    def _operand(self, v, what):
        if not isinstance(v, MLOperand):
            raise TypeError_(f"{what} must be an MLOperand, got {type(v).__name__}")
        if v._builder is not self:
            raise TypeError_(f"{what} belongs to another MLGraphBuilder")
        return v

    # ------------------------------------------------------------ inputs and constants

    def input(self, name, descriptor):
        self._check_state()
        desc = _descriptor(descriptor)
        if not isinstance(name, str) or not name or name in self._names:
            raise TypeError_(f"input name {name!r} must be a new non-empty string")
        self._names.add(name)
        from estuary.dialects.core import TensorSpec

        value = self._graph.input(name, TensorSpec(desc["shape"], desc["dataType"]))
        self._doc["inputs"][name] = {"descriptor": desc}
        return MLOperand(self, name, value)

    def constant(self, descriptor_or_type, value):
        """constant(descriptor, buffer) or constant(dataType, number) (a scalar)."""
        from estuary.dialects.core import TensorSpec

        self._check_state()
        if isinstance(descriptor_or_type, str):
            desc = _descriptor({"dataType": descriptor_or_type, "shape": []})
        else:
            desc = _descriptor(descriptor_or_type)
        np_type = dtypes.to_numpy(desc["dataType"])
        if isinstance(value, (bytes, bytearray, memoryview)):
            array = np.frombuffer(bytes(value), dtype=np_type)
        else:
            array = np.asarray(value)
        if array.size != int(np.prod(desc["shape"], dtype=np.int64)):
            raise TypeError_(f"constant data has {array.size} elements, the descriptor needs "
                             f"{int(np.prod(desc['shape']))}")
        array = array.astype(np_type).reshape(desc["shape"])
        name = self._fresh("_constant")
        v = self._graph.constant(array, TensorSpec(desc["shape"], desc["dataType"]), name=name)
        self._doc["inputs"][name] = {"descriptor": desc, "data": array, "constant": True}
        return MLOperand(self, name, v)

    # ------------------------------------------------------------ operations

    def __getattr__(self, method):
        from estuary.importers.webnn import OPS

        if method.startswith("_") or method not in OPS:
            raise AttributeError(f"MLGraphBuilder has no operation {method!r}")
        spec = OPS[method]

        def call(*args):
            return self._call(spec, list(args))

        call.__name__ = method
        return call

    def _call(self, spec, args):
        from estuary.importers.webnn.registry import OpContext, options_of

        self._check_state()
        if len(args) > len(spec.params):
            raise TypeError_(f"{spec.name}() takes at most {len(spec.params)} arguments ({', '.join(spec.params)})")
        for p in spec.params[len(args):]:
            if p == "options":
                args.append({})
            elif p in spec.defaults:
                args.append(spec.defaults[p])
            else:
                raise TypeError_(f"{spec.name}() is missing argument {p!r}")
        label = self._fresh(f"_{spec.name}")
        c = OpContext(self._graph, spec.name, label)
        values, recorded = [], []
        for p, a in zip(spec.params, args):
            if p in spec.operands:
                if isinstance(a, (list, tuple)):
                    ops = [self._operand(x, p) for x in a]
                    values.append([o._value for o in ops])
                    recorded.append({p: [o._name for o in ops]})
                else:
                    o = self._operand(a, p)
                    values.append(o._value)
                    recorded.append({p: o._name})
            elif p == "options":
                opts = dict(options_of(c, spec, a))
                rec = dict(opts)
                for k in spec.option_operands:
                    if opts.get(k) is not None:
                        o = self._operand(opts[k], f"options.{k}")
                        opts[k], rec[k] = o._value, o._name
                values.append(opts)
                if rec:
                    recorded.append({"options": rec})
            else:
                values.append(a)
                recorded.append({p: a})
        result = spec.fn(c, *values)
        results = result if isinstance(result, list) else [result]
        names = [self._fresh("_t") for _ in results]
        self._doc["operators"].append({"name": spec.name, "arguments": recorded,
                                       "outputs": names if isinstance(result, list) else names[0]})
        operands = [MLOperand(self, n, v) for n, v in zip(names, results)]
        return operands if isinstance(result, list) else operands[0]

    # ------------------------------------------------------------ build

    def build(self, outputs):
        self._check_state()
        if not isinstance(outputs, dict) or not outputs:
            raise TypeError_("build() needs a non-empty {name: MLOperand} record")
        doc = {"inputs": dict(self._doc["inputs"]), "operators": [], "outputs": []}
        renames = {}
        for name, operand in outputs.items():
            if not isinstance(name, str) or not name:
                raise TypeError_("output names must be non-empty strings")
            self._operand(operand, f"output {name!r}")
            if operand._name in self._doc["inputs"]:
                raise TypeError_(f"output {name!r} is a graph input or constant (use identity)")
            if name in self._doc["inputs"]:
                raise TypeError_(f"output name {name!r} is already the name of an input")
            renames[operand._name] = name
        if len(set(renames.values())) != len(outputs):
            raise TypeError_("each output must be a distinct operand")
        for entry in self._doc["operators"]:
            entry = dict(entry)
            outs = entry["outputs"]
            entry["outputs"] = [renames.get(o, o) for o in outs] if isinstance(outs, list) else renames.get(outs, outs)
            entry["arguments"] = _rename_args(entry["arguments"], renames)
            doc["operators"].append(entry)
        doc["outputs"] = list(outputs)
        self._built = True
        return MLGraph(doc)


def _rename_args(arguments, renames):
    def walk(v):
        if isinstance(v, str):
            return renames.get(v, v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return [walk(a) for a in arguments]


_LIMITS = None


# sample values for attributes without defaults, so every type rule can be probed on [2, 2] operands
_PROBE_ATTRS = {"new_shape": [4], "axis": 1, "to": "float32", "starts": [0, 0], "sizes": [1, 1], "splits": [1, 1],
                "beginning_padding": [0, 0], "ending_padding": [0, 0]}


def _snake(name):
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in name)


def _support_limits():
    """MLOpSupportLimits keyed by WebNN method: the data types each op's type rule accepts for
    [2, 2] operands (cached). Ops that need other ranks (conv, pooling, recurrent) are listed with
    the types their rule accepts at their own rank."""
    global _LIMITS
    if _LIMITS is None:
        from estuary.dialects import core
        from estuary.importers.webnn import OPS

        limits = {"preferredInputLayout": "nchw", "input": {"dataTypes": list(dtypes.ALL)},
                  "constant": {"dataTypes": list(dtypes.ALL)}, "output": {"dataTypes": list(dtypes.ALL)}}
        for method in OPS:
            opdef = core.get(_snake(method))
            if opdef is None:
                continue
            results = {dt: _accepts(core, opdef, dt) for dt in dtypes.ALL}
            ok = [dt for dt, out in results.items() if out]
            if ok:
                outs = [dt for dt in dtypes.ALL if any(dt in out for out in results.values() if out)]
                limits[method] = {"input": {"dataTypes": ok}, "output": {"dataTypes": outs}}
        _LIMITS = limits
    return _LIMITS


def _accepts(core, opdef, dt):
    attrs = {k: _PROBE_ATTRS[k] for k, kind in opdef.attrs.items() if kind.default is core.REQUIRED and k in _PROBE_ATTRS}
    for shape in ((2, 2), (1, 2, 4, 4)):
        specs = [None if o.endswith("?") else [core.TensorSpec(shape, dt)] if o.endswith("*")
                 else core.TensorSpec(shape, dt) for o in opdef.operands]
        try:
            return {r.dtype for r in opdef.infer_specs(specs, opdef.complete_attrs(attrs))}
        except (core.VerifyError, TypeError, ValueError, IndexError):
            continue
    return None
