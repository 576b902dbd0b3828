"""Converts the benchmark ONNX graphs to WebNN JSON (+ a .bin weights file).

Covers the ONNX ops the benchmark models use, and those of transformer blocks exported by
torch.onnx.export with dynamic axes (a BERT-style encoder layer, a Llama-style decoder layer with
a causal mask); anything else raises. A graph input whose dimension is a dim_param (or unknown)
becomes an MLDynamicDimension {"name", "maxSize"}, the maxSize given by `max_sizes`; the Shape /
Gather / Concat / ... chains that compute reshape targets, slice bounds and scales from it are
folded (onnx_shapes.py) into {"name"} / {"expression"} entries and constants, and the graph is
recorded through Estuary's Python MLGraphBuilder, whose shape rules give every tensor's shape.
Static graphs are written directly, as before. Static second inputs (Clip bounds, axes) must be
initializers or folded values.
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from estuary.base.dims import Dim, Sym
from onnx_shapes import FOLD, Refused, exact_quotient, fold, reshape_target, slice_window, symbolic

# ONNX element type -> WebNN data type (bool tensors are uint8 0/1 in WebNN)
DATA_TYPES = {TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16", TensorProto.INT32: "int32",
              TensorProto.INT64: "int64", TensorProto.UINT8: "uint8", TensorProto.INT8: "int8",
              TensorProto.BOOL: "uint8", TensorProto.UINT32: "uint32"}
# element-wise ONNX ops that map one to one (inputs named a, b or input)
UNARY = {"Relu": "relu", "Erf": "erf", "Neg": "neg", "Sqrt": "sqrt", "Sigmoid": "sigmoid", "Tanh": "tanh",
         "Exp": "exp", "Reciprocal": "reciprocal", "Abs": "abs", "Gelu": "gelu", "Identity": "identity",
         "HardSwish": "hardSwish", "Softplus": "softplus", "Floor": "floor", "Ceil": "ceil", "Log": "log",
         "Sin": "sin", "Cos": "cos", "Not": "logicalNot",
         "IsNaN": "isNaN"}
BINARY = {"Add": "add", "Mul": "mul", "Div": "div", "Sub": "sub", "Pow": "pow", "Equal": "equal", "Max": "max",
          "Min": "min", "MatMul": "matmul", "Less": "lesser", "LessOrEqual": "lesserOrEqual", "Greater": "greater",
          "GreaterOrEqual": "greaterOrEqual", "And": "logicalAnd", "Or": "logicalOr", "Xor": "logicalXor"}


def _attrs(node):
    """A node's attributes, tensors as numpy arrays."""
    values = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: numpy_helper.to_array(v) if isinstance(v, TensorProto) else v for k, v in values.items()}


