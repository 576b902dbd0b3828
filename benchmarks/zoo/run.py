"""Run the zoo: every model x format cell converted, imported, compiled (llvm-cpu), run and compared
with torch, timed beside onnxruntime and tract; one JSON line per cell, then docs/zoo.md.

    python -m benchmarks.zoo                                  # the whole zoo (hours on 2 cores)
    python benchmarks/zoo/run.py --models resnet50,bert --formats mlprogram_fp32,webnn
    python -m benchmarks.zoo --jobs 2                         # two models at a time
    python -m benchmarks.zoo --retry-failed --formats nnef_khronos,nnef_tract   # after an importer fix
    python -m benchmarks.zoo --table-only                     # docs/zoo.md from the results as they are

A cell already in the results file is skipped (a long run resumes where it stopped) unless
--force (redo it, conversions included) or --retry-failed (redo the cells that did not pass,
reusing their conversions). Every stage runs in its own child process with a timeout:
conversion, import + compile (its CPU seconds and peak RSS are the child's, from wait4), and two
runs: the comparison with torch and latency on the default thread count, then latency on one
thread (tract's Python bindings are single-threaded). --jobs N runs N models at once (their
latencies then disturb each other: the table says so).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__" and not __package__:  # run as a file: import the package beside it (PEP 366)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "zoo"
    import zoo  # noqa: F401

from . import export, models, table

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "build" / "zoo"
DOC = ROOT / "docs" / "zoo.md"
PEERS = {"onnxruntime": "onnx", "tract": "nnef_tract"}  # peer runtime -> the export it runs


@dataclass(frozen=True)
class Settings:
    work: Path
    results: Path
    export_timeout: float
    compile_timeout: float
    run_timeout: float
    latency: bool
    jobs: int


@dataclass
class Child:
    """A finished child process: its result (None if it wrote none), exit, wall and CPU seconds,
    peak RSS; `failure` says why there is no result."""

    result: dict[str, Any] | None
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    failure: str | None = None


def run_child(args: list[str], result: Path, log: Path, timeout: float) -> Child:
    """`python -m zoo.job ARGS RESULT` in a new session; killed (with its children) at `timeout`.
    The child's CPU time and peak RSS come from wait4, so they are its own."""
    result.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(export.BENCHMARKS), os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    with open(log, "a") as out:
        out.write(f"$ zoo.job {' '.join(args)} {result}\n")
        out.flush()
        p = subprocess.Popen([sys.executable, "-m", "zoo.job", *args, str(result)], stdout=out,
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
    timed_out = False
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > timeout:
            timed_out = True
            os.killpg(p.pid, signal.SIGKILL)
            _, status, usage = os.wait4(p.pid, 0)
            break
        time.sleep(0.1)
    p.returncode = os.waitstatus_to_exitcode(status)
    child = Child(None, time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
    if timed_out:
        child.failure = f"timed out after {timeout:.0f} s (killed)"
    elif result.exists():
        child.result = json.loads(result.read_text())
    else:
        how = (f"killed by {signal.Signals(-p.returncode).name}" if p.returncode < 0 else f"exit code {p.returncode}")
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        child.failure = f"the child process ended without a result ({how}); its log ends:\n" + "\n".join(tail)
    return child


class Cell:
    """One model in one format, run stage by stage; `record` is the cell's JSON line."""

    def __init__(self, model: str, fmt: str, settings: Settings) -> None:
        self.model, self.fmt, self.settings = model, fmt, settings
        self.model_dir = settings.work / model
        self.record: dict[str, Any] = {"model": model, "format": fmt, "tolerance": export.FORMATS[fmt].tolerance,
                                       "converted": None, "imports": None, "compiles": None, "matches": None,
                                       "failed_stage": None, "error": None}

    def fail(self, stage: str, error: str, where: str | None = None) -> dict[str, Any]:
        self.record.update(failed_stage=stage, error=error, where=where)
        return self.record

    def export(self, fmt: str) -> dict[str, Any]:
        """The conversion of this model to `fmt` (done once: its result is kept beside it)."""
        folder = self.model_dir / fmt
        folder.mkdir(parents=True, exist_ok=True)
        saved = folder / "export.json"
        if saved.exists():
            return json.loads(saved.read_text())
        child = run_child(["export", self.model, fmt, str(self.model_dir)], folder / "export.result.json",
                          folder / "export.log", self.settings.export_timeout)
        result = child.result or {"ok": False, "error": child.failure}
        export.record(saved, result)
        return result

    def run(self) -> dict[str, Any]:
        converted = self.export(self.fmt)
        self.record.update(converted=converted["ok"], convert_s=converted.get("seconds"))
        if not converted["ok"]:
            return self.fail("convert", converted["error"], converted.get("where"))
        folder = self.model_dir / self.fmt
        vmfb = folder / "model.vmfb"
        child = run_child(["compile", converted["path"], str(vmfb)], folder / "compile.result.json",
                          folder / "compile.log", self.settings.compile_timeout)
        compiled = child.result or {"ok": False, "stage": "compile", "error": child.failure}
        imported = compiled["stage"] != "import"
        self.record.update(imports=imported, compiles=compiled["ok"] if imported else None,
                           child_cpu_s=round(child.cpu_s, 2), peak_compile_mb=round(child.maxrss_mb),
                           **{k: compiled[k] for k in ("import_s", "compile_s", "compile_cpu_s", "lower_s", "iree_s")
                              if k in compiled})
        if not compiled["ok"]:
            return self.fail(compiled["stage"], compiled["error"], compiled.get("where"))
        peers = {name: self.export(fmt) for name, fmt in PEERS.items()}
        self.record["peer_exports"] = {name: "ok" if e["ok"] else e["error"] for name, e in peers.items()}
        paths = {name: e["path"] for name, e in peers.items() if e["ok"]}
        thread_counts = [None, 1] if self.settings.latency else [None]
        for threads in thread_counts:
            args = ["run", str(vmfb), str(self.model_dir)] + (["--threads", str(threads)] if threads else [])
            args += [arg for name, flag in (("onnxruntime", "--onnx"), ("tract", "--tract")) if name in paths
                     for arg in (flag, paths[name])]
            tag = "default" if threads is None else str(threads)
            child = run_child(args, folder / f"run-{tag}.result.json", folder / "run.log", self.settings.run_timeout)
            ran = child.result or {"ok": False, "error": child.failure}
            if threads is None:
                if not ran["ok"]:
                    return self.fail("run", ran["error"], ran.get("where"))
                self.record.update(rel_err=ran.get("rel_err"), max_abs=ran.get("max_abs"))
                if ran.get("rel_err") is None:
                    self.record["matches"] = False
                    return self.fail("match", ran.get("error") or "no comparable output")
                self.record["matches"] = ran["rel_err"] <= self.record["tolerance"]
                if not self.record["matches"]:
                    self.fail("match", f"max |Estuary - torch| / max |torch| = {ran['rel_err']:.3g} "
                                       f"> {self.record['tolerance']:g} (max |error| {ran['max_abs']:.3g})")
            if ran.get("latency"):
                self.record.setdefault("latency", {})[tag] = ran["latency"]
                self.record.setdefault("load", {})[tag] = ran["load"]
                self.record.setdefault("peers", {})[tag] = ran["peers"]
        return self.record


# ---------------------------------------------------------------- the results file


def load_results(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The latest record of each (model, format) in the JSONL file."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                records[(r["model"], r["format"])] = r
    return records


def passed(record: dict[str, Any]) -> bool:
    return bool(record.get("matches"))


def machine() -> dict[str, Any]:
    """The CPU (lscpu's / /proc/cpuinfo's model name, family/model, logical CPUs, SIMD flags)."""
    info: dict[str, Any] = {"cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    fields = dict(line.split(":", 1) for line in text.split("\n\n")[0].splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    info["cpu"] = fields.get("model name", info["cpu"])
    info["family_model"] = f"family {fields.get('cpu family')} model {fields.get('model')}"
    flags = fields.get("flags", "").split()
    info["simd"] = sorted(f for f in flags if f.startswith(("avx512f", "avx512_bf16", "avx512_fp16", "avx2", "amx", "fma")))
    return info


def versions() -> dict[str, str]:
    found = {}
    for dist in ("estuary-nn", "iree-base-compiler", "torch", "torchvision", "transformers", "coremltools",
                 "torch_to_nnef", "tract", "onnx", "onnxruntime", "numpy"):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    spec = importlib.util.find_spec("estuary")  # the children's estuary (PYTHONPATH may name a snapshot)
    source = Path(spec.origin).resolve().parent if spec and spec.origin else None
    found["estuary from"] = str(source)
    if source and (source.parent / "SOURCE").exists():  # a snapshot names its origin there
        found["estuary source"] = (source.parent / "SOURCE").read_text().strip().splitlines()[0]
    elif source and source.is_relative_to(ROOT):
        try:
            commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, timeout=10).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "importers", "passes",
                                    "backends", "python", "dialects", "base"], capture_output=True, text=True,
                                   timeout=10).stdout.strip()
            found["estuary commit"] = commit + (" + uncommitted changes" if dirty else "")
        except (OSError, subprocess.TimeoutExpired):
            pass
    return found


def summary(record: dict[str, Any]) -> str:
    if record["failed_stage"] and not record.get("matches"):
        first = (record["error"] or "").strip().splitlines()[:1]
        return f"FAILS at {record['failed_stage']}: {first[0][:200] if first else ''}"
    line = f"matches ({record['rel_err']:.1e}), compile {record.get('compile_cpu_s')} CPU s"
    default = record.get("latency", {}).get("default", {})
    if default:
        line += ", " + ", ".join(f"{k} {v['median_ms']:.2f} ms" for k, v in default.items())
    return line


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(models.ZOO),
                   help=f"comma-separated (default: the zoo; also: {', '.join(sorted(set(models.MODELS) - set(models.ZOO)))})")
    p.add_argument("--formats", default=",".join(export.FORMATS), help="comma-separated (default: all)")
    p.add_argument("--jobs", type=int, default=1, help="models run at once (default 1)")
    p.add_argument("--force", action="store_true", help="redo the selected cells, conversions included")
    p.add_argument("--retry-failed", action="store_true", help="redo the selected cells that did not pass")
    p.add_argument("--no-latency", action="store_true", help="skip the one-thread latency run")
    p.add_argument("--work", type=Path, default=WORK, help=f"exports and logs (default {WORK.relative_to(ROOT)})")
    p.add_argument("--results", type=Path, help="the JSONL file (default WORK/results.jsonl)")
    p.add_argument("--doc", type=Path, default=DOC, help=f"the table written at the end (default {DOC.relative_to(ROOT)})")
    p.add_argument("--table-only", action="store_true", help="only write the table from the results file")
    p.add_argument("--export-timeout", type=float, default=1800)
    p.add_argument("--compile-timeout", type=float, default=3600)
    p.add_argument("--run-timeout", type=float, default=1200)
    a = p.parse_args(argv)
    names, formats = a.models.split(","), a.formats.split(",")
    for name in names:
        if name not in models.MODELS:
            p.error(f"unknown model {name!r}; known: {', '.join(models.MODELS)}")
    for fmt in formats:
        if fmt not in export.FORMATS:
            p.error(f"unknown format {fmt!r}; known: {', '.join(export.FORMATS)}")
    results = a.results or a.work / "results.jsonl"
    if not a.table_only:
        settings = Settings(a.work, results, a.export_timeout, a.compile_timeout, a.run_timeout, not a.no_latency,
                            a.jobs)
        run_zoo(names, formats, settings, force=a.force, retry_failed=a.retry_failed)
    table.write(load_results(results), a.doc, results)
    print(f"wrote {a.doc}", file=sys.stderr)
    return 0


