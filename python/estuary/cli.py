"""The `estuary` driver and `estuary-opt`: thin command-line layers over the Python API."""
import argparse
import os
import sys
import time

import numpy as np

from estuary.errors import EstuaryError, InternalError


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


def _compile(args):
    import estuary

    art = estuary.compile(args.model, target=args.target, format=args.format,
                          optimize=False if args.no_optimize else None, cpu=args.target_cpu,
                          extra_flags=args.iree_flag or (), progress=not args.quiet,
                          disable_passes=args.disable_pass or (), shapes=_shapes(args), workers=args.workers)
    out = args.output or os.path.splitext(os.path.basename(os.fspath(args.model)))[0] + ".vmfb"
    art.save(out)
    t = art.timings
    print(f"wrote {out} ({len(art.vmfb)} bytes) for {args.target} in {t.get('total_s', 0):.2f} s "
          f"(import {t.get('import_s', 0):.2f} s, lower {t.get('lower_s', 0):.2f} s, IREE {t.get('iree_s', 0):.2f} s)")


def _shapes(args):
    """--shape NAME=1x3x224x224 (repeatable) -> {name: [dims]}, or None."""
    shapes = {}
    for item in getattr(args, "shape", None) or []:
        name, sep, dims = item.rpartition("=")
        try:
            shapes[name] = [int(d) for d in dims.lower().split("x")]
        except ValueError:
            name = ""
        if not sep or not name or any(d <= 0 for d in shapes.get(name, [0])):
            raise EstuaryError(f"--shape takes NAME=D1xD2x... with positive extents, got {item!r}")
    return shapes or None


def _parse_inputs(specs, model):
    feeds = {}
    for item in specs or []:
        name, sep, path = item.partition("=")
        if not sep:
            raise EstuaryError(f"--input takes NAME=PATH.npy, got {item!r}")
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
    from estuary import dtypes

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


def _run(args):
    import estuary

    model = estuary.load(args.vmfb, device=args.device, threads=args.threads)
    feeds = _parse_inputs(args.input, model)
    if args.random_inputs:
        feeds = {**_random_inputs(model), **feeds}
    t0 = time.perf_counter()
    outs = model.run(feeds)
    dt = time.perf_counter() - t0
    for name, arr in outs.items():
        flat = arr.reshape(-1)
        preview = np.array2string(flat[:8], precision=5, separator=", ")
        print(f"{name}: {arr.dtype}{list(arr.shape)} {preview}{' ...' if flat.size > 8 else ''}")
    print(f"latency: {dt * 1e3:.3f} ms (first run, {model.driver})")
    if args.output_dir:
        try:
            os.makedirs(args.output_dir, exist_ok=True)
            for name, arr in outs.items():
                np.save(os.path.join(args.output_dir, _safe_name(name) + ".npy"), arr)
        except OSError as e:
            raise EstuaryError(f"cannot write outputs to {args.output_dir}: {e.strerror or e}") from None
        print(f"wrote {len(outs)} output(s) to {args.output_dir}")


def _info(args):
    path = os.fspath(args.model)
    if path.endswith(".vmfb"):
        import estuary

        model = estuary.load(path, device=args.device)
        sig = model.signature
        print(f"{path}: compiled {sig.get('format')} model ({sig.get('source')}) for {sig.get('target')}")
        rows = [("input", n, s, d) for n, s, d in model.inputs] + [("output", n, s, d) for n, s, d in model.outputs]
    else:
        from collections import Counter

        from estuary.importers import import_model
        from estuary.passes.lowering import nn_ops

        nn = import_model(path, format=args.format)
        counts = Counter(op.name for op in nn_ops(nn.module.operation))
        print(f"{path}: {nn.format} model, {sum(counts.values())} nn ops")
        for name, n in sorted(counts.items()):
            print(f"  {name:28s} {n}")
        rows = [("input", n, s.shape, s.dtype) for n, s in nn.inputs] + \
               [("output", n, s.shape, s.dtype) for n, s in nn.outputs]
    for kind, name, shape, dtype in rows:
        print(f"{kind:6s} {name}: {dtype}{list(shape)}")


