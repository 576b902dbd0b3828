"""WebNN graphs in JSON (the web-platform-tests conformance layout) -> `nn` modules.

    {"inputs": {"x": {"descriptor": {"shape": [1, 3], "dataType": "float32"}},
                "w": {"descriptor": {...}, "data": [...], "constant": true}},
     "operators": [{"name": "add", "arguments": [{"a": "x"}, {"b": "w"}], "outputs": "y"}],
     "outputs": ["y"]}                      # or the keys of "expectedOutputs"

A top level of {"name": ..., "graph": {...}} is accepted too. Constant data may live in a
binary side file: "data": {"file": "w.bin", "byteOffset": 0}, resolved inside the JSON's folder.
An input's shape may hold dynamic dimensions, {"name": "seq", "maxSize": 128} (WebNN's
MLDynamicDimension; importers/webnn/dynamic.py, docs/dynamic-shapes.md).
"""
import json
import os

import numpy as np

import estuary.dialects  # noqa: F401
from estuary.base import dims, dtypes
from estuary.dialects.core import TensorSpec
from estuary.dialects.graph import Graph
from estuary.base.errors import ModelImportError, UnsupportedOpError, VerificationError, where
from estuary.importers.webnn import dynamic, four_bit
from estuary.importers.webnn.converter import OpContext, options_of
from estuary.importers.webnn.ops import OPS

OPS.load()  # the Python MLGraphBuilder (estuary.webnn) offers every registered method

MAX_ELEMENTS = 1 << 31  # refuse absurd declared shapes before allocating anything


def load_graph(source, base_dir=None, session=None):
    """Import a WebNN JSON file path (or an already parsed dict) into an NNModule, built in a new
    IREE compiler session or the one given (a caller importing many small graphs shares one)."""
    if isinstance(source, dict):
        doc, path = source, "<webnn graph>"
        base_dir = base_dir or os.getcwd()
    else:
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f, object_pairs_hook=_unique_keys)
        except _DuplicateKey as e:
            raise ModelImportError(f"{path}: {e}") from None
        except FileNotFoundError:
            raise ModelImportError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ModelImportError(f"{path}: cannot read ({e})") from None
        except json.JSONDecodeError as e:
            raise ModelImportError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        base_dir = os.path.dirname(os.path.abspath(path))
    return GraphLoader(doc, path, base_dir, session).load()


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs):
    """A JSON object as a dict, refusing a key given twice (json.load would keep the last one
    silently: two inputs or two constants of one name would become one)."""
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(f"name {key!r} appears twice in one object")
        seen[key] = value
    return seen


def _descriptor(path, name, entry, symbols=None):
    """The operand's TensorSpec. Input shapes (`symbols`: those declared so far, name -> Sym) may
    hold MLDynamicDimensions (importers/webnn/dynamic.py); constants (`symbols` None) may not."""
    desc = entry.get("descriptor") if isinstance(entry, dict) else None
    if not isinstance(desc, dict):
        raise ModelImportError(f"{path}: operand {name!r} has no 'descriptor'")
    dtype = desc.get("dataType", desc.get("type"))
    shape = desc.get("shape", desc.get("dimensions"))
    if not isinstance(dtype, str) or (dtype not in dtypes.NUMPY and dtype not in four_bit.FOUR_BIT):
        raise ModelImportError(f"{path}: operand {name!r} has unsupported dataType {dtype!r}; "
                               f"expected one of {list(dtypes.NUMPY) + list(four_bit.FOUR_BIT)}")
    if isinstance(shape, list) and symbols is None and any(dynamic.is_dynamic_entry(d) for d in shape):
        raise ModelImportError(f"{path}: constant {name!r} has the dynamic shape {shape!r}; constants take "
                               "fixed shapes (a list of positive integers)")
    if isinstance(shape, list) and symbols is not None and any(dynamic.is_dynamic_entry(d) for d in shape):
        try:
            shape = [dynamic.input_dimension(d, name, i, symbols) for i, d in enumerate(shape)]
        except ValueError as e:
            raise ModelImportError(f"{path}: input {name!r}: {e}") from None
    elif not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                                                for d in shape):
        dynamic_form = "" if symbols is None else "; a dynamic dimension is {\"name\": ..., \"maxSize\": ...}"
        raise ModelImportError(f"{path}: operand {name!r} has an invalid shape {shape!r} "
                               f"(a list of positive integers{dynamic_form})")
    spec = TensorSpec(shape, four_bit.storage(dtype))  # int4 / uint4: one value per int8 / uint8
    if dims.upper(spec.size) > MAX_ELEMENTS:  # a dynamic dimension counts at its maxSize, as WebNN says
        raise ModelImportError(f"{path}: operand {name!r} declares {dims.upper(spec.size)} elements"
                               f"{'' if spec.static else ' at the maxSizes'}, more than the {MAX_ELEMENTS} supported")
    return spec


