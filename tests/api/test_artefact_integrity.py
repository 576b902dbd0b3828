"""Artefact integrity: a sealed SHA-256 record checked before IREE parses the bytes, and the
signature's schema; damaged artefacts are clear errors, never a crash or a raw exception."""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import estuary
from estuary.base import integrity
from estuary.base.errors import ExecutionError
from helpers import graph, op


@pytest.fixture(scope="module")
def art():
    doc = graph({"x": ((2, 3), "float32")}, [op("neg", ("input", "x"), outputs="y")], ["y"])
    return estuary.compile(doc)


def _reseal(data: bytes) -> bytes:
    """`data` (sealed) with its record recomputed: a file whose checksum matches bytes we changed."""
    body = data[:-integrity.RECORD_SIZE]
    return body + integrity.MARKER + hashlib.sha256(body).hexdigest().encode()


def test_sealed_artefact_is_a_zip_with_the_record_as_comment(art):
    import zipfile
    import io

    z = zipfile.ZipFile(io.BytesIO(art.vmfb))
    assert z.comment.startswith(integrity.MARKER) and len(z.comment) == integrity.RECORD_SIZE
    assert "module.fb" in z.namelist()
    body = art.vmfb[:-integrity.RECORD_SIZE]
    assert z.comment[len(integrity.MARKER):].decode() == hashlib.sha256(body).hexdigest()


@pytest.mark.skipif(shutil.which("iree-run-module") is None and not os.path.exists(
    os.path.join(os.path.dirname(sys.executable), "iree-run-module")), reason="no iree-run-module")
def test_iree_run_module_runs_a_sealed_artefact(art, tmp_path):
    tool = shutil.which("iree-run-module") or os.path.join(os.path.dirname(sys.executable), "iree-run-module")
    path = art.save(tmp_path / "neg.vmfb")
    # CPU artefacts take their output's storage as one more argument (docs/design.md)
    r = subprocess.run([tool, f"--module={path}", "--device=local-task", "--function=main",
                        "--input=2x3xf32=1.5", "--input=2x3xf32"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "2x3xf32=[-1.5 -1.5 -1.5][-1.5 -1.5 -1.5]" in r.stdout


def test_unsealed_vmfb_is_refused(art):
    body = art.vmfb[:-integrity.RECORD_SIZE]
    with pytest.raises(ExecutionError, match="no integrity record"):
        estuary.load(body)


def test_checksum_mismatch(art):
    bad = bytearray(art.vmfb)
    bad[len(bad) // 2] ^= 0x40
    with pytest.raises(ExecutionError, match=r"<\.vmfb bytes>: corrupted artefact \(checksum mismatch\)"):
        estuary.load(bytes(bad))


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace('"float32"', '"float30"'), "unknown dtype 'float30'"),
    (lambda s: s.replace("[2, 3]", "[2,-3]"), "is not a list of non-negative integers"),
    (lambda s: s.replace('"inputs"', '"inpuTS"'), "the signature has no list of inputs"),
    (lambda s: "[" + " " * (len(s) - 2) + "]", "the signature is not a JSON object"),
    (lambda s: s.replace('{"format"', '["format"'), "Expecting"),  # not JSON
])
def test_signature_schema(art, edit, message):
    """A file whose checksum matches but whose signature is not one the runtime can use: a clear
    error (it was a KeyError, a JSONDecodeError, ...)."""
    text = json.dumps(art.signature).encode()
    assert art.vmfb.count(text) == 1
    new = edit(text.decode()).encode()
    assert len(new) == len(text) and new != text  # same length: the flatbuffer stays well formed
    data = _reseal(art.vmfb.replace(text, new))
    with pytest.raises(ExecutionError, match=f"corrupted artefact \\(bad signature: .*({message})"):
        estuary.load(data)


_MUTANTS = r"""
import sys, numpy as np, estuary
from estuary.base.errors import EstuaryError
data = open(sys.argv[1], "rb").read()
rng = np.random.default_rng(int(sys.argv[2]))
for i in range(int(sys.argv[3])):
    b = bytearray(data)
    if i % 4 == 3:
        b = b[:int(rng.integers(0, len(b)))]
    else:
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(0, len(b)))] ^= int(rng.integers(1, 256))
    try:
        m = estuary.load(bytes(b))
        m.run({"x": np.ones((2, 3), np.float32)})
        print(i, "ok", flush=True)
    except EstuaryError as e:
        print(i, "error", str(e).splitlines()[0], flush=True)
    except BaseException as e:
        print(i, "raw", type(e).__name__, e, flush=True)
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_damaged_artefacts_are_clear_errors(art, tmp_path, seed):
    """Byte flips and truncations of a small artefact: each is 'corrupted artefact', none crashes
    the process (9 of 400 such mutants were SIGSEGV and 1 SIGILL before the checksum) or raises a
    raw exception."""
    path = art.save(tmp_path / "neg.vmfb")
    r = subprocess.run([sys.executable, "-c", _MUTANTS, str(path), str(seed), "100"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"the process died ({r.returncode}) after: {r.stdout[-500:]} {r.stderr[-2000:]}"
    lines = r.stdout.splitlines()
    assert len(lines) == 100
    assert all(" error " in line and "corrupted artefact" in line for line in lines), \
        [line for line in lines if "corrupted artefact" not in line][:5]