def _bench(args):
    import estuary

    model = estuary.load(args.vmfb, device=args.device, threads=args.threads)
    feeds = _random_inputs(model)
    for _ in range(args.warmup):
        model.run(feeds)
    times = []
    for _ in range(args.iterations):
        t0 = time.perf_counter()
        model.run(feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    p = np.percentile(times, [50, 90, 99])
    print(f"{args.vmfb} on {model.driver}: {args.iterations} runs, min {min(times):.3f} ms, "
          f"p50 {p[0]:.3f} ms, p90 {p[1]:.3f} ms, p99 {p[2]:.3f} ms")


def _demo(args):
    """Compile and run the bundled example model, print outputs and latency."""
    import estuary

    path = args.model
    t0 = time.perf_counter()
    art = estuary.compile(path, target=args.target)
    print(f"compiled {os.path.relpath(path)} for {args.target} in {time.perf_counter() - t0:.2f} s")
    model = estuary.load(art, device="vulkan" if args.target == "vulkan-spirv" else None)
    feeds = _random_inputs(model)
    outs = model.run(feeds)
    times = []
    for _ in range(20):
        t1 = time.perf_counter()
        model.run(feeds)
        times.append((time.perf_counter() - t1) * 1e3)
    for name, arr in outs.items():
        print(f"{name}: {arr.dtype}{list(arr.shape)} first values {np.array2string(arr.reshape(-1)[:6], precision=4)}")
    print(f"latency: median {np.median(times):.3f} ms, min {min(times):.3f} ms over 20 runs")


def build_parser():
    from estuary.backends import TARGETS

    p = argparse.ArgumentParser(prog="estuary", description="Compile Core ML, NNEF, WebNN and NNAPI "
                                "models with MLIR + IREE and run them.")
    p.add_argument("--verbose", action="store_true", help="show Python tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)
    formats = ["coreml", "nnef", "webnn", "nnapi", "nn"]

    s = sub.add_parser("import", help="import a model and print its nn MLIR")
    s.add_argument("model")
    s.add_argument("-o", "--output", help="write MLIR here instead of stdout")
    s.add_argument("--format", choices=formats)
    s.add_argument("--full-constants", action="store_true", help="print large constants in full")
    s.add_argument("--shape", action="append", metavar="NAME=1x3x224x224",
                   help="override an input's shape (NNEF external, ...; repeatable)")
    s.set_defaults(fn=_import)

    s = sub.add_parser("compile", help="compile a model (or nn/TOSA .mlir) to a .vmfb")
    s.add_argument("model")
    s.add_argument("-o", "--output", help="output .vmfb (default: <model>.vmfb)")
    s.add_argument("--target", default="llvm-cpu", choices=sorted(TARGETS))
    s.add_argument("--format", choices=formats)
    s.add_argument("--target-cpu", default="host", help="llvm-cpu: 'host' (on x86-64 without AVX-512: the x86-64 level the host has) "
                                                     "or an LLVM CPU name ('generic' for portable)")
    s.add_argument("--no-optimize", action="store_true", help="skip the nn-level optimization passes")
    s.add_argument("--disable-pass", action="append", metavar="NAME",
                   help="skip one optimization pass, e.g. nn-layout-nhwc, cpu-winograd or cpu-tiles (repeatable)")
    s.add_argument("--workers", type=int, help="llvm-cpu: the worker count the tile rules plan workgroups for "
                   "(default: this machine's cores for --target-cpu host, else 8)")
    s.add_argument("--iree-flag", action="append", help="extra flag for iree-compile (repeatable)")
    s.add_argument("--quiet", action="store_true", help="no progress messages")
    s.add_argument("--shape", action="append", metavar="NAME=1x3x224x224",
                   help="override an input's shape (NNEF external, ...; repeatable)")
    s.set_defaults(fn=_compile)

    s = sub.add_parser("run", help="run a .vmfb on .npy inputs")
    s.add_argument("vmfb")
    s.add_argument("--input", action="append", metavar="NAME=PATH.npy")
    s.add_argument("--random-inputs", action="store_true", help="fill inputs not given with random data")
    s.add_argument("--device", default=None, help="cpu (default), vulkan, cuda, hip")
    s.add_argument("--threads", type=int, help="CPU worker threads")
    s.add_argument("--output-dir", help="write each output as NAME.npy here")
    s.set_defaults(fn=_run)

    s = sub.add_parser("info", help="show a model's or .vmfb's inputs, outputs and ops")
    s.add_argument("model")
    s.add_argument("--format", choices=formats)
    s.add_argument("--device", default=None)
    s.set_defaults(fn=_info)

    s = sub.add_parser("bench", help="latency percentiles of a .vmfb on random inputs")
    s.add_argument("vmfb")
    s.add_argument("--device", default=None)
    s.add_argument("--threads", type=int)
    s.add_argument("--iterations", type=int, default=50)
    s.add_argument("--warmup", type=int, default=5)
    s.set_defaults(fn=_bench)

    s = sub.add_parser("demo", help="compile and run a model on random inputs: outputs and latency")
    s.add_argument("model", nargs="?", default=os.path.join("examples", "mobilenet_block.json"))
    s.add_argument("--target", default="llvm-cpu", choices=["llvm-cpu", "vulkan-spirv"])
    s.set_defaults(fn=_demo)
    return p


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
    return _guarded(args.fn, args, args.verbose)


OPT_EPILOG = """pass options, in MLIR's textual form: --lower-nn-to-tosa="target=vulkan-spirv cpu-lanes=8"
(keys: target, cpu, optimize, cpu-lanes, winograd, retile, workers, disabled, extra-flags).
Side results of a pass (e.g. keep-f64) are printed as a '// <pass>: key=value' line first."""


def opt_main(argv=None):
    """estuary-opt FILE [--nn-verify] [--lower-nn-to-tosa[=OPTIONS]] ...: run passes in order, print MLIR."""
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
    from estuary.backends import CompileOptions
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
    plan = [(name, CompileOptions.parse(options)) for name, options in args.passes]
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
