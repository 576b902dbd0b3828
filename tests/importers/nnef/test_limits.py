"""Limits on what a small NNEF file can claim (docs/nnef.md, "Limits"): each is a clear error naming
the limit and its environment variable, raised before the memory or the decompression is spent."""
import io
import resource
import tarfile
import time

import numpy as np
import pytest

import estuary
from estuary.base.errors import ModelImportError
from tests.importers.nnef.util import graph_text, run, write_model

GRAPH = "version 1.0;\ngraph g( x ) -> ( y )\n{{\n  x = external<scalar>(shape = [2]);\n  {body}\n}}\n"


def _model(tmp_path, body):
    return write_model(tmp_path, GRAPH.format(body=body))


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_huge_splat_constant_is_refused_before_allocation(tmp_path):
    """A 140-byte document asking for a 4 GiB constant allocated it before anything was checked."""
    path = _model(tmp_path, "c = constant<scalar>(shape = [1073741824], value = [0.5]);\n  y = add(x, 1.0);")
    before = _peak_mb()
    with pytest.raises(ModelImportError, match=r"constant 'c' of shape \[1073741824\] is 4294967296 bytes, "
                                               r"more than the limit of 268435456 \(ESTUARY_NNEF_MAX_CONSTANT_BYTES"):
        estuary.compile(path)
    assert _peak_mb() - before < 1024


def test_constant_limit_is_raised_by_its_variable(tmp_path, monkeypatch):
    path = _model(tmp_path, "c = constant<scalar>(shape = [2], value = [0.5]);\n  y = add(x, c);")
    monkeypatch.setenv("ESTUARY_NNEF_MAX_CONSTANT_BYTES", "7")
    with pytest.raises(ModelImportError, match=r"8 bytes, more than the limit of 7"):
        estuary.compile(path)
    monkeypatch.setenv("ESTUARY_NNEF_MAX_CONSTANT_BYTES", "8")
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(run(path, {"x": x})["y"], x + 0.5)
    monkeypatch.setenv("ESTUARY_NNEF_MAX_CONSTANT_BYTES", "lots")
    with pytest.raises(ModelImportError, match="ESTUARY_NNEF_MAX_CONSTANT_BYTES must be a whole number"):
        estuary.compile(path)


@pytest.mark.parametrize("literal", ["2147483648", "99999999999999999999"])
def test_integers_beyond_32_bits(tmp_path, literal):
    """The parser wrapped them: shape = [2147483648] was reported as [-2147483648]."""
    path = write_model(tmp_path, graph_text({"x": [1]}, ["y"], f"y = reshape(x, shape = [{literal}]);"))
    with pytest.raises(ModelImportError, match=rf"graph.nnef:\d+:\d+: the integer {literal} is larger than 2147483647"):
        estuary.compile(path)


def test_floats_with_large_exponents_are_not_integers(tmp_path):
    """An exponent's digits are not an integer literal: 1e+3000000000 is the float inf."""
    path = write_model(tmp_path, graph_text({"x": [2]}, ["y"], "y = mul(x, 1e+3000000000);\n"))
    assert np.isposinf(run(path, {"x": np.array([1, 2], np.float32)})["y"]).all()


def _tgz(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_compressed_text_bomb(tmp_path):
    """A small .tgz whose graph.nnef is 80 MB of text: refused from the member's header, before
    the text is decompressed or parsed (1.5 GB took 76 s and 4.7 GB before a clean error)."""
    text = GRAPH.format(body="y = relu(x);").encode() + b"#" * (80 << 20)
    path = _tgz(tmp_path / "bomb.tgz", [("graph.nnef", text)])
    assert (tmp_path / "bomb.tgz").stat().st_size < 1 << 20
    start = time.perf_counter()
    with pytest.raises(ModelImportError, match=r"archive member 'graph.nnef' is \d+ bytes, more than the limit "
                                               r"of 67108864 \(ESTUARY_NNEF_MAX_TEXT_BYTES raises it\)"):
        estuary.compile(path)
    assert time.perf_counter() - start < 5


def test_total_archive_size(tmp_path, monkeypatch):
    graph = GRAPH.format(body="y = relu(x);").encode()
    path = _tgz(tmp_path / "m.tgz", [("graph.nnef", graph), ("a.dat", b"\0" * 5000), ("b.dat", b"\0" * 5000)])
    x = np.array([-1, 2], np.float32)
    np.testing.assert_array_equal(run(path, {"x": x})["y"], np.maximum(x, 0))
    monkeypatch.setenv("ESTUARY_NNEF_MAX_ARCHIVE_BYTES", "9000")
    with pytest.raises(ModelImportError, match=r"m.tgz: the archive's content \(uncompressed, up to member "
                                               r"'b.dat'\) is \d+ bytes, more than the limit of 9000 "
                                               r"\(ESTUARY_NNEF_MAX_ARCHIVE_BYTES raises it\)"):
        estuary.compile(path)


def test_text_limit_in_a_folder(tmp_path, monkeypatch):
    path = _model(tmp_path, "y = relu(x);")
    monkeypatch.setenv("ESTUARY_NNEF_MAX_TEXT_BYTES", "50")
    with pytest.raises(ModelImportError, match=r"graph.nnef: graph.nnef is \d+ bytes, more than the limit of 50"):
        estuary.compile(path)
