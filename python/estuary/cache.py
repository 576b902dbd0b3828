"""The compile cache: a model path compiles once per content, target and options, then loads.

An entry is `<key>.vmfb` plus `<key>.json` (what was compiled, when, from where) in the cache
folder: `$ESTUARY_CACHE`, else `$XDG_CACHE_HOME/estuary`, else `~/.cache/estuary`. The key is
a SHA-256 over the model's bytes (every file of a folder or package, with its relative name),
the format, input shapes, the CompileOptions (the CPU `host` resolves to), and the Estuary and
IREE versions, so editing the model, changing an option or upgrading either project compiles
afresh. Each file is written to a temporary name in the same folder and renamed into place, so
a reader never sees half an entry and concurrent writers of one key leave one whole copy.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estuary.base.errors import EstuaryError
from estuary.base.options import CompileOptions
from estuary.compiler import compile

CACHE_ENV = "ESTUARY_CACHE"
FORMAT_VERSION = 1  # bump when the entry layout or the key's recipe changes
_CHUNK = 1 << 20
DIGESTS = "digests.json"  # the file-digest memo (model_digest)
MEMO_LIMIT = 4096  # files remembered


def cache_dir() -> str:
    """The cache folder (not created here)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "estuary")


def _versions() -> dict[str, str]:
    """Estuary's version and the IREE compiler's and runtime's builds (their own version modules:
    importlib.metadata would add a tenth of a second to every cached load)."""
    import estuary
    from iree.compiler import version as compiler_version
    from iree.runtime import version as runtime_version

    return {"estuary": estuary.__version__, "iree-compiler": str(compiler_version.VERSION),
            "iree-revisions": json.dumps(getattr(compiler_version, "REVISIONS", {}), sort_keys=True),
            "iree-runtime": str(runtime_version.VERSION)}


def model_files(path: str) -> list[tuple[str, str]]:
    """(relative name, absolute path) of every file making up the model at `path`, sorted."""
    if not os.path.isdir(path):
        return [(os.path.basename(path), path)]
    found = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in files:
            full = os.path.join(root, name)
            found.append((os.path.relpath(full, path).replace(os.sep, "/"), full))
    return sorted(found)


def model_digest(path: str | os.PathLike[str], memo: dict[str, Any] | None = None) -> str:
    """SHA-256 (hex) over a model's files: each file's relative name and content digest (a
    folder's every file; a JSON model's side files named by its {"file": ...} entries too).
    `memo` maps a file's absolute path to (size, mtime_ns, ctime_ns, inode, digest): a file whose
    stat still matches is not read again, so a cached load does not rehash large weights."""
    path = os.fspath(path)
    h = hashlib.sha256()
    try:
        files = model_files(path) + [("side:" + os.path.basename(p), p) for p in _side_files(path)]
        for rel, full in files:
            h.update(rel.encode() + b"\0" if os.path.isdir(path) or rel.startswith("side:") else b"\0")
            h.update(bytes.fromhex(_file_digest(full, memo)))
    except OSError as e:
        raise EstuaryError(f"{path}: cannot read ({e.strerror or e})") from None
    return h.hexdigest()


def _file_digest(path: str, memo: dict[str, Any] | None) -> str:
    st = os.stat(path)
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    full = os.path.abspath(path)
    if memo is not None and isinstance(memo.get(full), list) and memo[full][:4] == stamp:
        return str(memo[full][4])
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    if memo is not None:
        memo[full] = stamp + [h.hexdigest()]
    return h.hexdigest()


def _read_memo(folder: str) -> dict[str, Any]:
    try:
        with open(os.path.join(folder, DIGESTS), encoding="utf-8") as f:
            memo = json.load(f)
        return memo if isinstance(memo, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_memo(folder: str, memo: dict[str, Any]) -> None:
    """Best effort: a memo that cannot be written only costs rehashing next time."""
    if len(memo) > MEMO_LIMIT:
        memo = dict(list(memo.items())[-MEMO_LIMIT:])
    try:
        os.makedirs(folder, exist_ok=True)
        _atomic_write(os.path.join(folder, DIGESTS), json.dumps(memo).encode())
    except OSError:
        pass


def _side_files(path: str) -> list[str]:
    """Files a JSON model names beside itself ({"file": NAME} entries), existing ones only."""
    if os.path.isdir(path) or not path.lower().endswith(".json"):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return []
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                names.add(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    base = os.path.dirname(os.path.abspath(path))
    return [p for p in (os.path.join(base, n) for n in sorted(names)) if os.path.isfile(p)]


def cache_key(path: str | os.PathLike[str], options: CompileOptions, format: str | None = None,
              shapes: Mapping[str, Sequence[int]] | None = None, memo: dict[str, Any] | None = None) -> str:
    """The entry name for compiling `path` with `options` (see the module docstring)."""
    opts = {k: sorted(v) if isinstance(v, frozenset) else v for k, v in dataclasses.asdict(options).items()}
    if options.target == "llvm-cpu":
        from estuary.backends.llvm_cpu import host

        opts["cpu_resolved"] = host.resolve(options.cpu)
    recipe = {"layout": FORMAT_VERSION, "model": model_digest(path, memo), "format": format,
              "shapes": {k: list(v) for k, v in sorted((shapes or {}).items())}, "options": opts,
              "versions": _versions()}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=list).encode()).hexdigest()[:32]


