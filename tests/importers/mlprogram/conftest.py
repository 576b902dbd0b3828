"""ML Program tests: silence coremltools' harmless Linux messages before anything imports it."""
import logging
import warnings

logging.getLogger("coremltools").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", module="coremltools.*")
warnings.filterwarnings("ignore", message=".*has not been tested with coremltools.*")
warnings.filterwarnings("ignore", message=".*libcoremlpython.*")
