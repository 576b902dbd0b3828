"""torch-to-nnef exports for the NNEF importer tests: torch modules with seeded random weights,
written by torch_to_nnef for its Khronos and tract targets, and run by torch (the oracle) and by
tract's Python bindings (a second runtime) where they run.

torch-to-nnef's TractNNEF target runs the tract command-line tool only to read its version: a
stub script printing `tract 0.23.8` stands in for it (check_io=False: no tract run at export).
"""
from __future__ import annotations

import logging
import os
import stat
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

TRACT_VERSION = "0.23.8"


def tract_stub(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fake_tract.sh"
    if not path.exists():
        path.write_text(f"#!/bin/sh\necho 'tract {TRACT_VERSION}'\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def export(module: Any, args: tuple[Any, ...], folder: Path, target: str, input_names: list[str],
           output_names: list[str], dynamic_axes: dict[str, dict[int, str]] | None = None) -> str:
    """Export `module` to `folder/<target>/model.nnef` (a folder); returns its path."""
    t2n = pytest.importorskip("torch_to_nnef")
    out = folder / target / "model.nnef"
    if out.exists():
        return str(out)
    if target == "khronos":
        inference = t2n.KhronosNNEF("1.0.5", check_io=False)
    else:
        extra = {"dynamic_axes": dynamic_axes} if dynamic_axes else {}
        inference = t2n.TractNNEF(TRACT_VERSION, check_io=False, specific_tract_binary_path=tract_stub(folder), **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t2n.export_model_to_nnef(module, args, out, inference, input_names=input_names, output_names=output_names,
                                 compression_level=None, log_level=logging.ERROR)
    return str(out)


def torch_outputs(module: Any, args: tuple[Any, ...]) -> list[np.ndarray]:
    import torch

    with torch.no_grad():
        out = module(*args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o.numpy() for o in out]


def tract_outputs(path: str, feeds: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs tract computes for a folder (tract_core and tract_transformers registries)."""
    tract = pytest.importorskip("tract")
    model = tract.nnef().with_tract_transformers().load(path).into_runnable()
    return [o.to_numpy() for o in model.run(feeds)]


def transformers() -> Any:
    """transformers' Llama classes and caches, importable beside the CPU torch wheel: torchvision (which
    transformers imports when present) fails to register fake kernels for its absent C ops; the
    models need none of them, so registration failures are ignored while it loads."""
    import importlib

    import torch

    original = torch.library.register_fake

    def tolerant(op: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            inner = original(op, *args, **kwargs)
        except RuntimeError:
            return lambda fn: fn

        def wrap(fn: Any) -> Any:
            try:
                return inner(fn)
            except RuntimeError:
                return fn

        return wrap

    torch.library.register_fake = tolerant
    try:
        tf = importlib.import_module("transformers")
        cache = importlib.import_module("transformers.cache_utils")
        # transformers loads lazily: resolve what the tests use while registration is tolerant
        return types.SimpleNamespace(LlamaConfig=tf.LlamaConfig, LlamaForCausalLM=tf.LlamaForCausalLM,
                                     DynamicCache=cache.DynamicCache, DynamicLayer=cache.DynamicLayer)
    finally:
        torch.library.register_fake = original


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-6))


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
