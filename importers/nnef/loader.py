"""Parsing graph.nnef (+ graph.quant) with the Khronos `nnef` parser, from text read through ModelFiles.

Every compound fragment without a converter in OPS (standard §4.9 fragments and fragments the
document defines itself) is expanded by the parser (`lowered=`), repeatedly until only operations
with converters (or truly unknown ones) remain. Shapes come from the parser's shape inference, with
`external` shapes overridable by `shapes={name: shape}`.
"""
import math
import os
import re

from estuary.base.errors import ModelImportError, UnsupportedOpError
from estuary.importers.nnef import limits
from estuary.importers.nnef.ops import OPS

MAX_ELEMENTS = 1 << 31
_POSITION = re.compile(r"^(?:Parse|Semantic|Syntax)? ?[Ee]rror in '([^']*)' \[(\d+):(\d+)\]\s*:?\s*(.*)$", re.S)


def parse_error(files, err):
    """ModelImportError for a parser message, naming the file and line ('... in 'input' [12:18] ...')."""
    text = str(err)
    m = _POSITION.match(text.strip())
    if m:
        source, line, col, detail = m.groups()
        name = files.graph_path if source != "quantization" else files._where("graph.quant")
        return ModelImportError(f"{name}:{line}:{col}: {detail.strip() or text}")
    return ModelImportError(f"{files.graph_path}: {text}")


_LITERAL_OR_COMMENT = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|#[^\n]*")  # whichever starts first
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\S")


def _position(text, at):
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def clean_text(where, text):
    """The document with non-ASCII characters in comments blanked; a ModelImportError for a NUL
    or a non-ASCII character elsewhere (NNEF's text is ASCII, and the Khronos parser fails on
    them with Python exceptions of its own)."""
    text = _LITERAL_OR_COMMENT.sub(
        lambda m: re.sub(r"[^\x00-\x7f]", " ", m.group()) if m.group().startswith("#") else m.group(), text)
    bad = re.search(r"[^\x01-\x7f]", text)
    if bad:
        line, col = _position(text, bad.start())
        what = "a NUL byte" if bad.group() == "\0" else f"the non-ASCII character {bad.group()!r}"
        raise ModelImportError(f"{where}:{line}:{col}: {what} (NNEF text is ASCII)")
    return text


def _lvalue(tokens, i):
    """Index after the lvalue starting at tokens[i] (a name, or an array or tuple of lvalues), or None."""
    if i >= len(tokens):
        return None
    if re.match(r"[A-Za-z_]", tokens[i]):
        return i + 1
    close = {"[": "]", "(": ")"}.get(tokens[i])
    if close is None:
        return None
    i += 1
    if close == "]" and i < len(tokens) and tokens[i] == "]":
        return i + 1
    while True:
        i = _lvalue(tokens, i)
        if i is None or i >= len(tokens):
            return None
        if tokens[i] == close:
            return i + 1
        if tokens[i] != ",":
            return None
        i += 1


def _lvalues(tokens):
    """Whether tokens are one lvalue or a bare comma-separated tuple of them (`a, b = moments(x)`)."""
    i = 0
    while True:
        i = _lvalue(tokens, i)
        if i is None:
            return False
        if i == len(tokens):
            return True
        if tokens[i] != ",":
            return False
        i += 1


def check_statements(files, text):
    """Every statement in a graph or fragment body must be `lvalue = ...;` with a name, array or
    tuple of names on the left. The Khronos parser (nnef 1.0.x) crashes the process on some
    other forms (`-y = relu(x);`, a bare `relu(x);`) instead of reporting them."""
    code = _LITERAL_OR_COMMENT.sub(lambda m: " " * len(m.group()), text)
    depth = 0
    for stmt in re.finditer(r"([^;{}]*)([;{}]|$)", code):  # text up to each ; { or }, inside any braces
        body, end = stmt.group(1), stmt.group(2)
        if depth != 0 and body.strip():
            tokens = _TOKEN.findall(body.split("=", 1)[0])
            if "=" not in body or not _lvalues(tokens):
                line, col = _position(code, stmt.start() + len(body) - len(body.lstrip()))
                raise ModelImportError(f"{files.graph_path}:{line}:{col}: expected an assignment 'name = "
                                       f"operation(...);' (a name, or an array or tuple of names, on the left)")
        depth += {"{": 1, "}": -1}.get(end, 0)


