"""A short seeded fuzzing run (scripts/fuzz_campaign.py runs long ones): mutants of every
format's seeds, each in its own process with memory and time limits, must end with a result or
one clean Estuary error: no raw exception, crash, hang or out-of-memory."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

from fuzz import campaign, mutators  # noqa: E402

COUNT = int(os.environ.get("ESTUARY_FUZZ_SMOKE_COUNT", "20"))  # mutants per format


def test_smoke_campaign(tmp_path):
    results = campaign.run(tmp_path, count=COUNT, seed=20261126, jobs=2, timeout=120)
    print(campaign.table(results))
    assert len(results) >= 0.9 * COUNT * 5, "a mutator failed too often"
    bad = campaign.bad(results)
    assert not bad, "\n".join(f"{r['outcome']}: {r['format']} {r['path']} (seed {r['seed']}): {r['detail']}"
                              for r in bad)
    assert {r["outcome"] for r in results} >= {"error"}


@pytest.mark.parametrize("batch", [1, 3])
def test_runner_classifies_crashes_hangs_and_raw_exceptions(tmp_path, monkeypatch, batch):
    """The classification itself, on cases that really crash, hang, run out of memory or raise,
    with a process per case or workers running several in turn (a crash charged to its case)."""
    from fuzz import runner

    def fake_work(fmt, path):
        import ctypes
        import time

        if fmt == "crash":
            ctypes.string_at(0)  # SIGSEGV
        if fmt == "hang":
            time.sleep(60)
        if fmt == "oom":
            bytearray(1 << 33)  # beyond the memory limit: MemoryError
        if fmt == "raw":
            raise KeyError("float30")

    monkeypatch.setattr(runner, "compile_and_run", fake_work)
    kinds = ("ok", "crash", "ok", "hang", "oom", "raw", "ok")
    cases = [{"format": f, "path": "-", "log": str(tmp_path / f"{i}.log"), "result": str(tmp_path / f"{i}.json")}
             for i, f in enumerate(kinds)]
    got = sorted((r["format"], r["outcome"]) for r in runner.serve(cases, jobs=2, memory=4 << 30, timeout=3,
                                                                    batch=batch))
    assert got == sorted((f, f) for f in kinds)
    # the crash's fault-handler report is in the case's log, not in this run's output (a green
    # run must not print 'Fatal Python error')
    crash = (tmp_path / f"{kinds.index('crash')}.log").read_text(errors="replace")
    assert "Fatal Python error: Segmentation fault" in crash and "fake_work" in crash, crash


@pytest.mark.parametrize("fmt", sorted(mutators.MUTATORS))
def test_mutators_are_deterministic(tmp_path, fmt):
    import numpy as np
    from fuzz import seeds

    seed = seeds.write(tmp_path / "seeds", (fmt,))[fmt][0]
    made = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        made.append(mutators.MUTATORS[fmt](seed, tmp_path / name, np.random.default_rng([7, 1])))
    a, b = made

    def content(p):
        return sorted((q.name, q.read_bytes()) for q in p.rglob("*") if q.is_file()) if p.is_dir() else p.read_bytes()

    assert content(a) == content(b)


def test_lower_only_cases_stop_before_iree(tmp_path, monkeypatch):
    """A case marked lower_only runs Estuary's import and lowering and never reaches IREE."""
    from fuzz import runner, seeds
    from estuary import compiler

    def no_iree(*args, **kwargs):
        raise AssertionError("IREE was called")

    monkeypatch.setattr(compiler, "iree_compile", no_iree)
    seed = seeds.write(tmp_path / "seeds", ("webnn",))["webnn"][0]
    assert runner.execute("webnn", str(seed), lower=True) == ("lowered", "")
    broken = tmp_path / "broken.json"
    broken.write_text(seed.read_text().replace('"relu"', '"no_such_op"'))
    outcome, detail = runner.execute("webnn", str(broken), lower=True)
    assert outcome == "error" and detail.startswith("UnsupportedOpError")
