"""Mutators per format: each takes a seed path and a numpy Generator and writes one mutant.

Byte-level mutations (flips, truncations, inserted and repeated chunks) reach the parsers'
framing; structure-aware ones keep the file parseable so the mutation reaches the importers and
the compiler: JSON trees (WebNN, NNAPI) and Core ML protobuf messages get extreme numbers, wrong
types, deleted or repeated entries and swapped names; NNEF text gets token-level edits, its
tensor files header edits, its archives byte damage."""
from __future__ import annotations

import copy
import io
import json
import math
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

EXTREME_INTS = [0, -1, 1, 2, 3, 7, 255, 256, 2**15, 2**31 - 1, 2**31, -2**31, 2**32, 2**63 - 1, -2**63, 2**64, 10**30]
EXTREME_FLOATS = [0.0, -0.0, 1e-45, 1e38, -1e38, 1e308, float("inf"), float("nan"), 0.5, -3.5]
EXTREME_TEXT_NUMBERS = ["0", "-1", "2147483647", "2147483648", "-2147483649", "4294967296", "99999999999999999999",
                        "1e38", "1e400", "-0.0", "nan", "inf", "1.5", "65536", "3"]


def _pick(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


# ---------------------------------------------------------------- bytes

def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """Flip bytes, truncate, insert random bytes, repeat or delete a chunk."""
    b = bytearray(data)
    kind = int(rng.integers(6))
    if not b or kind == 0:  # truncate
        return bytes(b[:int(rng.integers(0, max(len(b), 1)))])
    if kind <= 2:  # flip 1..8 bytes
        for _ in range(int(rng.integers(1, 9))):
            b[int(rng.integers(len(b)))] ^= int(rng.integers(1, 256))
        return bytes(b)
    at = int(rng.integers(len(b)))
    n = int(rng.integers(1, 64))
    if kind == 3:  # insert random bytes
        return bytes(b[:at] + rng.integers(0, 256, n, dtype=np.uint8).tobytes() + b[at:])
    if kind == 4:  # repeat a chunk
        return bytes(b[:at + n] + b[at:at + n] * int(rng.integers(1, 8)) + b[at + n:])
    return bytes(b[:at] + b[at + n:])  # delete a chunk


# ---------------------------------------------------------------- JSON trees

def _paths(node: Any, here: tuple = ()) -> list[tuple]:
    out = [here]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, here + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, here + (i,))
    return out


def _get(node: Any, path: tuple) -> Any:
    for k in path:
        node = node[k]
    return node


def _strings(node: Any) -> list[str]:
    return [_get(node, p) for p in _paths(node) if isinstance(_get(node, p), str)] or ["x"]


def _replacement(rng: np.random.Generator, value: Any, strings: list[str]) -> Any:
    kind = int(rng.integers(10))
    if kind >= 8 and isinstance(value, int) and not isinstance(value, bool):
        return value + int(_pick(rng, [-1, 1]))  # a near miss reaches the type rules and lowering
    if kind == 0:
        return _pick(rng, EXTREME_INTS)
    if kind == 1:
        return _pick(rng, EXTREME_FLOATS)
    if kind == 2:
        return _pick(rng, strings)
    if kind == 3:
        return _pick(rng, [None, True, False, [], {}, "", [[]], [1, 2, 3, 4, 5, 6, 7, 8, 9]])
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + int(_pick(rng, [-2, -1, 1, 2, value, -2 * value - 1]))
    if isinstance(value, float):
        return value * float(_pick(rng, [-1.0, 0.0, 1e10, 1e-10]))
    if isinstance(value, list) and value:
        return value[:-1] if kind % 2 else value + [copy.deepcopy(value[-1])]
    if isinstance(value, dict) and value:
        return {k: v for k, v in value.items() if k != _pick(rng, list(value))}
    return _pick(rng, EXTREME_INTS)


def mutate_json_tree(doc: Any, rng: np.random.Generator, count: int = 1) -> Any:
    """`count` structure-aware edits of a JSON tree: replace a node, delete a key or an element,
    duplicate an element, swap two elements."""
    doc = copy.deepcopy(doc)
    strings = _strings(doc)
    for _ in range(count):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return doc
        path = _pick(rng, paths)
        parent, key = _get(doc, path[:-1]), path[-1]
        kind = int(rng.integers(5))
        if kind <= 1:
            parent[key] = _replacement(rng, parent[key], strings)
        elif kind == 2:
            del parent[key]
        elif kind == 3 and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif isinstance(parent, list) and len(parent) > 1:
            j = int(rng.integers(len(parent)))
            parent[key], parent[j] = parent[j], parent[key]
        else:
            parent[key] = _replacement(rng, parent[key], strings)
    return doc


