"""Dynamic shapes beside static ones and onnxruntime, in one run: latency of one dynamic artefact at
several shapes against the static artefact compiled for each shape and against onnxruntime on the
ONNX model with symbolic dimensions; compile time of both; decoder tokens per second beside torch.

    python benchmarks/dynamic.py                       # every row
    python benchmarks/dynamic.py --rows bert,resnet50 --iterations 40
    python benchmarks/dynamic.py --rows decoder --threads 2

Rows: `bert` (the BERT-style encoder block of models.py with a symbolic sequence, at 64 and 256
tokens), `resnet50` (ResNet-50 with symbolic height and width, at 224x224), `decoder` (a
Llama-style decoder converted by coremltools as an iOS18 stateful ML Program with a dynamic query
length: one decode step after a 16-token prompt; tokens per second of a 48-token generation
beside torch; the KV cache holds 64 positions). Each artefact is compiled in a child process (its
own compile time); the runtimes alternate in short blocks in this process and their outputs are
checked to agree.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

import models  # noqa: E402
import onnx_to_webnn  # noqa: E402
import run as bench  # noqa: E402

ROUNDS = 6  # alternations of the runtimes per measurement


def _median_alternating(fns: dict[str, Callable[[], Any]], iterations: int) -> dict[str, float]:
    """Median milliseconds of each function, measured in alternating blocks."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for k, fn in fns.items():
            times[k] += bench.time_runs(fn, max(1, iterations // ROUNDS))
    return {k: float(np.median(v)) for k, v in times.items()}


def _ort(model: Any, threads: int | None) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _compile(path: str, workdir: str, tag: str, threads: int | None) -> tuple[str, dict[str, float]]:
    vmfb = os.path.join(workdir, f"{tag}.vmfb")
    return vmfb, bench.compile_child(path, vmfb, workers=threads)


def onnx_rows(name: str, make: Callable[..., Any], shapes: list[dict[str, int]], max_sizes: dict[str, int],
              workdir: str, iterations: int, threads: int | None) -> list[dict[str, Any]]:
    """Rows of an ONNX model with symbolic dimensions: its dynamic WebNN form once, its static
    form per shape, and onnxruntime on the symbolic ONNX model."""
    import estuary

    dyn_model, _, _ = make(dynamic=True)
    dyn_path = onnx_to_webnn.convert(dyn_model, os.path.join(workdir, f"{name}_dynamic.json"), max_sizes=max_sizes)
    dyn_vmfb, dyn_stats = _compile(dyn_path, workdir, f"{name}_dynamic", threads)
    dynamic = estuary.load(dyn_vmfb, threads=threads)
    session = _ort(dyn_model, threads)
    out = dyn_model.graph.output[0].name
    rows = []
    for sizes in shapes:
        st_model, feeds, flops = make(**sizes)
        st_path = onnx_to_webnn.convert(st_model, os.path.join(workdir, f"{name}_{_tag(sizes)}.json"))
        st_vmfb, st_stats = _compile(st_path, workdir, f"{name}_{_tag(sizes)}", threads)
        static = estuary.load(st_vmfb, threads=threads)
        ref = session.run([out], feeds)[0]
        errs = [float(np.abs(m.run(feeds)[out] - ref).max() / max(1e-6, float(np.abs(ref).max())))
                for m in (static, dynamic)]
        t = _median_alternating({"static": lambda: static.run(feeds), "dynamic": lambda: dynamic.run(feeds),
                                 "ort": lambda: session.run([out], feeds)}, iterations)
        static.close()
        rows.append({"row": name, "shape": _tag(sizes), "static_ms": t["static"], "dynamic_ms": t["dynamic"],
                     "ort_ms": t["ort"], "dynamic_over_static": t["dynamic"] / t["static"],
                     "dynamic_over_ort": t["dynamic"] / t["ort"], "static_compile_s": st_stats["compile_s"],
                     "dynamic_compile_s": dyn_stats["compile_s"], "dynamic_rss_mb": dyn_stats["rss_mb"],
                     "max_rel_err": max(errs)})
    dynamic.close()
    return rows


def _tag(sizes: dict[str, int]) -> str:
    return "x".join(f"{v}" for v in sizes.values())


def _resnet50(dynamic: bool = False, size: int = 224) -> Any:
    model = models.resnet50(size=size)
    if dynamic:
        models.symbolic(model[0], "x", {2: "h", 3: "w"})
    return model


def decoder_rows(workdir: str, iterations: int, threads: int | None, prompt: int = 16,
                 generate: int = 48) -> list[dict[str, Any]]:
    """One decode step of the stateful Llama-style ML Program: the dynamic artefact against the
    artefact specialised to a one-token step (`shapes=`), and tokens per second beside torch."""
    import importlib.util

    import torch

    if importlib.util.find_spec("torchvision"):  # transformers imports it: the CPU wheels' fix first
        from benchmarks.zoo import compat
        compat.torchvision()

    import estuary

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "importers", "mlprogram"))
    import torch_dynamic  # noqa: E402  (the test suite's Llama-style decoder and its conversion)

    from pathlib import Path

    path, model = torch_dynamic.llama_package(Path(workdir), "fp32", 4)
    generate = min(generate, torch_dynamic.MAX_CONTEXT - prompt)  # the KV cache's length bounds the positions
    t0 = time.perf_counter()
    dynamic = estuary.load(estuary.compile(str(path)), threads=threads)
    dyn_compile = time.perf_counter() - t0
    tokens = np.random.default_rng(0).integers(0, 100, prompt + generate).astype(np.int32)

    def step(m: Any, state: Any, end: int, new: int) -> Any:
        feed = {"inputIds": tokens[None, end:end + new], "causalMask": torch_dynamic.causal_mask(new, end + new)}
        return m.run(feed, state=state)

    # prefill the prompt, then time one-token steps at the prompt's end (the state rewound each time)
    state = dynamic.make_state()
    step(dynamic, state, 0, prompt)
    saved = {n: state.read(n) for n, _, _ in dynamic.states}

    def dynamic_step() -> Any:
        for n, v in saved.items():
            state.write(n, v)
        return step(dynamic, state, prompt, 1)

    # the artefact specialised to this step's shapes, its state set to the same prompt
    t0 = time.perf_counter()
    static = estuary.load(estuary.compile(str(path), shapes={"inputIds": [1, 1], "causalMask": [1, 1, 1, prompt + 1]}),
                          threads=threads)
    static_compile = time.perf_counter() - t0
    static_state = static.make_state()

    def static_step() -> Any:
        for n, v in saved.items():
            static_state.write(n, v)
        return step(static, static_state, prompt, 1)

    a, b = dynamic_step(), static_step()
    err = max(float(np.abs(a[k] - b[k]).max() / max(1e-6, float(np.abs(b[k]).max()))) for k in b)
    t = _median_alternating({"dynamic": dynamic_step, "static": static_step}, iterations)
    static.close()
    # tokens per second: a whole generation, greedy, from one artefact
    state = dynamic.make_state()
    t0 = time.perf_counter()
    step(dynamic, state, 0, prompt)
    for i in range(generate):
        step(dynamic, state, prompt + i, 1)
    est_tps = generate / (time.perf_counter() - t0)
    with torch.no_grad():
        model.keyCache.zero_(), model.valueCache.zero_()
        t0 = time.perf_counter()
        model(torch.from_numpy(tokens[None, :prompt]), torch.from_numpy(torch_dynamic.causal_mask(prompt, prompt)))
        for i in range(generate):
            end = prompt + i
            model(torch.from_numpy(tokens[None, end:end + 1]), torch.from_numpy(torch_dynamic.causal_mask(1, end + 1)))
        torch_tps = generate / (time.perf_counter() - t0)
    dynamic.close()
    return [{"row": "decoder", "shape": f"1 token after {prompt}", "static_ms": t["static"], "dynamic_ms": t["dynamic"],
             "dynamic_over_static": t["dynamic"] / t["static"], "max_rel_err": err,
             "static_compile_s": static_compile, "dynamic_compile_s": dyn_compile, "estuary_tokens_per_s": est_tps, "torch_tokens_per_s": torch_tps,
             "torch_threads": torch.get_num_threads()}]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="bert,resnet50,decoder")
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as workdir:
        wanted = args.rows.split(",")
        if "bert" in wanted:
            rows += onnx_rows("bert", lambda dynamic=False, seq=64: models.transformer(seq=seq, dynamic=dynamic),
                              [{"seq": 64}, {"seq": 256}], {"seq": 512}, workdir, args.iterations, args.threads)
        if "resnet50" in wanted:
            rows += onnx_rows("resnet50", lambda dynamic=False, size=224: _resnet50(dynamic, size), [{"size": 224}],
                              {"h": 512, "w": 512}, workdir, max(3, args.iterations // 4), args.threads)
        if "decoder" in wanted:
            rows += decoder_rows(workdir, args.iterations, args.threads)
    print(json.dumps({"machine": bench.machine(), "rows": rows}, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": bench.machine(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
