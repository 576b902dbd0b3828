"""Artefact integrity: a SHA-256 record sealed into every .vmfb, checked before IREE parses it.

IREE's bytecode reader trusts its input: a flipped byte or a truncated file can crash the process
(SIGSEGV, SIGILL) or raise arbitrary exceptions. So the compiler seals each .vmfb with
`seal`, and `estuary.load` runs `verify` first: a damaged file is a clear error and IREE only ever
sees bytes Estuary wrote. The record is the .vmfb's zip archive comment (IREE writes .vmfb files
as zip archives ending in an end-of-central-directory record; IREE itself reads them from the
front), so the sealed file is still a valid zip and still runs in IREE's own tools
(`iree-run-module`). `check_signature` validates the signature's schema, so a file that passes
the checksum but carries a hand-made signature fails cleanly too.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from estuary.base import dims, dtypes

MARKER = b"estuary-sha256:"
RECORD_SIZE = len(MARKER) + 64  # the marker and 64 hex digits, at the very end of the file
_EOCD = b"PK\x05\x06"  # zip end-of-central-directory signature; the record is 22 bytes with its comment length last
MAX_DIM = 2**62  # any larger dimension cannot be a real tensor's


class IntegrityError(ValueError):
    """The bytes fail the integrity check; the message says how (runtime.py names the file)."""


def seal(vmfb: bytes) -> bytes:
    """`vmfb` with the integrity record appended: as the zip comment when the file ends in an
    end-of-central-directory record without one, else as plain trailing bytes (IREE ignores both)."""
    if len(vmfb) >= 22 and vmfb[-22:-18] == _EOCD and vmfb[-2:] == b"\0\0":
        vmfb = vmfb[:-2] + RECORD_SIZE.to_bytes(2, "little")
    return vmfb + MARKER + hashlib.sha256(vmfb).hexdigest().encode()


def verify(data: bytes | npt.NDArray[Any]) -> bytes | npt.NDArray[Any]:
    """The payload IREE may parse (all of `data`); IntegrityError if the record is missing or the
    checksum does not match."""
    view = (data.data if isinstance(data, np.ndarray) else memoryview(data)).cast("B")  # no copy of the artefact
    record = bytes(view[-RECORD_SIZE:])
    if len(view) <= RECORD_SIZE or not record.startswith(MARKER):
        raise IntegrityError("corrupted artefact or not built by Estuary (no integrity record: the file is "
                             "truncated, was built by IREE directly or by an Estuary older than 2026-11-26; "
                             "recompile it)")
    if hashlib.sha256(view[:-RECORD_SIZE]).hexdigest().encode() != record[len(MARKER):]:
        raise IntegrityError("corrupted artefact (checksum mismatch)")
    return data


def _tensor(entry: Any, where: str, table: dict[str, dims.Sym]) -> None:
    if not (isinstance(entry, list) and len(entry) == 3):
        raise IntegrityError(f"{where} is not [name, shape, dtype]: {entry!r:.80}")
    name, shape, dtype = entry
    if not isinstance(name, str):
        raise IntegrityError(f"{where}: name {name!r:.80} is not a string")
    if not (isinstance(shape, list) and len(shape) <= 64 and all(
            (type(d) is int and 0 <= d < MAX_DIM) or (isinstance(d, str) and len(d) < 1000) for d in shape)):
        raise IntegrityError(f"{where} {name!r}: shape {shape!r:.80} is not a list of non-negative integers "
                             f"and dimension expressions")
    try:
        bound = [dims.upper(dims.parse(d, table)) if isinstance(d, str) else d for d in shape]
    except dims.DimError as e:
        raise IntegrityError(f"{where} {name!r}: {e}") from None
    if math.prod(bound) >= MAX_DIM:
        raise IntegrityError(f"{where} {name!r}: shape {shape} has too many elements")
    if not isinstance(dtype, str) or (dtype != dtypes.BOOL and dtype not in dtypes.NUMPY):
        raise IntegrityError(f"{where} {name!r}: unknown dtype {dtype!r:.40}")


def _symbols(sig: dict[str, Any]) -> dict[str, dims.Sym]:
    """The symbol table of a signature's "dims" entry (dynamic dimensions), checked."""
    entry = sig.get("dims", {})
    if not isinstance(entry, dict) or not isinstance(entry.get("symbols", {}), dict) or not isinstance(
            entry.get("rules", []), list):
        raise IntegrityError("the signature's dims are not {symbols: {...}, rules: [...]}")
    try:
        table = {name: dims.Sym(name, *bounds) for name, bounds in entry.get("symbols", {}).items()
                 if isinstance(bounds, list) and len(bounds) == 2 and all(type(b) is int for b in bounds)}
        if len(table) != len(entry.get("symbols", {})):
            raise IntegrityError("the signature's dims.symbols are not name: [min, max]")
        dims.Unifier.from_text(r for r in entry.get("rules", []) if isinstance(r, str))
    except (dims.DimError, TypeError) as e:
        raise IntegrityError(f"the signature's dims: {e}") from None
    return table


def check_signature(sig: Any) -> dict[str, Any]:
    """`sig` (decoded JSON) if it has the schema the runtime relies on, else IntegrityError."""
    if not isinstance(sig, dict):
        raise IntegrityError("the signature is not a JSON object")
    table = _symbols(sig)
    for key in ("inputs", "outputs"):
        entries = sig.get(key)
        if not isinstance(entries, list):
            raise IntegrityError(f"the signature has no list of {key}")
        for i, entry in enumerate(entries):  # a name may repeat: a model may list an output twice
            _tensor(entry, f"{key[:-1]} {i}", table)
    for key in ("format", "source", "target", "default_function"):
        if key in sig and not isinstance(sig[key], str):
            raise IntegrityError(f"the signature's {key} is not a string")
    if "output_storage" in sig and not isinstance(sig["output_storage"], bool):
        raise IntegrityError("the signature's output_storage is not true or false")
    states = sig.get("states", [])
    if not isinstance(states, list):
        raise IntegrityError("the signature's states are not a list")
    for i, entry in enumerate(states):
        _tensor(entry, f"state {i}", {})
    functions = sig.get("functions", {})
    if not isinstance(functions, dict):
        raise IntegrityError("the signature's functions are not an object")
    for name, fn in functions.items():
        if not isinstance(fn, dict) or not isinstance(fn.get("entry"), str) or "functions" in fn:
            raise IntegrityError(f"the signature's function {name!r:.80} has no entry point")
        check_signature(fn)
    metadata = sig.get("metadata", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, (str, dict)) for v in metadata.values()):
        raise IntegrityError("the signature's metadata is not an object of strings")
    labels = sig.get("class_labels")
    if labels is not None and not (isinstance(labels, list) and (
            all(isinstance(x, str) for x in labels) or all(type(x) is int for x in labels))):
        raise IntegrityError("the signature's class_labels are not all strings or all integers")
    outputs = sig.get("label_outputs")
    if outputs is not None and not (isinstance(outputs, list) and all(isinstance(x, str) for x in outputs)):
        raise IntegrityError("the signature's label_outputs are not a list of names")
    return sig


def is_vmfb(head: bytes) -> bool:
    """Whether bytes start like a .vmfb (IREE's FlatBuffer, bare or in its zip wrapper)."""
    return head[4:8] == b"IREE" or (head.startswith(b"PK\x03\x04") and b"IREE" in head[:512])