@dataclass
class Entry:
    """One cached artefact: its key, .vmfb path and what was recorded beside it."""

    key: str
    vmfb: str
    size: int
    meta: dict[str, Any]


def _atomic_write(path: str, data: bytes) -> None:
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; a shared $ESTUARY_CACHE is readable
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def lookup(key: str, folder: str | None = None) -> Entry | None:
    """The entry for `key`, or None when there is none (or only half of one)."""
    folder = folder or cache_dir()
    vmfb, meta = os.path.join(folder, key + ".vmfb"), os.path.join(folder, key + ".json")
    try:
        with open(meta, encoding="utf-8") as f:
            info = json.load(f)
        size = os.path.getsize(vmfb)
    except (OSError, ValueError):
        return None
    return Entry(key, vmfb, size, info)


def store(key: str, vmfb: bytes, meta: Mapping[str, Any], folder: str | None = None) -> Entry:
    """Write an entry (the .vmfb first, then its record, each atomically)."""
    folder = folder or cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, key + ".vmfb")
        _atomic_write(path, vmfb)
        _atomic_write(os.path.join(folder, key + ".json"), json.dumps(dict(meta), indent=1).encode())
    except OSError as e:
        raise EstuaryError(f"cannot write to the compile cache {folder} ({e.strerror or e}); "
                           f"set {CACHE_ENV} to a writable folder") from None
    return Entry(key, path, len(vmfb), dict(meta))


def entries(folder: str | None = None) -> list[Entry]:
    """Every complete entry, oldest first."""
    folder = folder or cache_dir()
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [e for e in (lookup(n[:-5], folder) for n in names if n.endswith(".json") and n != DIGESTS)
             if e is not None]
    return sorted(found, key=lambda e: e.meta.get("created", 0))


def clear(folder: str | None = None) -> int:
    """Delete every entry (and stray temporary files); returns the number of entries removed."""
    folder = folder or cache_dir()
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    removed = 0
    for name in names:
        if name.endswith((".vmfb", ".json")) or name.startswith(".tmp-"):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError as e:
                raise EstuaryError(f"cannot remove {os.path.join(folder, name)} ({e.strerror or e})") from None
            removed += name.endswith(".json") and name != DIGESTS
    return removed


def remove(key: str, folder: str | None = None) -> None:
    folder = folder or cache_dir()
    for ext in (".json", ".vmfb"):
        try:
            os.unlink(os.path.join(folder, key + ext))
        except OSError:
            pass


def compiled(path: str | os.PathLike[str], options: CompileOptions, *, format: str | None = None,
             shapes: Mapping[str, Sequence[int]] | None = None,
             progress: bool | Callable[[str], None] = False) -> tuple[Entry, bool]:
    """The cache entry for `path` compiled with `options`, compiling it on a miss.
    Returns (entry, hit): `hit` is True when the artefact came from the cache."""
    folder = cache_dir()
    memo = _read_memo(folder)
    before = dict(memo)
    key = cache_key(path, options, format, shapes, memo)
    if memo != before:
        _write_memo(folder, memo)
    found = lookup(key)
    if found is not None:
        return found, True
    art = compile(path, format=format, shapes=dict(shapes) if shapes else None, options=options, progress=progress)
    meta = {"source": os.path.abspath(os.fspath(path)), "target": options.target, "format": art.signature.get("format"),
            "created": time.time(), "compile_s": round(art.timings.get("total_s", 0.0), 3),
            "versions": _versions()}
    return store(key, art.vmfb, meta), False
