"""Resource limits on what a small NNEF file can claim, each raised by an environment variable.

A 140-byte document can declare a constant of 4 GiB, and a 1.5 MB .tgz can hold 1.5 GB of text:
these are refused, naming the limit and the variable that raises it, before anything is allocated
or decompressed beyond the limit (docs/nnef.md, "Limits")."""
import os

from estuary.base.errors import ModelImportError

# name of the environment variable -> default
TEXT_BYTES = ("ESTUARY_NNEF_MAX_TEXT_BYTES", 64 << 20)  # graph.nnef, graph.quant
ARCHIVE_BYTES = ("ESTUARY_NNEF_MAX_ARCHIVE_BYTES", 8 << 30)  # all members of a .tar/.tgz, uncompressed
CONSTANT_BYTES = ("ESTUARY_NNEF_MAX_CONSTANT_BYTES", 256 << 20)  # one `constant` operation's tensor
INT32_MAX = 2**31 - 1  # the Khronos parser reads integers as 32-bit and wraps larger ones


def get(limit):
    """The value of `limit` (a (variable, default) pair): the variable when set, else the default."""
    name, default = limit
    setting = os.environ.get(name)
    if setting is None:
        return default
    if not setting.strip().isdigit():
        raise ModelImportError(f"{name} must be a whole number of bytes, got {setting!r}")
    return int(setting)


def exceeded(where, what, size, limit):
    """The ModelImportError for `what` needing `size` bytes, more than `limit` allows."""
    name, _ = limit
    return ModelImportError(f"{where}: {what} is {size} bytes, more than the limit of {get(limit)} "
                            f"({name} raises it)")
