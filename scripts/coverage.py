"""Generates the op-coverage tables of docs/coverage.md from the code (and checks they are current).

    python scripts/coverage.py           # rewrite the tables in docs/coverage.md
    python scripts/coverage.py --check   # exit 1 if docs/coverage.md is out of date (run by the tests)

Each format contributes (spec op names, supported set); the spec names come from the spec text
in ../shared/specs when it is there, else from the list frozen into docs/coverage.md's table.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = os.path.join(os.path.dirname(ROOT), "shared", "specs")
COVERAGE = os.path.join(ROOT, "docs", "coverage.md")


def webnn_spec_ops():
    """Every MLGraphBuilder operation in webnn.txt (input/constant/build excluded)."""
    path = os.path.join(SPECS, "webnn.txt")
    if not os.path.exists(path):
        return None
    text = open(path, encoding="utf-8").read()
    names = set(re.findall(r"MLOperand\s+([a-zA-Z0-9]+)\s*\(", text))
    names |= set(re.findall(r"sequence\s*<\s*MLOperand\s*>\s*([a-zA-Z0-9]+)\s*\(", text))
    return sorted(names - {"input", "constant"})


def supported(format):
    """Names of the source ops `format`'s importer registers (importers/<format>/ops/)."""
    import importlib

    return importlib.import_module(f"estuary.importers.{format}.ops").OPS.load().supported()


def webnn_supported():
    return supported("webnn")


def coreml_supported():
    return supported("coreml")


def nnef_supported():
    return supported("nnef")


def nnapi_supported():
    return supported("nnapi")


def _frozen(section):
    """Spec op names already listed in docs/coverage.md's table for `section` (when the spec is absent)."""
    text = open(COVERAGE, encoding="utf-8").read() if os.path.exists(COVERAGE) else ""
    block = re.search(rf"<!-- coverage:{section} -->(.*?)<!-- /coverage:{section} -->", text, re.S)
    return sorted(re.findall(r"^\| `([^`]+)` \|", block.group(1), re.M)) if block else []


def _table(section, title, spec, supported, unit, note=""):
    """A markdown table with one row per spec name and a summary line."""
    spec = spec or _frozen(section)
    rows = [f"| {title} | status |", "|---|---|"]
    rows += [f"| `{name}` | {'supported' if name in supported else 'not yet'} |" for name in spec]
    done = sum(name in supported for name in spec)
    pct = f" ({100 * done / len(spec):.0f} %)" if spec else ""
    summary = f"**{done} / {len(spec)}**{pct} {unit} supported{note}"
    return summary + ".\n\n" + "\n".join(rows)


# The current spec's MLGraphBuilder operations beyond webnn.txt's (the WebNN IDL as published with
# web-platform-tests' interfaces/webnn.idl and webmachinelearning.github.io/webnn, 2025).
WEBNN_CURRENT_ADDED = ["cumulativeSum", "dequantizeLinear", "gatherElements", "gatherND", "isInfinite", "isNaN",
                       "logicalAnd", "logicalOr", "logicalXor", "notEqual", "quantizeLinear", "reverse",
                       "roundEven", "scatterElements", "scatterND", "sign", "tile"]


def webnn_table():
    spec = webnn_spec_ops() or _frozen("webnn")
    ops = webnn_supported()
    current = sorted(set(spec) | set(WEBNN_CURRENT_ADDED))
    done = sum(name in ops for name in current)
    missing = [f"`{n}`" for n in current if n not in ops]
    note = (f"; of the current spec (its {len(WEBNN_CURRENT_ADDED)} newer operations listed after the table): "
            f"**{done} / {len(current)}**" + (f", missing {', '.join(missing)}" if missing else ""))
    table = _table("webnn", "WebNN operation", spec, ops, "operations of the WebNN spec", note)
    later = ["", "", "| later WebNN operation | status |", "|---|---|"]
    later += [f"| {name} | {'supported' if name in ops else 'not yet'} |" for name in WEBNN_CURRENT_ADDED]
    return table + "\n".join(later)


def _spec_text(name):
    path = os.path.join(SPECS, name)
    return open(path, encoding="utf-8").read() if os.path.exists(path) else None


def coreml_spec_layers():
    """The field names of the `NeuralNetworkLayer` `oneof layer` block."""
    text = _spec_text("coreml-neuralnetwork.txt")
    if text is None:
        return None
    start = text.index("oneof layer {")
    block = text[start:text.index("}", start)]
    return sorted(re.findall(r"^\s*[A-Za-z0-9_.]+\s+([A-Za-z0-9_]+)\s*=\s*\d+;", block, re.M))


