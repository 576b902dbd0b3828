"""The calling convention of compiled artefacts (IREE's ABI choices Estuary makes for every target).

`main` takes a wait fence and a signal fence (IREE's async ABI), so the runtime chooses how the
caller waits: IREE's synchronous wait spins the calling thread, which on a small machine takes a
core from the workers; runtime.Model polls the fence and yields the core instead.

On the CPU, `main` also takes one output buffer per result (`output_storage`): the runtime keeps
one set of input and output buffers per model, mapped once, instead of a fresh result buffer
that the caller must map and free each run (docs/design.md, "Runtime").
"""
from __future__ import annotations

from typing import Any

from iree.compiler import ir

EXECUTION_MODEL = ["--iree-execution-model=async-external"]


def output_storage(nn: Any) -> bool:
    """Give @main (and each other entry point the signature's "functions" list) one more argument
    per result, marked `iree.abi.output`, so the compiled function writes each result into a
    buffer the caller passes. Static, non-empty results of static inputs only; records `output_storage` in the
    signature (per function). Returns whether it applied to @main."""
    sig = dict(getattr(nn, "extra_signature", None) or {})
    funcs = {str(ir.StringAttr(op.attributes["sym_name"]).value): op for op in nn.module.body.operations
             if op.operation.name == "func.func"}
    functions = {name: dict(entry) for name, entry in (sig.get("functions") or {}).items()}
    for entry in functions.values():
        if entry["entry"] != "main" and entry["entry"] in funcs and _add_outputs(nn, funcs[entry["entry"]]):
            entry["output_storage"] = True
    applied = _add_outputs(nn, nn.main)
    for entry in functions.values():
        if entry["entry"] == "main" and applied:
            entry["output_storage"] = True
    if functions:
        sig["functions"] = functions
    if applied:
        sig["output_storage"] = True
    nn.extra_signature = sig
    return applied


def _add_outputs(nn: Any, main: Any) -> bool:
    with nn.context, ir.Location.unknown():
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        results = [_ranked(t) for t in ftype.results]
        if not results or any(t is None or not t.has_static_shape or 0 in t.shape for t in results):
            return False
        if any(t is not None and not t.has_static_shape for t in map(_ranked, ftype.inputs)):
            return False  # dynamic inputs: the runtime allocates per run (no fixed staging buffers)
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
    return True


def _ranked(t: ir.Type) -> ir.RankedTensorType | None:
    try:
        return ir.RankedTensorType(t)
    except ValueError:
        return None
