"""NNEF test utilities: write model folders (with an independent §5.2 tensor writer) and run them."""
import struct

import numpy as np

from helpers import run_model


def dat_bytes(array):
    """A §5.2 tensor file: float32/float64/float16 as IEEE float (code 0), integers as code 1
    (params[0] = 1 for signed), bool as 1-bit integers packed most significant bit first."""
    array = np.asarray(array)
    shape = list(array.shape)
    if array.dtype == np.bool_:
        bits, code, params = 1, 0x01, struct.pack("<I", 0)
        stream = "".join("1" if v else "0" for v in array.reshape(-1))
        stream += "0" * (-len(stream) % 8)
        data = bytes(int(stream[i:i + 8], 2) for i in range(0, len(stream), 8))
    elif array.dtype.kind == "f":
        bits, code, params = array.dtype.itemsize * 8, 0x00, b""
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    elif array.dtype.kind in "iu":
        bits, code = array.dtype.itemsize * 8, 0x01
        params = struct.pack("<I", 1 if array.dtype.kind == "i" else 0)
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    else:
        raise TypeError(f"cannot write {array.dtype}")
    head = b"N\xef" + bytes([1, 0]) + struct.pack("<II", len(data), len(shape))
    head += struct.pack("<8I", *(shape + [0] * (8 - len(shape))))
    head += struct.pack("<II", bits, code) + params.ljust(32, b"\0")
    return head.ljust(128, b"\0") + data


def write_model(tmp_path, graph_text, variables=None, quant=None, name="model"):
    """A model folder holding graph.nnef, '<label>.dat' per variable and optionally graph.quant."""
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "graph.nnef").write_text(graph_text)
    if quant is not None:
        (folder / "graph.quant").write_text(quant)
    for label, array in (variables or {}).items():
        path = folder / (label + ".dat")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dat_bytes(array))
    return str(folder)


def graph_text(inputs, outputs, body, extensions=(), fragments=""):
    """A graph.nnef document: inputs {name: shape} become externals; body is the statement text."""
    lines = ["version 1.0;"] + [f"extension {e};" for e in extensions] + [fragments]
    lines.append(f"graph G( {', '.join(inputs)} ) -> ( {', '.join(outputs)} )\n{{")
    for name, shape in inputs.items():
        lines.append(f"    {name} = external<scalar>(shape = {list(shape)});")
    lines += ["    " + s.strip() for s in body.strip().splitlines() if s.strip()]
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(path, feeds, target=None, shapes=None):
    """Compile an NNEF model (folder, archive or graph.nnef) and run it; returns {output: array}."""
    return run_model(path, feeds, "nnef", target, shapes=shapes)
