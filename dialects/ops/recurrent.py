"""nn ops: recurrent family."""
import numpy as np

from estuary.dialects.core import nn_op, check, TensorSpec  # noqa: F401
