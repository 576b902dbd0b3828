"""graph.quant entries (§5.3, §7.1) applied as fake quantization after the tensor they name.

The arithmetic is the §4.9.5 fragments' bodies, step by step in float32:

    linear_quantize(x, min, max, bits):  r = 2^bits - 1; z = clamp(x, min, max);
                                         q = round((z - min) / (max - min) * r); y = q / r * (max - min) + min
    logarithmic_quantize(x, max, bits):  m = ceil(log2(max)); r = 2^bits - 1;
                                         q = round(clamp(log2(|x|), m - r, m)); y = sign(x) * 2^q

with round(v) = floor(v + 0.5) (§4.2.1) and log2(v) = log(v) / log(2) (§4.2.4). Any other
algorithm must be a fragment the document defines; its body is applied (expanded like the graph).
"""
import numpy as np

from estuary.base.errors import EstuaryError, VerificationError
from estuary.importers.nnef.loader import fragment_prefix, parse_text


def _param(c, q, key):
    if key not in q:
        c.fail(f"graph.quant: {q.get('op-name')} needs the parameter {key!r}")
    return c.const(np.asarray(q[key], dtype=np.float32), "float32")


def _bits(c, q):
    bits = q.get("bits")
    if not isinstance(bits, (int, np.integer)) or not 1 <= int(bits) <= 32:
        c.fail(f"graph.quant: {q.get('op-name')} needs an integer 'bits' in 1..32, got {bits!r}")
    return float(2 ** int(bits) - 1)


def round_half_up(c, x):
    """NNEF round: floor(x + 0.5), evaluated exactly as floor(x) + (x - floor(x) >= 0.5) (adding 0.5
    in float32 would round 0.49999997 up and odd integers above 2^23 to even)."""
    low = c.op("floor", [x])
    up = c.op("greater_or_equal", [c.op("sub", [x, low]), c.const(np.float32(0.5))])
    return c.op("add", [low, c.op("cast", [up], to="float32")])


def sign(c, x):
    """NNEF sign: 1, 0 or -1 (float32)."""
    zero = c.const(np.float32(0))
    pos = c.op("cast", [c.op("greater", [x, zero])], to="float32")
    neg = c.op("cast", [c.op("lesser", [x, zero])], to="float32")
    return c.op("sub", [pos, neg])


def log2(c, x):
    return c.op("div", [c.op("log", [x]), c.const(np.float32(np.log(np.float32(2.0))))])


def linear_quantize(c, x, lo, hi, bits_range):
    r = c.const(np.float32(bits_range))
    lo, hi = c.align(x, lo)[1], c.align(x, hi)[1]
    z = c.op("max", [c.op("min", [x, hi]), lo])  # clamp(x, a, b) = max(min(x, b), a)
    span = c.op("sub", [hi, lo])
    q = round_half_up(c, c.op("mul", [c.op("div", [c.op("sub", [z, lo]), span]), r]))
    return c.op("add", [c.op("mul", [c.op("div", [q, r]), span]), lo])


def logarithmic_quantize(c, x, hi, bits_range):
    hi = c.align(x, hi)[1]
    m = c.op("ceil", [log2(c, hi)])
    r = c.const(np.float32(bits_range))
    q = round_half_up(c, c.op("max", [c.op("min", [log2(c, c.op("abs", [x])), m]), c.op("sub", [m, r])]))
    return c.op("mul", [sign(c, x), c.op("pow", [c.const(np.float32(2.0)), q])])


def apply(c, value, q):
    """Fake-quantize `value` as the parsed graph.quant entry `q` ({'op-name', parameters...}) says."""
    name = q.get("op-name")
    if c.spec(value).dtype != "float32":
        c.fail(f"graph.quant: {name} applies to scalar tensors, {c.label!r} is {c.spec(value).dtype}")
    if name == "linear_quantize":
        return linear_quantize(c, value, _param(c, q, "min"), _param(c, q, "max"), _bits(c, q))
    if name == "logarithmic_quantize":
        return logarithmic_quantize(c, value, _param(c, q, "max"), _bits(c, q))
    return _by_fragment(c, value, name, {k: v for k, v in q.items() if k != "op-name"})


def _literal(c, name, value):
    value = np.asarray(value)
    if value.size != 1:
        c.fail(f"graph.quant: {name}: only single-valued parameters are supported, got shape {list(value.shape)}")
    item = value.reshape(()).item()
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, str):
        return repr(item)
    return repr(float(item)) if isinstance(item, float) else str(int(item))


def _by_fragment(c, value, name, params):
    """Any other algorithm is a fragment the document defines (the parser accepted graph.quant, so
    it exists): apply it to this one tensor by parsing a one-invocation graph with the document's
    fragment definitions, expanding it like the main graph, and converting it in place."""
    args = "".join(f", {k} = {_literal(c, name, v)}" for k, v in params.items())
    shape = list(c.spec(value).shape)
    text = (fragment_prefix(c.text) + f"graph Q( x ) -> ( y )\n{{\n    x = external<scalar>(shape = {shape});\n"
            f"    y = {name}(x{args});\n}}\n")
    try:
        parsed = parse_text(c.files, text, shapes_from_text=True)
    except EstuaryError as e:
        raise VerificationError(f"{c.path}: graph.quant: tensor {c.label!r}: cannot apply {name!r}: {e}") from None
    sub = c.subgraph(parsed, {"x": value})
    sub.run([op for op in parsed.operations if op.name != "external"])
    return sub.values["y"]
