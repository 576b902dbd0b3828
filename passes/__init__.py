"""Passes over `nn` modules, registered by command-line name.

A pass is a Python callable `fn(nn_module, options)` that rewrites `nn_module.module` in place,
reads what it needs from `options` (a CompileOptions), and returns a dict of side results for the
compiler (or None); it raises an EstuaryError with a clear message on failure. `estuary-opt
--<name>[=<options>]` runs it (lit tests); `estuary.backends.pipeline` runs the compile pipeline.
Every module of this package is imported by `PASSES.load()`; the backends register their
target's passes (run on the lowered module) into the same registry.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from estuary.base import dims
from estuary.base.registry import Registry

PassFn = Callable[[Any, Any], "dict[str, Any] | None"]


@dataclass(frozen=True)
class Pass:
    """A registered pass: its command-line name, function and one-line description."""

    name: str
    run: PassFn
    doc: str

    def __call__(self, nn: Any, options: Any) -> dict[str, Any] | None:
        """Run the pass; ops it creates infer their types under the module's Unifier (the symbols
        of dynamic dimensions it binds)."""
        with dims.unifying(nn.unifier):
            return self.run(nn, options)


PASSES: Registry[str, Pass] = Registry("pass", ["estuary.passes"])


def register(name: str, doc: str | None = None) -> Callable[[PassFn], PassFn]:
    """Register the decorated function as the pass `name`."""

    def wrap(fn: PassFn) -> PassFn:
        text = (doc or fn.__doc__ or "").strip()
        PASSES.add(name, Pass(name, fn, text.splitlines()[0] if text else ""), fn.__module__)
        return fn

    return wrap


def load_all() -> Registry[str, Pass]:
    """Every pass of this package (each module registers its own)."""
    return PASSES.load()
