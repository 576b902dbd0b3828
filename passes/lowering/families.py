"""Loads the lowering rules: one module per op family of the nn dialect (dialects.ops.FAMILIES),
each registering its rules on import."""
import importlib

from estuary.dialects.ops import FAMILIES


def load() -> None:
    for family in FAMILIES:
        importlib.import_module(f"estuary.passes.lowering.{family}")
