"""The benchmark script runs end to end on a tiny model in each form Estuary compiles (so it cannot
rot); no timing asserted."""
import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT  # noqa: E402 - the repository


@pytest.mark.parametrize("fmt", ["webnn", "coreml", "nnef", "mlprogram"])
def test_benchmark_tiny(tmp_path, fmt):
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--models", "tiny",
                        "--iterations", "3", "--format", fmt, "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| tiny |" in r.stdout and "geometric-mean latency ratio" in r.stdout
    assert f"compiled the {fmt} form" in r.stdout
    rows = json.loads(out.read_text())
    assert rows[0]["format"] == fmt
    assert rows[0]["rel_err"] < 1e-3  # Estuary and onnxruntime agree on the same inputs



def test_benchmark_threads_and_runs(tmp_path):
    """One compile measured `--runs` times on the given thread count; the row keeps each run's ratio."""
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--models", "tiny",
                        "--iterations", "2", "--threads", "1", "--runs", "3", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert rows[0]["threads"] == 1 and len(rows[0]["run_ratios"]) == 3
    assert "(webnn, 1 thread(s))" in r.stdout and "| threads |" in r.stdout
