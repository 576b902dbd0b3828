"""The one registration primitive: a typed table from a key to what is registered under it.

Importer mappings (per format), `nn` op declarations, lowering rules (generic and per target),
decompositions and passes are each one `Registry`. Registering a key twice is an error naming
both places; `load()` imports every module of the registry's packages once (pkgutil), so a new
module in a package registers itself without another list to update:

    OPS: Registry[str, OpDef] = Registry("nn op", packages=["estuary.dialects.ops"])
    OPS.add("conv2d", opdef)          # RegistrationError if "conv2d" is there already
    OPS.load()["conv2d"]              # every module of estuary.dialects.ops imported first

A registry looks like a read-only mapping; `origin(key)` tells which module registered a key.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RegistrationError(ValueError):
    """A key registered twice, or a registration that breaks a registry's rules (our bug, raised at
    import time, never seen by users)."""


def family_of(module: str) -> str:
    """The family a module registers for: the last component of its dotted name."""
    return module.rsplit(".", 1)[-1]


def show(key: Hashable) -> str:
    """A key as text (enum members, such as NNAPI's OperationCodes, by their name; tuples joined)."""
    if isinstance(key, tuple):
        return "/".join(show(k) for k in key if k is not None)
    return str(getattr(key, "name", key))


class Registry(Mapping[K, V], Generic[K, V]):
    """`kind` names what is registered (for messages); `packages` are imported by `load()`."""

    def __init__(self, kind: str, packages: Iterable[str] = ()) -> None:
        self.kind = kind
        self.packages = list(packages)
        self._entries: dict[K, V] = {}
        self._origins: dict[K, str] = {}
        self._loaded = False

    def add(self, key: K, value: V, origin: str = "") -> V:
        """Register `value` under `key`; `origin` is the registering module (for messages)."""
        if key in self._entries:
            raise RegistrationError(f"{self.kind} {show(key)} registered twice (in {self._origins[key] or '?'} "
                                    f"and {origin or '?'})")
        self._entries[key] = value
        self._origins[key] = origin
        return value

    def origin(self, key: K) -> str:
        return self._origins[key]

    def load(self) -> Registry[K, V]:
        """Import every module of the registry's packages (each registers its entries); idempotent."""
        if not self._loaded:
            self._loaded = True
            for package in self.packages:
                pkg = importlib.import_module(package)
                for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
                    importlib.import_module(f"{package}.{info.name}")
        return self

    def __getitem__(self, key: K) -> V:
        return self._entries[key]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
