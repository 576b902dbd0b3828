"""`estuary.load`: a Model from an Artifact, a .vmfb (path or bytes) or a model path, the last
compiled through the compile cache (cache.py)."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from estuary import cache as compile_cache
from estuary import devices
from estuary.backends.options import create_options
from estuary.base import integrity
from estuary.base.errors import EstuaryError, ExecutionError
from estuary.compiler import Artifact, compile
from estuary.runtime import Model, read_vmfb


def load(artifact_or_path: Artifact | str | os.PathLike[str] | bytes | bytearray | memoryview,
         device: str | None = None, threads: int | None = None, *, target: str | None = None,
         format: str | None = None, shapes: dict[str, Any] | None = None, cache: bool = True,
         progress: Any = False) -> Model:
    """Load an Artifact, a .vmfb path, a .vmfb's bytes, or a model path for `device` (None: the
    device the artefact's target runs on; "cpu", "vulkan", "cuda", ...). A model path (any format
    `compile` reads) is compiled for `target` (default: the one `device` needs, else llvm-cpu)
    through the compile cache (estuary.cache; `cache=False` skips it); `model.from_cache` tells
    whether the artefact was reused. Bytes count as a path only when they look like one."""
    if isinstance(artifact_or_path, Artifact):
        source = artifact_or_path.signature.get("source")
        return Model(artifact_or_path.vmfb, device, f"{source} (compiled)" if source else "<compiled artifact>",
                     threads)
    if isinstance(artifact_or_path, (bytearray, memoryview)) or (
            isinstance(artifact_or_path, bytes) and (b"\0" in artifact_or_path or len(artifact_or_path) > 4096)):
        return Model(bytes(artifact_or_path), device, "<.vmfb bytes>", threads)
    try:
        path = os.fsdecode(artifact_or_path)  # a bytes path is named as text in messages
    except TypeError:
        raise EstuaryError(f"load() takes an Artifact, a .vmfb path or its bytes, got "
                           f"{type(artifact_or_path).__name__}") from None
    try:
        if os.path.isdir(path):
            head = b""
        else:
            with open(path, "rb") as f:
                head = f.read(512)
    except OSError as e:
        raise EstuaryError(f"{path}: cannot read ({e.strerror})") from None
    if not integrity.is_vmfb(head) and not path.lower().endswith(".vmfb"):  # a damaged .vmfb stays an artefact
        return load_model(path, device, threads, target=target, format=format, shapes=shapes, cache=cache,
                          progress=progress)
    try:
        data = read_vmfb(path)
    except OSError as e:
        raise EstuaryError(f"{path}: cannot read ({e.strerror or e})") from None
    return Model(data, device, path, threads)


def _intact(data: bytes) -> bool:
    try:
        integrity.verify(data)
    except integrity.IntegrityError:
        return False
    return True


# the target `load` compiles a model for when it is given a device but no target
_DRIVER_TARGET = {"local-task": "llvm-cpu", "local-sync": "llvm-cpu", "vulkan": "vulkan-spirv", "cuda": "cuda",
                  "hip": "rocm", "metal": "metal-spirv"}


def load_model(path: str, device: str | None = None, threads: int | None = None, *, target: str | None = None,
               format: str | None = None, shapes: Mapping[str, Sequence[int]] | None = None, cache: bool = True,
               progress: bool | Callable[[str], None] = False) -> Any:
    """`estuary.load` of a model path: compile it for `target` (through the cache unless
    `cache=False`) and load the artefact. The Model's `from_cache` says whether it was reused."""
    if device not in devices.DEVICES:
        raise EstuaryError(f"unknown device {device!r}; choose one of {sorted(k for k in devices.DEVICES if k)}")
    options = create_options(target or _DRIVER_TARGET[devices.DEVICES[device]])
    if device is None:  # the device the target runs on, named so that Model need not probe the artefact
        device = devices.TARGET_DEVICE.get(options.target) or "cpu"
    if not cache:
        art = compile(path, format=format, shapes=dict(shapes) if shapes else None, options=options,
                      progress=progress)
        return Model(art.vmfb, device, path, threads)
    for attempt in (0, 1):
        entry, hit = compile_cache.compiled(path, options, format=format, shapes=shapes, progress=progress)
        data: Any
        try:
            data = read_vmfb(entry.vmfb)
        except OSError:
            data = None
        if data is not None:
            try:
                model = Model(data, device, path, threads)  # checks the integrity record first
            except ExecutionError:
                if _intact(data):
                    raise  # a whole artefact that does not load: not the cache's doing
                data = None
        if data is None:  # a vanished or damaged entry: compile afresh, once
            compile_cache.remove(entry.key)
            if attempt:
                raise EstuaryError(f"{path}: the compile cache entry {entry.vmfb} is unreadable")
            continue
        model.from_cache = hit
        model.artifact_path = entry.vmfb
        return model
    raise AssertionError("unreachable")