def _declared_type(entry):
    desc = entry["descriptor"]
    return desc.get("dataType", desc.get("type"))


class GraphLoader:
    def __init__(self, doc, path, base_dir, session=None):
        self.path = path
        self.base_dir = base_dir
        if not isinstance(doc, dict):
            raise ModelImportError(f"{path}: top level must be a JSON object")
        if "graph" in doc and isinstance(doc["graph"], dict):
            doc = doc["graph"]
        self.doc = doc
        self.graph = Graph(path, "webnn", session)
        self.values = {}  # operand name -> Value
        self.kinds = {}  # operand name -> "input" | "constant" | "output"

    def fail(self, message):
        raise ModelImportError(f"{self.path}: {message}")

    # ------------------------------------------------------------ operands

    def _data(self, name, entry, spec):
        data = entry.get("data")
        if data is None:
            self.fail(f"constant {name!r} has no 'data'")
        if isinstance(data, dict):
            return self._side_file(name, data, spec)
        try:
            array = np.asarray(data, dtype=np.float64 if spec.dtype in dtypes.FLOATS else None)
        except (ValueError, TypeError, OverflowError) as e:
            self.fail(f"constant {name!r} has malformed data ({e})")
        if array.dtype.kind not in "biuf":
            self.fail(f"constant {name!r} data must be numbers")
        if array.size != spec.size:
            self.fail(f"constant {name!r} has {array.size} values, its descriptor {spec} needs {spec.size}")
        if spec.dtype not in dtypes.FLOATS:
            if array.dtype.kind == "f" and not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
                self.fail(f"constant {name!r} of type {spec.dtype} has non-integer data")
            declared = _declared_type(entry)
            info = np.iinfo(dtypes.to_numpy(spec.dtype))
            lo, hi = four_bit.value_range(declared) or (info.min, info.max)
            if array.size and (array.min() < lo or array.max() > hi):
                self.fail(f"constant {name!r} has values outside the {declared} range")
        return array.astype(dtypes.to_numpy(spec.dtype)).reshape(spec.shape)

    def _side_file(self, name, ref, spec):
        rel = ref.get("file")
        if not isinstance(rel, str) or not rel or "\0" in rel:
            self.fail(f"constant {name!r}: 'data.file' must be a relative file name")
        if os.path.isabs(rel) or ".." in rel.replace("\\", "/").split("/"):
            self.fail(f"constant {name!r}: data file {rel!r} must stay inside the model folder")
        full = os.path.realpath(os.path.join(self.base_dir, rel))
        if not full.startswith(os.path.realpath(self.base_dir) + os.sep):
            self.fail(f"constant {name!r}: data file {rel!r} resolves outside the model folder")
        offset = ref.get("byteOffset", 0)
        if not isinstance(offset, int) or offset < 0:
            self.fail(f"constant {name!r}: byteOffset must be a non-negative integer")
        nbytes = spec.size * dtypes.to_numpy(spec.dtype).itemsize
        try:
            size = os.path.getsize(full)
            if offset + nbytes > size:
                self.fail(f"constant {name!r}: data file {rel!r} has {size} bytes, the tensor needs "
                          f"{nbytes} bytes at offset {offset} (truncated file?)")
            with open(full, "rb") as f:
                f.seek(offset)
                raw = f.read(nbytes)
        except OSError as e:
            self.fail(f"constant {name!r}: cannot read data file {rel!r} ({e.strerror})")
        return np.frombuffer(raw, dtype=dtypes.to_numpy(spec.dtype).newbyteorder("<")) \
            .astype(dtypes.to_numpy(spec.dtype)).reshape(spec.shape)

    def _operands(self):
        inputs = self.doc.get("inputs", {})
        if not isinstance(inputs, dict):
            self.fail("'inputs' must be an object name -> {descriptor, data?, constant?}")
        for name, entry in inputs.items():
            constant = isinstance(entry, dict) and entry.get("constant")
            spec = _descriptor(self.path, name, entry, None if constant else self.graph.symbols)
            if constant:
                array = self._data(name, entry, spec)
                self.values[name] = self.graph.constant(array, spec, name=name)
                self.kinds[name] = "constant"
            else:
                self.values[name] = self.graph.input(name, spec)
                self.kinds[name] = "input"
            four_bit.mark(self.graph, self.values[name], _declared_type(entry))

    # ------------------------------------------------------------ operators

    def _ordered_operators(self):
        """Operators in dependency order; errors for unknown names, duplicates and cycles."""
        operators = self.doc.get("operators")
        if not isinstance(operators, list) or not operators:
            self.fail("'operators' must be a non-empty list")
        producer = {}
        for i, op in enumerate(operators):
            if not isinstance(op, dict) or not isinstance(op.get("name"), str):
                self.fail(f"operator #{i} must be an object with a 'name'")
            if not isinstance(op.get("arguments", []), (list, dict)):
                self.fail(f"operator #{i} ({op['name']}): 'arguments' must be a list of single-key objects")
            for out in _output_names(op, self.path):
                if out in producer or out in self.values:
                    self.fail(f"operand name {out!r} is defined twice (operator #{i}, {op['name']})")
                producer[out] = i
        order, state = [], {}
        for root in range(len(operators)):  # depth first, with an explicit stack (graphs can be deep)
            if state.get(root) == "done":
                continue
            stack = [(root, iter(_referenced_names(operators[root])))]
            state[root] = "active"
            while stack:
                i, refs = stack[-1]
                j = next((producer[r] for r in refs if r in producer), None)
                if j is None:
                    state[i] = "done"
                    order.append(i)
                    stack.pop()
                elif state.get(j) == "active":
                    cycle = " -> ".join(f"#{k} {operators[k]['name']}" for k, _ in stack) + f" -> #{j} {operators[j]['name']}"
                    self.fail(f"the operators form a cycle: {cycle}")
                elif state.get(j) != "done":
                    state[j] = "active"
                    stack.append((j, iter(_referenced_names(operators[j]))))
        return [(i, operators[i]) for i in order]

    def _resolve(self, label, op_name, ref):
        if isinstance(ref, list):
            return [self._resolve(label, op_name, r) for r in ref]
        if not isinstance(ref, str) or ref not in self.values:
            raise VerificationError(f"{where(self.path, label, op_name)}: unknown operand {ref!r}")
        return self.values[ref]

    def _call(self, index, op):
        name = op["name"]
        outputs = _output_names(op, self.path)
        label = (op.get("arguments") and _label_of(op)) or (outputs[0] if len(outputs) == 1 else name)
        spec = OPS[name]
        c = OpContext(self.graph, name, label)
        c.convert(label, name, lambda c: self._apply(c, spec, op, outputs))

    def _apply(self, c, spec, op, outputs):
        name, label = spec.name, c.label
        args = op.get("arguments", [])
        if isinstance(args, dict):
            args = [{k: v} for k, v in args.items()]
        if not isinstance(args, list) or not all(isinstance(a, dict) and a for a in args):
            c.fail("'arguments' must be a list of objects {param: value}")
        pairs = [(k, v) for a in args for k, v in a.items()]
        given = {}
        if all(k in spec.params for k, _ in pairs):
            for k, v in pairs:
                if k in given:
                    c.fail(f"argument {k!r} is given twice")
                given[k] = v
        else:  # the WPT harness passes arguments by position whatever their names: so do we
            positional = [p for p in spec.params if p != "options"]
            values = [(k, v) for k, v in pairs if k != "options"]
            if len(values) > len(positional):
                unknown = ", ".join(repr(k) for k, _ in pairs if k not in spec.params)
                c.fail(f"unknown argument {unknown}; {name} takes {spec.params}")
            given = {p: v for p, (_, v) in zip(positional, values)}
            given.update((k, v) for k, v in pairs if k == "options")
        positional = []
        for p in spec.params:
            if p in given:
                v = given[p]
            elif p in spec.defaults:
                v = spec.defaults[p]
            elif p == "options":
                v = {}
            else:
                c.fail(f"missing argument {p!r}")
            if p in spec.operands:
                v = self._resolve(label, name, v)
            elif p == "options":
                v = dict(options_of(c, spec, v))
                for k in spec.option_operands:
                    if k in v and v[k] is not None:
                        v[k] = self._resolve(label, name, v[k])
            positional.append(v)
        result = spec.fn(c, *positional)
        results = result if isinstance(result, list) else [result]
        if len(results) != len(outputs):
            c.fail(f"produces {len(results)} output(s) but {len(outputs)} name(s) are given in 'outputs'")
        for out, value in zip(outputs, results):
            self.values[out] = value
            self.kinds[out] = "output"

    def _check_known(self, ordered):
        """Every operator Estuary lacks, listed at once."""
        unknown = [(_label_of(op) or _output_names(op, self.path)[0], op["name"],
                    f"unsupported WebNN operation (operator #{i})") for i, op in ordered if op["name"] not in OPS]
        if unknown:
            raise UnsupportedOpError(self.path, unknown)

    def load(self):
        self._operands()
        ordered = self._ordered_operators()
        self._check_known(ordered)
        for index, op in ordered:
            self._call(index, op)
        names = self.doc.get("outputs")
        if names is None:
            expected = self.doc.get("expectedOutputs") or {}
            if not isinstance(expected, dict):
                self.fail("'expectedOutputs' must be an object output name -> expected values")
            names = list(expected)
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.fail("'outputs' must be a name or a list of names")
        if not names:
            self.fail("the graph names no outputs ('outputs' or 'expectedOutputs')")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            self.fail(f"output name(s) {repeated} are given twice in 'outputs'")
        outs = []
        for n in names:
            if n not in self.values:
                self.fail(f"output {n!r} is not produced by any operator")
            if self.kinds[n] != "output":
                self.fail(f"output {n!r} is a graph {self.kinds[n]}; outputs must be operator results "
                          "(use identity)")
            outs.append((n, self.values[n]))
        return self.graph.finish(outs)


def _output_names(op, path):
    outs = op.get("outputs")
    if isinstance(outs, str):
        return [outs]
    if isinstance(outs, list) and outs and all(isinstance(o, str) for o in outs):
        return outs
    raise ModelImportError(f"{path}: operator {op.get('name')!r}: 'outputs' must be a name or a list of names")


def _label_of(op):
    args = op.get("arguments", [])
    for a in args if isinstance(args, list) else [args]:
        if isinstance(a, dict) and isinstance(a.get("options"), dict) and a["options"].get("label"):
            return a["options"]["label"]
    return None


def _referenced_names(op):
    """Every string in the operator's arguments (operand references among them)."""
    found = []

    def walk(v):
        if isinstance(v, str):
            found.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk(op.get("arguments", []))
    return found
