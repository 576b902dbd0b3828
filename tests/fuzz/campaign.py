"""A fuzzing campaign: seeds -> mutants -> the fork server (runner.py) -> a format x outcome table.

Mutant `i` of a campaign with seed `s` comes from numpy's Generator([s, i]), so a case is
reproduced from (seed, index) alone; mutants that do not end 'ok', 'lowered' or 'error' are kept
with their logs in the work folder. With `full_every` N > 1 only mutant indices divisible by N
are compiled by IREE and run; the others stop after Estuary's own lowering ('lowered'), since
IREE's compile is most of a campaign's time (docs/design.md, "Fuzzing")."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fuzz import mutators, seeds as seed_models  # noqa: E402
from fuzz.runner import OUTCOMES  # noqa: E402

BAD = ("internal", "raw", "crash", "hang", "oom")


def make_cases(work: Path, formats: tuple[str, ...], count: int, seed: int,
               full_every: int = 1) -> list[dict[str, Any]]:
    """`count` mutants per format, round-robin over the format's seeds, each in its own folder;
    every `full_every`-th is compiled and run, the others only lowered."""
    seeds = seed_models.write(work / "seeds", formats)
    cases = []
    for i in range(count):  # formats interleaved: a campaign cut short still covers each
        for fmt in formats:
            rng = np.random.default_rng([seed, formats.index(fmt), i])
            origin = seeds[fmt][i % len(seeds[fmt])]
            folder = work / "cases" / fmt / f"{i:06d}"
            folder.mkdir(parents=True, exist_ok=True)
            try:
                path = mutators.MUTATORS[fmt](origin, folder, rng)
            except Exception as e:  # noqa: BLE001 - a mutator bug must not stop the campaign
                print(f"mutator {fmt} #{i} failed: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            cases.append({"format": fmt, "path": str(path), "seed": [seed, i], "mutator": origin.name,
                          "log": str(folder / "log.txt"), "result": str(folder / "result.json"),
                          "lower_only": i % full_every != 0})
    return cases


def run(work: str | os.PathLike[str], formats: tuple[str, ...] = seed_models.FORMATS, count: int = 20, seed: int = 0,
        jobs: int = 2, timeout: float = 60.0, memory: int = 6 << 30, keep: bool = False,
        full_every: int = 1, batch: int = 1) -> list[dict[str, Any]]:
    """Generate and run a campaign in folder `work`; returns one result per case. Cases that
    ended 'ok', 'lowered' or 'error' are deleted unless `keep`."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    cases = make_cases(work, formats, count, seed, full_every)
    (work / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    results_path = work / "results.jsonl"
    results_path.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    subprocess.run([sys.executable, str(HERE / "runner.py"), str(work / "cases.jsonl"), str(results_path),
                    "--jobs", str(jobs), "--timeout", str(timeout), "--memory", str(memory), "--batch", str(batch)],
                   check=True, env=env)
    results = [json.loads(line) for line in results_path.read_text().splitlines() if line.strip()]
    if not keep:
        for r in results:
            if r["outcome"] in ("ok", "lowered", "error"):
                shutil.rmtree(Path(r["path"]).parent if Path(r["path"]).is_file() else Path(r["path"]).parent,
                              ignore_errors=True)
    return results


def table(results: list[dict[str, Any]]) -> str:
    """A Markdown table: one row per format, one column per outcome, and the totals."""
    counts = Counter((r["format"], r["outcome"]) for r in results)
    formats = sorted({r["format"] for r in results})
    lines = ["| format | " + " | ".join(OUTCOMES) + " | total |", "|---" * (len(OUTCOMES) + 2) + "|"]
    for fmt in formats + ["all"]:
        row = [sum(n for (f, o), n in counts.items() if o == out and fmt in (f, "all")) for out in OUTCOMES]
        lines.append(f"| {fmt} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    return "\n".join(lines)


def bad(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r["outcome"] in BAD]
