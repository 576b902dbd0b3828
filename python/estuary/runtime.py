"""Running compiled artefacts: `Model(vmfb, device)`; `model.run({...})`. `estuary.load` (loader.py)
makes Models from artefacts, .vmfb files and model paths."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import copy
import json
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from estuary import devices
from estuary.base import dtypes, integrity
from estuary.base.errors import EstuaryError, ExecutionError, RuntimeInputError

from estuary.shapes import ShapeRules
from estuary.state import State

if TYPE_CHECKING:
    import iree.runtime as rt

Array = npt.NDArray[Any]
# Per input or output of a signature: (name, shape, nn dtype name).
TensorInfo = tuple[str, tuple[int, ...], str]

SIGNATURE_KEY = "estuary.signature"
POLL_SECONDS = 0.05  # how long a CPU run's caller yield-polls for completion before it blocks
_yield_core: Callable[[], None] = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))  # Windows has no sched_yield

def _vm_module(instance: rt.VmInstance, vmfb: bytes | Array, where: str) -> rt.VmModule:
    import iree.runtime as rt

    try:
        if isinstance(vmfb, np.ndarray) and vmfb.ctypes.data % VMFB_ALIGNMENT == 0:
            return rt.VmModule.wrap_buffer(instance, vmfb)  # read_vmfb's buffer, used in place
        return rt.VmModule.copy_buffer(instance, vmfb)
    except Exception as e:  # IREE raises RuntimeError, ValueError, IndexError (OUT_OF_RANGE), ...
        raise ExecutionError(f"{where}: not a valid .vmfb ({e})") from None


VMFB_ALIGNMENT = 64  # what IREE needs of a buffer it runs a module from without copying


def read_vmfb(path: str) -> Array:
    """A .vmfb file's bytes in a VMFB_ALIGNMENT-aligned uint8 array, which IREE uses in place
    (bytes would be copied once more: a large model's load time)."""
    size = os.path.getsize(path)
    raw = np.empty(size + VMFB_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % VMFB_ALIGNMENT
    buf = raw[start:start + size]
    with open(path, "rb") as f:
        if f.readinto(buf.data) != size:
            raise OSError(f"{path} changed while being read")
    return buf


def _check_target(signature: Mapping[str, Any], device: str | None, driver: str, where: str) -> None:
    target = signature.get("target")
    if target in devices.TARGET_DRIVERS and driver not in devices.TARGET_DRIVERS[target]:
        raise ExecutionError(f"{where}: compiled for target {target!r}, which device {device!r} "
                            f"({driver}) cannot run; use one of {sorted(devices.TARGET_DRIVERS[target])}")


def _device_for(signature: Mapping[str, Any], where: str) -> str | None:
    """The device an artefact's target runs on (None: the CPU); a clear error when this process
    cannot open that device."""
    target = signature.get("target")
    device = devices.TARGET_DEVICE.get(target) if isinstance(target, str) else None
    if device is not None:
        try:
            devices.config(devices.DEVICES[device])
        except ExecutionError as e:
            raise ExecutionError(f"{where}: compiled for target {target!r}, which runs on the {devices.DEVICES[device]} "
                                f"driver; {e.args[0] if e.args else e}. Recompile with --target llvm-cpu for "
                                f"the CPU") from None
    return device


def read_signature(vmfb: bytes | Array, where: str = "<.vmfb bytes>") -> dict[str, Any]:
    """The signature of a .vmfb (names, shapes, dtypes, target) without opening a device."""
    try:
        integrity.verify(vmfb)
    except integrity.IntegrityError as e:
        raise ExecutionError(f"{where}: {e}") from None
    return _probe_signature(vmfb, where)


def _probe_signature(vmfb: bytes | Array, where: str) -> dict[str, Any]:
    import iree.runtime as rt

    global _PROBE
    if _PROBE is None:
        _PROBE = rt.VmInstance()
    return _read_signature(_vm_module(_PROBE, vmfb, where), where)


_PROBE: rt.VmInstance | None = None  # a VM instance with no device, for reading signatures


def _read_signature(vm_module: rt.VmModule, where: str) -> dict[str, Any]:
    fn = vm_module.lookup_function("main")
    if fn is None:
        raise ExecutionError(f"{where}: no 'main' function in this .vmfb")
    text = fn.reflection.get(SIGNATURE_KEY)
    if text is None:
        raise ExecutionError(f"{where}: this .vmfb carries no Estuary signature (not built by estuary?)")
    try:
        return integrity.check_signature(json.loads(text))
    except (ValueError, RecursionError) as e:  # JSONDecodeError and IntegrityError are ValueErrors
        raise ExecutionError(f"{where}: corrupted artefact (bad signature: {e})") from None


class Model:
    """A loaded model. `inputs`/`outputs` are [(name, shape, dtype)]; `run` maps names to arrays."""

    def __init__(self, vmfb: bytes | Array, device: str | None = None, where: str = "<memory>", threads: int | None = None,
                 target: str | None = None) -> None:
        import iree.runtime as rt

        if device not in devices.DEVICES:
            raise ExecutionError(f"unknown device {device!r}; choose one of {sorted(k for k in devices.DEVICES if k)}")
        self.where = where
        self._vmfb = vmfb  # IREE may run the module from this buffer in place (read_vmfb)
        try:  # before IREE sees the bytes: its reader trusts them and can crash on damaged ones
            integrity.verify(vmfb)
        except integrity.IntegrityError as e:
            raise ExecutionError(f"{where}: {e}") from None
        if device is None:  # the device follows the artefact: its target names the driver
            device = _device_for(_probe_signature(vmfb, where), where)
        self.driver = devices.DEVICES[device]
        try:
            self._config = devices.config(self.driver, threads)
        except ExecutionError:
            # no such device here: if the artefact could not run on it anyway, say that instead
            probe = _vm_module(rt.VmInstance(), vmfb, where)
            _check_target(_read_signature(probe, where), device, self.driver, where)
            raise
        self._vm_module = _vm_module(self._config.vm_instance, vmfb, where)
        self.signature = _read_signature(self._vm_module, where)
        _check_target(self.signature, device, self.driver, where)
        try:
            self._context = rt.SystemContext(vm_modules=[self._vm_module], config=self._config)
        except Exception as e:  # noqa: BLE001 - whatever IREE raises is a load failure
            raise ExecutionError(f"{where}: cannot load on {self.driver}: {e}") from None
        self.from_cache = False  # set by estuary.load when the artefact came from the compile cache
        self.artifact_path: str | None = None  # the cached .vmfb, when loaded through the compile cache
        self._vm_ctx = self._context.vm_context
        self.default_function: str = self.signature.get("default_function", "main")
        self._views: dict[str, Model] = {}  # the other functions of a multifunction model (`function`)
        self._root = self  # the Model a function's view was made from
        self._bind(self.default_function, "main", self.signature)

    def _bind(self, name: str, entry: str, sig: Mapping[str, Any]) -> None:
        """Point this Model at function `name`, compiled as `entry`, with signature `sig` (its
        inputs, outputs, states and calling convention)."""
        self.function_name = name
        self.inputs: list[TensorInfo] = [(n, tuple(s), d) for n, s, d in sig["inputs"]]
        self.outputs: list[TensorInfo] = [(n, tuple(s), d) for n, s, d in sig["outputs"]]
        # dynamic dimensions: their symbols' bounds, what to check of the inputs, the outputs' shapes
        self._shapes = ShapeRules(sig, self.where)
        self.dims: dict[str, tuple[int, int]] = {n: (s.lo, s.hi) for n, s in self._shapes.symbols.items()}
        self.states: list[TensorInfo] = [(n, tuple(s), d) for n, s, d in sig.get("states", [])]
        self._labels, self._label_outputs = sig.get("class_labels"), sig.get("label_outputs", [])
        # `run` calls the VM function directly: iree.runtime's generic invoker adds a per-call cost
        self._vm_fn = self._vm_module.lookup_function(entry)
        if self._vm_fn is None:
            raise ExecutionError(f"{self.where}: no function {entry!r} in this .vmfb")
        # compiled with IREE's async ABI (compiler.EXECUTION_MODEL): main(inputs..., wait, signal)
        self._async = str(self._vm_fn.reflection.get("iree.abi.declaration", "")).startswith("async")
        self._hal_types = [_hal_element_type(d) for _, _, d in self.inputs]
        self._result_types = [(n, s, _signless(d), _host(d)) for n, s, d in self.outputs]
        # per input, for `_check_inputs`: (name, shape, nn dtype, numpy dtype, signless view or None)
        self._exact = [(n, s, d, _host(d), _signless(d) if d in dtypes.UNSIGNED or d == dtypes.BOOL else None)
                       for n, s, d in self.inputs]
        state_names = {n for n, _, _ in self.states}
        self._exact_stateful = [e for e in self._exact if e[0] not in state_names]  # run(..., state=)
        # compiled with output storage (compiler.output_storage): main(inputs..., outputs..., fences)
        self._storage = bool(sig.get("output_storage")) and self.driver in ("local-task", "local-sync")
        self._staging: _Staging | None = None
        self._staging_lock = threading.Lock()
        self._state_staging: _Staging | None = None

    @property
    def format(self) -> str | None:
        return self.signature.get("format")

    @property
    def functions(self) -> list[str]:
        """The model's functions (a multifunction Core ML model has several); `run(function=)`."""
        return list(self.signature.get("functions") or [self.default_function])

    @property
    def metadata(self) -> dict[str, Any]:
        """The source model's metadata (Core ML: author, short description, version, user-defined)."""
        return dict(self.signature.get("metadata") or {})

    def function(self, name: str | None = None) -> Model:
        """This Model bound to function `name` (None or the default function: itself): its
        `inputs`, `outputs`, `states` and `run` are that function's."""
        if self._root is not self:
            return self._root.function(name)
        if name is None or name == self.default_function:
            return self
        view = self._views.get(name)
        if view is None:
            functions = self.signature.get("functions") or {}
            if not isinstance(name, str) or name not in functions:
                raise RuntimeInputError(f"{self.where}: the model has no function {name!r} "
                                        f"(functions: {', '.join(self.functions)})")
            view = copy.copy(self)
            view._views, view._root = {}, self
            view._bind(name, functions[name]["entry"], functions[name])
            self._views[name] = view
        return view

    def make_state(self, function: str | None = None) -> State:
        """A new set of the function's states on the device, zero-filled (Core ML's
        `MLModel.make_state()`); pass it to `run(..., state=)`. States of one model are independent."""
        target = self if function is None else self.function(function)
        if not target.states:
            raise RuntimeInputError(f"{self.where}: function {target.function_name!r} has no states")
        return State(self.driver, target.states, self.where)

    def _check_inputs(self, feeds: Mapping[str, npt.ArrayLike], exact: list[Any] | None = None) -> list[Array]:
        exact = self._exact if exact is None else exact
        if type(feeds) is dict and len(feeds) == len(exact) and not self._shapes.dynamic:  # the common case, cheaply
            args = []
            for name, shape, _, want, signless in exact:
                arr = feeds.get(name)
                if (type(arr) is not np.ndarray or arr.dtype != want or arr.shape != shape
                        or not arr.flags.c_contiguous):
                    break
                args.append(arr if signless is None else arr.view(signless))
            else:
                return args
        if not isinstance(feeds, dict):
            raise RuntimeInputError(f"{self.where}: run() takes a dict name -> array, got {type(feeds).__name__}")
        names = [e[0] for e in exact]
        unknown = sorted((k for k in feeds if k not in names), key=repr)  # keys of any type
        missing = [n for n in names if n not in feeds]
        if unknown or missing:
            states = " (the states come from state=)" if exact is not self._exact else ""
            if self.states and exact is self._exact and set(missing) & {n for n, _, _ in self.states}:
                states = " (or pass the states as state=model.make_state())"
            raise RuntimeInputError(f"{self.where}: inputs do not match the model: "
                                    f"missing {missing}, unexpected {unknown}; expected {names}{states}")
        args = []
        for name, shape, dtype, want, signless in exact:
            try:
                arr = np.asarray(feeds[name])
            except Exception as e:  # noqa: BLE001 - a ragged list, an object whose __array__ fails, ...
                raise RuntimeInputError(f"{self.where}: input {name!r} is not an array ({type(e).__name__}: "
                                        f"{e})") from None
            if arr.dtype != want and arr.dtype.newbyteorder("=") == want:
                arr = arr.astype(want)  # the same values in the other byte order (a big-endian .npy)
            if arr.dtype != want:
                raise RuntimeInputError(f"{self.where}: input {name!r} has dtype {arr.dtype}, "
                                        f"the model expects {want} ({dtype})")
            if tuple(arr.shape) != tuple(shape) and not self._shapes.dynamic:
                raise RuntimeInputError(f"{self.where}: input {name!r} has shape {list(arr.shape)}, "
                                        f"the model expects {list(shape)}")
            arr = np.ascontiguousarray(arr)
            args.append(arr if signless is None else arr.view(signless))  # the function takes signless integers
        if self._shapes.dynamic:
            self._check_dims(args, exact)
        return args

    def output_shapes(self, shapes: Mapping[str, Sequence[int]]) -> dict[str, tuple[int, ...]]:
        """The shapes of the outputs for inputs of `shapes` ({input name: shape}), checked as `run`
        checks them (RuntimeInputError naming the input and dimension when they do not fit)."""
        missing = [n for n, _, _ in self.inputs if n not in shapes]
        if missing:
            raise RuntimeInputError(f"{self.where}: output_shapes() needs the shapes of {missing}")
        found = self._shapes.bind([tuple(int(d) for d in shapes[n]) for n, _, _ in self.inputs])
        return {n: tuple(s) for (n, _, _), s in zip(self.outputs, found)}

    def _check_dims(self, args: list[Array], exact: list[Any]) -> None:
        """A dynamic model's inputs: each dimension within its symbol's bounds, symbols consistent
        (ShapeRules); a stateful run's states take their shapes from the signature."""
        given = dict(zip((e[0] for e in exact), (a.shape for a in args)))
        self._shapes.bind([given.get(n, tuple(s)) for n, s, _ in self.inputs])

    def run(self, feeds: Mapping[str, npt.ArrayLike], *, state: State | None = None,
            function: str | None = None) -> dict[str, Array]:
        """Run the model (`function`: one of `functions`, default the model's default function);
        returns {output_name: np.ndarray} in signature order. With `state=` (from `make_state`)
        the states are read from and written back to it on the device, and neither fed nor
        returned; without it a stateful function takes each state as an input and returns its new
        value as an output of the same name."""
        function = self._enumerated_function(function, feeds)
        target = self if function is None else self.function(function)
        if state is not None:
            return target._run_with_state(feeds, state)
        args = target._check_inputs(feeds)
        try:
            return target._run(args)
        except MemoryError as e:
            raise ExecutionError(f"{self.where}: not enough memory for the run's buffers ({e})") from None

    def _enumerated_function(self, function: str | None, feeds: Mapping[str, npt.ArrayLike]) -> str | None:
        """The function `run` calls: `function`, or for a model compiled once per enumerated input
        shape (Core ML EnumeratedShapes; the signature's "enumerated_shapes") the one compiled for
        the feeds' shapes among those specialising `function` (default: the default function's)."""
        variants = self.signature.get("enumerated_shapes")
        if not variants or function in variants or not isinstance(feeds, Mapping):
            return function
        base = function
        if base is None and self._root is self:
            base = variants.get(self.function_name, {}).get("function")
        choices = {n: v["shapes"] for n, v in variants.items() if v["function"] == base}
        if not choices:
            return function
        try:
            given = {k: tuple(np.shape(feeds[k])) for k in next(iter(choices.values())) if k in feeds}
        except ValueError:  # a ragged list: _check_inputs says so
            return function
        for name, shapes in choices.items():
            if all(given.get(k) == tuple(s) for k, s in shapes.items()):
                return name
        allowed = "; ".join(", ".join(f"{k} {list(s)}" for k, s in shapes.items()) for shapes in choices.values())
        raise RuntimeInputError(f"{self.where}: input shapes {', '.join(f'{k} {list(s)}' for k, s in given.items())} "
                                f"are not among the shapes the model was compiled for (its enumerated shapes): "
                                f"{allowed}")

    def _run_with_state(self, feeds: Mapping[str, npt.ArrayLike], state: State) -> dict[str, Array]:
        if not isinstance(state, State):
            raise RuntimeInputError(f"{self.where}: state= takes what make_state() returns, got {type(state).__name__}")
        state.check(self.states, self.driver, self.where)
        args = self._check_inputs(feeds, self._exact_stateful)
        with state.lock:  # one run at a time may use a state
            try:
                if not self._storage:
                    return self._run_fresh(args, state)
                skip = {n for n, _, _ in self.states}
                if not self._staging_lock.acquire(blocking=False):  # in use by another thread
                    return self._run_staged(args, self._new_staging(skip), state)
                try:
                    if self._state_staging is None:
                        self._state_staging = self._new_staging(skip)
                    return self._run_staged(args, self._state_staging, state)
                finally:
                    self._staging_lock.release()
            except MemoryError as e:
                raise ExecutionError(f"{self.where}: not enough memory for the run's buffers ({e})") from None

    def _run(self, args: list[Array]) -> dict[str, Array]:
        if not self._storage:
            return self._run_fresh(args)
        # one run at a time uses the model's own staging buffers; a concurrent one gets its own
        mine = self._staging_lock.acquire(blocking=False)
        try:
            if not mine:
                return self._run_staged(args, self._new_staging())
            if self._staging is None:
                self._staging = self._new_staging()
            return self._run_staged(args, self._staging)
        finally:
            if mine:
                self._staging_lock.release()

    def _new_staging(self, skip: set[str] = set()) -> _Staging:
        try:
            return _Staging(self._config.device, self._specs(skip))
        except (RuntimeError, ValueError) as e:
            raise ExecutionError(f"{self.where}: cannot allocate the run's buffers on {self.driver}: {e}") from None

    def _specs(self, skip: set[str]) -> list[tuple[tuple[int, ...], np.dtype[Any], rt.HalElementType] | None]:
        """(shape, host dtype, HAL element type) of every input, then every output; None for the
        names in `skip` (states, whose buffers the State holds)."""
        return ([None if n in skip else (s, _signless(d), t) for (n, s, d), t in zip(self.inputs, self._hal_types)] +
                [None if n in skip else (s, raw, _hal_element_type(d))
                 for (n, s, d), (_, _, raw, _) in zip(self.outputs, self._result_types)])

    def _invoke(self, arg_list: rt.VmVariantList, ret_list: rt.VmVariantList) -> None:
        import iree.runtime as rt

        device = self._config.device
        try:
            if self._async:
                semaphore = device.create_semaphore(0)
                done = rt.HalFence.create_at(semaphore, 1)
                arg_list.push_ref(rt.HalFence.create_at(semaphore, 0))
                arg_list.push_ref(done)
            self._vm_ctx.invoke(self._vm_fn, arg_list, ret_list)
            if self._async:
                self._wait(semaphore, done)
        except Exception as e:  # noqa: BLE001 - IREE raises RuntimeError, ValueError, IndexError, ...
            raise ExecutionError(f"{self.where}: execution failed on {self.driver}: {e}") from None

    def _run_staged(self, args: list[Array], staging: _Staging, state: State | None = None) -> dict[str, Array]:
        """Copy the inputs into the staging buffers, run, and copy the results out of theirs. A
        state's input is its current buffer and its output the state's spare buffer, which then
        becomes current (no host copy)."""
        import iree.runtime as rt

        n_in = len(self.inputs)
        feed = iter(args)
        for view in staging.arrays[:n_in]:
            if view is not None:
                np.copyto(view, next(feed), casting="no")
        arg_list = rt.VmVariantList(len(staging.views) + 2)
        for (name, _, _), view in zip(self.inputs, staging.views[:n_in]):
            arg_list.push_ref(view if view is not None else state.current(name))  # type: ignore[union-attr]
        for (name, _, _), view in zip(self.outputs, staging.views[n_in:]):
            arg_list.push_ref(view if view is not None else state.spare(name))  # type: ignore[union-attr]
        self._invoke(arg_list, rt.VmVariantList(len(self.outputs)))
        if state is not None:
            state.swap()
        out: dict[str, Array] = {}
        for (name, _, _, want), host in zip(self._result_types, staging.arrays[n_in:]):
            if host is not None:
                out[name] = host.copy() if host.dtype == want else host.copy().view(want)  # host has the shape
        return self._with_labels(out)

    def _run_fresh(self, args: list[Array], state: State | None = None) -> dict[str, Array]:
        """Run with input buffers allocated for this run and the results the function returns; a
        state takes its new value's buffer as it is (it stays on the device)."""
        import iree.runtime as rt

        states = {n for n, _, _ in self.states} if state is not None else set()
        device = self._config.device
        arg_list = rt.VmVariantList(len(self.inputs) + 2)
        feed = iter(args)
        try:
            for (name, _, _), hal_type in zip(self.inputs, self._hal_types):
                if name in states:
                    arg_list.push_ref(state.current(name))  # type: ignore[union-attr]
                    continue
                arg_list.push_ref(device.allocator.allocate_buffer_copy(
                    memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT,
                    device=device, buffer=next(feed), element_type=hal_type))
        except (RuntimeError, ValueError) as e:
            raise ExecutionError(f"{self.where}: execution failed on {self.driver}: {e}") from None
        ret_list = rt.VmVariantList(len(self.outputs))
        self._invoke(arg_list, ret_list)
        out: dict[str, Array] = {}
        for i, (name, shape, raw, want) in enumerate(self._result_types):
            view = ret_list.get_variant(i).deref(rt.HalBufferView)
            if name in states:
                state.replace(name, view)  # type: ignore[union-attr]
                continue
            out[name] = self._to_host(view, raw).view(want).reshape(view.shape)
        return self._with_labels(out)

    def _wait(self, semaphore: rt.HalSemaphore, done: rt.HalFence) -> None:
        """Wait for a run's signal fence. On local-task the caller polls it and yields its core
        to IREE's workers for up to POLL_SECONDS (IREE's own wait spins without yielding), then
        blocks; other drivers block at once."""
        if self.driver == "local-task":
            deadline = time.perf_counter() + POLL_SECONDS
            while semaphore.query() < 1 and time.perf_counter() < deadline:
                _yield_core()
        done.wait()

    def _with_labels(self, out: dict[str, Array]) -> dict[str, Array]:
        """Classifiers (signature "class_labels"): map the class-index outputs to their labels."""
        labels = self._labels
        if not labels:
            return out
        table = np.asarray(labels, dtype=np.int64 if isinstance(labels[0], int) else None)
        for name in self._label_outputs:
            if name in out:
                out[name] = table[out[name].astype(np.int64)]
        return out

    def _to_host(self, view: rt.HalBufferView, raw: np.dtype[Any]) -> Array:
        """Copy a result buffer view into a fresh host array of numpy dtype `raw` (a device-to-host
        queue copy off the CPU, which works where host-pointer import does not)."""
        if self.driver in ("local-task", "local-sync"):
            return np.array(view.get_buffer().map().asarray(list(view.shape), raw), copy=True)
        return devices.download(self._config.device, view, raw)

    def close(self) -> None:
        """Release runtime objects (also done at interpreter exit)."""
        for view in self._views.values():
            view.close()
        self._views = {}
        self._vm_fn = self._vm_ctx = self._context = self._vm_module = self._staging = self._state_staging = None

    def __repr__(self) -> str:
        return f"Model({self.where!r}, device={self.driver!r}, inputs={self.inputs}, outputs={self.outputs})"


class _Staging:
    """Host-visible device buffers for one run's inputs and outputs, each mapped once: `views`
    (HAL buffer views to pass) and `arrays` (numpy views of their memory), inputs first."""

    def __init__(self, device: rt.HalDevice,
                 specs: Iterable[tuple[tuple[int, ...], np.dtype[Any], rt.HalElementType] | None]) -> None:
        import iree.runtime as rt

        self.views: list[rt.HalBufferView | None] = []
        self.arrays: list[Array | None] = []
        self._maps: list[rt.MappedMemory] = []
        for spec in specs:
            if spec is None:  # a state's slot: the State supplies the buffer
                self.views.append(None)
                self.arrays.append(None)
                continue
            shape, dtype, hal_type = spec
            size = max(1, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
            buf = device.allocator.allocate_buffer(
                memory_type=rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE,
                allowed_usage=rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING, allocation_size=size)
            mapping = buf.map()
            self._maps.append(mapping)
            self.arrays.append(mapping.asarray(list(shape), np.dtype(dtype)))
            self.views.append(rt.HalBufferView(buf, list(shape), hal_type))


def _host(dtype: str) -> np.dtype[Any]:
    """The numpy dtype the caller uses for a signature dtype (an nn dtype, or "bool")."""
    return np.dtype(np.bool_) if dtype == dtypes.BOOL else dtypes.to_numpy(dtype)


def _signless(dtype: str) -> np.dtype[Any]:
    """The numpy dtype the compiled function sees for a signature dtype (unsigned and bool ->
    same-width signed)."""
    want = _host(dtype)
    return np.dtype(f"i{want.itemsize}") if dtype in dtypes.UNSIGNED or dtype == dtypes.BOOL else want


def _hal_element_type(dtype: str) -> rt.HalElementType:
    """The HAL element type of an input's (signless) host array."""
    from iree.runtime.dtypes import map_dtype_to_hal_element_type

    return map_dtype_to_hal_element_type(_signless(dtype))
