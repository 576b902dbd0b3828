"""The Python API side of replay.js: the same WebNN JSON file compiled with estuary.compile and
run per call with Model.run (host arrays) and as the Python MLTensor API runs it (write the input
device tensor, dispatch, read the output: estuary.mltensor, what MLContext.dispatch calls).
Usage: python js/webnn/bench/replay.py model.json [iterations]"""
import json
import os
import sys
import time

import numpy as np

import estuary
from estuary import mltensor

path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50
t = time.perf_counter()
model = estuary.load(estuary.compile(path))
build = (time.perf_counter() - t) * 1e3
feeds = {name: np.sin(np.arange(int(np.prod(shape)))).astype(dtype).reshape(shape) for name, shape, dtype in model.inputs}
ins = {name: mltensor.DeviceTensor("local-task", shape, str(np.dtype(dtype))) for name, shape, dtype in model.inputs}
outs = {name: mltensor.DeviceTensor("local-task", shape, str(np.dtype(dtype))) for name, shape, dtype in model.outputs}


def tensors():
    for name, t in ins.items():
        t.write(feeds[name])
    mltensor.dispatch(model, ins, outs)
    for t in outs.values():
        t.read()


def timed(f):
    for _ in range(min(5, n)):
        f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[n // 2], times[int(n * 0.9)]


run_median, run_p90 = timed(lambda: model.run(feeds))
tensor_median, tensor_p90 = timed(tensors)
print(json.dumps({"model": os.path.basename(path), "build_ms": build, "median_ms": run_median, "p90_ms": run_p90,
                  "mltensor_median_ms": tensor_median, "mltensor_p90_ms": tensor_p90, "iterations": n}))
