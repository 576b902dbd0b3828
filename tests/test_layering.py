"""The layers import downward only: API/CLI -> compiler -> passes/backends -> dialects, and
importers -> dialects (docs/design.md, "Layout")."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = ("estuary.runtime", "estuary.cli", "estuary.compiler", "estuary.webnn", "estuary.nnapi")
# what each folder may not import (beyond the public API modules)
FORBIDDEN = {
    "dialects": API + ("estuary.passes", "estuary.importers", "estuary.backends"),
    "importers": API + ("estuary.passes", "estuary.backends"),
    "backends": API + ("estuary.importers",),
    "passes": API + ("estuary.importers",),
}


def imported_modules(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_imports_go_down(folder):
    bad = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                bad += [f"{os.path.relpath(path, ROOT)}: {m}" for m in set(imported_modules(path))
                        if any(m == f or m.startswith(f + ".") for f in FORBIDDEN[folder])]
    assert not bad, "imports against the layering:\n" + "\n".join(sorted(bad))
