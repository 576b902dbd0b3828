"""The process's IREE devices: one runtime Config per driver, the names users give devices, and
copies from device buffers to the host. Shared by runtime (Model), mltensor and state."""
from __future__ import annotations

import atexit
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from estuary.base.errors import ExecutionError

if TYPE_CHECKING:
    import iree.runtime as rt

Array = npt.NDArray[Any]

# user-facing device names -> IREE runtime drivers
DEVICES: dict[str | None, str] = {
    None: "local-task",
    "cpu": "local-task",
    "local-task": "local-task",
    "local-sync": "local-sync",
    "vulkan": "vulkan",
    "gpu": "vulkan",
    "cuda": "cuda",
    "hip": "hip",
    "rocm": "hip",
    "metal": "metal",
}

# target a .vmfb was compiled for -> the device `load` opens for it when none is named
TARGET_DEVICE: dict[str, str | None] = {
    "llvm-cpu": None,
    "vulkan-spirv": "vulkan",
    "cuda": "cuda",
    "rocm": "hip",
    "metal-spirv": "metal",
}

# target a .vmfb was compiled for -> drivers able to run it
TARGET_DRIVERS: dict[str, set[str]] = {
    "llvm-cpu": {"local-task", "local-sync"},
    "vulkan-spirv": {"vulkan"},
    "cuda": {"cuda"},
    "rocm": {"hip"},
    "metal-spirv": {"metal"},
}

_CONFIGS: dict[str, tuple[rt.Config, int | None]] = {}  # driver -> (device config, worker count)


def _topology_flags(threads: int | None) -> tuple[str, str]:
    """IREE task-system flags for `threads` CPU workers (None: one per core). The flags are
    process-global, so every device sets all of them. By default IREE pins one worker to each
    core, counting from core 0; with one worker that would pin every process's worker to core 0
    (one-thread processes then share that core), so a single worker is left unpinned; more
    workers stay pinned, which measured faster (docs/performance.md)."""
    if threads is None:
        return "--task_topology_group_count=0", "--task_topology_max_group_count=64"
    if threads == 1:
        return "--task_topology_group_count=1", "--task_topology_max_group_count=64"
    return "--task_topology_group_count=0", f"--task_topology_max_group_count={threads}"


def config(driver: str, threads: int | None = None) -> rt.Config:
    """One runtime Config (device) per driver per process: devices are expensive to create, and
    IREE makes the CPU driver's workers once per process, so the first CPU load decides their
    count; a later load asking for another count is an error rather than silently ignored."""
    import iree.runtime as rt

    if threads is not None and (not isinstance(threads, numbers.Integral) or isinstance(threads, bool) or threads < 1):
        raise ExecutionError(f"threads must be a whole number of at least 1, got {threads!r}")
    threads = None if threads is None or driver != "local-task" else int(threads)
    if driver in _CONFIGS:
        config, have = _CONFIGS[driver]
        if threads is not None and threads != have:
            now, how = ("one worker thread per core", "without threads") if have is None else (
                f"{have} worker thread(s)", f"with threads={have}")
            raise ExecutionError(f"this process's CPU device already runs {now}: the count is "
                                f"fixed when the first CPU model loads; load {how}, or use another process")
        return config
    try:
        if driver == "local-task":
            rt.flags.parse_flags(*_topology_flags(threads))
        _CONFIGS[driver] = (rt.Config(driver), threads)
    except (RuntimeError, ValueError) as e:
        raise ExecutionError(f"cannot open device {driver!r}: {e}") from None
    return _CONFIGS[driver][0]


def download(device: rt.HalDevice, bv: rt.HalBufferView, dtype: np.dtype[Any]) -> Array:
    """Copy a device buffer view into a fresh host array through a host-visible staging buffer."""
    import iree.runtime as rt

    src = bv.get_buffer()
    size = src.byte_length()
    dst = device.allocator.allocate_buffer(
        memory_type=rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE,
        allowed_usage=rt.BufferUsage.TRANSFER | rt.BufferUsage.MAPPING,
        allocation_size=size)
    sem = device.create_semaphore(0)
    device.queue_copy(src, dst, [], [(sem, 1)])
    sem.wait(1)
    host = np.array(dst.map().asarray((size,), np.dtype(np.uint8)), copy=True)
    return host.view(dtype).reshape(bv.shape)



def _release_all() -> None:
    _CONFIGS.clear()


atexit.register(_release_all)
