"""The `estuary` driver and `estuary-opt`: thin command-line layers over the Python API."""
import argparse
import json
import os
import sys
import threading
import time

import numpy as np

from estuary.base.errors import EstuaryError, InternalError
from estuary.importers import FORMATS



class Progress:
    """Compile phases as one line each with a ticking elapsed time (tqdm), on a terminal only:
    `estuary.compile(progress=reporter)` hands it each phase message. Quiet when stderr is not a
    TTY or with --quiet."""

    PHASES = ("importing", "optimizing", "compiling")

    def __init__(self, enabled):
        self.enabled = enabled
        self._bar = None
        self._stop = threading.Event()
        self._thread = None

    def __call__(self, message):
        if not self.enabled:
            return
        from tqdm import tqdm

        if not message.startswith(self.PHASES):
            tqdm.write(f"  {message}", file=sys.stderr)
            return
        self._finish_bar()
        self._bar = tqdm(total=None, desc=message, bar_format="{desc} [{elapsed}]", file=sys.stderr, leave=True)

    def _finish_bar(self):
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()
            self._bar = None

    def _tick(self):
        while not self._stop.wait(0.2):
            bar = self._bar
            if bar is not None:
                bar.refresh()

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._finish_bar()
        return False


def _progress(args):
    return Progress(not getattr(args, "quiet", False) and sys.stderr.isatty())


def _say(args, text):
    """A summary line on stdout (none with --quiet; on stderr when stdout carries --json)."""
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr if getattr(args, "json", False) else sys.stdout)


def _import(args):
    from estuary.importers import import_model

    nn = import_model(args.model, format=args.format, shapes=_shapes(args))
    text = nn.asm(large_elements_limit=None if args.full_constants else 16)
    _write_text(text, args.output)


def _write_text(text, output):
    if output in (None, "-"):
        sys.stdout.write(text)
    else:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise EstuaryError(f"cannot write {output}: {e.strerror or e}") from None


