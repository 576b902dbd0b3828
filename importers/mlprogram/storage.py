"""Weight blobs of an ML Program (`weights/weight.bin`), read with coremltools' storage reader.

A blob file is a 64-byte header followed by blobs, each a 64-byte metadata record (sentinel
0xDEADBEEF, storage data type, size in bytes, data offset) and its data. coremltools' reader
(`libmilstoragepython`) memory-maps the file and trusts the offsets, so every record is checked
against the file's size here first: a truncated file or an offset out of range is a clear
ModelImportError instead of a crash. The extension module is loaded on its own, without running
`import coremltools` (its start-up imports the converters and torch).
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import struct
import sys
from types import ModuleType
from typing import Any

import numpy as np

from estuary.base.errors import ModelImportError

SENTINEL = 0xDEADBEEF
HEADER = 64
_MODULE = "_estuary_milstorage.libmilstoragepython"

# storage data type code -> (reader method, element bits)
_STORAGE_TYPES = {
    1: ("read_fp16_data", 16), 2: ("read_float_data", 32), 3: ("read_uint8_data", 8), 4: ("read_int8_data", 8),
    6: ("read_int16_data", 16), 7: ("read_uint16_data", 16), 8: ("read_int4_data", 4), 9: ("read_uint1_data", 1),
    10: ("read_uint2_data", 2), 11: ("read_uint4_data", 4), 12: ("read_uint3_data", 3), 13: ("read_uint6_data", 6),
    14: ("read_int32_data", 32), 15: ("read_uint32_data", 32),
}


def _storage_module() -> Any:
    if "coremltools.libmilstoragepython" in sys.modules:
        return sys.modules["coremltools.libmilstoragepython"]
    if _MODULE in sys.modules:
        return sys.modules[_MODULE]
    spec = importlib.util.find_spec("coremltools")
    folder = os.path.dirname(spec.origin) if spec and spec.origin else None
    found = [f for f in os.listdir(folder) if f.startswith("libmilstoragepython")] if folder else []
    if not found:
        raise ModelImportError("reading ML Program weights needs coremltools (pip install coremltools)")
    path = os.path.join(folder, found[0])  # type: ignore[arg-type]
    loader = importlib.machinery.ExtensionFileLoader(_MODULE, path)
    module_spec = importlib.util.spec_from_file_location(_MODULE, path, loader=loader)
    assert module_spec is not None
    module = importlib.util.module_from_spec(module_spec)
    loader.exec_module(module)
    package = ModuleType(_MODULE.split(".")[0])
    sys.modules[package.__name__] = package
    sys.modules[_MODULE] = module
    return module


class BlobFile:
    """One weight file; `read(offset, count, where)` returns the blob at `offset` as a flat numpy
    array of `count` elements (sub-byte types unpacked to uint8/int8)."""

    def __init__(self, path: str, shown: str) -> None:
        self.path, self.shown = path, shown
        try:
            self.size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(HEADER)
        except OSError as e:
            raise ModelImportError(f"{shown}: cannot read the weight file ({e.strerror})") from None
        if len(head) < 8:
            raise ModelImportError(f"{shown}: the weight file is truncated ({self.size} bytes)")
        count, version = struct.unpack("<II", head[:8])
        if version != 2:
            raise ModelImportError(f"{shown}: unknown weight file version {version} (expected 2)")
        self._reader: Any = None

    def read(self, offset: int, count: int, where: str) -> np.ndarray:
        if offset < HEADER or offset + HEADER > self.size:
            raise ModelImportError(f"{where}: blob offset {offset} is outside {self.shown} ({self.size} bytes)")
        with open(self.path, "rb") as f:
            f.seek(offset)
            meta = f.read(HEADER)
        sentinel, code, nbytes, data = struct.unpack("<IIQQ", meta[:24])
        if sentinel != SENTINEL:
            raise ModelImportError(f"{where}: no blob at offset {offset} of {self.shown} (bad sentinel)")
        if code not in _STORAGE_TYPES:
            raise ModelImportError(f"{where}: blob at offset {offset} has an unknown storage type {code}")
        if data + nbytes > self.size or data < offset + HEADER:
            raise ModelImportError(f"{where}: blob at offset {offset} runs past the end of {self.shown} "
                                   f"(data {data} + {nbytes} bytes > {self.size}); truncated file?")
        method, bits = _STORAGE_TYPES[code]
        if count * bits > nbytes * 8:
            raise ModelImportError(f"{where}: blob at offset {offset} holds {nbytes} bytes, "
                                   f"fewer than the {count} elements its type declares")
        if self._reader is None:
            self._reader = _storage_module()._BlobStorageReader(self.path)
        try:
            values = np.asarray(getattr(self._reader, method)(offset))
        except Exception as e:  # the reader's own consistency checks
            raise ModelImportError(f"{where}: cannot read the blob at offset {offset} of {self.shown}: {e}") from None
        if code == 1 and values.dtype == np.uint16:  # the reader returns float16 bit patterns
            values = values.view(np.float16)
        return values.reshape(-1)[:count]
