"""The JIT: one process-wide MCJIT engine, O3 with the new pass manager, on-disk object cache.

Pitfalls this module is shaped around (reference/anchors-and-llvmlite.md §4):
* never call ``llvm.initialize()`` (it raises since llvmlite 0.45);
* a TargetMachine handed to an engine is owned (and freed) by it, so the engine gets its own and
  the optimiser uses a second one;
* the bundled LLVM aborts the process on invalid IR, so every module is verified (our verifier in
  `emit_module`, then ``mod.verify()``) before any pass runs;
* the engine is created once, from an empty module, and lives as long as the process, because
  every compiled function pointer points into its memory.

Symbols.  All modules share the engine, so symbol names must be unique.  The symbol is the
function name plus a hash of its LLVM IR (and of the opt level or size tier, CPU and llvmlite version): the
same function compiled twice in one process is returned from memory instead of being added twice,
and the name is stable across processes, which the on-disk cache needs (object code refers to
its own symbols by name).

On-disk cache.  Directory ``$CTENSOR_CACHE_DIR`` (default ``~/.cache/ctensor``; set it to the
empty string or ``off`` to disable).  Each entry is ``<symbol>.o`` (object code, with a header
holding its length and sha256, checked before MCJIT sees it: a truncated file must not crash
the process) and ``<symbol>.ll`` (optimised IR, for `CompiledFunction.llvm_ir`).  On a hit the
optimiser and the code generator are both skipped.

Size tiers.  O3's loop passes (LoopVectorize, LoopRotate, LICM...) each revisit the function once
per loop, so its time grows like lines × loops: a kernel of 10k lines and 200 loops (2e6, the
largest in the test suite) compiles in ~1.5 s, 49k lines and 440 loops (2e7) in 10 s, 94k lines
and 1,100 loops (1e8: two 2-D point tensors and three run lists merged under `counting`, one code
path per combination of pieces) in 40 s.  A module whose lines × loops exceed
`LARGE_MODULE` therefore gets `LIGHT_PASSES` and code generation by an O1 target machine (those
two: 2 s and 5 s), and one beyond `HUGE_MODULE` an O0 code generator (fast instruction selection:
< 1 s there): its code runs 2–7× slower (the spatial box kernel forced into the light tiers),
its compile time stays bounded.  The object is made here and handed to MCJIT through the object
cache hook, as a disk hit is.  `CompiledFunction.tier` says which path a function took;
`CTENSOR_LARGE_MODULE` / `CTENSOR_HUGE_MODULE` in the environment move the thresholds (read at
each compile).
"""
from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..ir.nodes import Function
from .llvm_emit import emit_module

PACKED_CFUNC = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_FORMAT = b"ctensor-obj-v1\n"   # bump when the emitted calling convention changes


@dataclass
class CompiledFunction:
    """A JIT-compiled IR function.  `packed(block_address)` calls the packed entry point with the
    address of an int64 argument block (slot k = parameter k) and returns the i32 status."""
    name: str                    # symbol of the unpacked function; packed is name + '_packed'
    address: int
    packed_address: int
    llvm_ir: str                 # optimised
    unoptimized_ir: str
    compile_seconds: dict        # 'emit' (verify+emit+parse+LLVM verify), 'optimize', 'jit'
    packed: object = field(repr=False, default=None)
    source: str = "compiled"     # 'compiled' | 'disk' (object cache) | 'memory' (same process)
    tier: str = "O3"             # pipeline and code generator: 'O0'..'O3', 'light-cg1', 'light-cg0'

    def call_packed(self, block) -> int:
        """Call the packed entry with a numpy int64 block (kept alive by the caller)."""
        return self.packed(block.ctypes.data)


LARGE_MODULE = 10_000_000    # lines × loops of the unoptimised LLVM IR
HUGE_MODULE = 400_000_000
# no NewGVN: llvmlite's LLVM is built with assertions, and NewGVN's `verifyIterationSettled` aborted
# the process on a fuzzed kernel (3-D point tensors under counting); llvmlite offers no other GVN
LIGHT_PASSES = ("sroa", "instruction_combine", "simplify_cfg", "sccp", "instruction_combine", "simplify_cfg")