def _check_output_path(out):
    """Refuse an output path that cannot be written before spending time on the compile."""
    if not out:
        raise EstuaryError("-o/--output is empty; give a file name (or leave -o out for <model>.vmfb)")
    if os.path.isdir(out):
        raise EstuaryError(f"cannot write {out}: it is a directory")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise EstuaryError(f"cannot write {out}: no such directory {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(out) and not os.access(out, os.W_OK)):
        raise EstuaryError(f"cannot write {out}: permission denied")


def _model_stem(model):
    path = os.path.normpath(os.fspath(model))
    return os.path.splitext(os.path.basename(path))[0] or "model"


def _compile(args):
    import estuary

    out = args.output if args.output is not None else _model_stem(args.model) + ".vmfb"
    _check_output_path(out)
    with _progress(args) as progress:
        art = estuary.compile(args.model, target=args.target, format=args.format,
                              optimize=False if args.no_optimize else None, cpu=args.target_cpu,
                              extra_flags=args.iree_flag or (), progress=progress,
                              disable_passes=args.disable_pass or (), shapes=_shapes(args), workers=args.workers,
                              precision=args.precision)
    art.save(out)
    t = art.timings
    _say(args, f"wrote {out} ({len(art.vmfb)} bytes) for {args.target} in {t.get('total_s', 0):.2f} s "
         f"(import {t.get('import_s', 0):.2f} s, lower {t.get('lower_s', 0):.2f} s, IREE {t.get('iree_s', 0):.2f} s)")


def _shapes(args):
    """--shape NAME=1x3x224x224 (repeatable) -> {name: [dims]}, or None. An extent may be a range
    `min..max`, which bounds a dynamic dimension instead of fixing it."""
    shapes = {}
    for item in getattr(args, "shape", None) or []:
        name, sep, dims = item.rpartition("=")
        try:
            parsed = [tuple(int(x) for x in d.split("..")) if ".." in d else int(d) for d in dims.lower().split("x")]
        except ValueError:
            parsed = []
        if not sep or not name or not parsed or any(
                (min(d) if isinstance(d, tuple) else d) <= 0 or (isinstance(d, tuple) and len(d) != 2) for d in parsed):
            raise EstuaryError(f"--shape takes NAME=D1xD2x... with positive extents (or min..max ranges), "
                               f"got {item!r}")
        if name in shapes:
            raise EstuaryError(f"--shape {name} is given twice")
        shapes[name] = parsed
    return shapes or None


def _parse_inputs(specs):
    feeds = {}
    for item in specs or []:
        name, sep, path = item.partition("=")
        if not sep or not name:
            raise EstuaryError(f"--input takes NAME=PATH.npy, got {item!r}")
        if name in feeds:
            raise EstuaryError(f"--input {name} is given twice")
        try:
            with open(path, "rb") as f:
                if f.read(6) != b"\x93NUMPY":
                    raise ValueError("no .npy header; save each input with numpy.save")
                f.seek(0)
                feeds[name] = np.load(f, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise EstuaryError(f"--input {name}: cannot read {path!r} as .npy ({e})") from None
    return feeds


def _random_inputs(model, seed=0):
    from estuary.base import dtypes

    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype in model.inputs:
        dt = np.dtype(np.bool_) if dtype == dtypes.BOOL else dtypes.to_numpy(dtype)
        if dt.kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(dt)
        else:
            feeds[name] = rng.integers(0, 2 if dt.kind == "b" else 10, shape).astype(dt)
    return feeds


def _safe_name(name):
    keep = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).lstrip(".")
    return keep or "output"


def output_files(names):
    """{output name: file name}: each name made safe, and names that end up alike (`a/b`, `a_b`)
    numbered so that no output overwrites another (case-insensitively, for macOS and Windows)."""
    files, taken = {}, set()
    for name in names:
        stem = _safe_name(name)
        candidate, n = stem, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{stem}-{n}"
        taken.add(candidate.lower())
        files[name] = candidate + ".npy"
    return files


def _load(args):
    """estuary.load of the command's model or .vmfb; a model compiles through the compile cache."""
    import estuary

    path = args.model
    options = {"target": getattr(args, "target", None), "format": getattr(args, "format", None),
               "shapes": _shapes(args)}
    if _is_artifact(path):
        given = [f"--{k.rstrip('s')}" for k, v in options.items() if v]  # --target, --format, --shape
        if given:
            raise EstuaryError(f"{path}: {', '.join(given)} apply to models; this is a compiled artefact")
        return estuary.load(path, device=args.device, threads=args.threads)
    t0 = time.perf_counter()
    with _progress(args) as progress:
        model = estuary.load(path, device=args.device, threads=args.threads, cache=not args.no_cache,
                             progress=progress, **options)
    dt = time.perf_counter() - t0
    if model.from_cache:
        _say(args, f"loaded {path} from the compile cache ({model.artifact_path}) in {dt * 1e3:.1f} ms")
    else:
        where = f", cached as {model.artifact_path}" if model.artifact_path else ""
        _say(args, f"compiled {path} in {dt:.2f} s{where}")
    return model


def _is_artifact(path):
    from estuary.base.integrity import is_vmfb

    try:
        if os.path.isdir(path):
            return False
        with open(path, "rb") as f:
            return is_vmfb(f.read(512)) or path.lower().endswith(".vmfb")
    except OSError as e:
        raise EstuaryError(f"{path}: cannot read ({e.strerror})") from None


def _run(args):
    feeds = _parse_inputs(args.input)
    if args.output_dir is not None and not args.output_dir:
        raise EstuaryError("--output-dir is empty; give a folder name")
    if args.output_dir and os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise EstuaryError(f"cannot write outputs to {args.output_dir}: not a directory")
    model = _load(args).function(args.function)
    if args.random_inputs:
        feeds = {**_random_inputs(model), **feeds}
    t0 = time.perf_counter()
    outs = model.run(feeds)
    dt = time.perf_counter() - t0
    for name, arr in outs.items():
        flat = arr.reshape(-1)
        preview = np.array2string(flat[:8], precision=5, separator=", ")
        print(f"{name}: {arr.dtype}{list(arr.shape)} {preview}{' ...' if flat.size > 8 else ''}")
    _say(args, f"latency: {dt * 1e3:.3f} ms (first run, {model.driver})")
    if args.output_dir:
        files = output_files(outs)
        try:
            os.makedirs(args.output_dir, exist_ok=True)
            for name, arr in outs.items():
                np.save(os.path.join(args.output_dir, files[name]), arr)
        except OSError as e:
            raise EstuaryError(f"cannot write outputs to {args.output_dir}: {e.strerror or e}") from None
        renamed = [f"{n} -> {f}" for n, f in files.items() if f != _safe_name(n) + ".npy"]
        _say(args, f"wrote {len(outs)} output(s) to {args.output_dir}"
             + (f" (names that clash once made safe: {', '.join(renamed)})" if renamed else ""))


def _info(args):
    path = os.fspath(args.model)
    if _is_artifact(path):
        from estuary.runtime import read_signature

        with open(path, "rb") as f:
            sig = read_signature(f.read(), path)
        print(f"{path}: compiled {sig.get('format')} model ({sig.get('source')}) for {sig.get('target')}")
    else:
        from collections import Counter

        from estuary.importers import import_model
        from estuary.passes.lowering import nn_ops

        nn = import_model(path, format=args.format, shapes=_shapes(args))
        counts = Counter(op.name for op in nn_ops(nn.module.operation))
        print(f"{path}: {nn.format} model, {sum(counts.values())} nn ops")
        for name, n in sorted(counts.items()):
            print(f"  {name:28s} {n}")
        sig = nn.signature()
    _describe(sig)


def _describe(sig):
    """The metadata, then each function's inputs, outputs and states (a state is an input and an
    output of the same name: listed once, as a state); dynamic dimensions with their bounds."""
    from estuary.shapes import describe

    meta = sig.get("metadata") or {}
    for key in ("author", "short_description", "version", "license"):
        if key in meta:
            print(f"{key.replace('_', ' ')}: {meta[key]}")
    for key, value in (meta.get("user_defined") or {}).items():
        print(f"metadata {key}: {value}")
    functions = sig.get("functions") or {}
    default = sig.get("default_function")
    for name, fsig in (functions.items() if functions else [(None, sig)]):
        indent = ""
        if name is not None:
            print(f"function {name}{' (default)' if name == default else ''}")
            indent = "  "
        states = {n for n, _, _ in fsig.get("states", [])}
        rows = [("input", n, s, d) for n, s, d in fsig["inputs"] if n not in states] + \
               [("output", n, s, d) for n, s, d in fsig["outputs"] if n not in states] + \
               [("state", n, s, d) for n, s, d in fsig.get("states", [])]
        for kind, tensor, shape, dtype in rows:
            print(f"{indent}{kind:6s} {tensor}: {dtype}{describe(shape, fsig)}")
        for rule in (fsig.get("dims") or {}).get("rules", []):
            print(f"{indent}shape rule: {rule.split(';')[0]}")


def _bench(args):
    if args.iterations < 1:
        raise EstuaryError(f"--iterations must be at least 1, got {args.iterations}")
    if args.warmup < 0:
        raise EstuaryError(f"--warmup must be 0 or more, got {args.warmup}")
    given = _parse_inputs(args.input)
    model = _load(args).function(args.function)
    feeds = {**_random_inputs(model), **given}
    model.run(feeds)  # checks the inputs before timing anything
    for _ in range(args.warmup):
        model.run(feeds)
    times = []
    for _ in range(args.iterations):
        t0 = time.perf_counter()
        model.run(feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    p = np.percentile(times, [50, 90, 99])
    if args.json:
        print(json.dumps({"model": os.fspath(args.model), "driver": model.driver, "iterations": args.iterations,
                          "warmup": args.warmup, "min_ms": min(times), "p50_ms": p[0], "p90_ms": p[1],
                          "p99_ms": p[2], "mean_ms": float(np.mean(times)), "random_inputs": sorted(set(feeds) - set(given))}))
        return
    print(f"{args.model} on {model.driver}: {args.iterations} runs, min {min(times):.3f} ms, "
          f"p50 {p[0]:.3f} ms, p90 {p[1]:.3f} ms, p99 {p[2]:.3f} ms")


def _demo(args):
    """Compile and run the bundled example model, print outputs and latency."""
    import estuary

    path = args.model or estuary.example_model()
    t0 = time.perf_counter()
    with _progress(args) as progress:
        art = estuary.compile(path, target=args.target, progress=progress)
    print(f"compiled {path if args.model else 'the bundled example ' + os.path.basename(path)} "
          f"for {args.target} in {time.perf_counter() - t0:.2f} s")
    model = estuary.load(art)
    feeds = _random_inputs(model)
    outs = model.run(feeds)
    times = []
    for _ in range(20):
        t1 = time.perf_counter()
        model.run(feeds)
        times.append((time.perf_counter() - t1) * 1e3)
    for name, arr in outs.items():
        print(f"{name}: {arr.dtype}{list(arr.shape)} first values {np.array2string(arr.reshape(-1)[:6], precision=4)}")
    print(f"latency: median {np.median(times):.3f} ms, min {min(times):.3f} ms over 20 runs ({model.driver})")


def _cache(args):
    from estuary import cache

    folder = cache.cache_dir()
    if args.action == "clear":
        n = cache.clear()
        print(f"removed {n} compiled model(s) from {folder}")
        return
    if args.action == "dir":
        print(folder)
        return
    found = cache.entries()
    print(f"{folder}: {len(found)} compiled model(s), {sum(e.size for e in found) / 1e6:.1f} MB")
    for e in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.meta.get("created", 0)))
        print(f"  {e.key}  {e.meta.get('target', '?'):13s} {e.size / 1e6:8.2f} MB  {when}  {e.meta.get('source', '?')}")


