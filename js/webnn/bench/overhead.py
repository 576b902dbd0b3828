"""The Python API side of overhead.js: the same one-op graph and MobileNet-style classifier
built with estuary.webnn, timed per compute() call, per writeTensor + dispatch + readTensor on
MLTensors (the JS program's sequence), and per Model.run (the compiled model the JS worker runs). Usage: python js/webnn/bench/overhead.py [iterations]"""
import json
import sys
import time

import numpy as np

from estuary import webnn

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000


def mobilenet(b):
    r = np.random.default_rng(7)
    c = lambda *shape: b.constant({"dataType": "float32", "shape": list(shape)},  # noqa: E731
                                  r.uniform(0.5, 1.5, shape).astype(np.float32))
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 16, 16]})
    h = b.conv2d(x, c(8, 3, 3, 3), {"bias": c(8), "padding": [1, 1, 1, 1], "strides": [2, 2]})
    h = b.batchNormalization(h, c(8), c(8), {"scale": c(8), "bias": c(8), "epsilon": 1e-5})
    stem = b.clamp(h, {"minValue": 0, "maxValue": 6})
    h = b.conv2d(stem, c(8, 1, 3, 3), {"bias": c(8), "padding": [1, 1, 1, 1], "groups": 8})
    h = b.relu(b.add(h, stem))
    h = b.relu(b.conv2d(h, c(16, 8, 1, 1)))
    h = b.reshape(b.averagePool2d(h), [1, 16])
    return {"probs": b.softmax(b.gemm(h, c(16, 10), {"c": c(10)}), 1)}


def timed(f, n):
    for _ in range(min(50, n)):
        f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return {"median_ms": times[n // 2], "mean_ms": sum(times) / n, "p90_ms": times[int(n * 0.9)]}


def bench(ctx, outputs_of, shape, n):
    b = webnn.MLGraphBuilder(ctx)
    graph = b.build(outputs_of(b))
    x = np.sin(np.arange(int(np.prod(shape)), dtype=np.float32)).reshape(shape)
    t = time.perf_counter()
    ctx.compute(graph, {"x": x})  # compiles on first use
    build = (time.perf_counter() - t) * 1e3
    model = graph._model
    (name, out), = model.run({"x": x}).items()
    tx = ctx.createTensor({"dataType": "float32", "shape": list(shape), "writable": True})
    ty = ctx.createTensor({"dataType": "float32", "shape": list(out.shape), "readable": True})

    def tensors() -> None:
        ctx.writeTensor(tx, x)
        ctx.dispatch(graph, {"x": tx}, {name: ty})
        ctx.readTensor(ty)
    return {"build_ms": build, "compute": timed(lambda: ctx.compute(graph, {"x": x}), n),
            "mltensor": timed(tensors, n), "model_run": timed(lambda: model.run({"x": x}), n)}


ctx = webnn.ML().createContext({})
one = bench(ctx, lambda b: {"y": b.relu(b.input("x", {"dataType": "float32", "shape": [1, 1000]}))}, [1, 1000], N)
print(json.dumps({"one_op": one, "mobilenet": bench(ctx, mobilenet, [1, 3, 16, 16], max(1, N // 4))}, indent=1))
