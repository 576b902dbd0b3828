"""Opening an NNEF model: a folder, a .tar/.tgz/.tar.gz container, or a bare graph.nnef (§5.1).

Archives are read in memory (nothing is extracted to disk). Member names and variable labels are
checked so that nothing outside the model can be reached: absolute paths, '..' components,
backslashes, NUL bytes, links and special files are refused with a clear error.
"""
import os
import tarfile
import zlib

from estuary.base.errors import ModelImportError
from estuary.importers.nnef import limits
from estuary.importers.nnef.tensor_file import HEADER, data_size, decode_blob, parse_header

TEXT_SUFFIXES = (".nnef", ".quant")


def _bad(path, message):
    raise ModelImportError(f"{path}: {message}")


def check_relative(path, name, what):
    """Refuse names that could leave the model folder."""
    if not name or "\0" in name or "\\" in name or name.startswith("/") or os.path.isabs(name):
        _bad(path, f"{what} {name!r} is not a safe relative path")
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        _bad(path, f"{what} {name!r} must not contain empty, '.' or '..' components")
    return name


class ModelFiles:
    """The files of one NNEF model: graph text, optional quantization text, variable tensors."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._members = None  # archive: name -> TarInfo
        self._tar = None
        self.root = None
        self._graph_name = "graph.nnef"
        if os.path.isdir(self.path):
            self.root = self.path
        elif self.path.lower().endswith((".tar", ".tgz", ".tar.gz")):
            self._open_archive()
        elif os.path.isfile(self.path):
            self.root = os.path.dirname(os.path.abspath(self.path))
            self._graph_name = os.path.basename(self.path)
        else:
            _bad(self.path, "no such file or directory")
        self.graph_path = self._where(self._graph_name)

    def _open_archive(self):
        total, text_limit, archive_limit = 0, limits.get(limits.TEXT_BYTES), limits.get(limits.ARCHIVE_BYTES)
        members = []
        try:
            self._tar = tarfile.open(self.path, "r:*")
            # member by member, so that sizes are checked before the data behind them is decompressed
            while (m := self._tar.next()) is not None:
                members.append(m)
                total += max(m.size, 0)
                if m.isfile() and m.name.endswith(TEXT_SUFFIXES) and m.size > text_limit:
                    raise limits.exceeded(self.path, f"archive member {m.name!r}", m.size, limits.TEXT_BYTES)
                if total > archive_limit:
                    raise limits.exceeded(self.path, f"the archive's content (uncompressed, up to member "
                                                     f"{m.name!r})", total, limits.ARCHIVE_BYTES)
            # tarfile ends the member list quietly at the first unreadable header; only zeros
            # (the end-of-archive blocks) or nothing may follow the last member
            self._tar.fileobj.seek(self._tar.offset)
            rest = self._tar.fileobj.read(tarfile.BLOCKSIZE)
        except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
            _bad(self.path, f"not a readable tar archive ({e})")
        if rest.strip(b"\0"):
            _bad(self.path, f"damaged tar archive: unreadable data at byte {self._tar.offset} of its contents, "
                            f"after {len(members)} readable member(s)")
        self._members = {}
        for m in members:
            name = m.name[2:] if m.name.startswith("./") else m.name
            if m.isdir():
                continue
            check_relative(self.path, name, "archive member")
            if not m.isfile():
                _bad(self.path, f"archive member {name!r} is a link or special file; refused")
            self._members[name] = m
        # a single top-level folder holding graph.nnef is accepted as the model root
        if "graph.nnef" not in self._members:
            tops = {n.split("/", 1)[0] for n in self._members}
            if len(tops) == 1 and f"{next(iter(tops))}/graph.nnef" in self._members:
                prefix = next(iter(tops)) + "/"
                self._members = {n[len(prefix):]: m for n, m in self._members.items() if n.startswith(prefix)}

    def _read(self, name, limit=None):
        if self._members is not None:
            m = self._members.get(name)
            if m is None:
                return None
            try:
                f = self._tar.extractfile(m)
                data = f.read() if limit is None else f.read(limit)
            except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
                _bad(self.path, f"cannot read archive member {name!r} ({e})")
            if len(data) < (m.size if limit is None else min(limit, m.size)):
                _bad(self.path, f"archive member {name!r} is truncated ({len(data)} of {m.size} bytes)")
            return data
        full = os.path.join(self.root, *name.split("/"))
        real_root = os.path.realpath(self.root)
        if not os.path.realpath(full).startswith(real_root + os.sep):
            _bad(self.path, f"{name!r} resolves outside the model folder (symbolic link?)")
        if not os.path.isfile(full):
            return None
        try:
            with open(full, "rb") as f:
                return f.read() if limit is None else f.read(limit)
        except OSError as e:
            _bad(full, f"cannot read ({e.strerror})")

    def _where(self, name):
        return f"{self.path}:{name}" if self._members is not None else os.path.join(self.root, name)

    def _size(self, name):
        """Bytes of file `name` of the model (None when absent)."""
        if self._members is not None:
            m = self._members.get(name)
            return None if m is None else m.size
        try:
            return os.stat(os.path.join(self.root, *name.split("/"))).st_size
        except OSError:
            return None  # _read reports it

    def _text(self, name):
        """File `name`, refused before reading when larger than ESTUARY_NNEF_MAX_TEXT_BYTES."""
        size = self._size(name)
        if size is not None and size > limits.get(limits.TEXT_BYTES):
            raise limits.exceeded(self._where(name), name, size, limits.TEXT_BYTES)
        return self._read(name)

    def graph_text(self):
        data = self._text(self._graph_name)
        if data is None:
            _bad(self.path, "no graph.nnef in the model")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            _bad(self.graph_path, f"graph.nnef is not UTF-8 text ({e})")

    def quant_text(self):
        data = self._text("graph.quant")
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            _bad(self._where("graph.quant"), f"graph.quant is not UTF-8 text ({e})")

    def read_variable(self, label, expected_shape):
        """The decoded tensor of variable `label` (file '<label>.dat'), checked against its shape."""
        check_relative(self.path, label, "variable label")
        name = label + ".dat"
        where = self._where(name)
        head = self._read(name, HEADER)
        if head is None:
            _bad(self.path, f"variable {label!r}: data file {name!r} is missing")
        needed = data_size(parse_header(head, where), where, expected_shape)
        return decode_blob(self._read(name, HEADER + needed), where, expected_shape)

    def close(self):
        if self._tar is not None:
            self._tar.close()
