"""Lowering rules: constant."""
from iree.compiler.dialects import tosa

from estuary.dialects.graph import constant_attr, constant_value
from estuary.passes.lowering import lowering


@lowering("constant")
def lower_constant(n):
    attr = n.attrs["value"]
    spec = n.out
    if spec.dtype.startswith("uint"):
        array = constant_value(attr)
        if array is None:
            raise ValueError(f"constant data of {spec} is not available for re-typing")
        attr = constant_attr(array, spec, signless=True)
    return tosa.const(attr)
