"""The on-disk object cache: one entry per compiled symbol, checked before anything is loaded.

Directory ``$CTENSOR_CACHE_DIR`` (default ``~/.cache/ctensor``; the empty string, ``off``, ``0`` or
``none`` disable it).  An entry is two files:

* ``<symbol>.o``: ``FORMAT``, then one header line ``<symbol> <tier> <size> <sha256 of the object>
  <sha256 of the .ll text>``, then the object code;
* ``<symbol>.ll``: the optimised LLVM IR (UTF-8), for `CompiledFunction.llvm_ir`;
* ``<symbol>.so`` and ``<symbol>.lib``: the object linked into a shared library and its header, so
  that a new process loads the entry without llvmlite (`library`, which checks this entry's
  object too: a damaged object makes the whole entry a miss).

`seal` / `unseal` are the sealed small files of the kernel store and of `keyed` (magic, key,
length and sha256 in one header line).

A damaged entry is a miss, never an exception (issue 31 (b), (e)): a missing or unreadable file, a
wrong magic, a header that does not parse (a size that is not a number), a symbol other than the one
asked for (two entries' object files swapped: each header is valid, but names another kernel), an
unknown tier, a truncated or bit-flipped object (size, sha256), and a ``.ll`` whose bytes do not
hash to the header's digest or do not decode.  The compiler then compiles afresh and overwrites the
entry.  Writes go to a temporary file renamed into place (readers in other processes never see half
an entry); a cache that cannot be written (read-only directory, disk full) is only slower.
"""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path

FORMAT = b"ctensor-obj-v2\n"      # bump when the header or the emitted calling convention changes
TIERS = ("O0", "O1", "O2", "O3", "light-cg1", "light-cg0")
_SYMBOL = re.compile(r"[A-Za-z0-9_]{1,200}")


def cache_dir() -> Path | None:
    """The cache directory from the environment (read at each use: tests change it), or None."""
    d = os.environ.get("CTENSOR_CACHE_DIR")
    if d is None:
        return Path.home() / ".cache" / "ctensor"
    if d.strip().lower() in ("", "off", "0", "none"):
        return None
    return Path(d)


def valid_symbol(symbol: str) -> bool:
    """Whether `symbol` can name an entry (letters, digits, '_': never a path)."""
    return _SYMBOL.fullmatch(symbol) is not None


def digest(data: bytes) -> str:
    """sha256 hex digest of `data`.  CPython's own sha256 module when present (1 ms to load, where
    hashlib's OpenSSL takes 2.5 ms: the first digest is on the warm-load path), else hashlib."""
    global _sha256
    if _sha256 is None:
        try:
            from _sha256 import sha256 as _sha256      # CPython <= 3.11
        except ImportError:
            try:
                from _sha2 import sha256 as _sha256    # CPython >= 3.12
            except ImportError:
                from hashlib import sha256 as _sha256
    return _sha256(data).hexdigest()


_sha256 = None


def write_ir(directory: Path, symbol: str, llvm_ir: str) -> str:
    """Write ``<symbol>.ll``; returns the sha256 of its bytes (for the object's header)."""
    data = llvm_ir.encode()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _atomic_write(directory / f"{symbol}.ll", data)
    except OSError:
        pass            # a cache that cannot be written is only slower
    return digest(data)


def write_object(directory: Path, symbol: str, tier: str, obj: bytes, ir_digest: str) -> None:
    """Write ``<symbol>.o`` with its header (module docstring)."""
    header = f"{symbol} {tier} {len(obj)} {digest(obj)} {ir_digest}\n".encode()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _atomic_write(directory / f"{symbol}.o", FORMAT + header + obj)
    except OSError:
        pass


def read_object(directory: Path, symbol: str):
    """(object code, tier, sha256 of the .ll) of the entry `symbol`, or None if it is absent or
    damaged in any way the module docstring lists (the .ll itself is checked by `read_ir`)."""
    try:
        blob = (directory / f"{symbol}.o").read_bytes()
    except (OSError, ValueError):
        return None
    if not blob.startswith(FORMAT):
        return None
    header, newline, obj = blob[len(FORMAT):].partition(b"\n")
    if not newline:
        return None
    try:
        name, tier, size, obj_digest, ir_digest = header.decode("ascii").split()
        size = int(size)
    except ValueError:          # not ASCII, wrong field count, a size that is not a number
        return None
    if name != symbol or tier not in TIERS or size != len(obj) or digest(obj) != obj_digest:
        return None
    return obj, tier, ir_digest


def read_ir(directory: Path, symbol: str, ir_digest: str) -> str | None:
    """The optimised IR of the entry `symbol` if its bytes hash to `ir_digest`, else None."""
    try:
        data = (directory / f"{symbol}.ll").read_bytes()
    except (OSError, ValueError):
        return None
    if digest(data) != ir_digest:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:  # pragma: no cover (the digest already matched what was written)
        return None


def seal(magic: bytes, key: str, payload: bytes) -> bytes:
    """A sealed file's bytes: ``<magic> <key> <length> <sha256>``, a newline, then `payload` (the
    kernel store's entries, `keyed`'s records)."""
    return magic + f" {key} {len(payload)} {digest(payload)}\n".encode() + payload


def unseal(path: Path, magic: bytes, key: str) -> bytes | None:
    """The payload of the file `seal` wrote for `magic` and `key` at `path`, or None if it is absent,
    unreadable, foreign (another magic or key), truncated or damaged."""
    try:
        blob = path.read_bytes()
    except (OSError, ValueError):
        return None
    header, _, payload = blob.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 4 or parts[0] != magic or parts[1] != key.encode():
        return None
    if parts[2] != str(len(payload)).encode() or parts[3] != digest(payload).encode():
        return None
    return payload


def _atomic_write(path: Path, data: bytes) -> None:
    # write-then-rename: concurrent processes never see a half-written entry
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
