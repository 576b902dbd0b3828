"""Generates the README's op-coverage tables from the code (and checks they are current).

    python scripts/coverage.py           # rewrite the tables in README.md
    python scripts/coverage.py --check   # exit 1 if README.md is out of date (run by the tests)

Each format contributes (spec op names, supported set); the spec names come from the spec text
in ../shared/specs when it is there, else from the list frozen into README.md's table.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(os.path.dirname(ROOT), "shared", "specs")
README = os.path.join(ROOT, "README.md")


def webnn_spec_ops():
    """Every MLGraphBuilder operation in webnn.txt (input/constant/build excluded)."""
    path = os.path.join(SPECS, "webnn.txt")
    if not os.path.exists(path):
        return None
    text = open(path, encoding="utf-8").read()
    names = set(re.findall(r"MLOperand\s+([a-zA-Z0-9]+)\s*\(", text))
    names |= set(re.findall(r"sequence\s*<\s*MLOperand\s*>\s*([a-zA-Z0-9]+)\s*\(", text))
    return sorted(names - {"input", "constant"})


def webnn_supported():
    from estuary.importers.webnn.registry import OPS
    import estuary.importers.webnn  # noqa: F401

    return OPS


def _frozen(section):
    """Spec op names already listed in README's table for `section` (when the spec is absent)."""
    text = open(README, encoding="utf-8").read()
    block = re.search(rf"<!-- coverage:{section} -->(.*?)<!-- /coverage:{section} -->", text, re.S)
    return sorted(re.findall(r"^\| `([^`]+)` \|", block.group(1), re.M)) if block else []


def webnn_table():
    spec = webnn_spec_ops() or _frozen("webnn")
    ops = webnn_supported()
    rows = ["| WebNN operation | status |", "|---|---|"]
    rows += [f"| `{name}` | {'supported' if name in ops else 'not yet'} |" for name in spec]
    done = sum(name in ops for name in spec)
    extra = sorted(set(ops) - set(spec))
    summary = f"**{done} / {len(spec)}** operations of the WebNN spec supported"
    if extra:
        summary += "; also accepted (later WebNN drafts): " + ", ".join(f"`{e}`" for e in extra)
    return summary + ".\n\n" + "\n".join(rows)


TABLES = {"webnn": webnn_table}


def render(text):
    for section, fn in TABLES.items():
        start, end = f"<!-- coverage:{section} -->", f"<!-- /coverage:{section} -->"
        body = f"{start}\n{fn()}\n{end}"
        if start in text:
            text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda m: body, text, flags=re.S)
        else:
            text += f"\n## Op coverage: {section}\n\n{body}\n"
    return text


def main(argv):
    current = open(README, encoding="utf-8").read()
    new = render(current)
    if "--check" in argv:
        if new != current:
            print("README.md coverage tables are out of date: run python scripts/coverage.py", file=sys.stderr)
            return 1
        return 0
    with open(README, "w", encoding="utf-8") as f:
        f.write(new)
    print("README.md coverage tables updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
