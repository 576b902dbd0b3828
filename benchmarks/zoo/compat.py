"""What the converters need beside today's wheels, each applied once per process:

- torchvision: the wheel beside torch's CPU wheel registers fake (meta) kernels for its C
  operators (`torchvision::nms`, ...) at import, which fails when those operators are absent; the
  model constructors use none of them, so the import skips exactly those registrations.
- coremltools 9 has no converter for `Tensor.new_ones`, which transformers 5's mask helpers call.
- torch-to-nnef's tract target asks a `tract` command for its version; a stub answering the
  version targeted (TractNNEF.latest_version(): 0.23.8 in torch-to-nnef 0.24) stands in; the
  exports are not checked against tract there (check_io=False): the zoo runs tract itself.
"""
from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import Any, Callable

@functools.cache
def torchvision() -> Any:
    """`import torchvision`, skipping fake-kernel registrations of operators that do not exist."""
    import torch

    original = torch.library.register_fake

    def register_fake(op: Any, func: Callable[..., Any] | None = None, /, **kwargs: Any) -> Any:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            try:
                return original(op, fn, **kwargs)
            except RuntimeError as e:
                if "does not exist" not in str(e):
                    raise
                return fn

        return register if func is None else register(func)

    torch.library.register_fake = register_fake
    try:
        import torchvision as module
    finally:
        torch.library.register_fake = original
    return module


@functools.cache
def coremltools_new_ones() -> None:
    """Register a coremltools converter for `aten::new_ones(self, size, dtype, ...)`: a constant
    when the size is known (`q_idx.new_ones((), dtype=torch.bool)` in transformers' masks), else a
    fill."""
    import numpy as np
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.frontend.torch.ops import _get_inputs
    from coremltools.converters.mil.frontend.torch.torch_op_registry import register_torch_op
    from coremltools.converters.mil.frontend.torch.utils import NUM_TO_NUMPY_DTYPE

    def new_ones(context: Any, node: Any) -> None:
        inputs = _get_inputs(context, node, min_expected=2)
        size, dtype = inputs[1], inputs[2] if len(inputs) > 2 else None
        np_dtype = NUM_TO_NUMPY_DTYPE[int(dtype.val)] if dtype is not None and dtype.val is not None else np.float32
        if np.issubdtype(np_dtype, np.integer):
            np_dtype = np.int32  # Core ML's integer tensors
        if isinstance(size, list):
            size = mb.concat(values=size, axis=0)
        if size.val is not None:
            context.add(mb.const(val=np.ones(tuple(int(d) for d in size.val), np_dtype), name=node.name))
        else:
            context.add(mb.fill(shape=size, value=np_dtype(1), name=node.name))

    register_torch_op(new_ones, override=True)


def tract_stub(folder: Path, version: str) -> Path:
    """An executable in `folder` that prints `tract <version>` (torch-to-nnef's version probe)."""
    path = folder / "tract-version-stub.sh"
    if not path.exists():
        path.write_text(f'#!/bin/sh\necho "tract {version}"\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def quiet_converters() -> None:
    """Silence coremltools' and torch's harmless warnings on Linux (no Core ML framework here,
    untested torch version, TorchScript deprecation) so the zoo's logs show what matters."""
    import logging
    import warnings

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in ("coremltools", "torch_to_nnef", "torch.onnx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
