"""Lowering rules: recurrent family."""
from iree.compiler.dialects import tosa  # noqa: F401

from estuary.passes.lowering import lower  # noqa: F401
from estuary.passes.lowering import common as C  # noqa: F401
