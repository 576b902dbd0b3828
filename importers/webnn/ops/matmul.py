"""WebNN mappings: matmul family."""
from estuary.importers.webnn.registry import webnn_op  # noqa: F401
