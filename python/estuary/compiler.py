"""Compiling models: import -> nn passes -> lowering -> IREE (in process) -> Artifact (.vmfb)."""
from dataclasses import dataclass, field
import json
import os
import sys
import time

from iree.compiler import api

from estuary import host_cpu
from estuary.errors import CompileError, EstuaryError

# target name -> (runtime driver, IREE flags). Chip choices for GPU targets are overridable
# with `target_options`; the defaults are documented in the README.
TARGETS = {
    "llvm-cpu": ("local-task", ["--iree-hal-target-device=local",
                                "--iree-hal-local-target-device-backends=llvm-cpu"]),
    "vulkan-spirv": ("vulkan", ["--iree-hal-target-device=vulkan"]),
    "cuda": ("cuda", ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"]),
    "rocm": ("hip", ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"]),
    "metal-spirv": ("metal", ["--iree-hal-target-device=metal"]),
}

# CPU flags chosen by measurement (see README "Performance"): data tiling with the mmt4d ukernels
# packs constant weights at compile time and runs convolutions and matmuls (gemm, matvec) on
# ukernels. im2col (`--iree-global-opt-use-im2col-for-convs`) was better without data tiling but
# is 2-3x slower with it, so it is off. Only the mmt4d ukernel: IREE's own code for pack/unpack
# let it fuse the packing better, and the Transformer benchmark ran 0.74-0.75 -> 0.68-0.69 ms
# (its attention batch matmuls 36/31 -> 22/23 us); MLP, MobileNet, ResNet-18, LSTM unchanged.
CPU_FLAGS = ["--iree-opt-level=O3", "--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=mmt4d"]


# `main` takes a wait fence and a signal fence (IREE's async ABI), so the runtime chooses how the
# caller waits: IREE's synchronous wait spins the calling thread at full speed, which on a
# 2-core machine takes a core from the two workers (MobileNet: a third of its runs 5-8 ms
# instead of 3 ms); runtime.Model polls the fence and yields the core instead.
EXECUTION_MODEL = ["--iree-execution-model=async-external"]


# Vulkan: IREE's default target (vp_android_baseline_2022) has 32-bit storage and arithmetic only
# and emulates narrower types, wrongly: float16 sums came out wrong, and 8-bit tensors whose size
# is not a multiple of 4 bytes lost their last word (the emulation reads and writes whole words
# past the binding's end). So the SPIR-V also gets 8- and 16-bit storage and arithmetic. Each
# executable requires only the capabilities it uses (a float32 model still runs on any Vulkan
# device); one that needs them fails to load on a device without them instead of computing
# wrong values. A user's own --iree-vulkan-target* flag replaces this.
VULKAN_FEATURES = ("--iree-vulkan-target-features=spirv:v1.3,cap:Shader,cap:Int8,cap:Int16,cap:Float16,"
                   "cap:StorageBuffer8BitAccess,cap:UniformAndStorageBuffer8BitAccess,"
                   "cap:StorageBuffer16BitAccess,cap:StorageUniform16,"
                   "ext:SPV_KHR_8bit_storage,ext:SPV_KHR_16bit_storage")


def target_flags(target, cpu="host", extra=()):
    if target not in TARGETS:
        raise EstuaryError(f"unknown target {target!r}; choose one of {sorted(TARGETS)}")
    flags = list(TARGETS[target][1]) + EXECUTION_MODEL
    if target == "llvm-cpu":
        flags += [f"--iree-llvmcpu-target-cpu={host_cpu.resolve(cpu)}"] + CPU_FLAGS
    if target == "vulkan-spirv" and not any(f.startswith("--iree-vulkan-target") for f in extra):
        flags.append(VULKAN_FEATURES)
    return flags + list(extra)


@dataclass
class Artifact:
    """A compiled model: .vmfb bytes plus the signature they implement."""

    vmfb: bytes
    target: str
    signature: dict
    timings: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)  # e.g. {"cpu_tiles": ops whose IREE tiles were rewritten}

    def save(self, path):
        path = os.fspath(path)
        try:
            with open(path, "wb") as f:
                f.write(self.vmfb)
        except OSError as e:
            raise EstuaryError(f"cannot write {path}: {e.strerror or e}") from None
        return path

    @property
    def inputs(self):
        return [tuple(x) for x in self.signature["inputs"]]

    @property
    def outputs(self):
        return [tuple(x) for x in self.signature["outputs"]]


def _progress(enabled, message):
    if enabled:
        print(f"[estuary] {message}", file=sys.stderr, flush=True)


def _optimize_default(optimize):
    """`optimize=None` means on, unless ESTUARY_OPTIMIZE=0 (the test suite's passes-off run uses it)."""
    return os.environ.get("ESTUARY_OPTIMIZE", "1") != "0" if optimize is None else optimize


def compile_nn(nn, target="llvm-cpu", *, optimize=None, cpu="host", extra_flags=(), progress=False,
               timings=None, disable_passes=()):
    """Lower an NNModule (in place) and compile it with IREE; returns an Artifact."""
    from iree.compiler import ir

    from estuary.passes import pipeline
    from estuary.passes.lowering import common as C
    from estuary.passes.lowering import spirv_workarounds, winograd

    timings = {} if timings is None else timings
    optimize = _optimize_default(optimize)
    flags = target_flags(target, cpu, extra_flags)
    t0 = time.perf_counter()
    _progress(progress, "optimizing and lowering the nn module")
    fast3x3 = target == "llvm-cpu" and optimize and "cpu-winograd" not in disable_passes
    with nn.context:  # read by the lowering rules (common.for_gpu, winograd.enabled)
        nn.module.operation.attributes[C.TARGET_ATTR] = ir.StringAttr.get(target)
        # common.cpu_lanes: the lowering forms made for cpu-tiles' register tiles follow its switch
        retiled = target == "llvm-cpu" and optimize and "cpu-tiles" not in disable_passes
        lanes = host_cpu.vector_lanes(cpu) if retiled else None
        if lanes:
            nn.module.operation.attributes[C.CPU_LANES_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), lanes)
        if fast3x3:
            nn.module.operation.attributes[winograd.MODULE_FLAG] = ir.UnitAttr.get()
    pipeline.run_default(nn, optimize=optimize, disable=disable_passes)
    stats = {}
    if fast3x3:
        with nn.context:
            stats["winograd"] = winograd.count(nn.module)
            del nn.module.operation.attributes[winograd.MODULE_FLAG]
        _progress(progress, f"cpu-winograd: {stats['winograd']} 3x3 convolution(s) in Winograd form")
    with nn.context:
        del nn.module.operation.attributes[C.TARGET_ATTR]
        if lanes:
            del nn.module.operation.attributes[C.CPU_LANES_ATTR]
        if target in spirv_workarounds.TARGETS:
            stats["isolated_reductions"] = spirv_workarounds.isolate_outer_reductions(nn.module)
    timings["lower_s"] = time.perf_counter() - t0
    if target == "llvm-cpu" and "estuary.keep_f64" in nn.module.operation.attributes:
        flags = flags + ["--iree-input-demote-f64-to-f32=false"]  # a lowering needs real f64 (lsh_projection)
    t1 = time.perf_counter()
    nn.target = target
    if target == "llvm-cpu":
        output_storage(nn)
    nn.write_signature()
    _progress(progress, f"compiling for {target} with IREE")
    retile = target == "llvm-cpu" and optimize and "cpu-tiles" not in disable_passes
    vmfb = iree_compile(nn, flags, retile=retile, stats=stats)
    if "cpu_tiles" in stats:
        _progress(progress, f"cpu-tiles: retiled {stats['cpu_tiles']} convolution or recurrent dispatch(es)")
    timings["iree_s"] = time.perf_counter() - t1
    return Artifact(vmfb, target, nn.signature(), timings, stats)