def _global_options():
    """--verbose/--quiet, accepted before or after the subcommand (a parent of every subparser;
    SUPPRESS keeps a subparser from resetting what was given before it)."""
    g = argparse.ArgumentParser(add_help=False)
    g.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="show Python tracebacks on errors")
    g.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="no progress display and no summary lines")
    return g


def build_parser():
    import estuary
    from estuary.backends.targets import TARGETS
    from estuary.base.options import PRECISIONS

    common = _global_options()
    p = argparse.ArgumentParser(prog="estuary", parents=[common],
                                description="Compile Core ML, NNEF, WebNN and NNAPI models with MLIR + IREE and run "
                                            "them.")
    p.add_argument("--version", action="version",
                   version=f"estuary {estuary.__version__} ({estuary.DISTRIBUTION}; IREE {_iree_version()})")
    sub = p.add_subparsers(dest="command", required=True)

    def command(name, **kw):
        return sub.add_parser(name, parents=[common], **kw)

    def shape_option(s):
        s.add_argument("--shape", action="append", metavar="NAME=1x3x224x224",
                       help="fix an input's dynamic dimensions (a size) or narrow their bounds (min..max), or replace an NNEF external shape; repeatable")

    def load_options(s, what):
        s.add_argument("model", metavar="MODEL", help=f"{what}: a .vmfb, or a model (compiled once, then cached)")
        s.add_argument("--device", default=None, help="cpu, vulkan, cuda, hip, metal (default: what the "
                       "artefact's target runs on)")
        s.add_argument("--threads", type=int, help="CPU worker threads")
        s.add_argument("--input", action="append", metavar="NAME=PATH.npy")
        s.add_argument("--target", choices=sorted(TARGETS), help="for a model: the target to compile for "
                       "(default: the --device's, else llvm-cpu)")
        s.add_argument("--format", choices=FORMATS, help="for a model: its format, when the content does not tell")
        s.add_argument("--no-cache", action="store_true", help="for a model: compile without the compile cache")
        s.add_argument("--function", help="the function to run (multifunction Core ML models; default: the "
                                          "model's default function)")
        shape_option(s)

    s = command("import", help="import a model and print its nn MLIR")
    s.add_argument("model")
    s.add_argument("-o", "--output", help="write MLIR here instead of stdout")
    s.add_argument("--format", choices=FORMATS)
    s.add_argument("--full-constants", action="store_true", help="print large constants in full")
    shape_option(s)
    s.set_defaults(fn=_import)

    s = command("compile", help="compile a model (or nn/TOSA .mlir) to a .vmfb")
    s.add_argument("model")
    s.add_argument("-o", "--output", help="output .vmfb (default: <model>.vmfb in the current folder)")
    s.add_argument("--target", default="llvm-cpu", choices=sorted(TARGETS))
    s.add_argument("--format", choices=FORMATS)
    s.add_argument("--target-cpu", default="host", help="llvm-cpu: 'host' (on x86-64 without AVX-512: the x86-64 level the host has) "
                                                     "or an LLVM CPU name ('generic' for portable)")
    s.add_argument("--no-optimize", action="store_true", help="skip the nn-level optimization passes")
    s.add_argument("--disable-pass", action="append", metavar="NAME",
                   help="skip one optimization pass, e.g. nn-layout-nhwc, cpu-winograd or cpu-tiles (repeatable)")
    s.add_argument("--workers", type=int, help="llvm-cpu: the worker count the tile rules plan workgroups for "
                   "(default: this machine's cores for --target-cpu host, else 8)")
    s.add_argument("--precision", default="fp32", choices=PRECISIONS,
                   help="inputs of matmuls and convolutions in bf16 or fp16, accumulated in float32 (default fp32)")
    s.add_argument("--iree-flag", action="append", help="extra flag for iree-compile (repeatable)")
    shape_option(s)
    s.set_defaults(fn=_compile)

    s = command("run", help="run a .vmfb or a model on .npy inputs")
    load_options(s, "what to run")
    s.add_argument("--random-inputs", action="store_true", help="fill inputs not given with random data")
    s.add_argument("--output-dir", help="write each output as NAME.npy here")
    s.set_defaults(fn=_run)

    s = command("info", help="show a model's or .vmfb's metadata, functions, inputs, outputs, states and ops "
                             "(no device needed)")
    s.add_argument("model")
    s.add_argument("--format", choices=FORMATS)
    s.add_argument("--device", default=None, help=argparse.SUPPRESS)  # accepted for old scripts; unused
    shape_option(s)
    s.set_defaults(fn=_info)

    s = command("bench", help="latency percentiles of a .vmfb or a model (random inputs unless --input)")
    load_options(s, "what to time")
    s.add_argument("--iterations", type=int, default=50, help="timed runs (at least 1)")
    s.add_argument("--warmup", type=int, default=5, help="untimed runs first")
    s.add_argument("--json", action="store_true", help="print the result as one JSON object")
    s.set_defaults(fn=_bench)

    s = command("demo", help="compile and run a model on random inputs: outputs and latency")
    s.add_argument("model", nargs="?", default=None, help="default: the example shipped with Estuary")
    s.add_argument("--target", default="llvm-cpu", choices=["llvm-cpu", "vulkan-spirv"])
    s.set_defaults(fn=_demo)

    s = command("cache", help="the compile cache ($ESTUARY_CACHE or ~/.cache/estuary): list, clear, dir")
    s.add_argument("action", nargs="?", default="list", choices=["list", "clear", "dir"])
    s.set_defaults(fn=_cache)
    return p


