"""nn ops: constant (WebNN §7.7.3)."""
from estuary.dialects.core import Tensor, TensorSpec, nn_op
from estuary.dialects.graph import constant_value


@nn_op("constant", [], {"value": Tensor()}, reference=lambda value: constant_value(value), dynamic=True)
def constant(value):
    """A tensor known at compile time; `value` is a dense or dense_resource elements attribute."""
    return TensorSpec.of_type(value.type)