def coreml_table():
    return _table("coreml", "Core ML layer", coreml_spec_layers(), coreml_supported(), "layer types of the Core ML spec")


NNEF_NOT_OPS = {"foo", "bar", "buzz", "fizz", "calculate_condition", "calculate_more_outputs"}


def nnef_spec_ops():
    """Every fragment the NNEF spec declares, minus its syntax examples and private helpers."""
    text = _spec_text("nnef-1.0.txt")
    if text is None:
        return None
    names = set(re.findall(r"fragment\s+([a-z_0-9]+)\s*[(<]", text))
    return sorted(n for n in names - NNEF_NOT_OPS if not n.startswith("_"))


def nnef_table():
    return _table("nnef", "NNEF operation", nnef_spec_ops(), nnef_supported(), "operations of NNEF 1.0")


def nnapi_spec_ops():
    """The OperationCode enumerators of the NeuralNetworks.h header, without the prefix."""
    text = _spec_text("nnapi-neuralnetworks-h.txt")
    if text is None:
        return None
    start = re.search(r"enum\s+OperationCode\s*{", text).start()
    block = text[start:text.index("}", start)]
    return sorted(re.findall(r"ANEURALNETWORKS_([A-Z0-9_]+)\s*=", block))


def nnapi_table():
    return _table("nnapi", "NNAPI operation", nnapi_spec_ops(), nnapi_supported(), "operations of NNAPI (API level 27)")


def _frozen_mlprogram():
    """{op: iOS versions} from docs/coverage.md's ML Program table (when coremltools is absent)."""
    text = open(COVERAGE, encoding="utf-8").read() if os.path.exists(COVERAGE) else ""
    block = re.search(r"<!-- coverage:mlprogram -->(.*?)<!-- /coverage:mlprogram -->", text, re.S)
    out = {}
    for line in (block.group(1).splitlines() if block else []):
        m = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if m:
            cells = [c.strip() for c in m.group(2).split("|")]
            out[m.group(1)] = {15 + i for i, c in enumerate(cells) if c != "—"}
    return out


def mlprogram_table():
    """One row per public MIL op of coremltools' registry, one column per opset (iOS15..iOS18)."""
    from estuary.importers.mlprogram import supported as mil_supported
    from estuary.importers.mlprogram.coverage import IOS, REASONS, registry

    reg = registry() or _frozen_mlprogram()
    have = mil_supported()
    rows = ["| MIL op | " + " | ".join(f"iOS{v}" for v in IOS) + " |", "|---|" + "---|" * len(IOS)]
    done = {v: 0 for v in IOS}
    total = {v: 0 for v in IOS}
    for name in sorted(reg):
        cells = []
        for v in IOS:
            if v not in reg[name]:
                cells.append("—")
                continue
            total[v] += 1
            if name in have and v >= have[name]:
                done[v] += 1
                cells.append("supported")
            else:
                cells.append(REASONS.get(name, "not yet"))
        rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
    summary = "; ".join(f"iOS{v}: **{done[v]} / {total[v]}** ({100 * done[v] / max(total[v], 1):.0f} %)" for v in IOS)
    return ("MIL ops of coremltools' opset registry (`SSAOpRegistry.core_ops`) supported per opset: " + summary
            + ". An op without a converter is refused with \"unsupported MIL op X (opset, op name)\".\n\n"
            + "\n".join(rows))


HEADER = ("# Op coverage\n\nGenerated by `scripts/coverage.py` from the importers' registries and the specs; "
          "`tests/project/test_coverage_table.py` checks that it is current.\n")

TABLES = {"webnn": webnn_table, "coreml": coreml_table, "nnef": nnef_table, "nnapi": nnapi_table,
          "mlprogram": mlprogram_table}


def render(text):
    for section, fn in TABLES.items():
        start, end = f"<!-- coverage:{section} -->", f"<!-- /coverage:{section} -->"
        body = f"{start}\n{fn()}\n{end}"
        if start in text:
            text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda m: body, text, flags=re.S)
        else:
            text += f"\n## {section}\n\n{body}\n"
    return text


def main(argv):
    current = open(COVERAGE, encoding="utf-8").read() if os.path.exists(COVERAGE) else HEADER
    new = render(current)
    if "--check" in argv:
        if new != current:
            print("docs/coverage.md is out of date: run python scripts/coverage.py", file=sys.stderr)
            return 1
        return 0
    with open(COVERAGE, "w", encoding="utf-8") as f:
        f.write(new)
    print("docs/coverage.md updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
