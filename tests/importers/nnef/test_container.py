"""NNEF containers: folders and tar archives read safely (nothing escapes, nothing is written)."""
import io
import os
import struct
import tarfile

import numpy as np
import pytest

from estuary.base.errors import ModelImportError
from estuary.importers.nnef.container import ModelFiles

GRAPH = b"version 1.0;\ngraph g(x) -> (y) { x = external(shape = [2]); y = x; }\n"


def dat(array):
    a = np.asarray(array, "<f4")
    h = b"N\xef\x01\x00" + struct.pack("<II", a.nbytes, a.ndim) + struct.pack("<8I", *(list(a.shape) + [0] * (8 - a.ndim)))
    h += struct.pack("<II", 32, 0)
    return h.ljust(128, b"\0") + a.tobytes()


def make_tar(path, members, mode="w:gz"):
    with tarfile.open(path, mode) as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = data
                tar.addfile(info)
    return str(path)


def test_folder_and_archive_read_the_same(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = tmp_path / "model"
    (d / "conv1").mkdir(parents=True)
    (d / "graph.nnef").write_bytes(GRAPH)
    (d / "conv1" / "filter.dat").write_bytes(dat(w))
    tgz = make_tar(tmp_path / "m.tgz", [("graph.nnef", GRAPH, "file"), ("conv1/filter.dat", dat(w), "file")])
    for source in (str(d), tgz):
        files = ModelFiles(source)
        assert files.graph_text() == GRAPH.decode()
        assert np.array_equal(files.read_variable("conv1/filter", [2, 3]), w)
        assert files.quant_text() is None


def test_archive_with_top_folder(tmp_path):
    tgz = make_tar(tmp_path / "m.tar.gz", [("net/graph.nnef", GRAPH, "file"), ("net/w.dat", dat([1, 2]), "file")])
    files = ModelFiles(tgz)
    assert np.array_equal(files.read_variable("w", [2]), [1, 2])


@pytest.mark.parametrize("member,kind,data", [
    ("../evil.dat", "file", b"x"),
    ("/etc/evil.dat", "file", b"x"),
    ("a/../../evil.dat", "file", b"x"),
    ("w.dat", "symlink", "/etc/passwd"),
    ("w.dat", "hardlink", "graph.nnef"),
])
def test_hostile_archive_members_refused(tmp_path, member, kind, data):
    before = set(os.listdir(tmp_path))
    tgz = make_tar(tmp_path / "m.tgz", [("graph.nnef", GRAPH, "file"), (member, data, kind)])
    with pytest.raises(ModelImportError, match="refused|safe relative path|must not contain"):
        ModelFiles(tgz)
    assert set(os.listdir(tmp_path)) == before | {"m.tgz"}  # nothing extracted anywhere


@pytest.mark.parametrize("label", ["../outside", "/abs/path", "a/./b", "a\\b", ""])
def test_hostile_labels_refused(tmp_path, label):
    (tmp_path / "graph.nnef").write_bytes(GRAPH)
    with pytest.raises(ModelImportError, match="label"):
        ModelFiles(str(tmp_path)).read_variable(label, [2])


def test_symlinked_variable_outside_folder_refused(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "graph.nnef").write_bytes(GRAPH)
    (tmp_path / "secret.dat").write_bytes(dat([1, 2]))
    os.symlink(tmp_path / "secret.dat", d / "w.dat")
    with pytest.raises(ModelImportError, match="outside the model folder"):
        ModelFiles(str(d)).read_variable("w", [2])


def test_truncated_variable_in_archive(tmp_path):
    tgz = make_tar(tmp_path / "m.tgz", [("graph.nnef", GRAPH, "file"), ("w.dat", dat([1, 2, 3])[:-4], "file")])
    with pytest.raises(ModelImportError, match="truncated data"):
        ModelFiles(tgz).read_variable("w", [3])


def test_corrupt_archive(tmp_path):
    p = tmp_path / "bad.tgz"
    p.write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(ModelImportError, match="not a readable tar archive"):
        ModelFiles(str(p))


def test_missing_variable_and_graph(tmp_path):
    (tmp_path / "graph.nnef").write_bytes(GRAPH)
    with pytest.raises(ModelImportError, match="data file 'w.dat' is missing"):
        ModelFiles(str(tmp_path)).read_variable("w", [2])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelImportError, match="no graph.nnef"):
        ModelFiles(str(empty)).graph_text()
