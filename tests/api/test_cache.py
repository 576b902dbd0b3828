"""The compile cache: estuary.load(model path) compiles once, then reuses the artefact; the key
follows the model's content, the target and options; entries are written atomically."""
import json
import os

import numpy as np
import pytest

import estuary
from estuary import cache
from helpers import graph, op


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ESTUARY_CACHE", str(folder))
    return folder


def write_model(path, scale=2.0):
    """y = x * scale + x, the scale a side-file constant (so the weights live beside the JSON)."""
    doc = graph({"x": ((2, 3), "float32")}, [op("mul", ("a", "x"), ("b", "s"), outputs="m"),
                                             op("add", ("a", "m"), ("b", "x"), outputs="y")], ["y"])
    doc["inputs"]["s"] = {"descriptor": {"shape": [1], "dataType": "float32"}, "constant": True,
                          "data": {"file": "s.bin", "byteOffset": 0}}
    path.write_text(json.dumps(doc))
    (path.parent / "s.bin").write_bytes(np.array([scale], "<f4").tobytes())
    return path


def test_second_load_comes_from_the_cache(tmp_path, cache_dir):
    model_path = write_model(tmp_path / "m.json")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    first = estuary.load(model_path)
    assert first.from_cache is False
    np.testing.assert_allclose(first.run({"x": x})["y"], x * 2 + x)
    second = estuary.load(str(model_path))
    assert second.from_cache is True and second.artifact_path == first.artifact_path
    assert os.path.dirname(second.artifact_path) == str(cache_dir)
    np.testing.assert_allclose(second.run({"x": x})["y"], x * 2 + x)
    assert [e.meta["source"] for e in cache.entries()] == [str(model_path)]


def test_key_follows_content_side_files_target_and_options(tmp_path):
    model_path = write_model(tmp_path / "m.json")
    cpu = estuary.compile_options("llvm-cpu")
    key = cache.cache_key(model_path, cpu)
    assert cache.cache_key(model_path, cpu) == key
    assert cache.cache_key(model_path, estuary.compile_options("vulkan-spirv")) != key
    assert cache.cache_key(model_path, estuary.compile_options("llvm-cpu", optimize=False)) != key
    assert cache.cache_key(model_path, cpu, shapes={"x": [2, 3]}) != key
    write_model(model_path, scale=3.0)  # only the side weight file changes
    assert cache.cache_key(model_path, cpu) != key
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(estuary.load(model_path).run({"x": x})["y"], x * 3 + x)


def test_folder_models_hash_every_file(tmp_path):
    folder = tmp_path / "net"
    folder.mkdir()
    (folder / "graph.nnef").write_text("version 1.0;\n")
    (folder / "w.dat").write_bytes(b"\0" * 8)
    before = cache.model_digest(folder)
    (folder / "w.dat").write_bytes(b"\0" * 7 + b"\1")
    changed = cache.model_digest(folder)
    assert changed != before
    (folder / "w.dat").rename(folder / "v.dat")  # same bytes, another name
    assert cache.model_digest(folder) not in (before, changed)


def test_versions_are_part_of_the_key(tmp_path, monkeypatch):
    model_path = write_model(tmp_path / "m.json")
    options = estuary.compile_options()
    key = cache.cache_key(model_path, options)
    monkeypatch.setattr(estuary, "__version__", "999.0")
    assert cache.cache_key(model_path, options) != key


def test_writes_are_atomic(tmp_path, cache_dir, monkeypatch):
    """A write that fails halfway leaves no entry and no temporary file behind."""
    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.os, "replace", broken_replace)
    with pytest.raises(estuary.EstuaryError, match="cannot write to the compile cache"):
        cache.store("k" * 32, b"data", {"created": 0})
    assert os.listdir(cache_dir) == []
    monkeypatch.undo()
    monkeypatch.setenv("ESTUARY_CACHE", str(cache_dir))
    entry = cache.store("k" * 32, b"data", {"created": 0})
    assert sorted(os.listdir(cache_dir)) == ["k" * 32 + ".json", "k" * 32 + ".vmfb"]
    assert open(entry.vmfb, "rb").read() == b"data"


def test_damaged_entry_is_recompiled(tmp_path):
    model_path = write_model(tmp_path / "m.json")
    first = estuary.load(model_path)
    with open(first.artifact_path, "r+b") as f:
        f.seek(200)
        f.write(b"\xff\xff\xff\xff")
    again = estuary.load(model_path)
    assert again.from_cache is False
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(again.run({"x": x})["y"], x * 2 + x)


def test_list_and_clear(tmp_path, cache_dir):
    write_model(tmp_path / "m.json")
    estuary.load(tmp_path / "m.json")
    assert len(cache.entries()) == 1
    assert cache.clear() == 1
    assert cache.entries() == [] and os.listdir(cache_dir) == []
    assert estuary.load(tmp_path / "m.json").from_cache is False


def test_cache_dir_default(monkeypatch, tmp_path):
    monkeypatch.delenv("ESTUARY_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.cache_dir() == os.path.join(str(tmp_path), ".cache", "estuary")


def test_load_without_cache(tmp_path, cache_dir):
    write_model(tmp_path / "m.json")
    model = estuary.load(tmp_path / "m.json", cache=False)
    assert model.from_cache is False and model.artifact_path is None
    assert not cache_dir.exists()


def test_remembered_digests_still_see_edits(tmp_path):
    """The stat memo skips rehashing unchanged files, yet an edit of the same size is seen."""
    model_path = write_model(tmp_path / "m.json")
    x = np.ones((2, 3), np.float32)
    assert estuary.load(model_path).from_cache is False
    assert estuary.load(model_path).from_cache is True
    write_model(model_path, scale=5.0)  # same sizes, other weights
    again = estuary.load(model_path)
    assert again.from_cache is False
    np.testing.assert_allclose(again.run({"x": x})["y"], x * 5 + x)
    assert len(cache.entries()) == 2
