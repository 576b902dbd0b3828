"""estuary.js_worker, the process behind js/webnn: its frames, tensors, graphs and errors."""
import io
import json
import os
import struct
import subprocess
import sys

import numpy as np

from estuary.js_worker import Worker

HEAD = struct.Struct("<II")


def frame(header, buffers=()):
    text = json.dumps(dict(header, sizes=[len(b) for b in buffers])).encode()
    return HEAD.pack(len(text), sum(len(b) for b in buffers)) + text + b"".join(buffers)


def replies(raw):
    out, at = [], 0
    while at < len(raw):
        hl, bl = HEAD.unpack_from(raw, at)
        header = json.loads(raw[at + 8:at + 8 + hl])
        body, buffers = raw[at + 8 + hl:at + 8 + hl + bl], []
        for size in header["sizes"]:
            buffers.append(body[:size])
            body = body[size:]
        out.append((header, buffers))
        at += 8 + hl + bl
    return out


def serve(*frames):
    out = io.BytesIO()
    worker = Worker(out)
    worker.serve(io.BytesIO(b"".join(frames)))
    return worker, replies(out.getvalue())


F32 = {"dataType": "float32", "shape": [2, 3]}
GRAPH = {"inputs": {"x": {"descriptor": F32}, "c": {"descriptor": F32, "data": {"buffer": 0}, "constant": True}},
         "operators": [{"name": "sub", "arguments": [{"a": "x"}, {"b": "c"}], "outputs": "d"},
                       {"name": "relu", "arguments": [{"input": "d"}], "outputs": "y"}],
         "outputs": ["y"]}


def test_build_write_dispatch_read():
    c = np.array([[1, -2, 3], [0.5, 0, -1]], np.float32)
    x = np.array([[2, -3, 1], [1, -1, -5]], np.float32)
    worker, got = serve(
        frame({"op": "build", "id": 1, "graph_id": 10, "graph": GRAPH}, [c.tobytes()]),
        frame({"op": "build", "id": 2, "graph_id": 11, "graph": GRAPH}, [c.tobytes()]),  # same document: cached
        frame({"op": "createTensor", "id": 3, "tensor": 1, **F32}),
        frame({"op": "createTensor", "id": 4, "tensor": 2, **F32}),
        frame({"op": "writeTensor", "tensor": 1, **F32}, [x.tobytes()]),
        frame({"op": "dispatch", "graph": 11, "inputs": {"x": 1}, "outputs": {"y": 2}}),
        frame({"op": "readTensor", "id": 5, "tensor": 2}))
    assert [h["id"] for h, _ in got] == [1, 2, 3, 4, 5] and all(h["ok"] for h, _ in got)
    assert got[0][0]["outputs"] == {"y": {"shape": [2, 3], "dataType": "float32"}}
    assert worker.graphs[10] is worker.graphs[11]
    y = np.frombuffer(got[4][1][0], np.float32).reshape(2, 3)
    np.testing.assert_array_equal(y, np.maximum(x.astype(np.float64) - c, 0).astype(np.float32))


def test_builds_go_through_the_compile_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ESTUARY_CACHE", str(tmp_path))
    c = np.arange(6, dtype=np.float32).tobytes()
    build = frame({"op": "build", "id": 1, "graph_id": 1, "graph": GRAPH}, [c])
    (first, _), = serve(build)[1]
    (second, _), = serve(build)[1]  # a new process: the compile cache, not the in-memory table
    (other, _), = serve(frame({"op": "build", "id": 1, "graph_id": 1, "graph": GRAPH}, [bytes(24)]))[1]
    assert (first["fromCache"], second["fromCache"], other["fromCache"]) == (False, True, False)
    assert len([n for n in os.listdir(tmp_path) if n.endswith(".vmfb")]) == 2


def test_errors_are_replies_and_failed_dispatches_poison_their_outputs():
    bad = {"inputs": {"x": {"descriptor": F32}}, "operators": [{"name": "frobnicate", "arguments": [{"input": "x"}],
                                                               "outputs": "y"}], "outputs": ["y"]}
    _, got = serve(
        frame({"op": "build", "id": 1, "graph_id": 1, "graph": bad}),
        frame({"op": "createTensor", "id": 2, "tensor": 7, **F32}),
        frame({"op": "dispatch", "graph": 99, "inputs": {}, "outputs": {"y": 7}}),  # no such graph
        frame({"op": "readTensor", "id": 3, "tensor": 7}),
        frame({"op": "nonsense", "id": 4}))
    (h1, _), (h2, _), (h3, _), (h4, _) = got
    assert not h1["ok"] and "frobnicate" in h1["error"]["message"] and "unsupported WebNN operation" in h1["error"]["message"]
    assert h1["error"]["message"].startswith("<MLGraphBuilder graph>: "), h1["error"]["message"]
    assert h2["ok"]
    assert not h3["ok"] and h3["error"]["name"] == "KeyError"
    assert not h4["ok"] and "nonsense" in h4["error"]["message"]


def test_the_process_speaks_frames_on_stdout_only():
    proc = subprocess.run([sys.executable, "-m", "estuary.js_worker"], input=frame({"op": "hello", "id": 1}),
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [(header, _)] = replies(proc.stdout)
    assert header["ok"] and "float32" in header["limits"]["conv2d"]["input"]["dataTypes"]
