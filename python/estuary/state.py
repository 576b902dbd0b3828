"""Model states that stay on the device between runs (Core ML's MLState): `Model.make_state()`.

A compiled stateful function takes each state's value before the run as an input and returns its
value after the run as an output of the same name. A `State` holds each value in a device buffer
(mltensor.DeviceTensor) and hands it to the function directly: on the CPU, where the function
writes its results into buffers the caller passes, each state has two buffers that swap roles
every run (the function never reads and writes one buffer); elsewhere the state takes the buffer
the function returns. Host copies happen only in `read` and `write`.
"""
from __future__ import annotations

from collections.abc import Sequence
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from estuary.base.errors import RuntimeInputError
from estuary.mltensor import DeviceTensor

if TYPE_CHECKING:
    import iree.runtime as rt

Array = npt.NDArray[Any]


class State:
    """One set of a function's states (name, shape, dtype), zero-filled at first."""

    def __init__(self, driver: str, specs: Sequence[tuple[str, tuple[int, ...], str]], where: str = "<model>") -> None:
        self.driver = driver
        self.specs = [(n, tuple(s), d) for n, s, d in specs]
        self.where = where
        self.lock = threading.Lock()  # one run at a time uses a state
        self._current = {n: DeviceTensor(driver, s, d) for n, s, d in self.specs}
        self._spare: dict[str, DeviceTensor] = {}

    @property
    def names(self) -> list[str]:
        return [n for n, _, _ in self.specs]

    def _tensor(self, name: str) -> DeviceTensor:
        if name not in self._current:
            raise RuntimeInputError(f"{self.where}: no state {name!r} (states: {', '.join(self.names)})")
        return self._current[name]

    def read(self, name: str) -> Array:
        """A host copy of state `name`'s current value."""
        with self.lock:
            return self._tensor(name).read()

    def write(self, name: str, value: npt.ArrayLike) -> None:
        """Set state `name` (e.g. to restart a sequence); `value` must have its shape and dtype."""
        t = self._tensor(name)
        arr = np.asarray(value)
        if arr.shape != t.shape or arr.dtype != t.dtype:
            raise RuntimeInputError(f"{self.where}: state {name!r} is {t.dtype}{list(t.shape)}, "
                                    f"got {arr.dtype}{list(arr.shape)}")
        with self.lock:
            t.write(arr)

    def check(self, specs: Sequence[tuple[str, tuple[int, ...], str]], driver: str, where: str) -> None:
        """A function may use this state if it declares the same states (another function of a
        multifunction model may share it) on the same device."""
        if [(n, tuple(s), d) for n, s, d in specs] != self.specs or driver != self.driver:
            raise RuntimeInputError(f"{where}: the state holds {self.specs} on {self.driver}; the function "
                                    f"runs with states {list(specs)} on {driver}")

    # ------------------------------------------------------------ used by Model.run

    def current(self, name: str) -> rt.HalBufferView:
        view = self._current[name].view
        assert view is not None
        return view

    def spare(self, name: str) -> rt.HalBufferView:
        """The buffer the run writes the state's new value into (made on first use)."""
        if name not in self._spare:
            _, shape, dtype = next(s for s in self.specs if s[0] == name)
            self._spare[name] = DeviceTensor(self.driver, shape, dtype)
        view = self._spare[name].view
        assert view is not None
        return view

    def swap(self) -> None:
        """After a run that wrote into the spare buffers: they hold the current values."""
        self._current, self._spare = self._spare, self._current

    def replace(self, name: str, view: rt.HalBufferView) -> None:
        self._current[name].view = view

    def __repr__(self) -> str:
        return f"State({', '.join(f'{n}: {d}{list(s)}' for n, s, d in self.specs)})"