def _iree_version():
    import importlib.metadata

    try:
        return importlib.metadata.version("iree-base-runtime")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _guarded(fn, args, verbose):
    try:
        fn(args)
    except EstuaryError as e:
        if verbose:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, InternalError) else 1  # 2: a bug in Estuary, as below
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an internal bug: say so plainly, traceback only with --verbose
        if verbose:
            raise
        print(f"internal error: {type(e).__name__}: {e} (run with --verbose for the traceback; "
              "please report it)", file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    args.verbose = getattr(args, "verbose", False)
    args.quiet = getattr(args, "quiet", False)
    return _guarded(args.fn, args, args.verbose)


OPT_EPILOG = """pass options, in MLIR's textual form: --lower-nn-to-tosa="target=vulkan-spirv",
--lower-nn-to-tosa="cpu-lanes=8 retile=true" (llvm-cpu's AVX2 forms)
(keys: target, cpu, optimize, cpu-lanes, winograd, retile, workers, disabled, extra-flags, precision).
Side results of a pass (e.g. keep-f64) are printed as a '// <pass>: key=value' line first."""


def opt_main(argv=None):
    """estuary-opt FILE [--nn-verify] [--lower-nn-to-tosa[=OPTIONS]] ...: run passes in order, print MLIR."""
    from estuary.backends import pipeline  # noqa: F401  (the targets register their passes and rules)
    from estuary.passes import PASSES, load_all

    load_all()
    argv = list(sys.argv[1:] if argv is None else argv)
    passes, rest = [], []
    for token in argv:  # --pass or --pass=OPTIONS, in command-line order
        name, _, text = token[2:].partition("=") if token.startswith("--") else ("", "", "")
        if name in PASSES:
            passes.append((name, text))
        else:
            rest.append(token)
    p = argparse.ArgumentParser(prog="estuary-opt", description="Run named Estuary passes on an MLIR file.",
                                epilog=OPT_EPILOG + "\npasses: " + ", ".join(f"--{n}" for n in sorted(PASSES)),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="MLIR file ('-' for stdin)")
    p.add_argument("-o", "--output")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--split-input-file", action="store_true",
                   help="treat '// -----' separated chunks as independent modules")
    args = p.parse_args(rest)
    args.passes = passes
    return _guarded(_opt, args, args.verbose)


def _opt(args):
    from estuary.backends.options import parse_options
    from estuary.importers.mlir_text import parse_mlir
    from estuary.passes import PASSES

    if args.input == "-":
        text, source = sys.stdin.read(), "<stdin>"
    else:
        source = args.input
        try:
            with open(args.input, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise EstuaryError(f"{args.input}: cannot read ({e.strerror})") from None
    plan = [(name, parse_options(options)) for name, options in args.passes]
    chunks = text.split("// -----") if args.split_input_file else [text]
    outputs = []
    failed = False
    for chunk in chunks:
        try:
            nn = parse_mlir(chunk, source)
            notes = []
            for name, options in plan:
                results = PASSES[name](nn, options) or {}
                notes += [f"// {name}: {k.replace('_', '-')}={v}\n" for k, v in sorted(results.items())]
            outputs.append("".join(notes) + nn.asm())
        except EstuaryError as e:
            if not args.split_input_file:
                raise
            failed = True
            print(f"error: {e}", file=sys.stderr)
            outputs.append("")
    _write_text("\n// -----\n".join(outputs), args.output)
    if failed:
        raise EstuaryError("some input chunks failed (see above)")


if __name__ == "__main__":
    sys.exit(main())
