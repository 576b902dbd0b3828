"""Importer mappings: one table per format from source op name to converter, built on the one
registration primitive (estuary.base.registry).

Each format keeps one `ImportRegistry` in `importers/<format>/ops/__init__.py` and one module per
op family beside it, `importers/<format>/ops/<family>.py`, whose converters register themselves:

    OPS = ImportRegistry("webnn", WebNNOp.meta)     # importers/webnn/ops/__init__.py
    @OPS.op("conv2d", params=[...], operands=[...])  # importers/webnn/ops/convolution.py

An entry's family is the last component of its converter's module name (`convolution`), the
format-specific metadata travels as keyword arguments, and registering a name twice is an error.
`load()` imports every module of the format's ops package, once.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from estuary.base.registry import Registry, RegistrationError, family_of, show

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Entry:
    """One registration: the source op name, its converter, its family and the format's metadata
    (read as attributes: `entry.params` is `entry.meta["params"]`)."""

    name: Hashable
    fn: Callable[..., Any]
    family: str
    meta: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        meta = self.__dict__.get("meta", {})
        if key in meta:
            return meta[key]
        raise AttributeError(f"{type(self).__name__} {self.__dict__.get('name')!r} has no {key!r}")


class ImportRegistry(Registry[Hashable, Entry]):
    """Source op name -> Entry for one format. `normalize(meta) -> meta` checks and completes a
    format's metadata at registration."""

    def __init__(self, format: str, normalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None):
        super().__init__(f"{format} op", packages=[f"estuary.importers.{format}.ops"])
        self.format = format
        self.expanded: dict[Hashable, str] = {}  # name -> family of ops supported without a converter
        self._normalize = normalize

    def op(self, *names: Hashable, **meta: Any) -> Callable[[F], F]:
        """Decorator: register the function as the converter of source op(s) `names`."""
        if not names:
            raise TypeError("ImportRegistry.op needs at least one name")
        if self._normalize is not None:
            meta = self._normalize(dict(meta))

        def wrap(fn: F) -> F:
            family = family_of(fn.__module__)
            for name in names:
                self._check_unexpanded(name, family)
                self.add(name, Entry(name, fn, family, meta), family)
            return fn

        return wrap

    def expand(self, *names: Hashable) -> None:
        """Declare ops supported without a converter of their own (NNEF: by expanding a compound
        fragment's body into registered ops); their family is the calling module's."""
        family = family_of(sys._getframe(1).f_globals.get("__name__", ""))
        for name in names:
            self._check_unexpanded(name, family)
            if name in self:
                raise RegistrationError(f"{self.kind} {show(name)} registered twice (in {self.origin(name)} "
                                        f"and {family})")
            self.expanded[name] = family

    def _check_unexpanded(self, name: Hashable, family: str) -> None:
        if name in self.expanded:
            raise RegistrationError(f"{self.kind} {show(name)} registered twice (in {self.expanded[name]} "
                                    f"and {family})")

    def supported(self) -> set[str]:
        """Names of every op this format imports (with a converter or by expansion), as strings."""
        return {show(n) for n in self} | {show(n) for n in self.expanded}

    def families(self) -> dict[str, list[str]]:
        """family -> sorted op names (converters and expansions)."""
        out: dict[str, list[str]] = {}
        for name, entry in self.items():
            out.setdefault(entry.family, []).append(show(name))
        for name, family in self.expanded.items():
            out.setdefault(family, []).append(show(name))
        return {f: sorted(names) for f, names in sorted(out.items())}
