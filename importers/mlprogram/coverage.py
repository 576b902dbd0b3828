"""The MIL ops of coremltools' opset registry per iOS version, and why Estuary does not import
the ones it lacks (scripts/coverage.py renders this into docs/coverage.md)."""
from __future__ import annotations

IOS = (15, 16, 17, 18)

# MIL op -> reason it is not imported (shown in the coverage table and kept in step with it)
REASONS = {
    "non_zero": "data-dependent output shape",
}


def registry() -> dict[str, set[int]] | None:
    """Public MIL op -> the iOS versions whose opset defines it, from coremltools' SSAOpRegistry
    (None when coremltools' converters cannot be imported)."""
    try:
        from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry  # type: ignore[import-untyped]
    except Exception:  # coremltools missing or broken: the caller keeps the frozen table
        return None
    out: dict[str, set[int]] = {}
    for name, versions in SSAOpRegistry.core_ops.items():
        if name.startswith("_"):
            continue
        have = {int(str(v.name).replace("iOS", "")) for v, cls in versions.items()
                if cls is not None and hasattr(v, "name") and str(v.name).startswith("iOS")}
        out[name] = {i for i in IOS if i in have}
    return out
