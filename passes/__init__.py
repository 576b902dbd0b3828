"""Passes over `nn` modules, registered by command-line name.

A pass is a Python callable `fn(nn_module)` that rewrites `nn_module.module` in place and raises
an EstuaryError with a clear message on failure. `estuary-opt --<name>` runs it (lit tests);
`pipeline.run_default` runs the compile pipeline.
"""
PASSES = {}


def register(name, doc=None):
    """Register the decorated function as the pass `name`."""

    def wrap(fn):
        if name in PASSES:
            raise ValueError(f"pass {name} registered twice")
        fn.pass_name = name
        fn.pass_doc = (doc or fn.__doc__ or "").strip().splitlines()[0] if (doc or fn.__doc__) else ""
        PASSES[name] = fn
        return fn

    return wrap


def load_all():
    """Import every pass module (each registers itself)."""
    from estuary.passes import (cleanup, fold_bn, layout, lower, merge_matmuls, split_elementwise,  # noqa: F401
                                stack_steps, verify)
    return PASSES