# The most operations the graph may expand to through the document's own fragments
# (ESTUARY_NNEF_MAX_OPS raises it): a few lines of nested fragments can ask for billions.
MAX_EXPANDED_OPS = 1_000_000
MAX_FRAGMENT_DEPTH = 256  # fragments calling fragments, this many deep at most
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^<>()]*>)?\s*\(")
_DEFINITION = re.compile(r"\b(fragment|graph)\s+([A-Za-z_][A-Za-z0-9_]*)")


def _bodies(code):
    """{fragment name: body text} of the fragments the document defines, and the graph's body."""
    fragments, graph = {}, ""
    for m in _DEFINITION.finditer(code):
        start = m.end()
        brace, semi = code.find("{", start), code.find(";", start)
        if brace < 0 or (0 <= semi < brace):  # a declaration without a body
            continue
        end = code.find("}", brace)
        body = code[brace + 1:end if end >= 0 else len(code)]
        if m.group(1) == "graph":
            graph = body
        else:
            fragments[m.group(2)] = body
    return fragments, graph


def _too_deep(files, name):
    return ModelImportError(f"{files.graph_path}: fragment {name!r} nests fragments more than "
                            f"{MAX_FRAGMENT_DEPTH} deep")


def check_fragments(files, text):
    """Refuse documents whose own fragments call themselves (directly or through others) or
    expand to more than MAX_EXPANDED_OPS operations, before the Khronos parser expands them:
    it recurses without bound on those and takes the process down (a stack overflow, or minutes
    and gigabytes for an expansion bomb)."""
    code = _LITERAL_OR_COMMENT.sub(lambda m: " " * len(m.group()), text)
    fragments, graph = _bodies(code)
    calls = {name: _CALL.findall(body) for name, body in fragments.items()}
    setting = os.environ.get("ESTUARY_NNEF_MAX_OPS", str(MAX_EXPANDED_OPS))
    if not setting.isdigit():
        raise ModelImportError(f"ESTUARY_NNEF_MAX_OPS must be a whole number, got {setting!r}")
    limit = int(setting)
    sizes, depths, active = {}, {}, []

    def size(name):
        """Operations `name` expands to (1 for anything the document does not define)."""
        if name not in fragments:
            return 1
        if name in active:
            cycle = " -> ".join(active[active.index(name):] + [name])
            raise ModelImportError(f"{files.graph_path}: fragment {name!r} calls itself ({cycle}); "
                                   "recursive fragments cannot be expanded")
        if name not in sizes:
            if len(active) >= MAX_FRAGMENT_DEPTH:
                raise _too_deep(files, name)
            active.append(name)
            sizes[name] = sum(size(c) for c in calls[name])
            depths[name] = 1 + max((depths.get(c, 0) for c in calls[name]), default=0)
            active.pop()
            if depths[name] > MAX_FRAGMENT_DEPTH:
                raise _too_deep(files, name)
        return sizes[name]

    for name in fragments:
        size(name)
    total = sum(size(c) for c in _CALL.findall(graph))
    if total > limit:
        raise ModelImportError(f"{files.graph_path}: the graph expands to {total} operations through its "
                               f"fragments, more than the limit of {limit} (ESTUARY_NNEF_MAX_OPS raises it)")


_INTEGER = re.compile(r"(?<![\w.])(?<![eE][+-])\d+(?![\w.])")  # not a float's digits or exponent


def check_integers(where, text):
    """Refuse integer literals beyond 32 bits: the Khronos parser wraps them silently (a shape
    [2147483648] became [-2147483648])."""
    code = _LITERAL_OR_COMMENT.sub(lambda m: " " * len(m.group()), text)
    for m in _INTEGER.finditer(code):
        if int(m.group()) > limits.INT32_MAX:
            line, col = _position(code, m.start())
            raise ModelImportError(f"{where}:{line}:{col}: the integer {m.group()} is larger than "
                                   f"{limits.INT32_MAX}, the most NNEF's parser reads")


class ParserRefusal(ModelImportError):
    """The Khronos parser (or its shape inference) refused the document."""


def precheck(files, text, quant_text):
    """The safety checks every document passes before any parser reads it; returns the texts
    with non-ASCII comment characters blanked."""
    text = clean_text(files.graph_path, text)
    check_statements(files, text)
    check_integers(files.graph_path, text)
    check_fragments(files, text)
    if quant_text is not None:
        quant_text = clean_text(files._where("graph.quant"), quant_text)
        check_integers(files._where("graph.quant"), quant_text)
    return text, quant_text


def parse(files, text, quant_text, checked=False):
    import nnef

    if not checked:
        text, quant_text = precheck(files, text, quant_text)
    # the document's own fragments are expanded from their bodies, also where a converter of the
    # same name exists (relu6, erf: the document's definition wins)
    lowered = set(_bodies(_LITERAL_OR_COMMENT.sub(lambda m: " " * len(m.group()), text))[0])
    while True:
        try:
            graph = nnef.parse_string(text, quant_text, lowered=sorted(lowered))
        except nnef.Error as e:
            err = parse_error(files, e)
            raise ParserRefusal(str(err)) from None
        missing = {op.name for op in graph.operations if op.name not in OPS}
        if not missing - lowered:
            break
        lowered |= missing
    unknown = [(_result_name(op), op.name, "no converter and no fragment body to expand")
               for op in graph.operations if op.name not in OPS]
    if unknown:
        raise UnsupportedOpError(files.graph_path, unknown)
    return graph


def find_line(text, name):
    """1-based line of the statement assigning tensor `name` in graph.nnef text, or None."""
    if not name or not text:
        return None
    pattern = re.compile(r"(^|[\[,\s])" + re.escape(str(name)) + r"\s*([,\]]|=(?!=))")
    for i, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0]
        if "=" in body and pattern.search(body.split("=", 1)[0] + "="):
            return i
    return None


