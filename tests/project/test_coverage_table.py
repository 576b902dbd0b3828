"""docs/coverage.md's op-coverage tables are generated from the code; they must be current."""
import os
import subprocess
import sys

from helpers import ROOT  # noqa: E402 - the repository


def test_coverage_tables_current():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "coverage.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
