"""Core ML (NeuralNetwork) tests: silence coremltools' harmless Linux messages (no native
prediction library, untested torch version) before anything imports it."""
import logging
import warnings

logging.getLogger("coremltools").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", message=".*libcoremlpython.*")
warnings.filterwarnings("ignore", message=".*libmilstoragepython.*")
warnings.filterwarnings("ignore", message=".*has not been tested with coremltools.*")
warnings.filterwarnings("ignore", module="coremltools.*")
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import coremltools  # noqa: F401
except ImportError:
    pass
