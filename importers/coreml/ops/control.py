"""Core ML control flow: branch, loop, loopBreak, loopContinue.

Estuary compiles straight-line graphs, so control flow is resolved at conversion time:
- branch: a compile-time constant condition inlines the taken branch. Otherwise both branches are
  converted and every blob they write is selected with `where(condition != 0, if, else)` (the
  value before the branch stands in for a side that does not write it); both sides must give the
  same shape and data type. Branches containing loopBreak/loopContinue need a constant condition.
- loop: unrolled when the trip count is known at compile time and at most MAX_UNROLL: the
  maxLoopIterations field or a constant input; a conditionNetwork is converted before every
  iteration and its conditionVar must fold to a constant (conditions computed from constants and
  loop-carried constant blobs do). loopBreak/loopContinue in the body (directly or in branches
  with constant conditions) end the loop / the iteration. Anything data-dependent is a clear
  error naming the layer.
"""
import numpy as np
from iree.compiler import ir

from estuary.dialects import core
from estuary.dialects.graph import constant_value, op_attrs, operand_groups
from estuary.importers.coreml.nd import truth
from estuary.importers.coreml.ops import OPS


MAX_UNROLL = 256


MAX_FOLD_ELEMENTS = 1 << 16


class _Break(BaseException):
    """Raised by loopBreak inside an unrolled loop (BaseException: passes generic handlers)."""


class _Continue(BaseException):
    """Raised by loopContinue inside an unrolled loop."""


_LOOP_DEPTH = [0]


def fold(value, depth=0, memo=None):
    """The numpy value of an nn Value computed from constants only (via the ops' references), else None.
    `memo` (a dict kept across the iterations of a loop) makes long loop-carried chains cheap."""
    if memo is not None and value in memo:
        return memo[value]
    result = _fold(value, depth, memo)
    if memo is not None:
        memo[value] = result
    return result


def _fold(value, depth, memo):
    owner = value.owner
    if not isinstance(owner, ir.OpView) or depth > 64:
        return None
    op = owner.operation
    if op.name == "nn.constant":
        return np.asarray(constant_value(op.attributes["value"]))
    opdef = core.get(op.name)
    if opdef is None or opdef.reference is None or not opdef.operands:
        return None
    args = []
    for g in operand_groups(opdef, op):
        if isinstance(g, list):
            vals = [fold(v, depth + 1, memo) for v in g]
            if any(v is None for v in vals):
                return None
            args.append(vals)
        elif g is None:
            args.append(None)
        else:
            v = fold(g, depth + 1, memo)
            if v is None or v.size > MAX_FOLD_ELEMENTS:
                return None
            args.append(v)
    try:
        out = opdef.reference(*args, **op_attrs(opdef, op))
    except Exception:  # a reference that cannot evaluate these operands: not foldable
        return None
    outs = out if isinstance(out, (list, tuple)) else [out]
    for r, res in zip(op.results, outs):
        if r == value:
            return np.asarray(res)
    return None


def _kinds(layers):
    """Every layer kind in a layer list, nested branch/loop bodies included."""
    for layer in layers:
        kind = layer.WhichOneof("layer")
        yield kind
        p = getattr(layer, kind) if kind else None
        if kind == "branch":
            yield from _kinds(p.ifBranch.layers)
            yield from _kinds(p.elseBranch.layers)
        elif kind == "loop":
            yield from _kinds(p.conditionNetwork.layers)
            yield from _kinds(p.bodyNetwork.layers)


def _writes(layers):
    names = []
    for layer in layers:
        names += list(layer.output)
        kind = layer.WhichOneof("layer")
        if kind == "branch":
            names += _writes(layer.branch.ifBranch.layers) + _writes(layer.branch.elseBranch.layers)
        elif kind == "loop":
            names += _writes(layer.loop.conditionNetwork.layers) + _writes(layer.loop.bodyNetwork.layers)
    return list(dict.fromkeys(names))


def _get(c, name):
    try:
        return c.blob(name)
    except Exception:  # not defined (yet)
        return None


def _scalar_truth(c, value, what, memo=None):
    c.check(c.spec(value).size == 1, f"{what} must be a scalar (one element), got shape {list(c.spec(value).shape)}")
    v = fold(value, memo=memo)
    return None if v is None else bool(np.asarray(v).reshape(-1)[0] != 0)


