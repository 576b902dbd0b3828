"""Estuary vs onnxruntime, side by side in one run: latency, GFLOP/s, compile time and memory.

    python benchmarks/run.py                      # all five models
    python benchmarks/run.py --models mlp,lstm --iterations 20
    python benchmarks/run.py --models tiny --iterations 3   # the test suite's smoke run
    python benchmarks/run.py --flag=--iree-llvmcpu-enable-ukernels=none   # try an extra IREE flag
    python benchmarks/run.py --cpu-flags "--iree-opt-level=O3"   # replace the default CPU flags
    python benchmarks/run.py --threads 1 --runs 3        # both runtimes on one thread (compiled with --workers 1), three runs
    python benchmarks/run.py --format coreml             # compile the Core ML form (webnn, coreml, nnef, mlprogram)
    python benchmarks/run.py --format all                # every model in every form, one row each
    python benchmarks/run.py --models resnet50,mobilenetv2   # two more, beyond the default five

Each model is defined once in ONNX (benchmarks/models.py), converted to WebNN JSON (or a Core ML
.mlmodel, a Core ML ML Program .mlpackage, or an NNEF folder: --format), compiled by Estuary in a
child process (so compile time and peak RSS are its own), and then both runtimes run the same
inputs alternately in this process. Outputs are checked to agree.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models  # noqa: E402
import onnx_to_coreml  # noqa: E402
import onnx_to_mlprogram  # noqa: E402
import onnx_to_nnef  # noqa: E402
import onnx_to_webnn  # noqa: E402

# the forms Estuary can compile each benchmark model from: converter and file suffix
FORMATS = {"webnn": (onnx_to_webnn.convert, ".json"), "coreml": (onnx_to_coreml.convert, ".mlmodel"),
           "nnef": (onnx_to_nnef.convert, ".nnef"), "mlprogram": (onnx_to_mlprogram.convert, ".mlpackage")}

_CHILD = r"""
import json, os, resource, sys, time
import estuary
t0 = time.perf_counter()
extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else []
if len(sys.argv) > 5:
    import estuary.backends.llvm_cpu
    estuary.backends.llvm_cpu.CPU_FLAGS = json.loads(sys.argv[5])
workers = os.environ.get("ESTUARY_BENCH_WORKERS")
art = estuary.compile(sys.argv[1], target="llvm-cpu", optimize=sys.argv[3] == "1", extra_flags=extra,
                      precision=os.environ.get("ESTUARY_BENCH_PRECISION", "fp32"),
                      workers=int(workers) if workers else None)
art.save(sys.argv[2])
# VmHWM is this process's own peak (ru_maxrss would include the parent's, inherited over fork+exec)
with open("/proc/self/status") as f:
    hwm_kb = next((int(l.split()[1]) for l in f if l.startswith("VmHWM:")), None)
if hwm_kb is None:
    hwm_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"compile_s": time.perf_counter() - t0,
                  "rss_mb": hwm_kb / 1024}))
