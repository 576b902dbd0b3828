"""The benchmark models, each defined once as an ONNX graph with fixed (seeded) weights.

ONNX is the single definition: onnxruntime runs it directly, `onnx_to_webnn` turns it into our
WebNN JSON, and nnef-tools can turn it into NNEF. Every function returns (onnx.ModelProto,
feeds dict, flop count).
"""
import functools

import numpy as np
from onnx import TensorProto, helper, numpy_helper


class Net:
    """A tiny ONNX graph builder: fixed-seed weights, auto-named values."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count, self.flops = [], [], 0, 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else np.sqrt(2.0 / max(fan_in, 1))
        n = self.name("w")
        self.inits.append(numpy_helper.from_array(self.rng.normal(0, scale, shape).astype(np.float32), n))
        return n

    def const(self, array, prefix="c"):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(self, op, inputs, n_out=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k, hw_out, stride=1, pad=None, groups=1, bias=True):
        pad = k // 2 if pad is None else pad
        w = self.weight((cout, cin // groups, k, k))
        ins = [x, w] + ([self.const(self.rng.normal(0, 0.05, cout).astype(np.float32), "b")] if bias else [])
        self.flops += 2 * cout * (cin // groups) * k * k * hw_out * hw_out
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=groups)

    def bn(self, x, c):
        scale = self.const((1 + 0.1 * self.rng.standard_normal(c)).astype(np.float32), "s")
        bias = self.const((0.1 * self.rng.standard_normal(c)).astype(np.float32), "b")
        mean = self.const((0.1 * self.rng.standard_normal(c)).astype(np.float32), "m")
        var = self.const((1 + 0.1 * self.rng.random(c)).astype(np.float32), "v")
        return self.node("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)

    def gemm(self, x, k, n, trans_b=False):
        w = self.weight((n, k) if trans_b else (k, n), scale=np.sqrt(1.0 / k))
        b = self.const((0.01 * self.rng.standard_normal(n)).astype(np.float32), "b")
        self.flops += 2 * k * n
        return self.node("Gemm", [x, w, b], transB=int(trans_b))

    def model(self, inputs, outputs, feeds):
        graph = helper.make_graph(
            self.nodes, "bench",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape)) for n, a in inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m, feeds, self.flops


def _resnet_stem(net, size):
    """ResNet's 7x7 stride-2 convolution, batch norm, relu and 3x3 stride-2 max pooling of "x";
    returns (value, its width)."""
    y = net.node("Relu", [net.bn(net.conv("x", 3, 64, 7, size // 2, stride=2, pad=3, bias=False), 64)])
    return net.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), size // 4


def resnet18(size=224, batch=1):
    net, rng = Net(18), np.random.default_rng(100)
    x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
    y, hw = _resnet_stem(net, size)
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            hw_out = hw // s
            h = net.node("Relu", [net.bn(net.conv(y, cin, cout, 3, hw_out, stride=s, bias=False), cout)])
            h = net.bn(net.conv(h, cout, cout, 3, hw_out, bias=False), cout)
            skip = y if (s == 1 and cin == cout) else net.bn(net.conv(y, cin, cout, 1, hw_out, stride=s, pad=0,
                                                                        bias=False), cout)
            y = net.node("Relu", [net.node("Add", [h, skip])])
            cin, hw = cout, hw_out
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    y = net.gemm(y, 512, 1000, trans_b=True)
    net.nodes[-1].output[0] = "logits"
    net.flops *= batch
    return net.model({"x": x}, ["logits"], {"x": x})


def mobilenet(size=224, batch=1):
    net, rng = Net(1), np.random.default_rng(101)
    x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
    hw = size // 2
    y = net.node("Clip", [net.conv("x", 3, 32, 3, hw, stride=2), net.const(np.float32(0)), net.const(np.float32(6))])
    cin = 32
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for cout, stride in plan:
        hw //= stride
        y = net.node("Relu", [net.conv(y, cin, cin, 3, hw, stride=stride, groups=cin)])
        y = net.node("Relu", [net.conv(y, cin, cout, 1, hw, pad=0)])
        cin = cout
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    net.gemm(y, 1024, 1000, trans_b=True)
    net.nodes[-1].output[0] = "logits"
    net.flops *= batch
    return net.model({"x": x}, ["logits"], {"x": x})


def mlp():
    net, rng = Net(2), np.random.default_rng(102)
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    y = net.node("Relu", [net.gemm("x", 1024, 4096)])
    y = net.node("Relu", [net.gemm(y, 4096, 4096)])
    net.gemm(y, 4096, 1000)
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


def transformer(seq=128, hidden=256, heads=4, ffn=1024, pre_norm=False, dynamic=False):
    """A BERT-style encoder block (post-LayerNorm), or with `pre_norm` a GPT-style one: each
    sublayer reads LayerNorm(x) and adds its result to x. With `dynamic` the sequence length is
    the symbolic ONNX dimension "seq" (reshapes take -1 there; `seq` sizes the feeds)."""
    net, rng = Net(3), np.random.default_rng(103)
    x = rng.standard_normal((seq, hidden)).astype(np.float32)
    d = hidden // heads

    def proj(v, k, n):
        w = net.weight((k, n), scale=np.sqrt(1.0 / k))
        net.flops += 2 * seq * k * n
        return net.node("Add", [net.node("MatMul", [v, w]), net.const(np.zeros(n, np.float32), "b")])

    rows = -1 if dynamic else seq

    def split_heads(v):
        r = net.node("Reshape", [v, net.const(np.array([rows, heads, d], np.int64), "shape")])
        return net.node("Transpose", [r], perm=[1, 0, 2])

    def layer_norm(v):
        g = net.const((1 + 0.1 * net.rng.standard_normal(hidden)).astype(np.float32), "g")
        b = net.const((0.1 * net.rng.standard_normal(hidden)).astype(np.float32), "b")
        return net.node("LayerNormalization", [v, g, b], axis=-1, epsilon=1e-5)

    src = layer_norm("x") if pre_norm else "x"
    q, k, v = (split_heads(proj(src, hidden, hidden)) for _ in range(3))
    kt = net.node("Transpose", [k], perm=[0, 2, 1])
    scores = net.node("Mul", [net.node("MatMul", [q, kt]), net.const(np.float32(1 / np.sqrt(d)))])
    net.flops += 2 * 2 * heads * seq * seq * d
    attn = net.node("MatMul", [net.node("Softmax", [scores], axis=-1), v])
    merged = net.node("Reshape", [net.node("Transpose", [attn], perm=[1, 0, 2]),
                                  net.const(np.array([rows, hidden], np.int64), "shape")])
    h = net.node("Add", ["x", proj(merged, hidden, hidden)])
    h = h if pre_norm else layer_norm(h)
    f = proj(_gelu(net, proj(layer_norm(h) if pre_norm else h, hidden, ffn)), ffn, hidden)
    y = net.node("Add", [h, f])
    if not pre_norm:
        layer_norm(y)
    net.nodes[-1].output[0] = "y"
    model = net.model({"x": x}, ["y"], {"x": x})
    if dynamic:
        symbolic(model[0], "x", {0: "seq"})
    return model


def symbolic(model, name, dims):
    """Make dimensions of input `name` symbolic ONNX dims: {axis: dim_param} (in place)."""
    shape = next(i for i in model.graph.input if i.name == name).type.tensor_type.shape
    for axis, param in dims.items():
        shape.dim[axis].ClearField("dim_value")
        shape.dim[axis].dim_param = param


def _gelu(net, v):
    """0.5 * v * (1 + erf(v / sqrt(2))) in opset-17 ops."""
    e = net.node("Erf", [net.node("Div", [v, net.const(np.float32(np.sqrt(2)))])])
    return net.node("Mul", [net.node("Mul", [v, net.const(np.float32(0.5))]),
                            net.node("Add", [e, net.const(np.float32(1))])])


def lstm(steps=32, inputs=128, hidden=256, classes=10):
    net, rng = Net(4), np.random.default_rng(104)
    x = rng.standard_normal((steps, 1, inputs)).astype(np.float32)
    w = net.weight((1, 4 * hidden, inputs), scale=np.sqrt(1.0 / inputs))
    r = net.weight((1, 4 * hidden, hidden), scale=np.sqrt(1.0 / hidden))
    b = net.const((0.05 * net.rng.standard_normal((1, 8 * hidden))).astype(np.float32), "b")
    _, h_last, _ = net.node("LSTM", ["x", w, r, b], n_out=3, hidden_size=hidden)
    net.flops += 2 * steps * 4 * hidden * (inputs + hidden)
    y = net.node("Reshape", [h_last, net.const(np.array([1, hidden], np.int64), "shape")])
    net.gemm(y, hidden, classes)
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


MODELS = {"resnet18": resnet18, "mobilenet": mobilenet, "mlp": mlp, "transformer": transformer, "lstm": lstm}


def resnet50(size=224):
    """ResNet-50 (v1.5: the stride on the 3x3 convolution of each downsampling bottleneck)."""
    net, rng = Net(50), np.random.default_rng(150)
    x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    y, hw = _resnet_stem(net, size)
    cin = 64
    for mid, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        cout = mid * 4
        for block in range(blocks):
            s = stride if block == 0 else 1
            hw_out = hw // s
            h = net.node("Relu", [net.bn(net.conv(y, cin, mid, 1, hw, pad=0, bias=False), mid)])
            h = net.node("Relu", [net.bn(net.conv(h, mid, mid, 3, hw_out, stride=s, bias=False), mid)])
            h = net.bn(net.conv(h, mid, cout, 1, hw_out, pad=0, bias=False), cout)
            skip = y if (s == 1 and cin == cout) else net.bn(net.conv(y, cin, cout, 1, hw_out, stride=s, pad=0,
                                                                        bias=False), cout)
            y = net.node("Relu", [net.node("Add", [h, skip])])
            cin, hw = cout, hw_out
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    net.gemm(y, 2048, 1000, trans_b=True)
    net.nodes[-1].output[0] = "logits"
    return net.model({"x": x}, ["logits"], {"x": x})


def mobilenetv2(size=224):
    """MobileNetV2: inverted residual blocks (1x1 expansion, 3x3 depthwise, linear 1x1 projection)."""
    net, rng = Net(2), np.random.default_rng(102)
    x = rng.standard_normal((1, 3, size, size)).astype(np.float32)

    def relu6(y):
        return net.node("Clip", [y, net.const(np.float32(0)), net.const(np.float32(6))])

    hw = size // 2
    y = relu6(net.conv("x", 3, 32, 3, hw, stride=2))
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            h = relu6(net.conv(y, cin, hidden, 1, hw, pad=0)) if t != 1 else y
            hw_out = hw // stride
            h = relu6(net.conv(h, hidden, hidden, 3, hw_out, stride=stride, groups=hidden))
            h = net.conv(h, hidden, c, 1, hw_out, pad=0)
            y = net.node("Add", [y, h]) if stride == 1 and cin == c else h
            cin, hw = c, hw_out
    y = relu6(net.conv(y, cin, 1280, 1, hw, pad=0))
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    net.gemm(y, 1280, 1000, trans_b=True)
    net.nodes[-1].output[0] = "logits"
    return net.model({"x": x}, ["logits"], {"x": x})


# beyond the five: `--models resnet50,mobilenetv2` (not in the default run)
def transformer_prenorm():
    return transformer(pre_norm=True)


EXTRA = {"resnet50": resnet50, "mobilenetv2": mobilenetv2, "transformer_prenorm": transformer_prenorm}
for _batch in (4, 16):  # batch rows: `--models resnet18_b4,mobilenet_b16`
    EXTRA[f"resnet18_b{_batch}"] = functools.partial(resnet18, batch=_batch)
    EXTRA[f"mobilenet_b{_batch}"] = functools.partial(mobilenet, batch=_batch)


def tiny():
    """A very small conv net for the test suite's smoke run of the benchmark script."""
    net, rng = Net(5), np.random.default_rng(105)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    y = net.node("Relu", [net.bn(net.conv("x", 3, 8, 3, 16), 8)])
    y = net.node("Flatten", [net.node("GlobalAveragePool", [y])])
    net.gemm(y, 8, 4, trans_b=True)
    net.nodes[-1].output[0] = "y"
    return net.model({"x": x}, ["y"], {"x": x})


MODELS_ALL = dict(MODELS, **EXTRA, tiny=tiny)
