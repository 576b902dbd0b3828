"""Running fuzz cases: each in its own process with memory and CPU limits, classified.

`python runner.py CASES.jsonl RESULTS.jsonl --jobs N --timeout S --memory BYTES` is a fork
server: it imports Estuary, IREE, coremltools and the NNEF parser once and never compiles, then
forks worker processes (so a case costs its own work, not the imports), each running one case
(or with --batch, up to that many in turn: a fork costs more than most cases). A worker sets
RLIMIT_AS, and RLIMIT_CPU before each case, compiles the mutant (or loads it, for an artefact),
loads and runs it on zeros, and writes its outcome; the server classifies how it ended:

    ok         compiled (loaded) and ran
    lowered    a case marked "lower_only": passed Estuary's import, passes and lowering (IREE,
               a second or more per mutant, is skipped; long campaigns fully compile a sample)
    error      one EstuaryError: a clean refusal
    internal   an InternalError: clean, but it reports a bug in Estuary
    raw        any other exception left Estuary
    crash      the process died by a signal or exited without an outcome (the fault handler's
               Python traceback is in the case's log)
    hang       the case ran past its time (wall clock or CPU)
    oom        the case ran out of its memory limit (MemoryError, bad_alloc)
"""
from __future__ import annotations

import faulthandler
import json
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Iterable
from typing import Any

OUTCOMES = ("ok", "lowered", "error", "internal", "raw", "crash", "hang", "oom")
OOM_SIGNS = ("bad_alloc", "MemoryError", "Cannot allocate memory", "out of memory", "RESOURCE_EXHAUSTED")


def lower_only(fmt: str, path: str) -> None:
    """Everything of a compile before IREE: import, passes, lowering, signature."""
    from estuary.base.options import CompileOptions
    from estuary.backends.options import create_options
    from estuary.compiler import lower_nn
    from estuary.importers import import_model

    nn = import_model(path, format=fmt)
    try:
        lower_nn(nn, create_options())
    finally:
        nn.close()


def compile_and_run(fmt: str, path: str) -> None:
    """Compile a model (load it, for an artefact), load and run it on zeros."""
    import numpy as np

    import estuary

    if fmt == "artefact":
        model = estuary.load(path)
    else:
        model = estuary.load(estuary.compile(path, format=fmt))
    feeds = {}
    for name, shape, dtype in model.inputs:
        feeds[name] = np.zeros(shape, np.bool_ if dtype == "bool" else np.dtype(dtype))
    model.run(feeds)


def execute(fmt: str, path: str, lower: bool = False) -> tuple[str, str]:
    """(outcome, detail) of one case run in this process; `lower`: stop before IREE."""
    from estuary.base.errors import EstuaryError, InternalError

    try:
        if lower and fmt != "artefact":
            lower_only(fmt, path)
            return "lowered", ""
        compile_and_run(fmt, path)
        return "ok", ""
    except EstuaryError as e:
        kind = "internal" if isinstance(e, InternalError) else "error"
        return kind, f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    except MemoryError as e:
        return "oom", f"MemoryError: {e}"[:300]
    except BaseException as e:  # noqa: BLE001 - the point is to see what escapes
        return "raw", f"{type(e).__name__}: {e}"[:300]


