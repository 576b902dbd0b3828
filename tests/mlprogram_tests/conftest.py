"""ML Program tests: silence coremltools' harmless Linux messages before anything imports it."""
import logging
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
logging.getLogger("coremltools").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", module="coremltools.*")
warnings.filterwarnings("ignore", message=".*has not been tested with coremltools.*")