def _threshold(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _tier(text: str, opt: int) -> str:
    """The compile path of the LLVM module `text` at `opt` (module docstring, size tiers)."""
    # loops: the headers `llvm_emit` names (hand-built modules, `runtime.pyentry`'s, are small)
    work = text.count("\n") * max(text.count("\nwhile.cond") + text.count("\nfor.cond"), 1)
    if opt == 0 or work <= _threshold("CTENSOR_LARGE_MODULE", LARGE_MODULE):
        return f"O{opt}"
    return "light-cg0" if work > _threshold("CTENSOR_HUGE_MODULE", HUGE_MODULE) else "light-cg1"


def _cache_dir() -> Path | None:
    d = os.environ.get("CTENSOR_CACHE_DIR")
    if d is None:
        return Path.home() / ".cache" / "ctensor"
    if d.strip().lower() in ("", "off", "0", "none"):
        return None
    return Path(d)


class _Engine:
    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()

        def machine(opt=3):
            return target.create_target_machine(cpu=self.cpu, features=self.features, opt=opt,
                                                jit=True)
        self.tm_opt = machine()                 # used by the pass builder only
        self.tm_codegen = {1: machine(1), 0: machine(0)}    # the light tiers' code generators
        self.ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine())  # owns its tm
        self.triple = self.tm_opt.triple
        self.data_layout = str(self.tm_opt.target_data)
        self.ee.set_object_cache(self._notify, self._getbuffer)
        self.lock = threading.RLock()
        self.compiled: dict[str, CompiledFunction] = {}  # symbol -> result
        self.modules: dict[str, tuple] = {}     # symbol -> compile_llvm result
        self.cache_dir: Path | None = None      # set per compile (env may change in tests)
        self.hits: dict[str, bytes] = {}        # module name -> object code to hand to MCJIT
        self.current: str | None = None         # symbol being compiled (the one to cache)

    # -------------------------------------------------------- object cache callbacks
    def _getbuffer(self, module):
        return self.hits.pop(module.name, None)

    def _notify(self, module, buf: bytes):
        if self.cache_dir is None or module.name != self.current:
            return  # e.g. the engine's initial empty module
        self._write_object(module.name, buf)

    def _write_object(self, symbol: str, buf: bytes):
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            blob = _FORMAT + f"{len(buf)} {hashlib.sha256(buf).hexdigest()}\n".encode() + buf
            _atomic_write(self.cache_dir / f"{symbol}.o", blob)
        except OSError:
            pass  # a cache that cannot be written is only slower

    def _read_cached(self, symbol: str):
        """(object code, optimised IR) from the disk cache, or None if absent or damaged."""
        if self.cache_dir is None:
            return None
        try:
            blob = (self.cache_dir / f"{symbol}.o").read_bytes()
            llvm_ir = (self.cache_dir / f"{symbol}.ll").read_text()
        except OSError:
            return None
        if not blob.startswith(_FORMAT):
            return None
        header, _, obj = blob[len(_FORMAT):].partition(b"\n")
        try:
            size, digest = header.decode().split()
        except ValueError:
            return None
        if int(size) != len(obj) or hashlib.sha256(obj).hexdigest() != digest:
            return None
        return obj, llvm_ir

    # -------------------------------------------------------- compile
    def compile(self, fn: Function, opt: int, use_cache: bool) -> CompiledFunction:
        t0 = time.perf_counter()
        base = _sanitize(fn.name)
        text = str(emit_module(dataclasses.replace(fn, name=base)))   # verifies fn first
        tier = _tier(text, opt)
        symbol = self._symbol(text, base, tier)
        if symbol in self.compiled:
            prev = self.compiled[symbol]
            secs = {"emit": time.perf_counter() - t0, "optimize": 0.0, "jit": 0.0}
            return dataclasses.replace(prev, compile_seconds=secs, source="memory")
        addresses, llvm_ir, unoptimized, secs, source = self._jit(text, symbol, (base, base + "_packed"),
                                                                  tier, use_cache, t0)
        address, packed_address = addresses
        result = CompiledFunction(
            name=symbol, address=address, packed_address=packed_address, llvm_ir=llvm_ir,
            unoptimized_ir=unoptimized, compile_seconds=secs,
            packed=PACKED_CFUNC(packed_address), source=source, tier=tier)
        self.compiled[symbol] = result
        return result

    def compile_llvm(self, text: str, base: str, names, opt: int, use_cache: bool) -> tuple:
        """JIT a hand-built LLVM module (textual IR defining the functions `names`, which must start
        with `base`) into this engine: (addresses of `names`, optimised IR).  Same symbol scheme,
        tiers and caches as `compile`; used by `runtime.pyentry`."""
        t0 = time.perf_counter()
        tier = _tier(text, opt)
        symbol = self._symbol(text, base, tier)
        if symbol not in self.modules:
            addresses, llvm_ir, *_ = self._jit(text, symbol, tuple(names), tier, use_cache, t0)
            self.modules[symbol] = (addresses, llvm_ir)
        return self.modules[symbol]

    def _symbol(self, text: str, base: str, tier: str) -> str:
        # the O0..O3 tiers hash as the opt level did before tiers existed (disk cache entries stay valid)
        key = hashlib.sha256("\0".join((text, tier[1:] if tier[0] == "O" else tier, self.cpu, self.features,
                                         llvmlite.__version__, _FORMAT.decode())).encode())
        return f"{base}_{key.hexdigest()[:16]}"

    def _optimize(self, mod, tier: str):
        """Run the tier's pipeline on `mod`."""
        if tier[0] == "O":
            pto = llvm.create_pipeline_tuning_options(speed_level=int(tier[1]))
            pb = llvm.create_pass_builder(self.tm_opt, pto)
            pb.getModulePassManager().run(mod, pb)
            return
        pb = llvm.create_pass_builder(self.tm_opt, llvm.create_pipeline_tuning_options(speed_level=0))
        mpm = llvm.create_new_module_pass_manager()
        for name in LIGHT_PASSES:
            getattr(mpm, f"add_{name}_pass")()
        mpm.run(mod, pb)

    def _jit(self, text, symbol, names, tier, use_cache, t0):
        """Rename `names` (each starting with the module's base name) after `symbol`, verify,
        optimise (or fetch from the disk cache) and add to the engine: (addresses, optimised IR,
        unoptimised IR, seconds, source)."""
        base = names[0]
        # llvmlite quotes every global reference, so renaming the functions is exact
        unoptimized = text
        for name in names:
            unoptimized = unoptimized.replace(f'@"{name}"', f'@"{symbol}{name[len(base):]}"')
        mod = llvm.parse_assembly(unoptimized)
        mod.verify()                                  # before any pass: LLVM aborts on bad IR
        mod.name, mod.triple, mod.data_layout = symbol, self.triple, self.data_layout
        unoptimized = str(mod)
        t1 = time.perf_counter()

        self.cache_dir = _cache_dir() if use_cache else None
        cached = self._read_cached(symbol)
        if cached is not None:
            self.hits[symbol], llvm_ir = cached
        else:
            self._optimize(mod, tier)
            llvm_ir = str(mod)
            # a light tier's object code comes from its own target machine (after the IR is
            # printed: code generation rewrites the module); the O tiers' from MCJIT's
            obj = None if tier[0] == "O" else self.tm_codegen[int(tier[-1])].emit_object(mod)
            if self.cache_dir is not None:          # .ll first: .o is written by _notify
                try:
                    self.cache_dir.mkdir(parents=True, exist_ok=True)
                    _atomic_write(self.cache_dir / f"{symbol}.ll", llvm_ir.encode())
                except OSError:
                    pass
            if obj is not None:                     # MCJIT takes it through `_getbuffer`, as a disk hit
                self.hits[symbol] = obj
                if self.cache_dir is not None:
                    self._write_object(symbol, obj)
        t2 = time.perf_counter()

        self.current = symbol
        try:
            self.ee.add_module(mod)
            self.ee.finalize_object()
        finally:
            self.hits.pop(symbol, None)
            self.current = None
        addresses = tuple(self.ee.get_function_address(symbol + n[len(base):]) for n in names)
        t3 = time.perf_counter()
        if not all(addresses):
            raise RuntimeError(f"JIT did not produce {symbol}")
        secs = {"emit": t1 - t0, "optimize": t2 - t1, "jit": t3 - t2}
        return addresses, llvm_ir, unoptimized, secs, "disk" if cached else "compiled"


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "fn"


