"""Converts the benchmark ONNX graphs to NNEF (a graph.nnef folder) with nnef-tools.

nnef-tools' ONNX front end has no LayerNormalization, and its LSTM needs every optional input slot
and splits the gates as [i, f, g, o] while ONNX orders them [i, o, f, c]. So both ops are first
rewritten here into primitive ONNX ops that nnef-tools converts exactly (`decompose`):

- LayerNormalization -> ReduceMean, Sub, Mul, Add, Sqrt, Div (the ONNX definition);
- LSTM (forward, layout 0, default activations, zero initial state) -> one input projection for
  all steps, then per step a recurrent MatMul, a Split into the i, o, f, c gates, Sigmoid / Tanh
  and the cell update (unrolled over the static sequence length).

All benchmark models (and `tiny`) therefore have an NNEF form. Erf becomes nnef-tools' `erf`
fragment (a polynomial approximation, absolute error < 1.5e-7).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import helper, numpy_helper


class _Rewriter:
    """Rebuilds a graph node by node, expanding the ops nnef-tools cannot convert."""

    def __init__(self, model):
        self.model = model
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}__d{self.count}"

    def const(self, array, prefix="c"):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(self, op, inputs, out=None, n_out=1, **attrs):
        outs = [out] if out else [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def layer_norm(self, node, shapes):
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        x, g, b = node.input[:3]
        rank = len(shapes[x])
        axes = list(range(a.get("axis", -1) % rank, rank))
        eps = self.const(np.float32(a.get("epsilon", 1e-5)), "eps")
        d = self.node("Sub", [x, self.node("ReduceMean", [x], axes=axes, keepdims=1)])
        var = self.node("ReduceMean", [self.node("Mul", [d, d])], axes=axes, keepdims=1)
        y = self.node("Div", [d, self.node("Sqrt", [self.node("Add", [var, eps])])])
        self.node("Add", [self.node("Mul", [y, g]), b], out=node.output[0])

    def lstm(self, node, shapes, used):
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        ins = list(node.input)
        if a.get("direction", "forward") != "forward" or a.get("layout", 0) or "activations" in a or "clip" in a \
                or a.get("input_forget", 0) or any(ins[4:]) or (node.output[0] and node.output[0] in used):
            raise ValueError(f"onnx_to_nnef: only forward LSTMs with default activations, no optional inputs and "
                             f"an unused Y output can be decomposed ({node.name})")
        hidden = a["hidden_size"]
        steps, batch, _ = shapes[ins[0]]
        w, r = self.consts[ins[1]][0], self.consts[ins[2]][0]
        bias = self.consts[ins[3]][0] if len(ins) > 3 and ins[3] else np.zeros(8 * hidden, np.float32)
        # one projection of every step: [S, B, I] @ [I, 4H] + (Wb + Rb)
        xw = self.node("Add", [self.node("MatMul", [ins[0], self.const(np.ascontiguousarray(w.T), "w")]),
                               self.const(bias[:4 * hidden] + bias[4 * hidden:], "b")])
        rt = self.const(np.ascontiguousarray(r.T), "r")
        split = self.const(np.array([hidden] * 4, np.int64), "split")
        row = self.const(np.array([batch, 4 * hidden], np.int64), "shape")
        h = c = None
        for t in range(steps):
            z = self.node("Slice", [xw, self.const(np.array([t], np.int64)), self.const(np.array([t + 1], np.int64)),
                                    self.const(np.array([0], np.int64))])
            z = self.node("Reshape", [z, row])
            if h is not None:
                z = self.node("Add", [z, self.node("MatMul", [h, rt])])
            i, o, f, g = self.node("Split", [z, split], n_out=4, axis=1)
            ig = self.node("Mul", [self.node("Sigmoid", [i]), self.node("Tanh", [g])])
            c = ig if c is None else self.node("Add", [self.node("Mul", [self.node("Sigmoid", [f]), c]), ig])
            h = self.node("Mul", [self.node("Sigmoid", [o]), self.node("Tanh", [c])])
        state = self.const(np.array([1, batch, hidden], np.int64), "shape")
        for value, out in ((h, node.output[1] if len(node.output) > 1 else ""),
                           (c, node.output[2] if len(node.output) > 2 else "")):
            if out:
                self.node("Reshape", [value, state], out=out)

    def rewrite(self):
        from onnx import shape_inference

        inferred = shape_inference.infer_shapes(self.model)
        shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
                  for vi in list(inferred.graph.value_info) + list(inferred.graph.input)}
        g = self.model.graph
        used = {n for node in g.node for n in node.input} | {o.name for o in g.output}
        for node in g.node:
            if node.op_type == "LayerNormalization":
                self.layer_norm(node, shapes)
            elif node.op_type == "LSTM":
                self.lstm(node, shapes, used)
            else:
                self.nodes.append(node)
        needed = {n for node in self.nodes for n in node.input}
        inits = [i for i in list(g.initializer) + self.inits if i.name in needed]  # drop the replaced weights
        graph = helper.make_graph(self.nodes, g.name, list(g.input), list(g.output), inits)
        m = helper.make_model(graph, opset_imports=list(self.model.opset_import))
        m.ir_version = self.model.ir_version
        return m


def decompose(model):
    """`model` with LayerNormalization and LSTM rewritten into ops nnef-tools converts."""
    return _Rewriter(model).rewrite()


def convert(model, path):
    """Write `model` (onnx.ModelProto) as an NNEF folder at `path` (graph.nnef + .dat files)."""
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "model.onnx")
        onnx.save(decompose(model), src)
        r = subprocess.run([sys.executable, "-m", "nnef_tools.convert", "--input-format", "onnx",
                            "--output-format", "nnef", "--input-model", src, "--output-model", path,
                            "--keep-io-names"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"onnx_to_nnef: nnef-tools failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return path
