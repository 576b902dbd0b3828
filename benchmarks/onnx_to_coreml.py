"""Converts the benchmark ONNX graphs to a Core ML NeuralNetwork `.mlmodel` (coremltools' builder).

Covers exactly the ONNX ops the benchmark models use; anything else raises. The model uses the
exact (ND) array mapping, so every blob keeps its ONNX shape and layout (NCHW images); classic
layers (convolution, batchnorm, pooling) address the trailing C, H, W axes. The LSTM, a rank-5
layer ([Seq, Batch, C, 1, 1]), is wrapped in static reshapes. Static second inputs (Reshape
shapes, Clip bounds) must be initializers.
"""
import numpy as np
from onnx import numpy_helper

_ACTIVATIONS = {"Relu": "RELU"}
_BROADCAST = {"Add": "add_add_broadcastable", "Mul": "add_multiply_broadcastable",
              "Div": "add_divide_broadcastable"}


def _attrs(node):
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _shapes(model):
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.HasField("shape"):
            shapes[vi.name] = dims
    return shapes


class Converter:
    def __init__(self, model):
        self.model = model
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.loaded = set()  # initializers already emitted as loadConstantND blobs
        self.shapes = _shapes(model)

    def unsupported(self, node, why):
        return ValueError(f"onnx_to_coreml: {why} ({node.op_type} {node.name})")

    def operand(self, name):
        """A blob name for an ONNX value; initializers become loadConstantND layers (once)."""
        if name in self.consts and name not in self.loaded:
            value = np.asarray(self.consts[name], np.float32)
            shape = list(value.shape) or [1]
            self.b.add_load_constant_nd(f"{name}__const", name, value.reshape(shape), shape)
            self.loaded.add(name)
        return name

    def convert_node(self, node):
        a, ins, out, op, b = _attrs(node), list(node.input), node.output[0], node.op_type, self.b
        name = node.name or out
        if op == "Conv":
            self.conv(node, a, ins, out)
        elif op == "BatchNormalization":
            scale, bias, mean, var = (self.consts[n] for n in ins[1:5])
            b.add_batchnorm(name, len(scale), scale, bias, mean, var, input_name=ins[0], output_name=out,
                            epsilon=a.get("epsilon", 1e-5))
        elif op in _ACTIVATIONS:
            b.add_activation(name, _ACTIVATIONS[op], ins[0], out)
        elif op == "Clip":
            lo, hi = float(self.consts[ins[1]]), float(self.consts[ins[2]])
            b.add_clip(name, ins[0], out, min_value=lo, max_value=hi)
        elif op == "Erf":
            b.add_erf(name, ins[0], out)
        elif op in _BROADCAST:
            getattr(b, _BROADCAST[op])(name, [self.operand(ins[0]), self.operand(ins[1])], out)
        elif op == "MatMul":
            self.matmul(node, ins, out)
        elif op == "MaxPool":
            if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])):
                raise self.unsupported(node, "ceil_mode / dilations")
            t, l, bt, r = a.get("pads", [0, 0, 0, 0])
            (kh, kw), (sh, sw) = a["kernel_shape"], a.get("strides", [1, 1])
            b.add_pooling(name, kh, kw, sh, sw, "MAX", "VALID", ins[0], out, padding_top=t, padding_bottom=bt,
                          padding_left=l, padding_right=r)
        elif op == "GlobalAveragePool":
            b.add_pooling(name, 0, 0, 1, 1, "AVERAGE", "VALID", ins[0], out, is_global=True)
        elif op == "Flatten":
            b.add_flatten_to_2d(name, ins[0], out, axis=a.get("axis", 1))
        elif op == "Reshape":
            b.add_reshape_static(name, ins[0], out, [int(d) for d in self.shapes[out]])
        elif op == "Transpose":
            b.add_transpose(name, list(a["perm"]), ins[0], out)
        elif op == "Gemm":
            self.gemm(node, a, ins, out)
        elif op == "Softmax":
            b.add_softmax_nd(name, ins[0], out, a.get("axis", -1))
        elif op == "LayerNormalization":
            rank = len(self.shapes[out])
            axis = a.get("axis", -1) % rank
            b.add_layer_normalization(name, ins[0], out, self.shapes[out][axis:], self.consts[ins[1]],
                                      self.consts[ins[2]], eps=a.get("epsilon", 1e-5))
        elif op == "LSTM":
            self.lstm(node, a, ins)
        else:
            raise self.unsupported(node, f"unsupported ONNX op {op}")

    def conv(self, node, a, ins, out):
        w = self.consts[ins[1]]
        if w.ndim != 4 or a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            raise self.unsupported(node, "only 2-D convolutions with explicit pads")
        t, l, bt, r = a.get("pads", [0, 0, 0, 0])
        (sh, sw), groups = a.get("strides", [1, 1]), a.get("group", 1)
        cout, kc, kh, kw = w.shape
        bias = self.consts[ins[2]] if len(ins) > 2 and ins[2] else None
        # the builder takes (kh, kw, kernel_channels, output_channels); ONNX is (Cout, Cin/groups, kh, kw)
        self.b.add_convolution(node.name or out, kc, cout, kh, kw, sh, sw, "valid", groups, w.transpose(2, 3, 1, 0),
                               bias, bias is not None, input_name=ins[0], output_name=out,
                               dilation_factors=list(a.get("dilations", [1, 1])), padding_top=t, padding_bottom=bt,
                               padding_left=l, padding_right=r)

    def matmul(self, node, ins, out):
        w = self.consts.get(ins[1])
        if w is not None and w.ndim == 2 and ins[0] not in self.consts:
            # a constant right operand is the layer's weight matrix (X1, X2)
            self.b.add_batched_mat_mul(node.name or out, [ins[0]], out, weight_matrix_rows=w.shape[0],
                                       weight_matrix_columns=w.shape[1], W=w)
        else:
            self.b.add_batched_mat_mul(node.name or out, [self.operand(ins[0]), self.operand(ins[1])], out)

    def gemm(self, node, a, ins, out):
        if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0 \
                or len(self.shapes[ins[0]]) != 2 or ins[1] not in self.consts:
            raise self.unsupported(node, "Gemm needs a 2-D input, constant B, no transA, alpha = beta = 1")
        w = self.consts[ins[1]]
        w = w if a.get("transB", 0) else w.T  # innerProduct weights are (C_out, C_in)
        bias = self.consts[ins[2]] if len(ins) > 2 and ins[2] else None
        if bias is not None and bias.size != w.shape[0]:
            raise self.unsupported(node, "Gemm bias must be a [N] vector")
        self.b.add_inner_product(node.name or out, np.ascontiguousarray(w), None if bias is None else bias.reshape(-1),
                                 w.shape[1], w.shape[0], bias is not None, ins[0], out)

    def lstm(self, node, a, ins):
        """ONNX LSTM (forward, layout 0, gates iofc) -> uniDirectionalLSTM (gates ifoz) between reshapes."""
        if a.get("direction", "forward") != "forward" or a.get("layout", 0) != 0 or "activations" in a \
                or "clip" in a or a.get("input_forget", 0) or any(n for n in ins[4:]):
            raise self.unsupported(node, "only forward LSTMs with default activations and no optional inputs")
        hidden = a["hidden_size"]
        steps, batch, n_in = self.shapes[ins[0]]
        w, r = self.consts[ins[1]][0], self.consts[ins[2]][0]
        bias = self.consts[ins[3]][0] if len(ins) > 3 and ins[3] else np.zeros(8 * hidden, np.float32)
        bias = bias[:4 * hidden] + bias[4 * hidden:]

        def gates(m):  # ONNX i, o, f, c -> builder i, f, o, z
            i, o, f, c = np.split(m, 4)
            return [i, f, o, c]

        name = node.name or node.output[1]
        x5 = f"{name}__x5"
        self.b.add_reshape_static(f"{name}__in", ins[0], x5, [steps, batch, n_in, 1, 1])
        outs = [f"{name}__{k}" for k in ("y", "h", "c")]
        self.b.add_unilstm(name, gates(r), gates(w), gates(bias), hidden, n_in, [x5], outs,
                           output_all=bool(node.output[0]))
        for k, onnx_out in zip(outs, node.output):
            if onnx_out:
                self.b.add_reshape_static(f"{onnx_out}__out", k, onnx_out, [int(d) for d in self.shapes[onnx_out]])

    def convert(self, path):
        from coremltools.models import datatypes
        from coremltools.models.neural_network import NeuralNetworkBuilder
        from coremltools.models.utils import save_spec

        graph = self.model.graph
        inputs = [(vi.name, datatypes.Array(*self.shapes[vi.name])) for vi in graph.input if vi.name not in self.consts]
        outputs = [(vi.name, datatypes.Array(*self.shapes[vi.name])) for vi in graph.output]
        self.b = NeuralNetworkBuilder(inputs, outputs, disable_rank5_shape_mapping=True)
        for node in graph.node:
            self.convert_node(node)
        save_spec(self.b.spec, path)
        return path


def convert(model, path):
    """Write `model` (onnx.ModelProto) as a Core ML NeuralNetwork .mlmodel at `path`."""
    return Converter(model).convert(path)