def _child(read_fd: int, done_fd: int, memory: int, cpu: int) -> None:
    """A forked worker: reads cases (JSON lines) from `read_fd`, runs each with its output in the
    case's log and its outcome in the case's result file, writes one byte to `done_fd` per case;
    RLIMIT_CPU allows `cpu` more seconds per case. Never returns."""
    code = 0
    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        for line in os.fdopen(read_fd):
            case = json.loads(line)
            used = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(used.ru_utime + used.ru_stime) + cpu
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard if hard == resource.RLIM_INFINITY else max(hard, soft)))
            log = os.open(case["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
            # a crash's fault-handler report goes to the case's log too: the handler a parent
            # enabled (pytest's) writes to its own copy of the parent's stderr, so a case crashing
            # on purpose would print 'Fatal Python error' into the test run's output
            faulthandler.enable(file=2, all_threads=True)
            outcome, detail = execute(case["format"], case["path"], bool(case.get("lower_only")))
            with open(case["result"], "w") as f:
                json.dump({"outcome": outcome, "detail": detail}, f)
            os.write(done_fd, b".")
    except BaseException:  # noqa: BLE001 - reported as 'exited without an outcome'
        code = 3
    finally:
        os._exit(code)


def _classify(case: dict[str, Any], status: int, timed_out: bool) -> dict[str, Any]:
    try:
        with open(case["log"], errors="replace") as f:
            log = f.read()[-4000:]
    except OSError:
        log = ""
    result = {"format": case["format"], "path": case["path"], "seed": case.get("seed"), "mutator": case.get("mutator")}
    if timed_out:
        return {**result, "outcome": "hang", "detail": f"killed after {case['timeout']} s"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return {**result, "outcome": "hang", "detail": "CPU time limit"}
        if any(s in log for s in OOM_SIGNS):
            return {**result, "outcome": "oom", "detail": f"{signal.Signals(sig).name}: {log[-300:]}"}
        return {**result, "outcome": "crash", "detail": f"{signal.Signals(sig).name}: {log[-300:]}"}
    try:
        with open(case["result"]) as f:
            out = json.load(f)
    except (OSError, ValueError):
        kind = "oom" if any(s in log for s in OOM_SIGNS) else "crash"
        return {**result, "outcome": kind, "detail": f"exit {os.WEXITSTATUS(status)} without an outcome: {log[-300:]}"}
    if out["outcome"] == "raw" and any(s in out["detail"] for s in OOM_SIGNS[:2]):
        out["outcome"] = "oom"
    return {**result, **out}


class _Worker:
    """The parent's view of one worker process: its pipes, its current case and when it began."""

    def __init__(self, memory: int, cpu: int) -> None:
        case_r, self.case_w = os.pipe()
        self.done_r, done_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.case_w)
            os.close(self.done_r)
            _child(case_r, done_w, memory, cpu)
        os.close(case_r)
        os.close(done_w)
        self.case: dict[str, Any] | None = None
        self.start = 0.0
        self.runs = 0

    def send(self, case: dict[str, Any]) -> None:
        self.case, self.start, self.runs = case, time.monotonic(), self.runs + 1
        os.write(self.case_w, (json.dumps(case) + "\n").encode())

    def close(self) -> int:
        """Stop the worker; its wait status. (Killed even when idle: workers forked later hold
        copies of its case pipe, so closing that pipe would not end it.)"""
        os.kill(self.pid, signal.SIGKILL)
        os.close(self.case_w)
        os.close(self.done_r)
        return os.waitpid(self.pid, 0)[1]


def serve(cases: Iterable[dict[str, Any]], jobs: int, memory: int, timeout: float,
          batch: int = 1) -> Iterable[dict[str, Any]]:
    """Run `cases` ({format, path, log, result}) `jobs` at a time; yields their classified results.

    Each worker process runs up to `batch` cases one after the other, then a fresh one forks:
    a fork per case costs more than most cases (docs/design.md), so long campaigns batch.
    A crash or hang ends the worker and is charged to the case it was running."""
    pending = list(cases)
    workers: list[_Worker] = []
    while pending or any(w.case is not None for w in workers):
        for w in [w for w in workers if w.case is None and (w.runs >= batch or not pending)]:
            w.close()
            workers.remove(w)
        while pending and len(workers) < jobs:
            workers.append(_Worker(memory, int(timeout) + 1))
        for w in workers:
            if w.case is None and pending:
                case = pending.pop(0)
                case["timeout"] = timeout
                w.send(case)
        busy = {w.done_r: w for w in workers if w.case is not None}
        ready, _, _ = select.select(list(busy), [], [], 0.05)
        for w in list(busy.values()):
            case = w.case
            assert case is not None
            if w.done_r in ready and os.read(w.done_r, 1):  # finished; the worker lives on
                w.case = None
                yield {**_classify(case, 0, False), "seconds": round(time.monotonic() - w.start, 2)}
                continue
            timed_out = False
            if w.done_r in ready:  # the pipe closed: the worker died
                status = os.waitpid(w.pid, 0)[1]
            else:
                done, status = os.waitpid(w.pid, os.WNOHANG)
                if not done:
                    if time.monotonic() - w.start <= timeout:
                        continue
                    os.kill(w.pid, signal.SIGKILL)
                    status, timed_out = os.waitpid(w.pid, 0)[1], True
            os.close(w.case_w)
            os.close(w.done_r)
            workers.remove(w)
            yield {**_classify(case, status, timed_out), "seconds": round(time.monotonic() - w.start, 2)}
    for w in workers:
        w.close()


def _preload() -> None:
    """Import what the cases use once, before forking (each child then starts warm): every module
    of Estuary's importers, passes and lowering rules, which load lazily otherwise."""
    import importlib
    import logging
    import pkgutil
    import warnings

    logging.getLogger("coremltools").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    import iree.compiler.api  # noqa: F401
    import iree.runtime  # noqa: F401
    import numpy  # noqa: F401

    import estuary.compiler  # noqa: F401
    import estuary.runtime  # noqa: F401
    for optional in ("coremltools", "nnef", "iree.compiler.dialects.builtin"):
        try:
            importlib.import_module(optional)
        except ImportError:
            pass
    for package in ("estuary.importers", "estuary.passes"):
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            try:
                importlib.import_module(info.name)
            except ImportError:
                pass


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", help="JSON lines: {format, path, log, result, ...}")
    ap.add_argument("results", help="JSON lines written here, one per case as it ends")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--memory", type=int, default=6 << 30)
    ap.add_argument("--batch", type=int, default=1, help="cases per worker process before a fresh one forks")
    args = ap.parse_args(argv)
    _preload()
    with open(args.cases) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    with open(args.results, "a") as out:
        for result in serve(cases, args.jobs, args.memory, args.timeout, max(1, args.batch)):
            out.write(json.dumps(result) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