def mutate_json_file(seed: Path, out: Path, rng: np.random.Generator) -> Path:
    text = seed.read_bytes()
    dest = out / seed.name
    if rng.random() < 0.2:
        dest.write_bytes(mutate_bytes(text, rng))
    else:
        doc = mutate_json_tree(json.loads(text), rng, int(rng.integers(1, 3)))
        dest.write_text(json.dumps(doc, allow_nan=True))
    return dest


# ---------------------------------------------------------------- NNEF

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+\.?\d*(?:[eE][+-]?\d+)?|'[^']*'|\S")
NNEF_NAMES = ["conv", "relu", "add", "mul", "reshape", "transpose", "max_pool", "avg_pool", "sum_reduce", "concat",
              "split", "slice", "pad", "external", "variable", "constant", "select", "matmul", "softmax", "sigmoid",
              "deconv", "box", "argmax_reduce", "tile", "squeeze", "unsqueeze", "linear", "copy", "fragment", "graph",
              "tensor", "scalar", "integer", "logical", "shape", "axes", "size", "stride", "padding", "border"]


def mutate_nnef_text(text: str, rng: np.random.Generator) -> str:
    """Token-level edits of graph.nnef: numbers to extreme values, tokens deleted, repeated,
    swapped or replaced by names from the document or NNEF's vocabulary, lines repeated."""
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    if not tokens:
        return text
    kind = int(rng.integers(7))
    if kind == 6:  # repeat or delete a line
        lines = text.splitlines(keepends=True)
        i = int(rng.integers(len(lines)))
        lines[i:i + 1] = [] if rng.random() < 0.5 else [lines[i]] * int(rng.integers(2, 6))
        return "".join(lines)
    start, end, tok = _pick(rng, tokens)
    numbers = [t for t in tokens if t[2][0].isdigit()]
    if kind <= 1 and numbers:
        start, end, tok = _pick(rng, numbers)
        new = _pick(rng, EXTREME_TEXT_NUMBERS)
    elif kind == 2:
        new = ""
    elif kind == 3:
        new = tok * int(rng.integers(2, 4))
    elif kind == 4:
        new = _pick(rng, [t[2] for t in tokens if t[2][0].isalpha()] or ["x"])
    else:
        new = _pick(rng, NNEF_NAMES + ["(", ")", "[", "]", ",", ";", "=", "{", "}", "<", ">", "'", "-"])
    return text[:start] + new + text[end:]


def mutate_dat(data: bytes, rng: np.random.Generator) -> bytes:
    """A tensor file with a header field (length, rank, extents, bits, code, parameters) set to
    an extreme value, or byte damage."""
    if rng.random() < 0.3 or len(data) < 128:
        return mutate_bytes(data, rng)
    b = bytearray(data)
    field = int(_pick(rng, [4, 8, 12, 16, 20, 24, 44, 48, 52, 56]))  # u32 fields of the 128-byte header
    b[field:field + 4] = (int(_pick(rng, EXTREME_INTS)) & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(b)


def mutate_nnef(seed: Path, out: Path, rng: np.random.Generator) -> Path:
    if seed.is_dir():
        dest = out / seed.name
        shutil.copytree(seed, dest)
        if rng.random() < 0.75:
            graph = dest / "graph.nnef"
            text = graph.read_text()
            for _ in range(int(rng.integers(1, 4))):
                text = mutate_nnef_text(text, rng)
            graph.write_text(text)
        else:
            dat = _pick(rng, sorted(dest.glob("*.dat")))
            dat.write_bytes(mutate_dat(dat.read_bytes(), rng))
        return dest
    dest = out / seed.name
    if rng.random() < 0.4:
        dest.write_bytes(mutate_bytes(seed.read_bytes(), rng))
        return dest
    # rebuild the archive with one member mutated (a consistent container around a damaged model)
    with tarfile.open(seed) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]
    i = int(rng.integers(len(members)))
    m, data = members[i]
    data = mutate_nnef_text(data.decode(), rng).encode() if m.name.endswith(".nnef") else mutate_dat(data, rng)
    members[i] = (m, data)
    with tarfile.open(dest, "w:gz") as tar:
        for m, data in members:
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return dest


# ---------------------------------------------------------------- Core ML protobuf

def _repeated(fd: Any) -> bool:
    is_repeated = getattr(fd, "is_repeated", None)  # newer protobuf; `label` is gone there
    return bool(is_repeated) if is_repeated is not None else fd.label == fd.LABEL_REPEATED


def _fields(msg: Any, out: list) -> list:
    """(message, field descriptor) pairs of every set field in `msg`, recursively."""
    for fd, value in msg.ListFields():
        out.append((msg, fd))
        if fd.type == fd.TYPE_MESSAGE:
            items = value if _repeated(fd) else [value]
            if fd.message_type.GetOptions().map_entry:
                items = list(value.values()) if hasattr(value, "values") else []
                items = [v for v in items if hasattr(v, "ListFields")]
            for item in items[:64]:  # weights lists are not messages; layer lists are short
                _fields(item, out)
    return out


