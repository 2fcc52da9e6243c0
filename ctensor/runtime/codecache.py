"""Code objects of the call path's generated Python (`runtime.fastcall`), kept on disk beside the
kernel cache, so that a warm start does not compile them again: `compile` of one kernel's fast call
costs ~0.4 ms, about a sixth of what loading a kernel from the disk cache costs in a new process.

An entry is keyed by sha256 of the interpreter's bytecode magic number, the code's filename and its
source (so it never goes stale), and holds the `marshal` data of the code object after a header
with its own sha256: a damaged, truncated or unreadable entry is a miss, compiled again and
rewritten (write-then-rename).  As Python's own `.pyc` files, the data is read only from the
user's cache directory (`CTENSOR_CACHE_DIR`; nothing is kept with the cache off).
"""
from __future__ import annotations

import marshal
from importlib.util import MAGIC_NUMBER

from ..codegen.objcache import _atomic_write, cache_dir, digest

__all__ = ["compiled_code"]

_HEAD = b"ctensor-code "


def compiled_code(source: str, filename: str):
    """`compile(source, filename, "exec")`, from the disk cache when an entry holds it."""
    d = cache_dir()
    if d is None:
        return compile(source, filename, "exec")
    key = digest(MAGIC_NUMBER + filename.encode() + b"\0" + source.encode())
    path = d / "py" / f"{key[:40]}.code"
    code = _read(path)
    if code is None:
        code = compile(source, filename, "exec")
        payload = marshal.dumps(code)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, _HEAD + digest(payload).encode() + b"\n" + payload)
        except OSError:
            pass                        # a cache that cannot be written is only slower
    return code


def _read(path):
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, sep, payload = data.partition(b"\n")
    if not sep or not head.startswith(_HEAD) or head[len(_HEAD):] != digest(payload).encode():
        return None
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
