"""WebNN mappings: recurrent family."""
from estuary.importers.webnn.registry import webnn_op  # noqa: F401
