"""WebNN mappings: convolution family."""
from estuary.importers.webnn.registry import webnn_op  # noqa: F401
