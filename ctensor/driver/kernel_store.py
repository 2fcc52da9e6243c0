"""The on-disk kernel cache: a kernel compiled once is ready in a new process without parsing,
planning, the z3 proofs or lowering (issue 27: warm first call in milliseconds).

Keyed by what determines the code: the einsum text (whitespace folded), every argument's format
key (with its data facts) or scalar kind, the options, the user measures, the host CPU, llvmlite's
version, the size-tier thresholds and a fingerprint of ctensor's own source files (so an edited
compiler never reuses an old entry).  An entry is `k_<key>.spec`: a header (format tag, key,
length, sha256) and the pickled `KernelSpec`, whose `symbol` names the object code the codegen
engine caches beside it
(`codegen.load_compiled`); `k_<key>.fn`, sealed alike, holds the pickled IR function,
checked on load and unpickled only when `Kernel.fn` / `Kernel.ir` is asked for.  `k_<key>.ref`,
sealed alike, holds another key: the driver keys a request as made (`alias`), before the rewrites
that parse its text (`driver.grid_offsets`, `driver.dense_split`), so a warm start skips them;
`k_<key>.split` (`alias_split`) records a request that compiles to a dense split: its `Split` and
the inner kernel's key.
The host is named without llvmlite (`codegen.host`), and the object code is loaded from its shared
library (`codegen.library`) when it has one: a warm start imports neither llvmlite.binding nor the
compiler's stages.

A damaged, truncated, swapped or foreign entry is a miss (the kernel is compiled again and the
entry rewritten), never an error; a cache that cannot be written is only slower.  Location and
switch as for the object cache: ``$CTENSOR_CACHE_DIR`` (default ``~/.cache/ctensor``; empty or
``off`` disables both).
"""
from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path

from ..codegen.objcache import _atomic_write, cache_dir, digest, seal, unseal   # digest: sha256 without OpenSSL

_FORMAT = b"ctensor-kernel-v1"
_FINGERPRINT: str | None = None
_LOCK = threading.Lock()


# the compiler's clients, whose sources never determine a kernel's code (what they pass to the
# compiler, einsum text and formats, is in the key): not stat'ed (~0.2 ms of a ~4 ms warm start)
_CLIENTS = ("apps", "examples")


def source_fingerprint() -> str:
    """ctensor's version and every compiler source file's (path, size, mtime), `_CLIENTS` aside:
    computed once per process."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        from .. import __version__
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # no realpath: ~0.1 ms
        lines = [__version__]

        def walk(path, rel, skip):
            # scandir: one stat per source file, names relative by prefix (os.walk + relpath cost
            # ~3 ms); bytecode caches are not sources
            with os.scandir(path) as it:
                entries = sorted((e.name, e) for e in it)
            for name, e in entries:
                if name.endswith(".py"):
                    st = e.stat()
                    lines.append(f"{rel}{name} {st.st_size} {st.st_mtime_ns}")
                elif name not in skip and e.is_dir(follow_symlinks=False):
                    walk(e.path, rel + name + "/", ("__pycache__",))
        walk(root, "", _CLIENTS + ("__pycache__",))
        _FINGERPRINT = digest("\n".join(lines).encode())
    return _FINGERPRINT


def _directory() -> Path | None:
    return cache_dir()


def key_of(text: str, fmt: tuple, scalar_kinds: tuple, options: tuple) -> str | None:
    """The entry's key (hex), or None when the disk cache is off.  `fmt`: sorted (name, format
    key); `scalar_kinds`: sorted (name, kind); `options`: the driver's normalised options."""
    if _directory() is None:
        return None
    from ..codegen.host import host_id      # the target and llvmlite's version, without llvmlite.binding
    # the size-tier thresholds choose the pipeline (`codegen.engine`): part of what makes the code
    tiers = tuple(os.environ.get(v) for v in ("CTENSOR_LARGE_MODULE", "CTENSOR_HUGE_MODULE"))
    parts = (_FORMAT.decode(), source_fingerprint(), host_id(), tiers,
             " ".join(text.split()), fmt, scalar_kinds, options)
    return digest(repr(parts).encode())[:32]


def _seal(key: str, payload: bytes) -> bytes:
    return seal(_FORMAT, key, payload)


def _open(path: Path, key: str) -> bytes | None:
    """The payload of a sealed file written for `key`, or None if absent or damaged."""
    return unseal(path, _FORMAT, key)


def load(key: str):
    """(the `KernelSpec` stored for `key`, a function returning its IR function), or None when the
    entry is absent or either file is damaged.  The IR is checked now and unpickled only when
    `Kernel.fn` asks for it.  A key with no entry of its own may be an alias (`alias`)."""
    d = _directory()
    payload = _open(d / f"k_{key}.spec", key)
    if payload is None:
        target = _open(d / f"k_{key}.ref", key)
        if target is None or len(target) != len(key) or not target.isalnum():
            return None
        key = target.decode()
        payload = _open(d / f"k_{key}.spec", key)
    fn_payload = _open(d / f"k_{key}.fn", key) if payload is not None else None
    if fn_payload is None:
        return None
    try:
        spec = pickle.loads(payload)
    except Exception:          # a sealed but unreadable entry (e.g. from an older ctensor): a miss
        return None
    return spec, lambda: pickle.loads(fn_payload)


def alias(request: str, key: str) -> None:
    """Make `request` (the key of a request as made, before the driver's rewrites) find the entry
    of `key` (the key of the kernel compiled for it): ``k_<request>.ref``, sealed, holds `key`."""
    d = _directory()
    if d is None or not key.isalnum():
        return
    try:
        with _LOCK:
            _atomic_write(d / f"k_{request}.ref", _seal(request, key.encode()))
    except OSError:
        pass


def alias_split(request: str, split, inner_key: str) -> None:
    """Record that the request keyed `request` compiles to a dense split (`driver.dense_split`):
    ``k_<request>.split``, sealed, holds the pickled `Split` and its inner kernel's key."""
    d = _directory()
    if d is None or not inner_key.isalnum():
        return
    try:
        blob = _seal(request, pickle.dumps((split, inner_key), protocol=pickle.HIGHEST_PROTOCOL))
        with _LOCK:
            _atomic_write(d / f"k_{request}.split", blob)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass


def load_split(request: str):
    """(`Split`, inner kernel key) recorded by `alias_split` for `request`, or None (absent, damaged)."""
    d = _directory()
    payload = _open(d / f"k_{request}.split", request) if d is not None else None
    if payload is None:
        return None
    try:
        split, inner_key = pickle.loads(payload)
    except Exception:
        return None
    return (split, inner_key) if isinstance(inner_key, str) and inner_key.isalnum() else None


def store(key: str, spec, fn) -> None:
    """Write the entry for `key`: the IR function first, then the spec that makes it a hit."""
    d = _directory()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        spec_blob = _seal(key, pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
        try:
            fn_blob = _seal(key, pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL))
        except RecursionError:          # a deeply nested IR: not cached (a spec without it is a miss)
            return
        with _LOCK:
            _atomic_write(d / f"k_{key}.fn", fn_blob)
            _atomic_write(d / f"k_{key}.spec", spec_blob)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass                            # a cache that cannot be written is only slower
