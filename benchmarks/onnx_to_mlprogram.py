"""Converts the benchmark ONNX graphs to a Core ML ML Program `.mlpackage` (coremltools' MIL builder).

Covers exactly the ONNX ops the benchmark models use; anything else raises ValueError naming the
node and op. Every MIL op keeps the ONNX layout (NCHW images, [steps, batch, features] LSTM input),
ops are named after their ONNX outputs so the package's input and output names are the ONNX
graph's, and coremltools' default MIL passes run as they do for any ct.convert (float32
precision: no float16 casts). Static second inputs (Reshape shapes, Clip bounds, BatchNorm and
LayerNorm parameters, Conv/Gemm weights) must be initializers.
"""
import numpy as np
from onnx import helper, numpy_helper

_UNARY = {"Relu": "relu", "Erf": "erf"}
_BINARY = {"Add": "add", "Mul": "mul", "Div": "real_div", "MatMul": "matmul"}


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _shapes(model):
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if vi.type.tensor_type.HasField("shape"):
            shapes[vi.name] = [int(d.dim_value) for d in vi.type.tensor_type.shape.dim]
    return shapes


class Converter:
    def __init__(self, model):
        self.model = model
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.shapes = _shapes(model)
        self.values = {}  # ONNX value name -> MIL Var

    def unsupported(self, node, why):
        return ValueError(f"onnx_to_mlprogram: {why} ({node.op_type} {node.name})")

    def const(self, node, name):
        if name not in self.consts:
            raise self.unsupported(node, f"input {name!r} must be an initializer")
        return np.asarray(self.consts[name], np.float32)

    def operand(self, name):
        """The MIL value of an ONNX value; initializers become float32 constants."""
        if name in self.values:
            return self.values[name]
        return np.asarray(self.consts[name], np.float32)

    def convert_node(self, node):
        from coremltools.converters.mil import Builder as mb

        a, ins, out, op = _attrs(node), list(node.input), node.output[0], node.op_type
        x = self.operand(ins[0]) if ins and ins[0] else None
        if op in _UNARY:
            y = getattr(mb, _UNARY[op])(x=x, name=out)
        elif op in _BINARY:
            y = getattr(mb, _BINARY[op])(x=x, y=self.operand(ins[1]), name=out)
        elif op == "Conv":
            y = self.conv(node, a, ins, x, out)
        elif op == "BatchNormalization":
            scale, bias, mean, var = (self.const(node, n) for n in ins[1:5])
            y = mb.batch_norm(x=x, mean=mean, variance=var, gamma=scale, beta=bias, epsilon=np.float32(a.get("epsilon", 1e-5)),
                              name=out)
        elif op == "Clip":
            lo, hi = (float(self.const(node, n)) for n in ins[1:3])
            y = mb.clip(x=x, alpha=np.float32(lo), beta=np.float32(hi), name=out)
        elif op == "MaxPool":
            if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])) \
                    or a.get("auto_pad", "NOTSET") != "NOTSET":
                raise self.unsupported(node, "ceil_mode / dilations / auto_pad")
            t, l, bt, r = a.get("pads", [0, 0, 0, 0])
            y = mb.max_pool(x=x, kernel_sizes=list(a["kernel_shape"]), strides=list(a.get("strides", [1, 1])),
                            pad_type="custom", pad=[t, bt, l, r], name=out)
        elif op == "GlobalAveragePool":
            rank = len(self.shapes[ins[0]])
            y = mb.reduce_mean(x=x, axes=list(range(2, rank)), keep_dims=True, name=out)
        elif op in ("Flatten", "Reshape"):
            y = mb.reshape(x=x, shape=np.array(self.shapes[out], np.int32), name=out)
        elif op == "Transpose":
            y = mb.transpose(x=x, perm=list(a["perm"]), name=out)
        elif op == "Gemm":
            y = self.gemm(node, a, ins, x, out)
        elif op == "Softmax":
            y = mb.softmax(x=x, axis=a.get("axis", -1), name=out)
        elif op == "LayerNormalization":
            if len(node.output) > 1 and any(node.output[1:]):
                raise self.unsupported(node, "Mean / InvStdDev outputs")
            rank = len(self.shapes[ins[0]])
            axis = a.get("axis", -1) % rank
            gamma = self.const(node, ins[1])
            beta = self.const(node, ins[2]) if len(ins) > 2 and ins[2] else np.zeros_like(gamma)
            y = mb.layer_norm(x=x, axes=list(range(axis, rank)), gamma=gamma, beta=beta,
                              epsilon=np.float32(a.get("epsilon", 1e-5)), name=out)
        elif op == "LSTM":
            self.lstm(node, a, ins, x)
            return
        else:
            raise self.unsupported(node, f"unsupported ONNX op {op}")
        self.values[out] = y

    def conv(self, node, a, ins, x, out):
        from coremltools.converters.mil import Builder as mb

        w = self.const(node, ins[1])
        if w.ndim != 4 or a.get("auto_pad", "NOTSET") != "NOTSET":
            raise self.unsupported(node, "only 2-D convolutions with explicit pads")
        t, l, bt, r = a.get("pads", [0, 0, 0, 0])
        kw = dict(x=x, weight=w, strides=list(a.get("strides", [1, 1])), pad_type="custom", pad=[t, bt, l, r],
                  dilations=list(a.get("dilations", [1, 1])), groups=int(a.get("group", 1)), name=out)
        if len(ins) > 2 and ins[2]:
            kw["bias"] = self.const(node, ins[2])
        return mb.conv(**kw)

    def gemm(self, node, a, ins, x, out):
        from coremltools.converters.mil import Builder as mb

        if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0 \
                or len(self.shapes[ins[0]]) != 2:
            raise self.unsupported(node, "Gemm needs a 2-D input, no transA, alpha = beta = 1")
        w = self.const(node, ins[1])
        w = w if a.get("transB", 0) else w.T  # linear's weight is (N, K)
        kw = dict(x=x, weight=np.ascontiguousarray(w), name=out)
        if len(ins) > 2 and ins[2]:
            bias = self.const(node, ins[2])
            if bias.size != w.shape[0]:
                raise self.unsupported(node, "Gemm bias must be a [N] vector")
            kw["bias"] = bias.reshape(-1)
        return mb.linear(**kw)

    def lstm(self, node, a, ins, x):
        """ONNX LSTM (forward, layout 0, gates iofc) -> MIL lstm (gates ifoz, one summed bias)."""
        from coremltools.converters.mil import Builder as mb

        if a.get("direction", "forward") != "forward" or a.get("layout", 0) != 0 or "activations" in a \
                or "clip" in a or a.get("input_forget", 0) or any(n for n in ins[4:]):
            raise self.unsupported(node, "only forward LSTMs with default activations and no optional inputs")
        hidden = int(a["hidden_size"])
        batch = self.shapes[ins[0]][1]
        w, r = self.const(node, ins[1])[0], self.const(node, ins[2])[0]
        bias = self.const(node, ins[3])[0] if len(ins) > 3 and ins[3] else np.zeros(8 * hidden, np.float32)
        bias = bias[:4 * hidden] + bias[4 * hidden:]

        def gates(m):  # ONNX i, o, f, c -> MIL i, f, o, z
            i, o, f, c = np.split(m, 4)
            return np.ascontiguousarray(np.concatenate([i, f, o, c]))

        zeros = np.zeros((batch, hidden), np.float32)
        name = node.name or node.output[1]
        seq, h, c = mb.lstm(x=x, initial_h=zeros, initial_c=zeros, weight_ih=gates(w), weight_hh=gates(r),
                            bias=gates(bias), output_sequence=bool(node.output[0]), direction="forward", name=name)
        # ONNX adds a num_directions axis: Y [steps, 1, batch, H], Y_h / Y_c [1, batch, H]
        for value, axis, onnx_out in zip((seq, h, c), (1, 0, 0), node.output):
            if onnx_out:
                self.values[onnx_out] = mb.expand_dims(x=value, axes=[axis], name=onnx_out)

    def convert(self, path):
        import coremltools as ct
        from coremltools.converters.mil import Builder as mb
        from coremltools.converters.mil.mil import Function, Program

        graph = self.model.graph
        specs = {vi.name: mb.placeholder(shape=self.shapes[vi.name]) for vi in graph.input
                 if vi.name not in self.consts}
        with Function(specs, opset_version=ct.target.iOS16) as func:
            self.values.update(func.inputs)
            for node in graph.node:
                self.convert_node(node)
            func.set_outputs([self.values[vi.name] for vi in graph.output])
        prog = Program()
        prog.add_function("main", func)
        mlmodel = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS16,
                             compute_precision=ct.precision.FLOAT32)
        mlmodel.save(path)
        return path


def convert(model, path):
    """Write `model` (onnx.ModelProto) as a Core ML ML Program .mlpackage at `path`."""
    return Converter(model).convert(path)
