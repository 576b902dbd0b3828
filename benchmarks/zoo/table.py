"""docs/zoo.md from the zoo's results (one JSON record per model x format cell, run.py): a summary,
then per format one table (converted? imports? compiles? matches? compile seconds, peak compile
memory, latency beside onnxruntime and tract) and every failure's exact error text."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable

from . import export, models

ERROR_SHOWN = 1500  # characters of an error shown in the table's notes (the JSONL keeps the rest)
Record = dict[str, Any]


def _yes(value: bool | None) -> str:
    return "" if value is None else ("yes" if value else "**no**")


def _ms(latency: dict[str, Any], threads: str, runtime: str) -> str:
    entry = latency.get(threads, {}).get(runtime)
    return f"{entry['median_ms']:.2f}" if entry else ""


def _geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values if v and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def _ratio(records: list[Record], threads: str, peer: str) -> str:
    pairs = [(r["latency"][threads]["estuary"]["median_ms"], r["latency"][threads][peer]["median_ms"])
             for r in records if peer in r.get("latency", {}).get(threads, {})]
    mean = _geomean(e / p for e, p in pairs)
    return f"{mean:.2f} ({len(pairs)} model{'s' if len(pairs) > 1 else ''})" if mean else "—"


def _compile(r: Record) -> str:
    if "compile_cpu_s" not in r:
        return ""
    return f"{r['compile_cpu_s']:.1f} ({r['compile_s']:.1f})"


def _matches(r: Record) -> str:
    if r.get("rel_err") is None:
        return _yes(r.get("matches"))
    return f"{_yes(r['matches'])} ({r['rel_err']:.0e})"


def _clean(text: str, work: str) -> str:
    """An error's text with the work directory's prefix dropped (paths relative to it)."""
    text = text.replace(work.rstrip("/") + "/", "")
    return re.sub(r"\x1b\[[0-9;]*m", "", text).strip()


def _who(r: Record) -> str:
    stage = str(r["failed_stage"])
    if stage == "convert":
        return f"conversion ({export.FORMATS[r['format']].converter})"
    return {"import": "Estuary import", "compile": "Estuary compile", "run": "Estuary run",
            "match": "Estuary output differs from torch"}.get(stage, stage)


def _error_block(text: str, work: str) -> list[str]:
    text = _clean(text, work)
    if len(text) > ERROR_SHOWN:
        text = text[:ERROR_SHOWN] + f"\n[... {len(text) - ERROR_SHOWN} more characters in the results file]"
    return ["  ```text", *("  " + line for line in text.replace("```", "'''").splitlines()), "  ```"]


def _peer_failures(r: Record, work: str) -> list[str]:
    """Notes for a peer (onnxruntime, tract) that did not run the model, or not like torch."""
    lines = []
    for name, status in r.get("peer_exports", {}).items():
        if status != "ok":
            lines += [f"- {r['model']}: no {name} beside it; the export it runs failed:", *_error_block(status, work)]
    for threads, peers in r.get("peers", {}).items():
        for name, peer in peers.items():
            if "error" in peer:
                lines += [f"- {r['model']}: {name} ({threads} threads) fails on its export:",
                          *_error_block(peer["error"], work)]
            elif peer.get("rel_err", 0) > 1e-3:
                lines.append(f"- {r['model']}: {name} ({threads} threads) differs from torch: max rel. error "
                             f"{peer['rel_err']:.1e}")
    return lines


def format_section(fmt: str, records: list[Record], work: str) -> list[str]:
    f = export.FORMATS[fmt]
    lines = [f"## {f.title} (`{fmt}`)", "",
             f"Converted by {f.converter}; pass: max |Estuary - torch| / max |torch| <= {f.tolerance:g}.", "",
             "| model | converts | imports | compiles | matches (rel. err) | compile CPU s (wall) | peak compile MB "
             "| Estuary ms | onnxruntime ms | Estuary 1T ms | onnxruntime 1T ms | tract 1T ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        lat = r.get("latency", {})
        lines.append(f"| {r['model']} | {_yes(r['converted'])} | {_yes(r['imports'])} | {_yes(r['compiles'])} | "
                     f"{_matches(r)} | {_compile(r)} | {r.get('peak_compile_mb', '') if r.get('compiles') else ''} | "
                     f"{_ms(lat, 'default', 'estuary')} | {_ms(lat, 'default', 'onnxruntime')} | "
                     f"{_ms(lat, '1', 'estuary')} | {_ms(lat, '1', 'onnxruntime')} | {_ms(lat, '1', 'tract')} |")
    matched = [r for r in records if r.get("matches")]
    lines += ["", f"Geometric mean of Estuary's latency over the peer's, where both ran: onnxruntime "
                  f"{_ratio(matched, 'default', 'onnxruntime')} (default threads), "
                  f"{_ratio(matched, '1', 'onnxruntime')} (one thread); tract {_ratio(matched, '1', 'tract')} "
                  f"(one thread).", ""]
    failures = [r for r in records if r.get("failed_stage")]
    if failures:
        lines += ["Failures (exact error text):", ""]
        for r in failures:
            where = f" (raised at `{r['where']}`)" if r.get("where") else ""
            lines += [f"- **{r['model']}**: {_who(r)}{where}", *_error_block(r["error"] or "", work)]
        lines.append("")
    peer_notes = [line for r in records for line in _peer_failures(r, work)]
    if peer_notes:
        lines += ["Peers:", "", *peer_notes, ""]
    return lines


def summary(by_format: dict[str, list[Record]]) -> list[str]:
    lines = ["| format | models | converted | import | compile | match |", "|---|---|---|---|---|---|"]
    for fmt, records in by_format.items():
        counts = [sum(1 for r in records if r.get(k)) for k in ("converted", "imports", "compiles", "matches")]
        lines.append(f"| {fmt} | {len(records)} | " + " | ".join(map(str, counts)) + " |")
    return lines


def header(records: list[Record], results: Path) -> list[str]:
    started = min(r.get("started", "") for r in records)
    finished = max(r.get("finished", "") for r in records)
    cpus = {(r["machine"]["cpu"], r["machine"].get("family_model", ""), r["machine"]["cpus"],
             " ".join(r["machine"].get("simd", []))) for r in records if "machine" in r}
    latest = max(records, key=lambda r: r.get("finished", ""))
    lines = ["# Model zoo", "",
             "Real architectures with seeded random weights, converted by their usual tools into each format "
             "Estuary reads, then imported, compiled for llvm-cpu (the host CPU, default options), run on "
             "batch 1 and compared with torch's output on the same input. Generated by `python -m "
             "benchmarks.zoo` (benchmarks/zoo/) from its results file; do not edit by hand.", "",
             f"Runs from {started} to {finished} (UTC)."]
    for cpu, family, count, simd in sorted(cpus):
        lines.append(f"CPU: {cpu} ({family}), {count} logical CPUs; SIMD: {simd}.")
    estuary_keys = ("estuary from", "estuary source", "estuary commit")
    lines.append("Versions: " + ", ".join(f"{k} {v}" for k, v in latest.get("versions", {}).items()
                                          if k not in estuary_keys) + ".")
    sources: dict[str, list[Record]] = {}
    for r in records:
        v = r.get("versions", {})
        sources.setdefault(v.get("estuary source") or v.get("estuary commit") or v.get("estuary from", "?"), []).append(r)
    for source, cells in sources.items():
        scope = "all cells" if len(sources) == 1 else f"{len(cells)} cells ({', '.join(sorted({c['format'] for c in cells}))})"
        lines.append(f"Estuary: {source} ({scope}).")
    loads = [v for r in records for v in r.get("load", {}).values()]
    if loads:
        lines.append(f"Load average (1 min) when the latencies were measured: {min(loads):.1f} to {max(loads):.1f} "
                     f"(median {sorted(loads)[len(loads) // 2]:.1f}) on {records[0].get('machine', {}).get('cpus')} "
                     "logical CPUs: the machine was shared, latencies are indicative, CPU seconds more stable.")
    if any(r.get("jobs", 1) > 1 for r in records):
        lines.append("Some cells ran beside another (--jobs > 1): their latencies are disturbed.")
    lines += ["", "Columns: *compile CPU s (wall)*: CPU and wall seconds of import + compile in the compiling "
              "child process (IREE compiles on several threads, so CPU can exceed wall); *peak compile MB*: that "
              "child's peak RSS (wait4's ru_maxrss; the Python + IREE baseline is about 270 MB); latency: median "
              "ms of batch-1 runs, Estuary beside onnxruntime (on the model's ONNX export) on the default thread "
              "count (all cores), then Estuary, onnxruntime and tract on one thread (*1T*; tract's Python bindings "
              "run single-threaded) on the model's tract NNEF export, all alternating in one process. A blank cell: "
              "the stage was not reached. Paths in error texts are relative to the zoo's work directory.", ""]
    return lines


def notes() -> list[str]:
    lines = ["## Models", "", "torchvision models at 224² unless noted; Hugging Face transformers built from small "
             "configs. Weights are seeded random; BatchNorm running statistics and every parameter the library "
             "initialises to a constant (zero biases, ViT's zero head, norm scales of one, ConvNeXt's layer scale) "
             "are redrawn, so a wrong axis or a dropped branch cannot match by accident.", ""]
    for spec in models.MODELS.values():
        if spec.note and spec.zoo:
            lines.append(f"- {spec.name}: {spec.note}")
    return lines + [""]


def render(records: dict[tuple[str, str], Record], results: Path) -> str:
    """The markdown page for `records` ((model, format) -> latest record)."""
    if not records:
        return "# Model zoo\n\nNo results yet: run `python -m benchmarks.zoo`.\n"
    work = str(next((r["work"] for r in records.values() if "work" in r), results.parent))
    order = {name: i for i, name in enumerate(models.MODELS)}
    by_format: dict[str, list[Record]] = {}
    for fmt in export.FORMATS:
        rows = sorted((r for (m, f), r in records.items() if f == fmt), key=lambda r: order.get(r["model"], 1 << 30))
        if rows:
            by_format[fmt] = rows
    lines = header(list(records.values()), results) + ["## Summary", ""] + summary(by_format) + [""]
    for fmt, rows in by_format.items():
        lines += format_section(fmt, rows, work)
    return "\n".join(lines + notes()) + "\n"


def write(records: dict[tuple[str, str], Record], doc: Path, results: Path) -> None:
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(records, results))
