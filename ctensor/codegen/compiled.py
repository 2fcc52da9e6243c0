"""A compiled function as the rest of ctensor sees it (`CompiledFunction`), its symbol (`symbol_of`),
and loading one by symbol (`load_compiled`).  Apart from the JIT engine (`engine`) so that a warm
start, which loads a cached kernel from its shared library (`library`), imports neither the engine
nor llvmlite (issue 27 item 5); the engine is imported, and created, only when an entry has no
usable library.
"""
from __future__ import annotations

import ctypes
import sys
import time
from dataclasses import dataclass, field

from . import library, objcache
from .host import host_id

PACKED_CFUNC = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)


@dataclass(eq=False)
class CompiledFunction:
    """A JIT-compiled IR function.  `packed(block_address)` calls the packed entry point with the
    address of an int64 argument block (slot k = parameter k) and returns the i32 status.
    `llvm_ir` (optimised) is read from the disk cache on first access for a function loaded by
    `load_compiled` (None if that entry's ``.ll`` is missing or damaged by then)."""
    name: str                    # symbol of the unpacked function; packed is name + '_packed'
    address: int
    packed_address: int
    ir_source: object = field(repr=False)   # the optimised IR, or a callable returning it
    unoptimized_ir: str | None   # None when loaded from the disk cache by symbol
    compile_seconds: dict        # 'emit' (verify+emit+parse+LLVM verify), 'optimize', 'jit' (code generation + load)
    packed: object = field(repr=False, default=None)
    source: str = "compiled"     # 'compiled' | 'disk' (object cache) | 'memory' (same process)
    tier: str = "O3"             # pipeline and code generator: 'O0'..'O3', 'light-cg1', 'light-cg0', 'quick-cg0'
    forward_address: int = 0     # a first tier's `_next` global (`llvm_emit`), else 0

    def forward_to(self, other: "CompiledFunction") -> None:
        """Make this first tier's packed entry tail-call `other`'s from now on (an aligned 8-byte
        store, read atomically by the entry; calls already running finish in this code).  Both
        codes stay in memory for the process: the engine and loaded libraries never unload."""
        if not self.forward_address:
            raise ValueError(f"{self.name} is not a first-tier function: it has no forward slot")
        self._forwarded = other          # what the slot points into stays referenced with it
        ctypes.c_void_p.from_address(self.forward_address).value = other.packed_address

    @property
    def llvm_ir(self) -> str | None:
        src = self.ir_source
        if callable(src):
            src = self.ir_source = src()   # idempotent: two threads may both read the file
        return src

    def call_packed(self, block) -> int:
        """Call the packed entry with a numpy int64 block (kept alive by the caller)."""
        return self.packed(block.ctypes.data)


def lazy_ir(directory, symbol, digest):
    """A function reading the optimised IR of entry `symbol` (None if it is missing or damaged)."""
    return lambda: objcache.read_ir(directory, symbol, digest)



def symbol_of(text: str, base: str, tier: str) -> str:
    """The symbol of LLVM module `text` (base name `base`) at `tier`: stable across processes, and
    computed without llvmlite (`host.host_id` names the target), so a warm start finds its entry."""
    # the O0..O3 tiers hash as the opt level (tiers added later keep those symbols)
    key = objcache.digest("\0".join((text, tier[1:] if tier[0] == "O" else tier, host_id(),
                                     objcache.FORMAT.decode(), library.FORMAT.decode())).encode())
    return f"{base}_{key[:16]}"


def _from_library(symbol: str) -> CompiledFunction | None:
    """`symbol`'s function from its shared library (`library`: no llvmlite, no engine), or None."""
    t0 = time.perf_counter()
    got = library.load(objcache.cache_dir(), symbol)
    if got is None:
        return None
    (address, packed_address), tier, ir_digest, directory = got
    return CompiledFunction(
        name=symbol, address=address, packed_address=packed_address, ir_source=lazy_ir(directory, symbol, ir_digest),
        unoptimized_ir=None, compile_seconds={"emit": 0.0, "optimize": 0.0, "jit": time.perf_counter() - t0},
        packed=PACKED_CFUNC(packed_address), source="disk", tier=tier)



def load_compiled(symbol: str) -> CompiledFunction | None:
    """The function compiled earlier (by `compile_function`, in this process or another) under
    `symbol` (`CompiledFunction.name`): from memory if this process has it, else its object code
    loaded from the disk cache (header, symbol and sha256 checked first; `source='disk'`,
    `unoptimized_ir` None, `llvm_ir` read on first access).  None on a miss, a disabled cache, or
    any damage to the entry (`objcache`); never raises for what is on disk.  Raises TypeError if
    `symbol` is not a str.  The entry's shared library (`library`) is loaded when it has one (no
    llvmlite, no engine); otherwise the object goes to MCJIT, creating the engine (and importing
    llvmlite) if this is the first use."""
    if not isinstance(symbol, str):
        raise TypeError(f"symbol must be a str, got {type(symbol).__name__}")
    if not objcache.valid_symbol(symbol):
        return None
    engine = sys.modules.get(__package__ + ".engine")      # not imported by a warm start
    hit = None if engine is None or engine._ENGINE is None else engine._ENGINE.compiled.get(symbol)
    if hit is not None:                 # compiled or loaded by the engine in this process
        return hit
    got = _from_library(symbol)
    if got is not None:
        return got
    from .engine import get_engine
    eng = get_engine()
    with eng.lock:
        return eng.load(symbol)



__all__ = ["CompiledFunction", "PACKED_CFUNC", "lazy_ir", "symbol_of", "load_compiled"]
