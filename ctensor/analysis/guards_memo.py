"""Guard verdicts on disk: what z3 proved about a guard in one process is known to the next
(issue 27 item 5: a new kernel whose guards were all seen before compiles without importing z3,
whose import and first check cost ~40-50 ms of a ~0.25 s compile).

The key is the prover's own cache key (`guards.GuardProver.prove`: the alpha-renamed canonical
guard, its parts and the facts relevant to it, `guard_terms.Canon.key`), hashed; every value in it
is plain data (types, ops, constants, leaf numbers), so its `repr` is the same in every process.
A verdict is stored only once z3 decided it (never `unknown`, never a spent budget), and each one
is a proof (a constant, or conjuncts dropped because z3 proved them implied), so it holds for any
z3 version; what it depends on is the encoding and the IR's semantics, hence the file is named by
ctensor's source fingerprint (`driver.kernel_store.source_fingerprint`): an edited compiler starts
a new file.

File: ``guards_<fingerprint>.memo`` in the kernel cache directory (``$CTENSOR_CACHE_DIR``; off
with the cache, or with ``CTENSOR_GUARD_MEMO=0``), one line per verdict, ``<key> <verdict>
<check>`` (verdict ``T``, ``F`` or ``K0,2``: the parts kept; check: 8 hex digits of sha256 of the
rest).  Lines are appended with one O_APPEND write each (whole lines, however many processes
write); a line that fails its check or does not parse is skipped; past `MAX_BYTES` the file is
no longer extended (its first `MAX_BYTES` are read); starting a file removes the oldest beyond
`MAX_FILES` (older source versions).  Thread-safe (one lock).
"""
from __future__ import annotations

import os
import threading

from ..codegen.objcache import cache_dir, digest

MAX_BYTES = 8 << 20          # ~100k verdicts
MAX_FILES = 8                # memo files (source versions) kept in a directory: the oldest go first
_LOCK = threading.Lock()
_loaded: dict = {}           # memo file path -> {key digest: verdict}


def enabled() -> bool:
    return os.environ.get("CTENSOR_GUARD_MEMO", "1").strip().lower() not in ("0", "false", "off", "no")


def _path():
    d = cache_dir()
    if d is None or not enabled():
        return None
    from ..driver.kernel_store import source_fingerprint
    return os.path.join(d, f"guards_{source_fingerprint()[:24]}.memo")


def key_digest(key) -> str:
    return digest(repr(key).encode())[:32]


def _encode(verdict) -> str:
    if verdict[0] == "const":
        return "T" if verdict[1] else "F"
    return "K" + ",".join(str(int(i)) for i in verdict[1])


def _decode(text: str):
    if text in ("T", "F"):
        return ("const", text == "T")
    if text.startswith("K") and len(text) > 1:
        try:
            return ("keep", tuple(int(i) for i in text[1:].split(",")))
        except ValueError:
            return None
    return None


def _check(h: str, v: str) -> str:
    return digest(f"{h} {v}".encode())[:8]


def _read(path) -> dict:
    memo: dict = {}
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)       # a full file: its first MAX_BYTES (a cut line fails its check)
    except OSError:
        return memo
    for line in data.decode("ascii", "replace").splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and len(parts[0]) == 32 and _check(parts[0], parts[1]) == parts[2]:
            v = _decode(parts[1])
            if v is not None:
                memo[parts[0]] = v
    return memo


def _memo(path) -> dict:
    m = _loaded.get(path)
    if m is None:
        m = _loaded[path] = _read(path)
    return m


def get(h: str):
    """The verdict stored under key digest `h`, or None (absent, memo off)."""
    path = _path()
    if path is None:
        return None
    with _LOCK:
        return _memo(path).get(h)


def put(h: str, verdict) -> None:
    """Store z3's `verdict` under `h` (a cache that cannot be written is only slower)."""
    path = _path()
    if path is None:
        return
    v = _encode(verdict)
    line = f"{h} {v} {_check(h, v)}\n".encode()
    with _LOCK:
        memo = _memo(path)
        if memo.get(h) == verdict:
            return
        memo[h] = verdict
        try:
            if os.path.exists(path) and os.path.getsize(path) >= MAX_BYTES:
                return
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.exists(path):
                _prune(os.path.dirname(path))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError:
            pass


def _prune(directory) -> None:
    """Before a new memo file (an edited ctensor) is started: keep the `MAX_FILES` - 1 newest."""
    try:
        olds = [e for e in os.scandir(directory) if e.name.startswith("guards_") and e.name.endswith(".memo")]
        olds.sort(key=lambda e: e.stat().st_mtime_ns)
        for e in olds[:max(0, len(olds) - MAX_FILES + 1)]:
            os.unlink(e.path)
    except OSError:                  # another process pruned first, or a read-only directory
        pass


def forget() -> None:
    """Drop what this process read (tests; the files stay)."""
    with _LOCK:
        _loaded.clear()
