"""Operation signatures for the tract-semantics reader: parameter names, order, types and defaults.

The standard operations' declarations (and the bodies of the compound ones) come from the text of
the `nnef` package's standard library (the header its parser is built from), read with our own
parser (syntax.py). tract's own operations are declared by the converter modules that implement
them (`declare(...)` with NNEF declaration text, as doc/nnef/tract-core.nnef writes them).
"""
from __future__ import annotations

import functools
import os
import re

from estuary.base.errors import ModelImportError
from estuary.importers.nnef import syntax
from estuary.importers.nnef.syntax import Fragment

_DECLARED: dict[str, Fragment] = {}


def declare(text: str) -> None:
    """Register operation declarations (`fragment name(params) -> (results);` text)."""
    for name, frag in syntax.parse_library("<declarations>", text).items():
        if name in _DECLARED:
            raise ValueError(f"operation {name!r} declared twice")
        _DECLARED[name] = frag


@functools.lru_cache(maxsize=1)
def standard_library() -> dict[str, Fragment]:
    """The NNEF standard library's fragments (declarations and definitions)."""
    import nnef

    path = os.path.join(os.path.dirname(nnef.__file__), "cpp", "include", "nnef", "comp", "stdlib_source.h")
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        # the text is split into several raw string literals (compilers limit one literal's length)
        text = "\n".join(re.findall(r'R"STDLIB\((.*?)\)STDLIB"', source, re.S))
        if not text:
            raise ValueError("no library text found")
    except (OSError, ValueError) as e:  # pragma: no cover - a broken nnef installation
        raise ModelImportError(f"cannot read the NNEF standard library from the nnef package ({e})") from None
    return syntax.parse_library("stdlib", text)


def lookup(name: str) -> Fragment | None:
    """The signature of operation `name`: tract's declarations first, then the standard library."""
    return _DECLARED.get(name) or standard_library().get(name)


def declared() -> dict[str, Fragment]:
    return dict(_DECLARED)
