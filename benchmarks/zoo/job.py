"""One stage of one zoo cell, in a child process of the driver (run.py), so a crash, a hang or a
runaway allocation ends only that stage:

    python -m zoo.job export MODEL FORMAT MODEL_DIR RESULT.json
    python -m zoo.job compile ARTEFACT OUT.vmfb RESULT.json
    python -m zoo.job run OUT.vmfb MODEL_DIR RESULT.json [--threads N] [--onnx P] [--tract P]

Each writes its result as JSON (`ok`, the stage's figures, else `error`, the exception's exact
text). `run` compares Estuary's output with torch's (saved by the model's first export), then
times Estuary beside onnxruntime (on the ONNX export) and tract (on the tract NNEF export), in
alternating blocks so all see the same machine state.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import export

ERROR_CHARS = 20000  # an exception's text kept in the results (IREE's diagnostics can be long)


def _error(e: BaseException) -> dict[str, str]:
    """The exception's exact text (`error`) and where it was raised (`where`: the innermost frame,
    its path from the package folder on)."""
    traceback.print_exc()
    text = f"{type(e).__name__}: {e}"
    text = text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + " [...]"
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return {"error": text}
    last = frames[-1]
    return {"error": text, "where": f"{_short_path(Path(last.filename))}:{last.lineno} in {last.name}"}


def _short_path(path: Path) -> str:
    """A source file's path from its package on (site-packages/..., a snapshot's pkg/..., the
    repository's top level)."""
    for marker in ("site-packages", "pkg"):
        if marker in path.parts:
            return "/".join(path.parts[path.parts.index(marker) + 1:])
    repository = Path(__file__).resolve().parents[2]
    return str(path.relative_to(repository)) if path.is_relative_to(repository) else "/".join(path.parts[-3:])


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------- export


def export_stage(model: str, fmt: str, model_dir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        path = export.export(model, fmt, model_dir)
    except Exception as e:  # noqa: BLE001 - any converter failure is a result
        return {"ok": False, **_error(e), "seconds": round(time.perf_counter() - t0, 2)}
    return {"ok": True, "path": str(path), "seconds": round(time.perf_counter() - t0, 2)}


# ---------------------------------------------------------------- compile


def compile_stage(artefact: Path, vmfb: Path) -> dict[str, Any]:
    """Import, then compile for llvm-cpu (the compiling CPU, default options); the figures are
    this process's own: wall and CPU seconds of import + compile (the driver adds the child's
    peak RSS and total CPU from wait4)."""
    from estuary.backends.options import create_options
    from estuary.compiler import compile_nn
    from estuary.importers import import_model

    result: dict[str, Any] = {"ok": False, "stage": "import"}
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    try:
        nn = import_model(str(artefact))
        result["import_s"] = round(time.perf_counter() - t0, 2)
        result["stage"] = "compile"
        timings: dict[str, float] = {}
        try:
            art = compile_nn(nn, create_options("llvm-cpu"), timings=timings)
        finally:
            nn.close()
        art.save(str(vmfb))
    except Exception as e:  # noqa: BLE001
        result.update(_error(e))
        return result
    result.update(ok=True, compile_s=round(time.perf_counter() - t0, 2), compile_cpu_s=round(_cpu_seconds() - cpu0, 2),
                  lower_s=round(timings.get("lower_s", 0.0), 2), iree_s=round(timings.get("iree_s", 0.0), 2))
    return result


# ---------------------------------------------------------------- run and time


def relative_error(got: np.ndarray, want: np.ndarray) -> dict[str, Any]:
    """max |got - want| / max |want| (the zoo's measure), or the shapes when they differ."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return {"error": f"output shape {list(got.shape)}, torch's {list(want.shape)}"}
    max_abs = float(np.max(np.abs(got - want)))
    scale = float(np.max(np.abs(want))) or 1.0
    rel = max_abs / scale if np.isfinite(max_abs) else float("inf")
    return {"rel_err": rel, "max_abs": max_abs}


def _feeds(declared: list[tuple[str, Any]], inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The reference inputs for a runtime's declared (name, dtype) inputs: by name where the
    names agree, else in order; each cast to the declared dtype (int32 token ids for Core ML)."""
    named = list(inputs.values())
    feeds = {}
    for i, (name, dtype) in enumerate(declared):
        value = inputs.get(name, named[i] if i < len(named) else None)
        if value is None:
            raise ValueError(f"no reference input for {name!r}")
        feeds[name] = np.asarray(value).astype(dtype)
    return feeds


class Estuary:
    def __init__(self, vmfb: Path, threads: int | None, inputs: dict[str, np.ndarray]) -> None:
        import estuary

        self.model = estuary.load(str(vmfb), threads=threads)
        self.feeds = _feeds([(n, dt) for n, _, dt, *_ in self.model.inputs], inputs)
        names = [o[0] for o in self.model.outputs]
        self.output = export.OUTPUT if export.OUTPUT in names else names[0]

    def __call__(self) -> np.ndarray:
        return self.model.run(self.feeds)[self.output]


class OnnxRuntime:
    def __init__(self, path: Path, threads: int | None, inputs: dict[str, np.ndarray]) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        dtypes = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32}
        self.feeds = _feeds([(i.name, dtypes[i.type]) for i in self.session.get_inputs()], inputs)

    def __call__(self) -> np.ndarray:
        return self.session.run([export.OUTPUT], self.feeds)[0]


