"""The `nn` dialect: op declarations (ops/), typed views, and the graph builder."""
from estuary.dialects import core, ops  # noqa: F401  (ops registers every declaration)
from estuary.dialects.core import REGISTRY, TensorSpec, VerificationError, get
from estuary.dialects.graph import Graph, NNModule, new_session
from estuary.dialects.views import register_views

register_views()

__all__ = ["REGISTRY", "TensorSpec", "VerificationError", "get", "Graph", "NNModule", "new_session"]
