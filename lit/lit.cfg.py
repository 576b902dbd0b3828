"""lit configuration: every .mlir under lit/ runs estuary-opt and checks with filecheck."""
import os
import shutil
import sys

import lit.formats

config.name = "estuary"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PYTHONIOENCODING"] = "utf-8"
for var in ("PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
bindir = os.path.dirname(sys.executable)
opt = shutil.which("estuary-opt", path=bindir + os.pathsep + os.environ.get("PATH", ""))
check = shutil.which("filecheck", path=bindir + os.pathsep + os.environ.get("PATH", ""))
if not opt or not check:
    lit_config.fatal("estuary-opt and filecheck must be installed (pip install -e '.[test]')")
config.substitutions.append(("%python", sys.executable))  # for generated inputs (Inputs/*.py)
config.substitutions.append(("estuary-opt", opt))
config.substitutions.append(("FileCheck", check))
