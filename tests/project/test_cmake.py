"""The top-level CMakeLists.txt: configures out of tree, registers both suites with CTest, and its
check-estuary-lit target runs the lit suite."""
import os
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT  # noqa: E402 - the repository


def _cmake(name):
    local = os.path.join(os.path.dirname(sys.executable), name)  # the `cmake` wheel of the test extra
    found = local if os.path.exists(local) else shutil.which(name)
    if not found:
        pytest.skip(f"no {name} executable (pip install cmake)")
    return found


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    build = tmp_path_factory.mktemp("cmake-build")
    done = subprocess.run([_cmake("cmake"), "-S", ROOT, "-B", str(build), f"-DPython3_EXECUTABLE={sys.executable}"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return build


def test_ctest_lists_both_suites(build_dir):
    done = subprocess.run([_cmake("ctest"), "-N"], cwd=build_dir, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "estuary-lit" in done.stdout and "estuary-pytest" in done.stdout


def test_check_lit_target_runs_the_lit_suite(build_dir):
    before = set(os.listdir(ROOT))
    done = subprocess.run([_cmake("cmake"), "--build", str(build_dir), "--target", "check-estuary-lit"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Total Discovered Tests" in done.stdout and "Passed:" in done.stdout
    assert "Failed" not in done.stdout
    assert set(os.listdir(ROOT)) <= before | {".pytest_cache", ".lit_test_times.txt"}
