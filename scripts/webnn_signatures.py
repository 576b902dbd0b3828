"""Write MLGraphBuilder's operation signatures, from Estuary's WebNN registry, for the JavaScript builder.

    python scripts/webnn_signatures.py           # (re)writes js/webnn/lib/signatures.json
    python scripts/webnn_signatures.py --check   # exits 1 if that file is not what the registry gives

Each registration of importers/webnn/ops/ states its method's positional parameters and options
with their WebIDL types and the options' defaults (importers/webnn/idl.py); the file holds them
and the enumerations' values, and js/webnn/lib/ops.js converts arguments by them (its shape rules
stay in JavaScript). tests/importers/webnn/test_signatures.py fails when the committed file is
not what this script writes, so a registry change cannot leave the JavaScript builder behind.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from estuary.importers.webnn.ops import OPS
from estuary.importers.webnn.idl import ENUMS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "js", "webnn", "lib", "signatures.json")
NOTE = "written by scripts/webnn_signatures.py from importers/webnn/ops (the WebNN registry); do not edit"


def signature(name: str) -> dict[str, Any]:
    """One operation: {"params": [[name, type], ...], "options": {name: {"type", "default"?}} or None}."""
    op = OPS[name]
    params = [[p, op.types[p]] for p in op.params if p != "options"]
    if op.options is None:
        return {"params": params, "options": None}
    options: dict[str, Any] = {}
    for k in sorted(op.options):
        options[k] = {"type": op.types[k]}
        if k in op.option_defaults:
            options[k]["default"] = op.option_defaults[k]
    return {"params": params, "options": options}


def render() -> str:
    """The file's text: one line per enumeration, parameter list and option, names sorted."""
    line = json.dumps
    enums = sorted(ENUMS)
    out = ["{", f'  "note": {line(NOTE)},', '  "enums": {']
    out += [f"    {line(e)}: {line(list(ENUMS[e]))}{',' if i < len(enums) - 1 else ''}" for i, e in enumerate(enums)]
    out += ["  },", '  "operations": {']
    names = sorted(str(n) for n in OPS)
    for i, name in enumerate(names):
        sig = signature(name)
        out += [f"    {line(name)}: {{", f'      "params": {line(sig["params"])},']
        if sig["options"] is None:
            out.append('      "options": null')
        else:
            items = list(sig["options"].items())
            out.append('      "options": {')
            out += [f"        {line(k)}: {line(v)}{',' if j < len(items) - 1 else ''}" for j, (k, v) in enumerate(items)]
            out.append("      }")
        out.append(f"    }}{',' if i < len(names) - 1 else ''}")
    out += ["  }", "}", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        with open(PATH, encoding="utf-8") as f:
            if f.read() == text:
                return 0
        print(f"{os.path.relpath(PATH, ROOT)} is not what the registry gives: run python scripts/webnn_signatures.py",
              file=sys.stderr)
        return 1
    with open(PATH, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
