"""int8 MobileNet v1 (1.0, 224): Estuary compiling the NNAPI quant8 form beside onnxruntime
running the same network in its QLinear form, in one run.

    python benchmarks/int8.py [--iterations 40] [--threads N] [--batch 1] [--json out.json]

Both forms hold the same uint8 weights (zero point 128, one scale per tensor), int32 biases and
activation scales: every convolution's output is quantized to [0, 6] (scale 6/255, zero point 0),
which is MobileNet's RELU6 (NNAPI: the fused RELU6 activation; QLinearConv: saturation to the
output range). The network: the 27 convolutions of MobileNet v1, a global average pool and a
1x1 convolution to 1000 classes (NNAPI: FULLY_CONNECTED). Latencies are medians over paired
alternations; outputs are compared in quanta.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run import machine, time_runs  # noqa: E402

BLOCKS = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)] + \
         [(512, 512, 1)] * 5 + [(512, 1024, 2), (1024, 1024, 1)]
IN_Q = (1.0 / 128, 128)
ACT_Q = (6.0 / 255, 0)
W_ZP = 128


def layers(rng):
    """[(kind, stride, uint8 weights OHWI (depthwise: 1HWC), weight scale, int32 bias)]."""
    out = []

    def weights(shape, fan_in):
        w = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        scale = float(np.abs(w).max() / 127.0)
        return np.clip(np.round(w / scale) + W_ZP, 0, 255).astype(np.uint8), scale

    def bias(n, in_scale, w_scale):
        return np.round(rng.standard_normal(n) * 0.05 / (in_scale * w_scale)).astype(np.int32)

    w, s = weights((32, 3, 3, 3), 27)
    out.append(("conv", 2, w, s, bias(32, IN_Q[0], s)))
    for c_in, c_out, stride in BLOCKS:
        w, s = weights((1, 3, 3, c_in), 9)
        out.append(("dw", stride, w, s, bias(c_in, ACT_Q[0], s)))
        w, s = weights((c_out, 1, 1, c_in), c_in)
        out.append(("conv", 1, w, s, bias(c_out, ACT_Q[0], s)))
    return out


def _fc(rng):
    w = rng.standard_normal((1000, 1024)) * np.sqrt(1.0 / 1024)
    scale = float(np.abs(w).max() / 127.0)
    wq = np.clip(np.round(w / scale) + W_ZP, 0, 255).astype(np.uint8)
    return wq, scale, np.round(rng.standard_normal(1000) * 0.05 / (ACT_Q[0] * scale)).astype(np.int32)


LOGITS_Q = (16.0 / 255, 128)


def _same_pads(size, k, stride):
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + k - size)
    return out, total // 2, total - total // 2


def nnapi_model(spec, fc, batch, size=224):
    from estuary import nnapi
    from estuary.nnapi import OperandCode as T, OperationCode as Op

    m = nnapi.Model()

    def tensor(shape, q, code=T.TENSOR_QUANT8_ASYMM, value=None):
        i = m.add_operand(code, dimensions=list(shape), scale=q[0], zero_point=q[1])
        if value is not None:
            m.set_operand_value(i, value)
        return i

    def scalar(v, code=T.INT32):
        i = m.add_operand(code)
        m.set_operand_value(i, v)
        return i

    x = tensor((batch, size, size, 3), IN_Q)
    cur, q, hw = x, IN_Q, size
    for kind, stride, w, ws, b in spec:
        channels = w.shape[0] if kind == "conv" else w.shape[3]
        hw = -(-hw // stride)
        ins = [cur, tensor(w.shape, (ws, W_ZP), value=w), tensor(b.shape, (q[0] * ws, 0), T.TENSOR_INT32, b),
               scalar(nnapi.PaddingCode.PADDING_SAME), scalar(stride), scalar(stride)]
        if kind == "dw":
            ins.append(scalar(1))
        out = tensor((batch, hw, hw, channels), ACT_Q)
        m.add_operation(Op.CONV_2D if kind == "conv" else Op.DEPTHWISE_CONV_2D, ins + [scalar(3)], [out])
        cur, q = out, ACT_Q
    pooled = tensor((batch, 1, 1, 1024), ACT_Q)
    m.add_operation(Op.AVERAGE_POOL_2D, [cur] + [scalar(v) for v in (2, 1, 1, hw, hw, 0)], [pooled])
    fw, fs, fb = fc
    logits = tensor((batch, 1000), LOGITS_Q)
    m.add_operation(Op.FULLY_CONNECTED, [pooled, tensor(fw.shape, (fs, W_ZP), value=fw),
                                         tensor(fb.shape, (ACT_Q[0] * fs, 0), T.TENSOR_INT32, fb), scalar(0)], [logits])
    m.identify_inputs_and_outputs([x], [logits])
    m.finish()
    return m


def onnx_model(spec, fc, batch, size=224):
    """The QLinear form (NCHW): QLinearConv per layer, com.microsoft QLinearGlobalAveragePool,
    and a 1x1 QLinearConv for the classifier."""
    import onnx
    from onnx import TensorProto as TP, helper as h, numpy_helper as nh

    inits, nodes = [], []

    def const(name, value):
        inits.append(nh.from_array(np.asarray(value), name))
        return name

    def q(name, scale, zp):
        return const(f"{name}_s", np.float32(scale)), const(f"{name}_z", np.uint8(zp))

    cur, cq, hw = "x", q("x", *IN_Q), size
    aq = q("act", *ACT_Q)
    for i, (kind, stride, w, ws, b) in enumerate(spec):
        wt = w.transpose(0, 3, 1, 2) if kind == "conv" else w.transpose(3, 0, 1, 2)  # OIHW / C1HW
        k = w.shape[1]
        hw, lo, hi = _same_pads(hw, k, stride)
        attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=[lo, lo, hi, hi])
        if kind == "dw":
            attrs["group"] = int(w.shape[3])
        out = f"t{i}"
        nodes.append(h.make_node("QLinearConv", [cur, *cq, const(f"w{i}", np.ascontiguousarray(wt)),
                                                 *q(f"w{i}", ws, W_ZP), *aq, const(f"b{i}", b)], [out], **attrs))
        cur, cq = out, aq
    nodes.append(h.make_node("QLinearGlobalAveragePool", [cur, *aq, *aq], ["pooled"], domain="com.microsoft",
                             channels_last=0))
    fw, fs, fb = fc
    nodes.append(h.make_node("QLinearConv", ["pooled", *aq, const("fw", fw.reshape(1000, 1024, 1, 1)),
                                             *q("fw", fs, W_ZP), *q("logits", *LOGITS_Q), const("fb", fb)], ["y"]))
    graph = h.make_graph(nodes, "mobilenet_int8", [h.make_tensor_value_info("x", TP.UINT8, [batch, 3, size, size])],
                         [h.make_tensor_value_info("y", TP.UINT8, [batch, 1000, 1, 1])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--json")
    args = p.parse_args(argv)
    import onnxruntime as ort

    import estuary

    rng = np.random.default_rng(2026)
    spec, fc = layers(rng), _fc(rng)
    x = rng.integers(0, 256, (args.batch, 224, 224, 3)).astype(np.uint8)
    art = estuary.compile(nnapi_model(spec, fc, args.batch), workers=args.threads)
    est = estuary.load(art, threads=args.threads)
    name = est.inputs[0][0]
    opts = ort.SessionOptions()
    if args.threads:
        opts.intra_op_num_threads = args.threads
    sess = ort.InferenceSession(onnx_model(spec, fc, args.batch).SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    feeds_ort = {"x": np.ascontiguousarray(x.transpose(0, 3, 1, 2))}
    got = next(iter(est.run({name: x}).values())).reshape(args.batch, 1000).astype(np.int64)
    ref = sess.run(["y"], feeds_ort)[0].reshape(args.batch, 1000).astype(np.int64)
    diff = np.abs(got - ref)
    e_times, o_times = [], []
    for _ in range(5):
        e_times += time_runs(lambda: est.run({name: x}), args.iterations // 5)
        o_times += time_runs(lambda: sess.run(["y"], feeds_ort), args.iterations // 5)
    row = {"model": f"mobilenet_int8 (batch {args.batch})", "estuary_ms": float(np.median(e_times)),
           "ort_ms": float(np.median(o_times)), "estuary_min_ms": float(np.min(e_times)),
           "ort_min_ms": float(np.min(o_times)), "max_quanta": int(diff.max()),
           "within_one": float((diff <= 1).mean()), "vmfb_kb": len(art.vmfb) / 1024, "machine": machine()}
    row["ratio"] = row["estuary_ms"] / row["ort_ms"]
    print(f"{row['machine']['cpu']}, {row['machine']['cpus']} logical CPUs, threads: {args.threads or 'default'}\n")
    print("| model | Estuary median (min) ms | onnxruntime QLinear median (min) ms | ratio | max diff (quanta) "
          "| within 1 quantum |\n|---|---|---|---|---|---|")
    print(f"| {row['model']} | {row['estuary_ms']:.2f} ({row['estuary_min_ms']:.2f}) | {row['ort_ms']:.2f} "
          f"({row['ort_min_ms']:.2f}) | {row['ratio']:.2f} | {row['max_quanta']} | {row['within_one']:.1%} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)
    return 0 if row["within_one"] >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
