"""Passes over `nn` modules, registered by command-line name.

A pass is a Python callable `fn(nn_module, options)` that rewrites `nn_module.module` in place,
reads what it needs from `options` (a CompileOptions), and returns a dict of side results for the
compiler (or None); it raises an EstuaryError with a clear message on failure. `estuary-opt
--<name>[=<options>]` runs it (lit tests); `pipeline.run_default` runs the compile pipeline.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

PassFn = Callable[[Any, Any], "dict[str, Any] | None"]
PASSES: dict[str, PassFn] = {}


def register(name: str, doc: str | None = None) -> Callable[[PassFn], PassFn]:
    """Register the decorated function as the pass `name`."""

    def wrap(fn: PassFn) -> PassFn:
        if name in PASSES:
            raise ValueError(f"pass {name} registered twice")
        text = doc or fn.__doc__ or ""
        fn.pass_name = name  # type: ignore[attr-defined]
        fn.pass_doc = text.strip().splitlines()[0] if text.strip() else ""  # type: ignore[attr-defined]
        PASSES[name] = fn
        return fn

    return wrap


def load_all() -> dict[str, PassFn]:
    """Import every pass module (each registers itself)."""
    from estuary.passes import (chain_barriers, cleanup, fold_bn, layout, lower, merge_matmuls,  # noqa: F401
                                split_elementwise, stack_steps, verify)
    return PASSES
