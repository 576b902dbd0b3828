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
