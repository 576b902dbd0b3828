"""A small quantized MobileNet-style network built through estuary.nnapi (conv 3x3/2 + RELU6,
depthwise 3x3 + RELU6, pointwise 1x1 + RELU6, depthwise 3x3/2 + RELU6, pointwise, global average
pool, fully connected, softmax), compiled for llvm-cpu with uint8 inputs and outputs.

Oracle: the same network simulated in float64 numpy, layer by layer with the spec's formula
(dequantize -> float op -> requantize rounding half away from zero, saturating to [0, 255]).
Bound: integer rounding of intermediate results may differ at ties and propagate, so we require,
for the last feature map (768 values), the logits and the probabilities, at least 97% within one
quantum and none off by more than 3 quanta (observed: all exact with this seed)."""
import numpy as np

from estuary import nnapi
from estuary.nnapi import OperandCode as T, OperationCode as Op
from tests.importers.nnapi.test_ops_quant8 import QBuilder, conv_ref, deq, req

RELU6 = (6.0 / 255, 0)


def _quantize_weights(w):
    scale = np.abs(w).max() / 127.0
    return np.clip(np.round(w / scale) + 128, 0, 255).astype(np.uint8), (scale, 128)


def test_quantized_mobilenet(rng):
    px = (1.0 / 128, 128)
    x = rng.integers(0, 256, (2, 16, 16, 3)).astype(np.uint8)
    layers = [("conv", (8, 3, 3, 3), 2), ("dw", (1, 3, 3, 8), 1), ("conv", (16, 1, 1, 8), 1),
              ("dw", (1, 3, 3, 16), 2), ("conv", (24, 1, 1, 16), 1)]
    b = QBuilder()
    b.inputs = [b.tensor(x.shape, px)]
    cur, p, shape = b.inputs[0], px, x.shape
    ref = deq(x, px)
    for kind, wshape, stride in layers:
        wq, pw = _quantize_weights(rng.standard_normal(wshape) * (0.5 if kind == "dw" else 0.3))
        channels = wshape[0] if kind == "conv" else wshape[3]
        bias = np.round(rng.standard_normal(channels) * 0.1 / (p[0] * pw[0])).astype(np.int32)
        k = wshape[1]
        out_hw = -(-shape[1] // stride)
        total = max(0, (out_hw - 1) * stride + k - shape[1])
        pads = [total // 2, total - total // 2] * 2
        out_shape = (shape[0], out_hw, out_hw, channels)
        ins = [cur, b.tensor(wshape, pw, wq), b.tensor((channels,), (p[0] * pw[0], 0), bias, code=T.TENSOR_INT32),
               b.scalar(nnapi.PaddingCode.PADDING_SAME), b.scalar(stride), b.scalar(stride)]
        ins += [b.scalar(1)] if kind == "dw" else []
        out = b.tensor(out_shape, RELU6)
        b.m.add_operation(Op.CONV_2D if kind == "conv" else Op.DEPTHWISE_CONV_2D, ins + [b.scalar(3)], [out])
        real = conv_ref(ref, deq(wq, pw), pads, [stride, stride], depthwise=kind == "dw") + bias * p[0] * pw[0]
        ref_features = req(np.clip(real, 0, 6), RELU6)
        ref = deq(ref_features, RELU6)
        cur, p, shape = out, RELU6, out_shape
    # global average pool 4x4 -> [2, 1, 1, 24] (same parameters), FC -> 10 logits, softmax
    pooled = b.tensor((2, 1, 1, 24), RELU6)
    b.m.add_operation(Op.AVERAGE_POOL_2D, [cur] + [b.scalar(v) for v in (2, 1, 1, 4, 4, 0)], [pooled])
    ref = deq(req(ref.mean(axis=(1, 2), keepdims=True), RELU6), RELU6)
    fq, pf = _quantize_weights(rng.standard_normal((10, 24)) * 0.5)
    fbias = np.round(rng.standard_normal(10) * 0.2 / (RELU6[0] * pf[0])).astype(np.int32)
    logits_real = ref.reshape(2, 24) @ deq(fq, pf).T + fbias * RELU6[0] * pf[0]
    lo, hi = logits_real.min() - 0.5, logits_real.max() + 0.5  # output range chosen from the float model
    pl = ((hi - lo) / 255, int(round(-lo / ((hi - lo) / 255))))
    logits = b.tensor((2, 10), pl)
    b.m.add_operation(Op.FULLY_CONNECTED, [pooled, b.tensor(fq.shape, pf, fq),
                                           b.tensor((10,), (RELU6[0] * pf[0], 0), fbias, code=T.TENSOR_INT32),
                                           b.scalar(0)], [logits])
    probs = b.tensor((2, 10), (1.0 / 256, 0))
    b.m.add_operation(Op.SOFTMAX, [logits, b.scalar(1.0, T.FLOAT32)], [probs])
    b.outputs = [cur, logits, probs]
    got_features, got_logits, got_probs = b.run([x])

    ref_logits = req(logits_real, pl)
    lr = deq(ref_logits, pl)
    e = np.exp(lr - lr.max(1, keepdims=True))
    ref_probs = req(e / e.sum(1, keepdims=True), (1.0 / 256, 0))
    for got, want in ((got_features, ref_features), (got_logits, ref_logits), (got_probs, ref_probs)):
        assert got.dtype == np.uint8 and got.shape == want.shape
        diff = np.abs(got.astype(np.int64) - want)
        assert diff.max() <= 3, f"max difference {diff.max()} quanta"
        assert (diff <= 1).mean() >= 0.97, f"only {(diff <= 1).mean():.1%} within one quantum"
