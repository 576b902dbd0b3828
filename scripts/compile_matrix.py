"""Compile the benchmark models for a matrix of CPU targets and report what fails.

    python scripts/compile_matrix.py                       # every model x form x CPU below
    python scripts/compile_matrix.py --cpus znver4,haswell --models transformer_prenorm --formats webnn

Each compile runs in a child process (a crash or IREE abort is one failed cell, not the end of
the run). AArch64 targets are cross-compiled (`aarch64:<cpu>`: the aarch64 target triple plus
the CPU name). Exit status 1 when any cell failed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
import run as bench  # noqa: E402

INT8 = "mobilenet_int8"  # benchmarks/int8.py's NNAPI quant8 MobileNet (its own form: nnapi)
CPUS = ["x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake-avx512", "icelake-server", "sapphirerapids",
        "emeraldrapids", "znver3", "znver4", "aarch64:generic", "aarch64:neoverse-v1", "aarch64:apple-m1"]
MODELS = list(models.MODELS) + ["resnet50", "mobilenetv2", "transformer_prenorm", INT8]
AARCH64_TRIPLE = "--iree-llvmcpu-target-triple=aarch64-unknown-linux-gnu"

_CHILD = r"""
import json, sys
import estuary
cpu, flags = sys.argv[2], json.loads(sys.argv[3])
try:
    estuary.compile(sys.argv[1], cpu=cpu, extra_flags=flags)
except estuary.EstuaryError as e:
    print(json.dumps({"ok": False, "error": str(e)[-1500:]}))
else:
    print(json.dumps({"ok": True}))
"""


def compile_cell(path, cpu, timeout):
    """(ok, seconds, message) of compiling `path` for `cpu` in a child process."""
    flags = []
    if cpu.startswith("aarch64:"):
        cpu, flags = cpu.split(":", 1)[1], [AARCH64_TRIPLE]
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD, path, cpu, json.dumps(flags)], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, time.perf_counter() - t0, f"timed out after {timeout} s"
    seconds = time.perf_counter() - t0
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        return False, seconds, f"child exited {r.returncode}: {r.stderr[-800:]}"
    result = json.loads(lines[-1])
    return result["ok"], seconds, result.get("error", "")


def _forms(name, formats, work):
    """(form, path) of each form of model `name` to compile: the benchmark's converted forms, or
    the int8 MobileNet's NNAPI JSON."""
    if name == INT8:
        import numpy as np

        import int8
        rng = np.random.default_rng(2026)
        path = os.path.join(work, f"{name}.nnapi.json")
        int8.nnapi_model(int8.layers(rng), int8._fc(rng), 1).to_json(path)
        return [("nnapi", path)]
    model = models.MODELS_ALL[name]()[0]
    return [(fmt, bench.emit(model, name, fmt, work)) for fmt in formats]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpus", default=",".join(CPUS))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--formats", default=",".join(bench.FORMATS))
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--json", help="also write the cells as JSON here")
    args = p.parse_args(argv)
    cells = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            for fmt, path in _forms(name, args.formats.split(","), work):
                for cpu in args.cpus.split(","):
                    ok, seconds, message = compile_cell(path, cpu, args.timeout)
                    cells.append({"model": name, "format": fmt, "cpu": cpu, "ok": ok, "seconds": round(seconds, 1),
                                  "error": message})
                    first = message.strip().splitlines()[1:2] or [message.strip()[:200]]
                    print(f"{'ok  ' if ok else 'FAIL'} {name:20s} {fmt:7s} {cpu:22s} {seconds:6.1f} s"
                          + ("" if ok else f"  {first[0].strip()[:160]}"), flush=True)
    failed = [c for c in cells if not c["ok"]]
    print(f"\n{len(cells) - len(failed)} of {len(cells)} compiled")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(cells, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
