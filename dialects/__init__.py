"""The `nn` dialect: op declarations (ops/), typed views, and the graph builder."""
from estuary.dialects import core
from estuary.dialects.core import OPS, TensorSpec, VerificationError, get
from estuary.dialects.graph import Graph, NNModule, new_session
from estuary.dialects.views import register_views

OPS.load()
register_views()

__all__ = ["OPS", "TensorSpec", "VerificationError", "get", "Graph", "NNModule", "new_session"]