def fragment_prefix(text):
    """The document up to its graph definition (version, extensions, fragment definitions)."""
    code = re.sub(r"#[^\n]*", "", text)
    m = re.search(r"\bgraph\b", code)
    return code[:m.start()] if m else code


def parse_text(files, text, shapes_from_text=False):
    """Parse a synthesized document (no graph.quant) and infer its shapes from its own externals."""
    graph = parse(files, text, None)
    return infer_shapes(files, graph, None, text) if shapes_from_text else graph


def _result_name(op):
    for v in op.outputs.values():
        while isinstance(v, list) and v:
            v = v[0]
        return str(v)
    return op.name


def check_shapes(files, shapes, graph):
    """Validate a `shapes` override against the document's externals; returns {name: [dims]}."""
    externals = {op.outputs["output"]: op.attribs["shape"] for op in graph.operations if op.name == "external"}
    out = {}
    for name, shape in (shapes or {}).items():
        if name not in externals:
            raise ModelImportError(f"{files.graph_path}: shape given for {name!r}, which is not an external "
                                   f"tensor of the graph (externals: {', '.join(map(str, externals)) or 'none'})")
        try:
            dims = [int(d) for d in shape]
        except (TypeError, ValueError):
            raise ModelImportError(f"{files.graph_path}: invalid shape {shape!r} for {name!r}") from None
        if len(dims) != len(externals[name]) or any(d <= 0 for d in dims):
            raise ModelImportError(f"{files.graph_path}: shape {dims} for {name!r} must have "
                                   f"{len(externals[name])} positive extents (declared {externals[name]})")
        out[name] = dims
    for op in graph.operations:
        if op.name in ("external", "variable", "constant"):
            dims = out.get(op.outputs["output"], op.attribs["shape"])
            if any(not isinstance(d, int) or d <= 0 for d in dims):
                raise ModelImportError(f"{files.graph_path}: {op.name} {op.outputs['output']!r} has invalid "
                                       f"shape {dims} (extents must be strictly positive)")
            if math.prod(dims) > MAX_ELEMENTS:
                raise ModelImportError(f"{files.graph_path}: {op.name} {op.outputs['output']!r} declares shape "
                                       f"{dims} ({math.prod(dims)} elements), more than the {MAX_ELEMENTS} supported")
            if op.name == "constant" and 4 * math.prod(dims) > limits.get(limits.CONSTANT_BYTES):
                # checked before the converter fills it (a one-value constant is a splat of any size)
                raise limits.exceeded(files.graph_path, f"constant {op.outputs['output']!r} of shape {dims}",
                                      4 * math.prod(dims), limits.CONSTANT_BYTES)
    return out


def infer_shapes(files, graph, shapes, text=None):
    import nnef

    overrides = check_shapes(files, shapes, graph)
    try:
        nnef.infer_shapes(graph, external_shapes=overrides)
    except (nnef.Error, AssertionError, ValueError, TypeError, IndexError) as e:
        m = re.search(r"tensor\(s\) '([^',]+)", str(e))
        line = find_line(text, m.group(1)) if m else None
        where = f"{files.graph_path}:{line}" if line else files.graph_path
        raise ParserRefusal(f"{where}: shape inference failed: {e}") from None
    for t in graph.tensors.values():
        if t.shape is not None and math.prod(t.shape) > MAX_ELEMENTS:
            raise ModelImportError(f"{files.graph_path}: tensor {t.name!r} would have shape {list(t.shape)} "
                                   f"({math.prod(t.shape)} elements), more than the {MAX_ELEMENTS} supported")
    return graph
