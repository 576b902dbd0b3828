"""The one registration mechanism of every importer: a table from source op name to converter.

Each format keeps one `Registry` in `importers/<format>/ops/__init__.py` and one module per op
family beside it, `importers/<format>/ops/<family>.py`, whose converters register themselves:

    OPS = Registry("webnn", WebNNOp.meta)          # importers/webnn/ops/__init__.py
    @OPS.op("conv2d", params=[...], operands=[...])  # importers/webnn/ops/convolution.py

An entry's family is the last component of its converter's module name (`convolution`), the
format-specific metadata travels as keyword arguments, and registering a name twice is an error.
`load()` imports every module of the format's ops package (pkgutil), once.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

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


def family_of(module: str) -> str:
    """The family a module defines: the last component of its dotted name."""
    return module.rsplit(".", 1)[-1]


class Registry(Mapping[Hashable, Entry]):
    """Source op name -> Entry for one format (a dict inside; lookups are dict lookups).

    `normalize(meta) -> meta` checks and completes a format's metadata at registration."""

    def __init__(self, format: str, normalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None):
        self.format = format
        self.package = f"estuary.importers.{format}.ops"
        self.entries: dict[Hashable, Entry] = {}
        self.expanded: dict[Hashable, str] = {}  # name -> family of ops supported without a converter
        self._normalize = normalize
        self._loaded = False

    # ------------------------------------------------------------ registration

    def op(self, *names: Hashable, **meta: Any) -> Callable[[F], F]:
        """Decorator: register the function as the converter of source op(s) `names`."""
        if not names:
            raise TypeError("Registry.op needs at least one name")
        if self._normalize is not None:
            meta = self._normalize(dict(meta))

        def wrap(fn: F) -> F:
            family = family_of(fn.__module__)
            for name in names:
                self._claim(name, family)
                self.entries[name] = Entry(name, fn, family, meta)
            return fn

        return wrap

    def expand(self, *names: Hashable) -> None:
        """Declare ops supported without a converter of their own (NNEF: by expanding a compound
        fragment's body into registered ops); their family is the calling module's."""
        family = family_of(sys._getframe(1).f_globals.get("__name__", ""))
        for name in names:
            self._claim(name, family)
            self.expanded[name] = family

    def _claim(self, name: Hashable, family: str) -> None:
        other = self.entries[name].family if name in self.entries else self.expanded.get(name)
        if other is not None:
            raise ValueError(f"{self.format} op {_show(name)} registered twice (in {other} and {family})")

    # ------------------------------------------------------------ loading

    def load(self) -> Registry:
        """Import every module of importers/<format>/ops/ (each registers its family); idempotent."""
        if not self._loaded:
            pkg = importlib.import_module(self.package)
            for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
                importlib.import_module(f"{self.package}.{info.name}")
            self._loaded = True
        return self

    # ------------------------------------------------------------ lookups

    def __getitem__(self, name: Hashable) -> Entry:
        return self.entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def get(self, name: Hashable, default: Any = None) -> Any:
        return self.entries.get(name, default)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def supported(self) -> set[str]:
        """Names of every op this format imports (with a converter or by expansion), as strings."""
        return {_show(n) for n in self.entries} | {_show(n) for n in self.expanded}

    def families(self) -> dict[str, list[str]]:
        """family -> sorted op names (converters and expansions)."""
        out: dict[str, list[str]] = {}
        for name, entry in self.entries.items():
            out.setdefault(entry.family, []).append(_show(name))
        for name, family in self.expanded.items():
            out.setdefault(family, []).append(_show(name))
        return {f: sorted(names) for f, names in sorted(out.items())}


def _show(name: Hashable) -> str:
    """An op name as text (enum members, such as NNAPI's OperationCodes, by their name)."""
    return str(getattr(name, "name", name))