def _atomic_write(path: Path, data: bytes) -> None:
    # write-then-rename: concurrent processes never see a half-written entry
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


_ENGINE: _Engine | None = None
_ENGINE_LOCK = threading.Lock()


def get_engine() -> _Engine:
    """The process-wide engine, created on first use."""
    global _ENGINE
    if _ENGINE is None:
        with _ENGINE_LOCK:
            if _ENGINE is None:
                _ENGINE = _Engine()
    return _ENGINE


def compile_function(fn: Function, opt: int = 3, cache: bool = True) -> CompiledFunction:
    """Verify, emit, optimise (new pass manager, `opt` in 0..3) and JIT `fn`.  `cache=False`
    bypasses the on-disk object cache (the in-process one always applies)."""
    if opt not in (0, 1, 2, 3):
        raise ValueError(f"opt must be 0..3, got {opt!r}")
    engine = get_engine()
    with engine.lock:   # LLVM's global context and the engine are not thread-safe
        return engine.compile(fn, opt, cache)


def compile_llvm(text: str, base: str, names, opt: int = 3, cache: bool = True) -> tuple:
    """JIT textual LLVM IR defining functions `names` (each starting with `base`, the first equal to
    it) into the process-wide engine; returns (addresses of `names`, optimised IR).  The module must
    not refer to process-specific addresses if `cache` is true (it may be reused by other
    processes from the disk cache)."""
    if opt not in (0, 1, 2, 3):
        raise ValueError(f"opt must be 0..3, got {opt!r}")
    engine = get_engine()
    with engine.lock:
        return engine.compile_llvm(text, base, names, opt, cache)


__all__ = ["compile_function", "compile_llvm", "CompiledFunction", "get_engine", "PACKED_CFUNC"]
