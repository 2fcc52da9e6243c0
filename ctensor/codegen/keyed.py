"""Hand-built LLVM modules found by what their generator was given, not by their text (issue 27 item
5: a warm start in milliseconds).

`compile_llvm` names a module by a hash of its text, so finding it in the disk cache means making
the text first: for `runtime.pyentry`'s CPython entries that is llvmlite.ir building and printing
a few hundred instructions, 5-15 ms, more than the rest of a warm start.  `compile_keyed(parts,
make)` names it by `parts` instead (with the host, `host.host_id`): a sealed record
``m_<key>.sym`` in the cache directory holds the symbol `compile_llvm` gave the module `make()`
produced, and the next process loads that symbol's shared library (`library`) without calling
`make` or importing llvmlite.  `parts` must determine the text (the caller includes the version
of its generator: `driver.kernel_store.source_fingerprint`).  A missing or damaged record, or a
library that does not load, is a miss: `make()` and `compile_llvm` as before (which rewrite it).
Results are also kept in memory per key, so a process asks the disk once per module.
"""
from __future__ import annotations

import threading

from . import library, objcache
from .host import host_id

FORMAT = b"ctensor-keyed-v1"
_MEMO: dict = {}
_LOCK = threading.Lock()


def compile_keyed(parts, make, opt: int = 3) -> tuple:
    """(addresses of the module's functions, optimised IR) of the module `make()` returns as (LLVM
    text, base name, function names) — see `engine.compile_llvm` — named by `parts` (a repr-able
    value determining the text; module docstring)."""
    key = objcache.digest(repr((FORMAT, host_id(), opt, parts)).encode())[:32]
    hit = _MEMO.get(key)
    if hit is not None:
        return hit
    directory = objcache.cache_dir()
    got = _load(directory, key) if directory is not None else None
    if got is None:
        from .compiled import symbol_of
        from .engine import compile_llvm
        from .tiers import tier_of
        text, base, names = make()
        got = compile_llvm(text, base, names, opt)
        if directory is not None:
            symbol = symbol_of(text, base, tier_of(text, opt))
            suffixes = " ".join(repr(n[len(base):]) for n in names)
            try:
                directory.mkdir(parents=True, exist_ok=True)
                objcache._atomic_write(directory / f"m_{key}.sym",
                                       objcache.seal(FORMAT, key, f"{symbol}\n{suffixes}".encode()))
            except OSError:
                pass                     # a cache that cannot be written is only slower
    with _LOCK:
        return _MEMO.setdefault(key, got)


def _load(directory, key):
    """(addresses, optimised IR) through the record of `key` and its library, or None."""
    payload = objcache.unseal(directory / f"m_{key}.sym", FORMAT, key)
    if payload is None:
        return None
    try:
        symbol, suffixes = payload.decode("ascii").split("\n")
        names = tuple(s[1:-1] for s in suffixes.split(" "))      # each a repr'd str of [A-Za-z0-9_]
    except ValueError:
        return None
    if not objcache.valid_symbol(symbol) or not all(objcache.valid_symbol("x" + n) for n in names):
        return None
    got = library.load(directory, symbol, names)
    if got is None:
        return None
    llvm_ir = objcache.read_ir(got[3], symbol, got[2])
    return None if llvm_ir is None else (got[0], llvm_ir)


__all__ = ["compile_keyed"]