def run_zoo(names: list[str], formats: list[str], settings: Settings, force: bool = False,
            retry_failed: bool = False) -> None:
    """Run the cells not yet in the results file (or all, or the failed ones); one model's cells
    run in turn (they share its exports), --jobs models at a time."""
    settings.work.mkdir(parents=True, exist_ok=True)
    done = load_results(settings.results)
    lock = threading.Lock()
    context = {"machine": machine(), "versions": versions(), "jobs": settings.jobs, "work": str(settings.work)}

    def wanted(model: str, fmt: str) -> bool:
        previous = done.get((model, fmt))
        return force or previous is None or (retry_failed and not passed(previous))

    def run_model(model: str) -> None:
        for fmt in formats:
            if not wanted(model, fmt):
                continue
            if force:  # else (--retry-failed, or an interrupted run) a finished conversion is reused
                shutil.rmtree(settings.work / model / fmt, ignore_errors=True)
            started = datetime.datetime.now(datetime.timezone.utc)
            record = Cell(model, fmt, settings).run()
            record.update(started=started.isoformat(timespec="seconds"),
                          finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                          **context)
            with lock:
                with open(settings.results, "a") as f:
                    f.write(json.dumps(record) + "\n")
                print(f"{model} {fmt}: {summary(record)}", file=sys.stderr, flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, settings.jobs)) as pool:
        for future in concurrent.futures.as_completed([pool.submit(run_model, m) for m in names]):
            future.result()


if __name__ == "__main__":
    sys.exit(main())
