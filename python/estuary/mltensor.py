"""Device tensors for WebNN's MLTensor model: IREE HAL buffers that stay on the device between runs.

`DeviceTensor` holds one HAL buffer view on the process's device of a driver (the device
`estuary.load` runs models on, so a model reads it in place); `dispatch(model, inputs, outputs)`
runs a loaded Model on such tensors. With output storage (llvm-cpu) the model writes into the
output tensors' buffers; otherwise (Vulkan) each output tensor takes the buffer the model returns.
Host copies happen only in `write` and `read`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from estuary import devices
from estuary.base import dtypes
from estuary.base.errors import ExecutionError, RuntimeInputError

if TYPE_CHECKING:
    import iree.runtime as rt

    from estuary.runtime import Model

Array = npt.NDArray[Any]
_CPU = ("local-task", "local-sync")


def device(driver: str) -> rt.HalDevice:
    """The process's device for `driver` (shared with every Model loaded for it)."""
    return devices.config(driver).device


class DeviceTensor:
    """A dense tensor of one WebNN data type and shape in a device buffer (zero-filled at first)."""

    def __init__(self, driver: str, shape: Sequence[int], data_type: str) -> None:
        self.driver, self.shape, self.data_type = driver, tuple(int(d) for d in shape), data_type
        self.dtype = dtypes.to_numpy(data_type)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.view: rt.HalBufferView | None = None
        self.write(np.zeros(self.shape, self.dtype))

    def _signless(self) -> np.dtype[Any]:
        return np.dtype(f"i{self.dtype.itemsize}") if self.data_type in dtypes.UNSIGNED else self.dtype

    def write(self, data: Array) -> None:
        """Replace the contents with `data` (an array of this tensor's dtype and size)."""
        import iree.runtime as rt
        from iree.runtime.dtypes import map_dtype_to_hal_element_type

        array = np.ascontiguousarray(data, dtype=self.dtype).reshape(self.shape).view(self._signless())
        dev = device(self.driver)
        if self.view is not None and self.driver in _CPU:  # host-visible: overwrite in place
            np.copyto(self.view.get_buffer().map().asarray(list(self.shape), self._signless()), array)
            return
        cpu = self.driver in _CPU
        memory = rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE if cpu else rt.MemoryType.DEVICE_LOCAL
        usage = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING if cpu else rt.BufferUsage.DEFAULT
        try:
            self.view = dev.allocator.allocate_buffer_copy(memory_type=memory, allowed_usage=usage, device=dev,
                                                           buffer=array,
                                                           element_type=map_dtype_to_hal_element_type(self._signless()))
        except (RuntimeError, ValueError) as e:
            raise ExecutionError(f"cannot allocate a {self.data_type}{list(self.shape)} tensor on {self.driver}: {e}") from None

    def read(self) -> Array:
        """A host copy of the contents (this tensor's dtype and shape)."""
        assert self.view is not None
        if self.driver in _CPU:
            raw = np.array(self.view.get_buffer().map().asarray(list(self.shape), self._signless()), copy=True)
        else:
            raw = devices.download(device(self.driver), self.view, self._signless())
        return raw.view(self.dtype).reshape(self.shape)

    def release(self) -> None:
        self.view = None


def dispatch(model: Model, inputs: Mapping[str, DeviceTensor], outputs: Mapping[str, DeviceTensor]) -> None:
    """Run `model` on device tensors named as its signature's inputs and outputs (checked by the
    caller: same names, data types and fixed shapes, on the model's driver). A model with dynamic
    dimensions checks the inputs' shapes against its signature here (bounds, a symbol's inputs
    agreeing: RuntimeInputError) and needs output tensors of the shapes they give."""
    import iree.runtime as rt

    args = [inputs[name] for name, _, _ in model.inputs]
    outs = [outputs[name] for name, _, _ in model.outputs]
    if model.dims:
        _check_shapes(model, args, outs)
    storage = model._storage
    arg_list = rt.VmVariantList(len(args) + (len(outs) if storage else 0) + 2)
    for t in args + (outs if storage else []):
        arg_list.push_ref(t.view)
    ret_list = rt.VmVariantList(len(outs))
    model._invoke(arg_list, ret_list)
    if not storage:  # the results stay on the device: each output tensor takes its buffer
        for i, t in enumerate(outs):
            t.view = ret_list.get_variant(i).deref(rt.HalBufferView)


def _check_shapes(model: Model, args: Sequence[DeviceTensor], outs: Sequence[DeviceTensor]) -> None:
    """RuntimeInputError unless the inputs' shapes fit the model's dynamic signature and each
    output tensor has the shape they give its output."""
    found = model.output_shapes({n: t.shape for (n, _, _), t in zip(model.inputs, args)})
    expected = [found[n] for n, _, _ in model.outputs]
    for (name, _, _), t, shape in zip(model.outputs, outs, expected):
        if t.shape != tuple(shape):
            raise RuntimeInputError(f"{model.where}: output {name!r} has shape {list(shape)} for these inputs; the "
                                    f"output tensor is {list(t.shape)}")
