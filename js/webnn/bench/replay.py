"""The Python API side of replay.js: the same WebNN JSON file compiled with estuary.compile and
run with Model.run, per call. Usage: python js/webnn/bench/replay.py model.json [iterations]"""
import json
import os
import sys
import time

import numpy as np

import estuary

path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50
t = time.perf_counter()
model = estuary.load(estuary.compile(path))
build = (time.perf_counter() - t) * 1e3
feeds = {name: np.sin(np.arange(int(np.prod(shape)))).astype(dtype).reshape(shape) for name, shape, dtype in model.inputs}
for _ in range(min(5, n)):
    model.run(feeds)
times = []
for _ in range(n):
    t = time.perf_counter()
    model.run(feeds)
    times.append((time.perf_counter() - t) * 1e3)
times.sort()
print(json.dumps({"model": os.path.basename(path), "build_ms": build, "median_ms": times[n // 2],
                  "p90_ms": times[int(n * 0.9)], "iterations": n}))
