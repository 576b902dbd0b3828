"""The NNEF operation table: one converter per operation (primitive or compound fragment) name.

A converter is `fn(c, inv)`: `c` is the conversion context (importers/nnef/converter.py), `inv` the
`nnef` parser's operation record (`inv.name`, `inv.attribs`, `inv.inputs`, `inv.outputs`, `inv.dtype`).
It returns the nn Value(s) of the invocation's results in order (a list for array results).
"""
OPS = {}


def nnef_op(*names):
    """Register the decorated function as the converter of the given NNEF operation name(s)."""

    def wrap(fn):
        for name in names:
            if name in OPS:
                raise ValueError(f"NNEF operation {name} registered twice")
            OPS[name] = fn
        return fn

    return wrap

# Compound fragments with no converter of their own, supported by the loader's expansion of the
# fragment's body into primitives (each one has a numeric test all the same).
EXPANDED = set()


def nnef_expanded(*names):
    """Declare compound fragments that the loader supports by expanding them into primitives."""
    for name in names:
        if name in OPS or name in EXPANDED:
            raise ValueError(f"NNEF operation {name} registered twice")
        EXPANDED.add(name)