def _scalar_value(fd: Any, rng: np.random.Generator, strings: list[str]) -> Any:
    if fd.type == fd.TYPE_STRING:
        return _pick(rng, strings + ["", "x" * 300])
    if fd.type == fd.TYPE_BYTES:
        return rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
    if fd.type == fd.TYPE_BOOL:
        return bool(rng.integers(2))
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        v = float(_pick(rng, EXTREME_FLOATS))
        return v if fd.type == fd.TYPE_DOUBLE or not math.isfinite(v) or abs(v) < 3e38 else 3e38
    if fd.type == fd.TYPE_ENUM:
        return int(_pick(rng, [v.number for v in fd.enum_type.values] + [99]))
    lo, hi = {fd.TYPE_INT32: (-2**31, 2**31 - 1), fd.TYPE_SINT32: (-2**31, 2**31 - 1), fd.TYPE_SFIXED32: (-2**31, 2**31 - 1),
              fd.TYPE_UINT32: (0, 2**32 - 1), fd.TYPE_FIXED32: (0, 2**32 - 1),
              fd.TYPE_UINT64: (0, 2**64 - 1), fd.TYPE_FIXED64: (0, 2**64 - 1)}.get(fd.type, (-2**63, 2**63 - 1))
    return min(max(int(_pick(rng, EXTREME_INTS)), lo), hi)


def mutate_coreml_message(model: Any, rng: np.random.Generator) -> None:
    """One structure-aware edit of a Core ML Model message: a scalar field set to an extreme or
    other valid value, a repeated entry deleted, repeated or changed, a submessage cleared."""
    fields = _fields(model, [])
    strings = [v for m, fd in fields if fd.type == fd.TYPE_STRING and not _repeated(fd)
               for v in [getattr(m, fd.name)]] or ["x"]
    msg, fd = _pick(rng, fields)
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        msg.ClearField(fd.name)
        return
    kind = int(rng.integers(4))
    if _repeated(fd):
        values = getattr(msg, fd.name)
        if len(values) == 0:
            return
        i = int(rng.integers(len(values)))
        if kind == 0:
            del values[i]
        elif kind == 1 and fd.type == fd.TYPE_MESSAGE:
            values.add().CopyFrom(values[i])
        elif fd.type == fd.TYPE_MESSAGE:
            values[i].Clear() if kind == 2 else msg.ClearField(fd.name)
        elif kind == 1:
            values.append(values[i])
        else:
            values[i] = _scalar_value(fd, rng, strings)
        return
    if fd.type == fd.TYPE_MESSAGE:
        msg.ClearField(fd.name)
        return
    setattr(msg, fd.name, _scalar_value(fd, rng, strings))


def mutate_mlpackage(seed: Path, out: Path, rng: np.random.Generator) -> Path:
    """An .mlpackage with its model proto mutated (as a .mlmodel), its weight blob or its
    manifest damaged."""
    dest = out / seed.name
    shutil.copytree(seed, dest)
    roll = rng.random()
    if roll < 0.6:
        proto = next(dest.rglob("*.mlmodel"))
        mutate_coreml(proto, proto.parent, rng)
    elif roll < 0.85:
        blob = _pick(rng, sorted(dest.rglob("*.bin")))
        blob.write_bytes(mutate_bytes(blob.read_bytes(), rng))
    else:
        manifest = dest / "Manifest.json"
        manifest.write_bytes(mutate_bytes(manifest.read_bytes(), rng))
    return dest


def mutate_coreml(seed: Path, out: Path, rng: np.random.Generator) -> Path:
    from coremltools.proto import Model_pb2

    if seed.is_dir():
        return mutate_mlpackage(seed, out, rng)
    dest = out / seed.name
    data = seed.read_bytes()
    if rng.random() < 0.25:
        dest.write_bytes(mutate_bytes(data, rng))
        return dest
    model = Model_pb2.Model()
    model.ParseFromString(data)
    for _ in range(int(rng.integers(1, 4))):
        mutate_coreml_message(model, rng)
    dest.write_bytes(model.SerializeToString())
    return dest


def mutate_artefact(seed: Path, out: Path, rng: np.random.Generator) -> Path:
    dest = out / seed.name
    dest.write_bytes(mutate_bytes(seed.read_bytes(), rng))
    return dest


MUTATORS = {"webnn": mutate_json_file, "nnapi": mutate_json_file, "nnef": mutate_nnef, "coreml": mutate_coreml,
            "artefact": mutate_artefact}