@OPS.op("branch")
def convert_branch(c, layer):
    p = layer.branch
    cond = c.input(layer)
    taken = _scalar_truth(c, cond, "the branch condition")
    if taken is not None:
        c.convert_layers((p.ifBranch if taken else p.elseBranch).layers)
        return []
    jumps = {"loopBreak", "loopContinue"} & set(_kinds(list(p.ifBranch.layers) + list(p.elseBranch.layers)))
    c.check(not jumps, f"{sorted(jumps)} inside a branch whose condition is computed at run time "
            f"(data-dependent control flow) is not supported")
    names = _writes(list(p.ifBranch.layers) + list(p.elseBranch.layers))
    before = {n: _get(c, n) for n in names}
    sides = []
    for net in (p.ifBranch, p.elseBranch):
        for n, v in before.items():
            if v is not None:
                c.set_blob(n, v)
        c.convert_layers(net.layers)
        sides.append({n: _get(c, n) for n in names})
    mask = truth(c, cond)
    if c.spec(mask).rank > 0:
        mask = c.op("reshape", [mask], new_shape=[])
    for n in names:
        a, b = sides[0][n], sides[1][n]
        if a is None or b is None or a == b:
            continue  # defined on one side only (used there alone) or unchanged
        sa, sb = c.spec(a), c.spec(b)
        c.check(sa == sb, f"blob '{n}' is {sa} in the if branch and {sb} in the else branch; a branch "
                f"on a run-time condition needs equal shapes and data types")
        c.set_blob(n, c.op("where", [mask, a, b]))
    return []


def _run_body(c, layers):
    """Convert the body layer by layer; returns 'break', 'continue' or None."""
    for layer in layers:
        kind = layer.WhichOneof("layer")
        if kind == "loopBreak":
            return "break"
        if kind == "loopContinue":
            return "continue"
        try:
            c.convert_layers([layer])
        except _Break:
            return "break"
        except _Continue:
            return "continue"
    return None


@OPS.op("loop")
def convert_loop(c, layer):
    p = layer.loop
    has_cond = len(p.conditionNetwork.layers) > 0
    if layer.input:
        v = fold(c.input(layer))
        c.check(v is not None, "the loop's maximum iteration count (its input) must be a compile-time constant")
        c.check(np.asarray(v).size == 1, "the loop's maximum iteration count must be a scalar")
        limit = int(np.asarray(v).reshape(-1)[0])
    elif p.maxLoopIterations or not has_cond:
        limit = int(p.maxLoopIterations)
    else:
        limit = None  # a while loop: bounded by MAX_UNROLL
    c.check(has_cond or limit <= MAX_UNROLL,
            f"a loop of {limit} iterations exceeds the unrolling limit of {MAX_UNROLL}")
    c.check(not has_cond or p.conditionVar, "conditionNetwork is set but conditionVar is empty")
    _LOOP_DEPTH[0] += 1
    memo = {}
    try:
        i = 0
        while limit is None or i < limit:
            if has_cond:
                c.convert_layers(p.conditionNetwork.layers)
                go = _scalar_truth(c, c.blob(p.conditionVar), f"conditionVar '{p.conditionVar}'", memo)
                c.check(go is not None, f"the loop condition '{p.conditionVar}' is computed at run time "
                        f"(data-dependent loop): only loops with compile-time conditions are unrolled")
                if not go:
                    break
            c.check(i < MAX_UNROLL, f"the loop runs more than {MAX_UNROLL} iterations (the unrolling limit)")
            if _run_body(c, p.bodyNetwork.layers) == "break":
                break
            i += 1
    finally:
        _LOOP_DEPTH[0] -= 1
    return []


@OPS.op("loopBreak")
def convert_loop_break(c, layer):
    c.check(_LOOP_DEPTH[0] > 0, "loopBreak outside a loop's bodyNetwork")
    raise _Break()


@OPS.op("loopContinue")
def convert_loop_continue(c, layer):
    c.check(_LOOP_DEPTH[0] > 0, "loopContinue outside a loop's bodyNetwork")
    raise _Continue()