def output_storage(nn):
    """Give @main one more argument per result, marked `iree.abi.output`, so the compiled function
    writes each result into a buffer the caller passes (the runtime keeps one per output, mapped
    once) instead of a fresh one the caller must map and free each run: MobileNet's caller-side
    time per run 173 -> 96 us (README, "Python API"). Static, non-empty results only; records
    `output_storage` in the signature. Returns whether it applied."""
    from iree.compiler import ir

    main = nn.main
    with nn.context, ir.Location.unknown():
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        results = [_ranked(ir, t) for t in ftype.results]
        if not results or any(t is None or not t.has_static_shape or 0 in t.shape for t in results):
            return False
        block = main.regions[0].blocks[0]
        for t in results:
            block.add_argument(t, ir.Location.unknown())
        index = ir.IndexType.get()
        had = list(ir.ArrayAttr(main.attributes["arg_attrs"])) if "arg_attrs" in main.attributes else []
        had += [ir.DictAttr.get({})] * (len(ftype.inputs) - len(had))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(
            had + [ir.DictAttr.get({"iree.abi.output": ir.IntegerAttr.get(index, i)}) for i in range(len(results))])
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ftype.inputs) + list(ftype.results), list(ftype.results)))
    nn.extra_signature = dict(getattr(nn, "extra_signature", None) or {}, output_storage=True)
    return True


