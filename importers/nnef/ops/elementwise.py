"""Element-wise operations: unary and binary (§4.2.1, §4.2.2), select (§4.2.3), simplifiers (§4.2.4),
add_n and copy_n (§4.9).

Operands broadcast NNEF-style (trailing singleton axes, `c.align`). Compositions follow the spec's
own definitions where nn has no single op: round(x) = floor(x + 0.5), sign via comparisons,
log2(x) = log(x) / log(2), clamp(x, a, b) = max(min(x, b), a).
"""
from estuary.importers.nnef import quant
from estuary.importers.nnef.ops import OPS


_UNARY = {"neg": "neg", "rcp": "reciprocal", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
          "tan": "tan", "tanh": "tanh", "abs": "abs", "floor": "floor", "ceil": "ceil", "sqrt": "sqrt",
          "not": "logical_not", "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos",
          "atan": "atan", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh"}


_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow", "lt": "lesser",
           "gt": "greater", "le": "lesser_or_equal", "ge": "greater_or_equal", "eq": "equal",
           "and": "logical_and", "or": "logical_or", "min": "min", "max": "max"}


def _unary(nn_name):
    def convert(c, inv):
        return c.op(nn_name, [c.tensor(inv.inputs["x"])])

    return convert


def _binary(nn_name):
    def convert(c, inv):
        x, y = c.align(c.tensor(inv.inputs["x"]), c.tensor(inv.inputs["y"]))
        return c.op(nn_name, [x, y])

    return convert


for _name, _nn in _UNARY.items():
    OPS.op(_name)(_unary(_nn))


for _name, _nn in _BINARY.items():
    OPS.op(_name)(_binary(_nn))


@OPS.op("copy")
def copy(c, inv):
    return c.op("identity", [c.tensor(inv.inputs["x"])])


@OPS.op("sign")
def sign(c, inv):
    return quant.sign(c, c.tensor(inv.inputs["x"]))


@OPS.op("round")
def round_(c, inv):
    return quant.round_half_up(c, c.tensor(inv.inputs["x"]))


@OPS.op("ne")
def ne(c, inv):
    x, y = c.align(c.tensor(inv.inputs["x"]), c.tensor(inv.inputs["y"]))
    return c.op("logical_not", [c.op("equal", [x, y])])


@OPS.op("sqr")
def sqr(c, inv):
    x = c.tensor(inv.inputs["x"])
    return c.op("mul", [x, x])


@OPS.op("rsqr")
def rsqr(c, inv):
    x = c.tensor(inv.inputs["x"])
    return c.op("reciprocal", [c.op("mul", [x, x])])


@OPS.op("rsqrt")
def rsqrt(c, inv):
    return c.op("reciprocal", [c.op("sqrt", [c.tensor(inv.inputs["x"])])])


@OPS.op("log2")
def log2(c, inv):
    return quant.log2(c, c.tensor(inv.inputs["x"]))


@OPS.op("select")
def select(c, inv):
    cond, t, f = (c.tensor(inv.inputs[k]) for k in ("condition", "true_value", "false_value"))
    if c.spec(t).dtype != c.spec(f).dtype:  # a literal on one side takes the other side's type
        if c.spec(t).rank == 0:
            t = c.op("cast", [t], to=c.spec(f).dtype)
        else:
            f = c.op("cast", [f], to=c.spec(t).dtype)
    cond, t, f = c.align(cond, t, f)
    return c.op("where", [cond, t, f])


@OPS.op("clamp")
def clamp(c, inv):
    x, a, b = c.align(*(c.tensor(inv.inputs[k]) for k in ("x", "a", "b")))
    return c.op("max", [c.op("min", [x, b]), a])


@OPS.op("add_n")
def add_n(c, inv):
    xs = c.tensors(inv.inputs["x"])
    c.check(len(xs) > 0, "add_n of an empty list")
    total = xs[0]
    for x in xs[1:]:
        total = c.op("add", c.align(total, x))
    return c.op("identity", [total]) if len(xs) == 1 else total


@OPS.op("copy_n")
def copy_n(c, inv):
    x = c.tensor(inv.inputs["x"])
    times = int(inv.attribs["times"])
    c.check(times >= 0, f"times must not be negative, got {times}")
    return [c.op("identity", [x]) for _ in range(times)]