class Converter:
    def __init__(self, model, max_sizes=None):
        self.model = model
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.used_consts = {}
        self.ops = []
        self.count = 0
        self.max_sizes = dict(max_sizes or {})  # dim_param -> maxSize of a dynamic dimension
        self.sizes = {}  # tensor name -> folded value holding dynamic sizes (an object array)
        self.symbols = {}  # dynamic dimension name -> estuary Sym
        self.builder = None  # an MLGraphBuilder recording the graph when an input is dynamic
        self.operands = {}  # tensor name -> MLOperand of that builder

    def const(self, name):
        self.used_consts[name] = self.consts[name]
        return name

    def new_const(self, array, prefix, dtype=np.float32):
        self.count += 1
        name = f"{prefix}__{self.count}"
        self.consts[name] = np.asarray(array, dtype)
        return self.const(name)

    def emit(self, name, args, outputs):
        if self.builder is not None:
            return self._record(name, args, outputs)
        self.ops.append({"name": name, "arguments": [{k: v} for k, v in args], "outputs": outputs})

    def operand(self, name):
        if name in self.sizes:
            raise Refused(f"onnx_to_webnn: tensor {name!r} holds sizes computed from dynamic dimensions "
                          f"({self.sizes[name].tolist()}) and is used as data; only shape arguments may be dynamic")
        return self.const(name) if name in self.consts else name

    def value(self, name, what):
        """A folded value (constant or sizes) that a node needs as an attribute-like input."""
        if name in self.sizes:
            return self.sizes[name]
        if name in self.consts:
            return self.consts[name]
        raise Refused(f"onnx_to_webnn: {what} {name!r} is computed from data; it must be a constant or sizes")

    def shape_of(self, name):
        """A tensor's shape: ints, and estuary Dims for dynamic dimensions."""
        if name in self.consts:
            return list(self.consts[name].shape)
        if name in self.sizes:
            return list(self.sizes[name].shape)
        if self.builder is None:
            return list(self.shapes[name])
        from estuary.importers.webnn import dynamic

        entries = [dynamic.shape_entry(e) for e in self._operand(name).shape]
        return dynamic.shape_argument(entries, name, self.symbols)

    def rank(self, name):
        return len(self.shape_of(name))

    def dims(self, shape):
        """A shape as a WebNN shape argument: ints, {"name"} and {"expression"} entries."""
        from estuary.importers.webnn import dynamic

        return [dynamic.json_dimension(d) for d in shape]

    def convert_node(self, node):
        a = _attrs(node)
        ins = list(node.input)
        out = node.output[0]
        op = node.op_type
        if op == "Conv":
            t, l, b, r = a.get("pads", [0, 0, 0, 0])
            opts = {"padding": [t, b, l, r], "strides": a.get("strides", [1, 1]),
                    "dilations": a.get("dilations", [1, 1]), "groups": a.get("group", 1)}
            if len(ins) > 2:
                opts["bias"] = self.const(ins[2])
            self.emit("conv2d", [("input", ins[0]), ("filter", self.const(ins[1])), ("options", opts)], out)
        elif op == "BatchNormalization":
            opts = {"scale": self.const(ins[1]), "bias": self.const(ins[2]), "epsilon": a.get("epsilon", 1e-5)}
            self.emit("batchNormalization", [("input", ins[0]), ("mean", self.const(ins[3])),
                                             ("variance", self.const(ins[4])), ("options", opts)], out)
        elif op in UNARY:
            self.emit(UNARY[op], [("input", ins[0])], out)
        elif op in BINARY:
            self.emit(BINARY[op], [("a", self.operand(ins[0])), ("b", self.operand(ins[1]))], out)
        elif op == "MaxPool":
            t, l, b, r = a.get("pads", [0, 0, 0, 0])
            self.emit("maxPool2d", [("input", ins[0]), ("options", {
                "windowDimensions": a["kernel_shape"], "strides": a.get("strides", [1, 1]),
                "padding": [t, b, l, r]})], out)
        elif op == "GlobalAveragePool":
            self.emit("averagePool2d", [("input", ins[0])], out)
        elif op in ("Flatten", "Reshape") and self.builder is None:
            shape = self.shapes[out]
            self.emit("reshape", [("input", ins[0]), ("newShape", [int(d) for d in shape])], out)
        elif op == "Gemm":
            opts = {"bTranspose": bool(a.get("transB", 0)), "aTranspose": bool(a.get("transA", 0)),
                    "alpha": float(a.get("alpha", 1.0)), "beta": float(a.get("beta", 1.0))}
            if len(ins) > 2:
                opts["c"] = self.const(ins[2])
            self.emit("gemm", [("a", ins[0]), ("b", self.const(ins[1])), ("options", opts)], out)
        elif op == "Clip":
            lo, hi = float(self.consts[ins[1]]), float(self.consts[ins[2]])
            self.emit("clamp", [("input", ins[0]), ("options", {"minValue": lo, "maxValue": hi})], out)
        elif op == "Transpose":
            self.emit("transpose", [("input", ins[0]), ("options", {"permutation": list(a["perm"])})], out)
        elif op == "Softmax":
            axis = a.get("axis", -1) % self.rank(ins[0])
            self.emit("softmax", [("input", ins[0]), ("axis", axis)], out)
        elif op == "LayerNormalization":
            rank = self.rank(ins[0])
            axis = a.get("axis", -1) % rank
            self.emit("layerNormalization", [("input", ins[0]), ("options", {
                "scale": self.const(ins[1]), "bias": self.const(ins[2]),
                "axes": list(range(axis, rank)), "epsilon": a.get("epsilon", 1e-5)})], out)
        elif op == "LSTM":
            hidden = a["hidden_size"]
            steps = self.shapes[ins[0]][0]
            bias = self.consts[ins[3]]
            opts = {"bias": self.new_const(bias[:, :4 * hidden], "bias"),
                    "recurrentBias": self.new_const(bias[:, 4 * hidden:], "rbias")}
            outs = [node.output[1], node.output[2]]
            self.emit("lstm", [("input", ins[0]), ("weight", self.const(ins[1])),
                               ("recurrentWeight", self.const(ins[2])), ("steps", int(steps)),
                               ("hiddenSize", hidden), ("options", opts)], outs)
        elif op == "Split":
            axis = a.get("axis", 0) % self.rank(ins[0])
            sizes = a.get("split") or (list(self.value(ins[1], "the Split sizes")) if len(ins) > 1 and ins[1] else None)
            splits = [int(v) for v in sizes] if sizes is not None else len(node.output)
            self.emit("split", [("input", self.operand(ins[0])), ("splits", splits), ("options", {"axis": axis})],
                      list(node.output))
        elif op == "IsInf":  # WebNN's isInfinite detects both signs
            if not (a.get("detect_positive", 1) and a.get("detect_negative", 1)):
                raise ValueError(f"onnx_to_webnn: IsInf of one sign only ({node.name}) has no WebNN form")
            self.emit("isInfinite", [("input", ins[0])], out)
        elif not self.convert_movement(op, ins, out, a):
            raise ValueError(f"onnx_to_webnn: unsupported ONNX op {op} ({node.name})")

    def convert_movement(self, op, ins, out, a):
        """The data movement and masking ops of transformer exports, on shapes that may be
        dynamic; False for an op it does not know."""
        if op in ("Flatten", "Reshape", "Squeeze", "Unsqueeze"):
            self.emit("reshape", [("input", ins[0]), ("newShape", self.dims(self._new_shape(op, ins, a)))], out)
        elif op == "Expand":
            shape = self.shape_of(ins[0])
            target = list(self.value(ins[1], "the Expand shape"))
            target = [1] * (len(shape) - len(target)) + target
            shape = [1] * (len(target) - len(shape)) + shape
            wanted = [t if s == 1 else s for s, t in zip(shape, target)]  # ONNX broadcasts both ways
            self.emit("expand", [("input", self.operand(ins[0])), ("newShape", self.dims(wanted))], out)
        elif op == "ConstantOfShape":
            fill = a["value"].reshape(-1)[:1] if "value" in a else np.zeros(1, np.float32)
            scalar = self.new_const(fill.reshape(()), "fill", fill.dtype)
            target = list(self.value(ins[0], "the ConstantOfShape shape"))
            self.emit("expand", [("input", scalar), ("newShape", self.dims(target))], out)
        elif op == "Slice":
            self._slice(ins, out)
        elif op == "Range":
            self._range(ins, out)
        elif op == "HardSigmoid":
            self.emit("hardSigmoid", [("input", ins[0]), ("options", {
                "alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))})], out)
        elif op == "GatherElements":
            axis = a.get("axis", 0) % self.rank(ins[0])
            self.emit("gatherElements", [("input", self.operand(ins[0])), ("indices", self.operand(ins[1])),
                                         ("options", {"axis": axis})], out)
        elif op == "Gather":
            axis = a.get("axis", 0) % self.rank(ins[0])
            self.emit("gather", [("input", self.operand(ins[0])), ("indices", self.operand(ins[1])),
                                 ("options", {"axis": axis})], out)
        elif op == "Concat":
            axis = a["axis"] % self.rank(ins[0])
            self.emit("concat", [("inputs", [self.operand(i) for i in ins]), ("axis", axis)], out)
        elif op == "Trilu":
            k = int(self.value(ins[1], "the Trilu diagonal")) if len(ins) > 1 and ins[1] else 0
            self.emit("triangular", [("input", self.operand(ins[0])),
                                     ("options", {"upper": bool(a.get("upper", 1)), "diagonal": k})], out)
        elif op == "Where":
            self.emit("where", [("condition", self.operand(ins[0])), ("trueValue", self.operand(ins[1])),
                                ("falseValue", self.operand(ins[2]))], out)
        elif op == "Cast":
            self.emit("cast", [("input", ins[0]), ("type", DATA_TYPES[a["to"]])], out)
        elif op == "ReduceMean":
            rank = self.rank(ins[0])
            axes = a.get("axes") or (list(self.value(ins[1], "ReduceMean axes")) if len(ins) > 1 else range(rank))
            self.emit("reduceMean", [("input", ins[0]), ("options", {
                "axes": sorted(int(x) % rank for x in axes), "keepDimensions": bool(a.get("keepdims", 1))})], out)
        else:
            return False
        return True

    def _new_shape(self, op, ins, a):
        shape = self.shape_of(ins[0])
        if op == "Flatten":
            axis = a.get("axis", 1) % (len(shape) + 1)
            return [exact_quotient(_size(shape), _size(shape[axis:])), _size(shape[axis:])]
        if op == "Reshape":
            return reshape_target(shape, list(self.value(ins[1], "the Reshape shape")))
        axes = a.get("axes") or list(self.value(ins[1], f"the {op} axes"))
        if op == "Squeeze":
            drop = {int(x) % len(shape) for x in axes}
            return [d for i, d in enumerate(shape) if i not in drop]
        rank = len(shape) + len(axes)
        added = {int(x) % rank for x in axes}
        rest = iter(shape)
        return [1 if i in added else next(rest) for i in range(rank)]

    def _range(self, ins, out):
        """ONNX Range with a dynamic limit (position ids: arange(seq)): the constant sequence up
        to the limit's upper bound, sliced to the limit."""
        start, limit, delta = (self.value(n, "a Range bound").reshape(()).item() for n in ins)
        if isinstance(start, Dim) or not isinstance(limit, Dim) or delta != 1:
            raise Refused(f"onnx_to_webnn: Range({start}, {limit}, {delta}): only a dynamic limit with a fixed "
                          f"start and step 1")
        dtype = self.consts[ins[0]].dtype if ins[0] in self.consts else np.int64
        table = self.new_const(np.arange(start, limit.upper(), delta), "range", dtype)
        self.emit("slice", [("input", table), ("starts", [0]), ("sizes", self.dims([limit - start])), ("options", {})], out)

    def _slice(self, ins, out):
        """ONNX Slice on data: per axis [start, end) with a positive step, bounds possibly dynamic."""
        shape = self.shape_of(ins[0])
        values = [list(self.value(n, "a Slice bound")) if n else None for n in ins[1:]] + [None, None]
        starts, ends, axes, steps = values[:4]
        axes = [int(x) % len(shape) for x in axes] if axes else list(range(len(starts)))
        steps = [int(x) for x in steps] if steps else [1] * len(axes)
        begin, sizes, strides = [0] * len(shape), list(shape), [1] * len(shape)
        for axis, s, e, k in zip(axes, starts, ends, steps):
            if k < 1:
                raise Refused(f"onnx_to_webnn: Slice step {k} (only positive steps are supported)")
            begin[axis], sizes[axis] = slice_window(shape[axis], s, e)
            strides[axis] = k
        options = {"strides": strides} if any(k != 1 for k in strides) else {}
        self.emit("slice", [("input", self.operand(ins[0])), ("starts", self.dims(begin)), ("sizes", self.dims(sizes)),
                            ("options", options)], out)

    # ------------------------------------------------------------ folding shape arithmetic

    def visit(self, node):
        """Fold the node when its inputs are constants or sizes, else convert it. A constant
        sliced or expanded by dynamic sizes (a rotary table cut to the sequence, a mask grown to
        [seq, seq]) or a fill of a dynamic shape does not fold: it becomes the data operation."""
        if self.foldable(node):
            try:
                return self.fold(node)
            except Refused:
                if node.input[0] not in self.consts and node.op_type not in ("ConstantOfShape", "Range"):
                    raise
        self.convert_node(node)

    def foldable(self, node):
        known = all(not i or i in self.consts or i in self.sizes for i in node.input)
        return node.op_type in ("Constant", "Shape") or (node.op_type in FOLD and known)

    def fold(self, node):
        """Evaluate a node on constants and sizes (onnx_shapes.py); its outputs become constants,
        or sizes where a dynamic dimension remains."""
        a = _attrs(node)
        if node.op_type == "Constant":
            results = [_constant_value(a)]
        elif node.op_type == "Shape":
            shape = np.array(self.shape_of(node.input[0]) + [0], dtype=object)[:-1]
            results = [np.asarray(shape[a.get("start", 0):a.get("end")])]
            results = [r.astype(np.int64) if not symbolic(r) else r for r in results]
        else:
            values = [self.value(i, "an input") if i else None for i in node.input]
            results = fold(node.op_type, a, values)
        for name, r in zip(node.output, results):
            if symbolic(r):
                self.sizes[name] = r
            else:
                self.consts[name] = np.asarray(r)

    # ------------------------------------------------------------ recording through the builder

    def _operand(self, name):
        """The builder's MLOperand of a tensor (constants made on first use)."""
        if name not in self.operands:
            if name not in self.consts:
                raise Refused(f"onnx_to_webnn: tensor {name!r} is not known to the builder")
            array = np.ascontiguousarray(self.consts[name])
            array = array.astype(np.uint8) if array.dtype == np.bool_ else array
            self.operands[name] = self.builder.constant(
                {"dataType": str(array.dtype), "shape": list(array.shape)}, array)
        return self.operands[name]

    def _record(self, name, args, outputs):
        from estuary.importers.webnn import OPS

        spec = OPS[name]
        kwargs = {}
        for p, v in args:
            if p in spec.operands:
                v = [self._operand(x) for x in v] if isinstance(v, list) else self._operand(v)
            elif p == "options":
                v = {k: self._operand(x) if k in spec.option_operands else x for k, x in v.items()}
            kwargs[p] = v
        result = getattr(self.builder, name)(**kwargs)
        results = result if isinstance(result, list) else [result]
        for o, r in zip(outputs if isinstance(outputs, list) else [outputs], results):
            self.operands[o] = r

    def _inputs(self):
        """The graph inputs as the builder's, a dim_param (or unknown size) as an MLDynamicDimension."""
        from estuary import webnn

        self.builder = webnn.MLGraphBuilder(webnn.ML().createContext())
        for vi in self.model.graph.input:
            if vi.name in self.consts:
                continue
            shape = []
            for axis, d in enumerate(vi.type.tensor_type.shape.dim):
                if d.dim_value > 0:
                    shape.append(d.dim_value)
                    continue
                name = _identifier(d.dim_param or f"{vi.name}_{axis}")
                if name not in self.max_sizes:
                    raise Refused(f"onnx_to_webnn: input {vi.name!r} dimension {axis} is dynamic ({name!r}); give its "
                                  f"largest size: convert(..., max_sizes={{{name!r}: N}})")
                shape.append({"name": name, "maxSize": int(self.max_sizes[name])})
                self.symbols[name] = Sym(name, 1, int(self.max_sizes[name]))
            dtype = DATA_TYPES[vi.type.tensor_type.elem_type]
            self.operands[vi.name] = self.builder.input(vi.name, {"dataType": dtype, "shape": shape})

    def _dynamic(self):
        return any(d.dim_value <= 0 for vi in self.model.graph.input if vi.name not in self.consts
                   for d in vi.type.tensor_type.shape.dim)

    def convert_dynamic_graph(self, path):
        self._inputs()
        for node in self.model.graph.node:
            self.visit(node)
        outputs = {o.name: self._operand(o.name) for o in self.model.graph.output}
        graph = self.builder.build(outputs)
        base = os.path.splitext(os.path.basename(path))[0]
        graph.to_json(path, weights_file=base + ".bin")
        graph.destroy()
        return path

    def convert(self, path):
        from onnx import shape_inference

        if self._dynamic():
            return self.convert_dynamic_graph(path)
        inferred = shape_inference.infer_shapes(self.model)
        self.shapes = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            if dims:
                self.shapes[vi.name] = dims
        for node in self.model.graph.node:
            self.visit(node)
        base = os.path.splitext(os.path.basename(path))[0]
        blob, inputs = bytearray(), {}
        for vi in self.model.graph.input:
            if vi.name not in self.consts:
                inputs[vi.name] = {"descriptor": {"shape": self.shapes[vi.name], "dataType": "float32"}}
        for name, arr in self.used_consts.items():
            # floats as float32 (WebNN's and the benchmarks' type), integers (indices) as they are
            arr = np.asarray(arr)
            arr = arr.astype(np.uint8) if arr.dtype == np.bool_ else arr
            arr = np.ascontiguousarray(arr, dtype="<f4" if arr.dtype.kind == "f" else arr.dtype.newbyteorder("<"))
            inputs[name] = {"descriptor": {"shape": list(arr.shape), "dataType": str(arr.dtype)},
                            "data": {"file": base + ".bin", "byteOffset": len(blob)}, "constant": True}
            blob += arr.tobytes()
        doc = {"inputs": inputs, "operators": self.ops, "outputs": [o.name for o in self.model.graph.output]}
        with open(path, "w") as f:
            json.dump(doc, f)
        with open(os.path.join(os.path.dirname(path), base + ".bin"), "wb") as f:
            f.write(bytes(blob))
        return path


def _size(shape):
    total = 1
    for d in shape:
        total = total * d
    return total


def _identifier(name):
    """A dim_param as a WebNN dimension name (an identifier)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"_{out}"


def _constant_value(a):
    """The value of an ONNX Constant node's attribute."""
    if "value" in a:
        return a["value"]
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64), ("value_floats", np.float32),
                       ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype)
    raise Refused(f"onnx_to_webnn: Constant with {sorted(a)} is not supported")


def convert(model, path, max_sizes=None):
    """Write `model` (onnx.ModelProto) as WebNN JSON at `path` (+ weights beside it). `max_sizes`:
    {dim_param: largest size} for the inputs' dynamic dimensions."""
    return Converter(model, max_sizes).convert(path)
