"""The benchmark script runs end to end on a tiny model (so it cannot rot); no timing asserted."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_benchmark_tiny(tmp_path):
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--models", "tiny",
                        "--iterations", "3", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| tiny |" in r.stdout and "geometric-mean latency ratio" in r.stdout
    rows = json.loads(out.read_text())
    assert rows[0]["rel_err"] < 1e-3  # Estuary and onnxruntime agree on the same inputs
