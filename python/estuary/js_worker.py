"""The Estuary side of the WebNN JavaScript bridge (js/webnn/): one long-lived process per Node
program, run as `python -m estuary.js_worker`, speaking length-prefixed binary frames on
stdin/stdout.

    frame  = u32le header_len | u32le body_len | header (UTF-8 JSON) | body
    header = {"op": ..., "id"?: n, "sizes"?: [bytes of each buffer], ...}; the body is the
             buffers back to back (tensor bytes in native little-endian order, never base64)

Requests that carry an "id" get exactly one reply frame {"id", "ok": true, ...} or
{"id", "ok": false, "error": {"name", "message"}}; the others (writeTensor, dispatch, destroy*)
are fire and forget, in order. The JS side has validated every argument by the time a request
arrives; what can still fail here is Estuary itself (an operator it lacks, a compile or run
error), reported with the Estuary error's class name and message.

Tensors live here (host arrays the compiled models read and write), so data crosses the pipe only
in writeTensor and readTensor; a graph is the compiled model of a WebNN JSON document, compiled
through Estuary's compile cache and kept per document hash, so an identical build compiles once.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
_HEAD = struct.Struct("<II")


class _Failed:
    """A tensor whose producing dispatch failed: reading it reports that failure."""

    def __init__(self, name: str, message: str) -> None:
        self.name, self.message = name, message


class Worker:
    """State of one JS process: tensors and compiled graphs, by the ids the JS side assigns."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.tensors: dict[int, Array | _Failed] = {}
        self.graphs: dict[int, Any] = {}  # graph id -> estuary Model
        self.cache: dict[str, Any] = {}  # document hash -> estuary Model
        self.checking: tuple[Any, int] | None = None  # the compiler session checks share, and its checks so far
        self.ops: dict[str, Callable[[dict[str, Any], list[memoryview]], tuple[dict[str, Any], list[bytes]]]] = {
            "hello": self.hello, "build": self.build, "check": self.check, "createTensor": self.create_tensor,
            "writeTensor": self.write_tensor, "readTensor": self.read_tensor, "dispatch": self.dispatch,
            "destroyTensor": self.destroy_tensor, "destroyGraph": self.destroy_graph,
        }

    # ------------------------------------------------------------ framing

    def send(self, header: dict[str, Any], buffers: Sequence[bytes] = ()) -> None:
        header = dict(header, sizes=[len(b) for b in buffers])
        text = json.dumps(header).encode()
        self.out.write(_HEAD.pack(len(text), sum(len(b) for b in buffers)) + text)
        for b in buffers:
            self.out.write(b)
        self.out.flush()

    def serve(self, inp: IO[bytes]) -> None:
        while True:
            head = _read_exactly(inp, _HEAD.size)
            if head is None:
                return  # the Node process closed the pipe
            header_len, body_len = _HEAD.unpack(head)
            header = json.loads(_read_exactly(inp, header_len) or b"{}")
            body = memoryview(_read_exactly(inp, body_len) or b"")
            buffers, at = [], 0
            for size in header.get("sizes", []):
                buffers.append(body[at:at + size])
                at += size
            self.handle(header, buffers)

    def handle(self, header: dict[str, Any], buffers: list[memoryview]) -> None:
        rid = header.get("id")
        try:
            op = self.ops.get(header.get("op", ""))
            if op is None:
                raise ValueError(f"unknown request {header.get('op')!r}")
            reply, data = op(header, buffers)
        except Exception as e:  # every failure goes back to JS as a rejected promise
            from estuary.base.errors import EstuaryError

            name = e.name if isinstance(e, _Reported) else type(e).__name__
            if not isinstance(e, (EstuaryError, _Reported)):
                traceback.print_exc(file=sys.stderr)
            if rid is None:
                print(f"estuary.js_worker: {header.get('op')}: {name}: {e}", file=sys.stderr)
            else:
                self.send({"id": rid, "ok": False, "error": {"name": name, "message": str(e)}})
            return
        if rid is not None:
            self.send({"id": rid, "ok": True, **reply}, data)

    # ------------------------------------------------------------ requests

    def hello(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        from estuary import webnn
        from estuary.base import dtypes

        by_target = {t: webnn.MLContext({"accelerated": t != "llvm-cpu"}).opSupportLimits()
                     for t in ("llvm-cpu", "vulkan-spirv")}
        return {"limits": by_target["llvm-cpu"], "limitsByTarget": by_target, "dataTypes": list(dtypes.ALL),
                "dynamicOperations": webnn.dynamic_operations(), "pid": os.getpid()}, []

    def build(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        """Compile the WebNN JSON document through the compile cache (estuary.cache): written with
        its constants ({"buffer": i} into this frame, or {"tensor": id}) as a side file, it is
        what `estuary.load` compiles once per content, target and options."""
        import estuary
        from estuary.base.errors import EstuaryError

        doc, target = h["graph"], h.get("target", "llvm-cpu")
        constants: list[bytes | memoryview] = []
        for entry in doc["inputs"].values():
            if entry.get("constant"):
                ref = entry["data"]
                constants.append(bufs[ref["buffer"]] if "buffer" in ref else _array(self.tensors[ref["tensor"]]).tobytes())
        digest = hashlib.sha256(json.dumps([doc, target], sort_keys=True).encode())
        for b in constants:
            digest.update(len(b).to_bytes(8, "little"))
            digest.update(b)
        key = digest.hexdigest()
        model = self.cache.get(key)
        if model is None:
            with tempfile.TemporaryDirectory(prefix="estuary-webnn-") as folder:
                blob = bytearray()
                for entry, data in zip((e for e in doc["inputs"].values() if e.get("constant")), constants):
                    blob += bytes(-len(blob) % 8)  # 8-byte aligned tensors
                    entry["data"] = {"file": "weights.bin", "byteOffset": len(blob)}
                    blob += data
                with open(os.path.join(folder, "weights.bin"), "wb") as f:
                    f.write(blob)
                path = os.path.join(folder, "graph.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(doc, f)
                try:
                    model = estuary.load(path, device=h.get("device"), target=target, format="webnn")
                except EstuaryError as e:  # messages name the graph, not the temporary file
                    e.args = (str(e).replace(path, "<MLGraphBuilder graph>"),)
                    raise
            self.cache[key] = model
        self.graphs[h["graph_id"]] = model
        return {"outputs": {n: {"shape": list(s), "dataType": d} for n, s, d in model.outputs},
                "fromCache": bool(getattr(model, "from_cache", False))}, []

    def check(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        """Import and verify a WebNN JSON document without compiling it (graph inputs only, no
        constants): its outputs' descriptors and a digest of the imported module (two documents
        of one digest compute alike), or the importer's error. The JS tests use it to hold the
        builder's own validation and shapes against Estuary's, thousands of small graphs: they
        share a compiler session (making one costs some 30 ms), a new one every 500."""
        from estuary.dialects.graph import free_session, new_session
        from estuary.importers.webnn import load_graph
        from estuary.importers.webnn.dynamic import ml_shape

        if self.checking is None or self.checking[1] >= 500:
            if self.checking is not None:
                free_session(self.checking[0])
            self.checking = (new_session(), 0)
        session, count = self.checking
        self.checking = (session, count + 1)
        nn = load_graph(h["graph"], session=session)  # the module goes with `nn`; the session stays
        # dynamic dimensions as MLOperand.shape reports them
        return {"outputs": {n: {"shape": ml_shape(s.shape), "dataType": s.dtype} for n, s in nn.outputs},
                "digest": hashlib.sha256(nn.asm().encode()).hexdigest()[:16]}, []

    def create_tensor(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        from estuary.base import dtypes

        dtype = dtypes.to_numpy(h["dataType"])
        if bufs:  # createConstantTensor: its data, copied
            self.tensors[h["tensor"]] = np.frombuffer(bufs[0], dtype=dtype).reshape(h["shape"]).copy()
        else:
            self.tensors[h["tensor"]] = np.zeros(h["shape"], dtype=dtype)
        return {}, []

    def write_tensor(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        array = self.tensors[h["tensor"]]
        if isinstance(array, _Failed):  # a write replaces the failed contents
            return self.create_tensor(h, bufs)
        np.copyto(array.reshape(-1).view(np.uint8), np.frombuffer(bufs[0], dtype=np.uint8))
        return {}, []

    def read_tensor(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        array = self.tensors[h["tensor"]]
        if isinstance(array, _Failed):
            raise _Reported(array.name, array.message)
        return {}, [array.tobytes()]

    def dispatch(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        """Run a graph on tensors; on failure its output tensors hold the error for readTensor."""
        try:
            feeds = {}
            for name, tid in h["inputs"].items():
                array = self.tensors[tid]
                if isinstance(array, _Failed):
                    raise _Reported(array.name, f"input {name!r} comes from a failed dispatch: {array.message}")
                feeds[name] = array
            results = self.graphs[h["graph"]].run(feeds)
        except Exception as e:
            failed = _Failed(type(e).__name__ if not isinstance(e, _Reported) else e.name, str(e))
            for tid in h["outputs"].values():
                self.tensors[tid] = failed
            raise
        for name, tid in h["outputs"].items():
            target = self.tensors[tid]
            result = np.asarray(results[name])
            if isinstance(target, _Failed) or target.dtype != result.dtype:
                self.tensors[tid] = result.astype(result.dtype, copy=True)
            else:
                np.copyto(target, result.reshape(target.shape))
        return {}, []

    def destroy_tensor(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        self.tensors.pop(h["tensor"], None)
        return {}, []

    def destroy_graph(self, h: dict[str, Any], bufs: list[memoryview]) -> tuple[dict[str, Any], list[bytes]]:
        self.graphs.pop(h["graph"], None)  # the compiled model stays in the cache for a rebuild
        return {}, []


class _Reported(Exception):
    """A stored failure re-raised under its original error name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def _array(t: Array | _Failed) -> Array:
    if isinstance(t, _Failed):
        raise _Reported(t.name, t.message)
    return t


def _read_exactly(inp: IO[bytes], n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = inp.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main() -> None:
    # the protocol owns the original stdout; anything else printed (Python or IREE) goes to stderr
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    Worker(out).serve(sys.stdin.buffer)


if __name__ == "__main__":
    main()