"""


def compile_child(json_path, vmfb_path, optimize=True, flags=(), cpu_flags=None, precision="fp32", workers=None):
    """Compile in a child process (its own compile time and peak RSS); `workers`: the worker count
    the tile rules plan for (`--workers`; None: the host's cores)."""
    r = subprocess.run([sys.executable, "-c", _CHILD, json_path, vmfb_path, "1" if optimize else "0",
                        json.dumps(list(flags))] + ([] if cpu_flags is None else [json.dumps(cpu_flags)]),
                       capture_output=True, text=True, env=dict(os.environ, ESTUARY_BENCH_PRECISION=precision,
                                                               ESTUARY_BENCH_WORKERS=str(workers or "")))
    if r.returncode != 0:
        raise RuntimeError(f"compile of {json_path} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


ROUNDS = 10  # alternations of Estuary and onnxruntime per model (5 paired the MLP's memory-bound runs
# too coarsely on a shared VM: docs/performance.md)


def time_runs(fn, iterations, warmup=3):
    # let the other runtime's idle worker threads (onnxruntime spins after each run) go to sleep
    # first, so neither runtime is timed while the other still holds the cores
    time.sleep(0.2)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def emit(model, name, fmt, workdir):
    """Write `model` in form `fmt` (a FORMATS key) into workdir; returns the path to compile."""
    convert, suffix = FORMATS[fmt]
    return convert(model, os.path.join(workdir, f"{name}{suffix}"))


def bench_model(name, workdir, iterations, optimize=True, flags=(), threads=None, cpu_flags=None, fmt="webnn",
                precision="fp32", runs=1):
    """The row of one model: compiled once, then `runs` measurements of alternating blocks on
    `threads` workers (None: each runtime's default; IREE fixes a process's CPU worker count at
    the first load). The row's times are the median over the runs of each run's median (and the
    minimum over all)."""
    import onnxruntime as ort

    import estuary

    model, feeds, flops = models.MODELS_ALL[name]()
    model_path = emit(model, name, fmt, workdir)
    vmfb = os.path.join(workdir, f"{name}.{fmt}.vmfb")
    stats = compile_child(model_path, vmfb, optimize, flags, cpu_flags, precision, threads)  # planned for them
    out_name = model.graph.output[0].name
    rows = []
    for count in [threads]:
        est = estuary.load(vmfb, threads=count)
        opts = ort.SessionOptions()
        if count:
            opts.intra_op_num_threads = count
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        ref = sess.run([out_name], feeds)[0]
        got = est.run(feeds)[out_name]
        err = float(np.max(np.abs(got - ref)) / max(1e-6, float(np.max(np.abs(ref)))))
        # alternate the two runtimes in short blocks so both see the same machine state (this
        # shared VM has bursts of noise lasting seconds)
        e_runs, o_runs, e_min, o_min = [], [], float("inf"), float("inf")
        for _ in range(runs):
            est_t, ort_t = [], []
            rounds = max(1, min(ROUNDS, iterations))
            for _ in range(rounds):
                est_t += time_runs(lambda: est.run(feeds), max(1, iterations // rounds))
                ort_t += time_runs(lambda: sess.run([out_name], feeds), max(1, iterations // rounds))
            e_runs.append(float(np.median(est_t)))
            o_runs.append(float(np.median(ort_t)))
            e_min, o_min = min(e_min, min(est_t)), min(o_min, min(ort_t))
        est.close()
        e_med, o_med = float(np.median(e_runs)), float(np.median(o_runs))
        rows.append({"model": name, "format": fmt, "threads": count, "estuary_ms": e_med, "estuary_min_ms": e_min,
                     "ort_ms": o_med, "ort_min_ms": o_min, "ratio": e_med / o_med, "ratio_min": e_min / o_min,
                     "run_ratios": [round(e / o, 3) for e, o in zip(e_runs, o_runs)],
                     "gflops": flops / (e_med * 1e-3) / 1e9, "compile_s": stats["compile_s"],
                     "rss_mb": stats["rss_mb"], "vmfb_kb": os.path.getsize(vmfb) / 1024, "rel_err": err})
    return rows


def machine():
    """The CPU the figures were measured on: model name, logical CPUs and its SIMD flags (every
    table and JSON row carries it: figures from different CPUs are not comparable)."""
    import platform

    from estuary.backends.llvm_cpu import host

    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    flags = host._cpuinfo_flags() or set()
    simd = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "sse4", "asimd", "sve")))
    return {"cpu": name, "cpus": os.cpu_count(), "resolved": host.resolve("host"), "simd": simd}


def geomean(values):
    return float(np.exp(np.mean(np.log(values))))


def table(rows):
    """The markdown table; one form: a line naming it above; several: a `format` column; thread
    counts given: a `threads` column and a geometric mean per count."""
    formats = list(dict.fromkeys(r["format"] for r in rows))
    counts = list(dict.fromkeys(r.get("threads") for r in rows))
    multi, threaded = len(formats) > 1, counts != [None]
    head = ("| model |" + (" format |" if multi else "") + (" threads |" if threaded else "") +
            " Estuary median (min) ms | onnxruntime median (min) ms | ratio (of minima) | runs' ratios | GFLOP/s "
            "| compile s | peak compile RSS MB | .vmfb KB | max rel. err |")
    lines = [] if multi else [f"Estuary compiled the {formats[0]} form\n"]
    lines += [head, "|" + "---|" * (10 + multi + threaded)]
    for r in rows:
        lines.append(f"| {r['model']} |" + (f" {r['format']} |" if multi else "") +
                     (f" {r.get('threads')} |" if threaded else "") +
                     f" {r['estuary_ms']:.2f} ({r['estuary_min_ms']:.2f}) | {r['ort_ms']:.2f} "
                     f"({r['ort_min_ms']:.2f}) | {r['ratio']:.2f} ({r['ratio_min']:.2f}) | "
                     f"{' '.join(f'{x:.2f}' for x in r.get('run_ratios', []))} | {r['gflops']:.1f} | "
                     f"{r['compile_s']:.1f} | {r['rss_mb']:.0f} | {r['vmfb_kb']:.0f} | {r['rel_err']:.1e} |")
    lines.append("")
    for f in formats:
        for c in counts:
            group = [r for r in rows if r["format"] == f and r.get("threads") == c]
            if group:
                lines.append(f"geometric-mean latency ratio Estuary/onnxruntime ({f}"
                             + (f", {c} thread(s)" if threaded else "") + f"): {geomean([r['ratio'] for r in group]):.2f} "
                             f"(of minima: {geomean([r['ratio_min'] for r in group]):.2f}); largest "
                             f"{max(r['ratio'] for r in group):.2f}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(models.MODELS))
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--no-optimize", action="store_true", help="compile without the nn-level passes")
    p.add_argument("--json", help="also write the rows as JSON here")
    p.add_argument("--flag", action="append", default=[], help="an extra IREE compiler flag (repeatable)")
    p.add_argument("--cpu-flags", help="replace Estuary's default llvm-cpu flags (space-separated; '' for none)")
    p.add_argument("--threads", type=int, default=None,
                   help="worker threads for both runtimes (default: each runtime's own, all cores)")
    p.add_argument("--runs", type=int, default=1,
                   help="measure each model this many times; a row gives the median of the runs' medians")
    p.add_argument("--format", choices=list(FORMATS) + ["all"], default="webnn",
                   help="which converted form Estuary compiles (all: every model in every form)")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="Estuary's matmul/convolution input precision (onnxruntime stays float32)")
    args = p.parse_args(argv)
    formats = list(FORMATS) if args.format == "all" else [args.format]
    threads = args.threads
    if args.runs < 1 or (threads is not None and threads < 1):
        p.error("--runs and --threads must be at least 1")
    tolerance = 1e-3 if args.precision == "fp32" else 3e-2  # relative to the largest output
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, fmt in [(n, f) for n in args.models.split(",") for f in formats]:
            new = bench_model(name, work, args.iterations, not args.no_optimize, args.flag, threads,
                              None if args.cpu_flags is None else args.cpu_flags.split(), fmt, args.precision,
                              args.runs)
            rows += new
            for r in new:
                print(f"{name} ({fmt}, threads {r['threads'] or 'default'}): estuary {r['estuary_ms']:.2f} ms, "
                      f"onnxruntime {r['ort_ms']:.2f} ms (x{r['ratio']:.2f}; runs {r['run_ratios']}), "
                      f"max rel. err {r['rel_err']:.1e}", file=sys.stderr, flush=True)
                if r["rel_err"] > tolerance:
                    print(f"warning: {name} ({fmt}) outputs differ from onnxruntime (max rel. err "
                          f"{r['rel_err']:.1e})", file=sys.stderr)
    where = machine()
    for r in rows:
        r["machine"] = where
    print(f"{where['cpu']}, {where['cpus']} logical CPUs (--target-cpu host = {where['resolved']}), "
          f"SIMD: {' '.join(where['simd'])}\n")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["rel_err"] <= tolerance for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
