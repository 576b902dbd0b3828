"""Converts the benchmark ONNX graphs to WebNN JSON (+ a .bin weights file).

Covers exactly the ONNX ops the benchmark models use; anything else raises. Static second inputs
(Reshape shapes, Clip bounds) must be initializers.
"""
import json
import os

import numpy as np
from onnx import numpy_helper


def _attrs(node):
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class Converter:
    def __init__(self, model):
        self.model = model
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.used_consts = {}
        self.ops = []
        self.count = 0

    def const(self, name):
        self.used_consts[name] = self.consts[name]
        return name

    def new_const(self, array, prefix):
        self.count += 1
        name = f"{prefix}__{self.count}"
        self.consts[name] = np.asarray(array, np.float32)
        return self.const(name)

    def emit(self, name, args, outputs):
        self.ops.append({"name": name, "arguments": [{k: v} for k, v in args], "outputs": outputs})

    def operand(self, name):
        return self.const(name) if name in self.consts else name

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
        elif op in ("Relu", "Erf"):
            self.emit(op.lower(), [("input", ins[0])], out)
        elif op in ("Add", "Mul", "Div"):
            self.emit(op.lower(), [("a", self.operand(ins[0])), ("b", self.operand(ins[1]))], out)
        elif op == "MatMul":
            self.emit("matmul", [("a", self.operand(ins[0])), ("b", self.operand(ins[1]))], out)
        elif op == "MaxPool":
            t, l, b, r = a.get("pads", [0, 0, 0, 0])
            self.emit("maxPool2d", [("input", ins[0]), ("options", {
                "windowDimensions": a["kernel_shape"], "strides": a.get("strides", [1, 1]),
                "padding": [t, b, l, r]})], out)
        elif op == "GlobalAveragePool":
            self.emit("averagePool2d", [("input", ins[0])], out)
        elif op in ("Flatten", "Reshape"):
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
            axis = a.get("axis", -1) % len(self.shapes[out])
            self.emit("softmax", [("input", ins[0]), ("axis", axis)], out)
        elif op == "LayerNormalization":
            rank = len(self.shapes[out])
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
        else:
            raise ValueError(f"onnx_to_webnn: unsupported ONNX op {op} ({node.name})")

    def convert(self, path):
        from onnx import shape_inference

        inferred = shape_inference.infer_shapes(self.model)
        self.shapes = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            if dims:
                self.shapes[vi.name] = dims
        for node in self.model.graph.node:
            self.convert_node(node)
        base = os.path.splitext(os.path.basename(path))[0]
        blob, inputs = bytearray(), {}
        for vi in self.model.graph.input:
            if vi.name not in self.consts:
                inputs[vi.name] = {"descriptor": {"shape": self.shapes[vi.name], "dataType": "float32"}}
        for name, arr in self.used_consts.items():
            arr = np.ascontiguousarray(arr, dtype="<f4")
            inputs[name] = {"descriptor": {"shape": list(arr.shape), "dataType": "float32"},
                            "data": {"file": base + ".bin", "byteOffset": len(blob)}, "constant": True}
            blob += arr.tobytes()
        doc = {"inputs": inputs, "operators": self.ops, "outputs": [o.name for o in self.model.graph.output]}
        with open(path, "w") as f:
            json.dump(doc, f)
        with open(os.path.join(os.path.dirname(path), base + ".bin"), "wb") as f:
            f.write(bytes(blob))
        return path


def convert(model, path):
    """Write `model` (onnx.ModelProto) as WebNN JSON at `path` (+ weights beside it)."""
    return Converter(model).convert(path)