class Tract:
    """tract's Python bindings on the tract NNEF export (single-threaded: the bindings expose
    only tract's default single-thread executor)."""

    def __init__(self, path: Path, inputs: dict[str, np.ndarray]) -> None:
        import tract

        model = tract.nnef().with_tract_transformers().load(str(path))
        self.runnable = model.into_runnable()
        facts = [str(self.runnable.input_fact(i)) for i in range(self.runnable.input_count())]
        dtypes = [np.int64 if "i64" in f else np.int32 if "i32" in f else np.float32 for f in facts]
        self.feeds = list(_feeds([(str(i), dt) for i, dt in enumerate(dtypes)], inputs).values())

    def __call__(self) -> np.ndarray:
        return self.runnable.run(self.feeds)[0].to_numpy()


def time_alternately(runners: dict[str, Callable[[], Any]], seconds: float = 2.0, rounds: int = 5) -> dict[str, Any]:
    """Each runner's median and minimum in ms over `rounds` blocks taken in turn (about `seconds`
    of runs per runner in all, at least 3 and at most 50 runs; two warm-up runs)."""
    per_run = {}
    for name, fn in runners.items():
        fn()
        t0 = time.perf_counter()
        fn()
        per_run[name] = time.perf_counter() - t0
    counts = {name: max(1, min(10, round(seconds / rounds / max(t, 1e-6)))) for name, t in per_run.items()}
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, fn in runners.items():
            time.sleep(0.2)  # the previous runtime's spinning worker threads go idle first
            for _ in range(counts[name]):
                t0 = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: {"median_ms": round(float(np.median(t)), 3), "min_ms": round(float(np.min(t)), 3), "runs": len(t)}
            for name, t in times.items()}


def run_stage(vmfb: Path, model_dir: Path, threads: int | None, onnx_path: Path | None,
              tract_path: Path | None) -> dict[str, Any]:
    """Estuary's output against torch's, then latency beside the peers that load; a peer that
    fails is reported (its error) and left out of the timing."""
    inputs, want = export.load_reference(model_dir)
    result: dict[str, Any] = {"ok": False, "threads": threads, "peers": {}, "load": round(os.getloadavg()[0], 1)}
    try:
        estuary_run = Estuary(vmfb, threads, inputs)
        result.update(relative_error(estuary_run(), want))
    except Exception as e:  # noqa: BLE001
        result.update(_error(e))
        return result
    runners: dict[str, Callable[[], Any]] = {"estuary": estuary_run}
    peers: dict[str, Callable[[], Any]] = {}
    if onnx_path:
        peers["onnxruntime"] = lambda: OnnxRuntime(onnx_path, threads, inputs)
    if tract_path and threads == 1:
        peers["tract"] = lambda: Tract(tract_path, inputs)
    for name, make in peers.items():
        try:
            runner = make()
            result["peers"][name] = relative_error(runner(), want)
            runners[name] = runner
        except Exception as e:  # noqa: BLE001
            result["peers"][name] = _error(e)
    result["latency"] = time_alternately(runners)
    result["ok"] = "error" not in result
    return result


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="stage", required=True)
    e = sub.add_parser("export")
    e.add_argument("model")
    e.add_argument("format")
    e.add_argument("model_dir", type=Path)
    e.add_argument("result", type=Path)
    c = sub.add_parser("compile")
    c.add_argument("artefact", type=Path)
    c.add_argument("vmfb", type=Path)
    c.add_argument("result", type=Path)
    r = sub.add_parser("run")
    r.add_argument("vmfb", type=Path)
    r.add_argument("model_dir", type=Path)
    r.add_argument("result", type=Path)
    r.add_argument("--threads", type=int)
    r.add_argument("--onnx", type=Path)
    r.add_argument("--tract", type=Path)
    a = p.parse_args(argv)
    if a.stage == "export":
        result = export_stage(a.model, a.format, a.model_dir)
    elif a.stage == "compile":
        result = compile_stage(a.artefact, a.vmfb)
    else:
        result = run_stage(a.vmfb, a.model_dir, a.threads, a.onnx, a.tract)
    export.record(a.result, result)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the result is written: skip the interpreter's teardown of torch, IREE and tract