def _ranked(ir, t):
    try:
        return ir.RankedTensorType(t)
    except ValueError:
        return None


def _execute(session, nn, retile, stats):
    """Run IREE's pipeline; with `retile`, in two phases around `cpu_tiles.retune`."""
    from estuary import cpu_tiles

    phased = cpu_tiles.phased_compile(session, nn.module.operation, nn.context) if retile else None
    if phased is not None:
        ok, inv, stats["cpu_tiles"], keep = phased
        return ok, inv, keep
    inv = session.invocation()
    inv.import_module(nn.module.operation)
    return inv.execute(), inv, None


def iree_compile(nn, flags, retile=False, stats=None):
    """Hand the module to IREE without printing it; CompileError carries IREE's diagnostics."""
    session = nn.session
    try:
        session.set_flags(*flags)
    except ValueError as e:
        raise CompileError(f"bad compiler flags {flags}: {e}") from None
    diagnostics = []

    def collect(d):
        diagnostics.append(f"{d.location}: {d.message}")
        return True

    handler = nn.context.attach_diagnostic_handler(collect)
    try:
        ok, inv, keep = _execute(session, nn, retile, {} if stats is None else stats)
    finally:
        handler.detach()
    try:
        if not ok:
            detail = "\n  ".join(diagnostics[:20]) or "(no diagnostics)"
            raise CompileError(f"{nn.source}: IREE failed to compile for {' '.join(flags)}:\n  {detail}")
        out = api.Output.open_membuffer()
        inv.output_vm_bytecode(out)
        return bytes(out.map_memory())
    finally:
        inv.close()  # the session keeps each invocation, and the module it holds, until closed
        del keep  # the configured module the phased invocation borrowed


def compile(source, target="llvm-cpu", format=None, *, optimize=None, cpu="host", extra_flags=(),
            shapes=None, progress=False, disable_passes=()):
    """Compile a model (path, in-memory model object, or NNModule) for `target`."""
    from estuary.importers import import_model

    timings = {}
    t0 = time.perf_counter()
    _progress(progress, f"importing {source if isinstance(source, (str, os.PathLike)) else type(source).__name__}")
    nn = import_model(source, format=format, shapes=shapes)
    timings["import_s"] = time.perf_counter() - t0
    try:
        art = compile_nn(nn, target, optimize=optimize, cpu=cpu, extra_flags=extra_flags,
                         progress=progress, timings=timings, disable_passes=disable_passes)
    finally:
        if nn is not source:  # built here: free its MLIR context and weights (NNModule.close)
            nn.close()
    timings["total_s"] = time.perf_counter() - t0
    return art


def signature_json(art):
    return json.dumps(art.signature, indent=2)
