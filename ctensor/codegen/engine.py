"""The JIT: one process-wide MCJIT engine, O3 with the new pass manager, on-disk object cache.

Pitfalls this module is shaped around (reference/anchors-and-llvmlite.md §4):
* never call ``llvm.initialize()`` (it raises since llvmlite 0.45);
* a TargetMachine handed to an engine is owned (and freed) by it, so the engine gets its own and
  the optimiser and code generators borrow others from a pool (one thread at a time each);
* llvmlite takes one process-wide lock around every call into LLVM; each compile parses its module
  into an LLVM context of its own and runs the two long calls (the pass pipeline, the code
  generation) without that lock (`_unlocked`), taking the engine's lock only to add the object
  code: compiles in several threads, and a tiered kernel's background upgrade, overlap;
* the bundled LLVM aborts the process on invalid IR, so every module is verified (our verifier in
  `emit_module`, then ``mod.verify()``) before any pass runs;
* the engine is created once, from an empty module, and lives as long as the process, because
  every compiled function pointer points into its memory.

Symbols.  All modules share the engine, so symbol names must be unique.  The symbol is the
function name plus a hash of its LLVM IR (and of the opt level or size tier, and the host:
`host.host_id`, which needs no llvmlite, so `symbol_of` works before the engine exists): the
same function compiled twice in one process is returned from memory instead of being added twice,
and the name is stable across processes, which the on-disk cache needs (object code refers to
its own symbols by name).

On-disk cache (`objcache`: entry layout and what counts as damaged).  On a hit the optimiser and
the code generator are both skipped; `load_compiled(symbol)` loads an entry by its symbol alone,
without the IR function (the runtime's warm cache keys kernels by program text and formats and
keeps the symbol).  A damaged entry is a miss.

Lazy start.  `import ctensor` does not import llvmlite (~17-20 ms, most of it loading
libllvmlite): the engine, and llvmlite with it, is created by the first compile or MCJIT load
(`get_engine`).  A warm start does neither: every object is also linked into a shared library
(`library`, in the background), and `load_compiled` / `compile_llvm` load an entry's library with
``dlopen`` (~0.3 ms) when it has one; MCJIT (~1.5 ms, ~20 ms with the import) only when not.

Object code.  Every tier's object is made by a borrowed target machine (the O tiers' at O3, as
MCJIT's own would) and added with ``add_object_file``, as a disk hit or `load` adds one; the engine
holds no LLVM module.

Size tiers.  O3's loop passes (LoopVectorize, LoopRotate, LICM...) each revisit the function once
per loop, so its time grows like lines × loops: a kernel of 10k lines and 200 loops (2e6, the
largest in the test suite) compiles in ~1.5 s, 49k lines and 440 loops (2e7) in 10 s, 94k lines
and 1,100 loops (1e8: two 2-D point tensors and three run lists merged under `counting`, one code
path per combination of pieces) in 40 s.  A module whose lines × loops exceed
`LARGE_MODULE` therefore gets `LIGHT_PASSES` and code generation by an O1 target machine (those
two: 2 s and 5 s), and one beyond `HUGE_MODULE` an O0 code generator (fast instruction selection:
< 1 s there): its code runs 2–7× slower (the spatial box kernel forced into the light tiers),
its compile time stays bounded.  The O1 code generator grows too: 13 s for a fuzzed kernel of
175k lines and 313 loops (5.5e7), 3.9 s for all of its optimisation with O0 (so `HUGE_MODULE`
is 2e7, not the 4e8 it was).  `CompiledFunction.tier` says which path a function took;
`CTENSOR_LARGE_MODULE` / `CTENSOR_HUGE_MODULE` in the environment move the thresholds (read at
each compile).
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import itertools
import re
import threading
import time
import weakref

from . import library, objcache
from .compiled import PACKED_CFUNC, CompiledFunction, lazy_ir as _lazy_ir, load_compiled, symbol_of
from .tiers import LIGHT_PASSES, QUICK_PASSES, QUICK_TIER, tier_of as _tier

llvm = None                     # llvmlite.binding, imported by the first `_Engine`


class _Engine:
    def __init__(self):
        global llvm
        import llvmlite
        import llvmlite.binding
        llvm = llvmlite.binding
        self.llvmlite_version = llvmlite.__version__
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.target = llvm.Target.from_default_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        # target machines by code generation level, each used by one compile at a time (LLVM's
        # TargetMachine is not thread-safe), made on first use
        self._machines: dict[int, list] = {}
        self._machines_lock = threading.Lock()
        self.ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self._machine(3))  # owns its tm
        self.triple = self.target.triple
        self.data_layout = str(self.ee.target_data)
        # guards the engine and the tables below; the optimiser and code generator run outside it,
        # each compile in an LLVM context of its own, so compiles (a tiered kernel's background
        # upgrade and the next kernel's first tier) overlap
        self.lock = threading.RLock()
        # symbol -> result, held weakly: a dropped kernel's IR text goes with it (its code stays)
        self.compiled = weakref.WeakValueDictionary()
        self.modules: dict[str, tuple] = {}     # symbol -> compile_llvm result
        self.resident: dict[str, str] = {}      # symbol whose code is in the engine -> its tier
        self.loaded_ir: dict = {}               # symbol -> lazy IR reader, for objects `load` added
        self.first_tiers = itertools.count()    # serials making each first tier's symbol its own

    def _machine(self, opt):
        return self.target.create_target_machine(cpu=self.cpu, features=self.features, opt=opt, jit=True)

    @contextlib.contextmanager
    def _borrowed(self, opt: int):
        """A target machine of code generation level `opt` for this thread alone while it is held."""
        with self._machines_lock:
            pool = self._machines.setdefault(opt, [])
            tm = pool.pop() if pool else None
        tm = tm or self._machine(opt)
        try:
            yield tm
        finally:
            with self._machines_lock:
                pool.append(tm)

    @staticmethod
    def _read_cached(cache_dir, symbol: str):
        """(object code, optimised IR) from the disk cache, or None if absent or damaged."""
        if cache_dir is None:
            return None
        got = objcache.read_object(cache_dir, symbol)
        if got is None:
            return None
        llvm_ir = objcache.read_ir(cache_dir, symbol, got[2])
        return None if llvm_ir is None else (got[0], llvm_ir)

    # -------------------------------------------------------- compile
    def compile(self, fn, opt: int, use_cache: bool, quick: bool = False) -> CompiledFunction:
        from .llvm_emit import emit_module
        t0 = time.perf_counter()
        base = _sanitize(fn.name)
        # verifies fn first; a first tier forwards through its `_next` global (`llvm_emit`)
        text = emit_module(dataclasses.replace(fn, name=base), forward=quick)
        if quick:       # a forward slot of its own per compile (one kernel's promotion sets it)
            text += f"; first tier {next(self.first_tiers)}\n"
        tier = QUICK_TIER if quick else _tier(text, opt)
        symbol = self._symbol(text, base, tier)
        prev = self.compiled.get(symbol)
        if prev is not None:
            secs = {"emit": time.perf_counter() - t0, "optimize": 0.0, "jit": 0.0}
            return dataclasses.replace(prev, compile_seconds=secs, source="memory")
        names = (base, base + "_packed") + ((base + "_next",) if quick else ())
        # a first tier is never cached on disk: the optimised kernel replaces it in this process
        # and is the one a later process loads
        addresses, llvm_ir, unoptimized, secs, source = self._jit(text, symbol, names, tier,
                                                                  use_cache and not quick, t0)
        address, packed_address = addresses[:2]
        result = CompiledFunction(
            name=symbol, address=address, packed_address=packed_address, ir_source=llvm_ir,
            unoptimized_ir=unoptimized, compile_seconds=secs,
            packed=PACKED_CFUNC(packed_address), source=source, tier=tier,
            forward_address=addresses[2] if quick else 0)
        with self.lock:     # a concurrent compile of the same symbol may have come first
            return self.compiled.setdefault(symbol, result)

    def compile_llvm(self, text: str, base: str, names, opt: int, use_cache: bool) -> tuple:
        """JIT a hand-built LLVM module (textual IR defining the functions `names`, which must start
        with `base`) into this engine: (addresses of `names`, optimised IR).  Same symbol scheme,
        tiers and caches as `compile`; used by `runtime.pyentry`."""
        t0 = time.perf_counter()
        tier = _tier(text, opt)
        symbol = self._symbol(text, base, tier)
        got = self.modules.get(symbol)
        if got is None:
            addresses, llvm_ir, *_ = self._jit(text, symbol, tuple(names), tier, use_cache, t0)
            with self.lock:
                got = self.modules.setdefault(symbol, (addresses, llvm_ir))
        return got

    def load(self, symbol: str) -> CompiledFunction | None:
        """`load_compiled` under the engine lock."""
        if symbol in self.compiled:
            return self.compiled[symbol]
        t0 = time.perf_counter()
        tier, ir_source = self.resident.get(symbol, "O3"), self.loaded_ir.get(symbol)
        if symbol in self.resident and ir_source is None:
            # code compiled here whose CompiledFunction is gone: its IR is the disk cache's .ll
            directory = objcache.cache_dir()
            got = objcache.read_object(directory, symbol) if directory is not None else None
            ir_source = None if got is None else _lazy_ir(directory, symbol, got[2])
        got = None
        if symbol not in self.resident:         # (a compile_llvm module's code is here already)
            directory = objcache.cache_dir()
            got = objcache.read_object(directory, symbol) if directory is not None else None
            if got is None:
                return None
            tier, ir_source = got[1], _lazy_ir(directory, symbol, got[2])
            try:
                self.ee.add_object_file(llvm.ObjectFileRef.from_data(got[0]))
            except Exception:                   # llvmlite refused the bytes: treat as damaged
                return None
        address = self.ee.get_function_address(symbol)
        packed_address = self.ee.get_function_address(symbol + "_packed")
        if not (address and packed_address):
            # not a compile_function entry, or one whose verified object does not define what its
            # header names (forged, or a bug): a miss, and not resident, so a compile of this
            # symbol adds its own code
            return None
        if got is not None:
            # `load_compiled` comes here when the entry's library is missing or damaged: link it
            # again, so that the next process starts without llvmlite
            library.link(directory, symbol, tier, got[0], got[2])
        self.resident[symbol] = tier
        if ir_source is not None:
            self.loaded_ir[symbol] = ir_source
        result = CompiledFunction(
            name=symbol, address=address, packed_address=packed_address, ir_source=ir_source,
            unoptimized_ir=None, compile_seconds={"emit": 0.0, "optimize": 0.0, "jit": time.perf_counter() - t0},
            packed=PACKED_CFUNC(packed_address), source="disk", tier=tier)
        self.compiled[symbol] = result
        return result

    def _symbol(self, text: str, base: str, tier: str) -> str:
        return symbol_of(text, base, tier)

    def _optimize(self, mod, tier: str):
        """Run the tier's pipeline on `mod` (a module of a context of this thread's)."""
        with self._borrowed(3) as tm:
            if tier[0] == "O":
                pto = llvm.create_pipeline_tuning_options(speed_level=int(tier[1]))
                pb = llvm.create_pass_builder(tm, pto)
                mpm = pb.getModulePassManager()
            else:
                pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
                mpm = llvm.create_new_module_pass_manager()
                for name in QUICK_PASSES if tier == QUICK_TIER else LIGHT_PASSES:
                    getattr(mpm, f"add_{name}_pass")()
            _unlocked("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)

    @staticmethod
    def _emit_object(tm, mod) -> bytes:
        """`tm.emit_object(mod)`, its code generation outside llvmlite's lock (`_unlocked`)."""
        from llvmlite.binding import ffi
        with ffi.OutputString() as err:
            buf = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
            if not buf:
                raise RuntimeError(str(err))
        try:
            return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buf), ffi.lib.LLVMPY_GetBufferSize(buf))
        finally:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)

    def _jit(self, text, symbol, names, tier, use_cache, t0):
        """Rename `names` (each starting with the module's base name) after `symbol`, verify,
        optimise and generate code (or fetch the object from the disk cache) outside the engine
        lock, then add the object to the engine under it: (addresses, optimised IR, unoptimised IR,
        seconds, source)."""
        base = names[0]
        # both emitters (llvm_emit, llvmlite's printer) quote every global reference, so renaming
        # the functions is exact
        unoptimized = text
        for name in names:
            unoptimized = unoptimized.replace(f'@"{name}"', f'@"{symbol}{name[len(base):]}"')
        t1 = time.perf_counter()
        cache_dir = objcache.cache_dir() if use_cache else None
        resident = symbol in self.resident            # loaded by `load` (another caller's entry)
        cached = None if resident else self._read_cached(cache_dir, symbol)
        obj = llvm_ir = None
        split = {"parse": 0.0, "codegen": 0.0}         # parts of `_make_object`'s time
        if cached is not None:
            obj, llvm_ir = cached
            if not library.present(cache_dir, symbol):      # an entry without its library
                library.link(cache_dir, symbol, tier, obj, objcache.digest(llvm_ir.encode()))
        elif not resident:
            obj, llvm_ir = self._make_object(unoptimized, symbol, tier, cache_dir, split)
        t2 = time.perf_counter()
        try:
            addresses = self._add(obj, symbol, tier, names)
        except Exception:
            if cached is None:
                raise
            addresses = (0,) * len(names)             # llvmlite refused the cached bytes: damaged
        if not all(addresses) and cached is not None:
            # a verified entry that does not define what its header names (forged, or a bug):
            # compile afresh under the same name (the stray object's symbols are not ours)
            obj, llvm_ir = self._make_object(unoptimized, symbol, tier, cache_dir, split)
            cached = None
            addresses = self._add(obj, symbol, tier, names, force=True)
        t3 = time.perf_counter()
        if not all(addresses):
            raise RuntimeError(f"JIT did not produce {symbol}")
        if llvm_ir is None:     # resident code: its IR as `load` kept it, or optimised again on demand
            llvm_ir = self.loaded_ir.get(symbol) or (lambda: self._reoptimized(unoptimized, symbol, tier))
        # emit: our emitter, LLVM's parse and verifier; jit: code generation and loading
        secs = {"emit": t1 - t0 + split["parse"], "optimize": t2 - t1 - split["parse"] - split["codegen"],
                "jit": t3 - t2 + split["codegen"]}
        return addresses, llvm_ir, unoptimized, secs, "disk" if cached else "compiled"

    def _reoptimized(self, text, symbol, tier) -> str:
        """The optimised IR of resident code whose first `CompiledFunction` is gone (`compiled`
        holds them weakly): the same pipeline on a fresh parse, not added to the engine."""
        mod = self._parse(text, symbol)
        self._optimize(mod, tier)
        out = str(mod)
        mod.close()
        return out

    def _parse(self, text, symbol):
        """`text` parsed into an LLVM context of its own (no other thread touches it) and verified."""
        mod = llvm.parse_assembly(text, context=llvm.create_context())
        mod.verify()                                  # before any pass: LLVM aborts on bad IR
        mod.name, mod.triple, mod.data_layout = symbol, self.triple, self.data_layout
        return mod

    def _make_object(self, text, symbol, tier, cache_dir, split=None) -> tuple:
        """Parse, verify and optimise `text` (the tier's pipeline) and generate its object code
        (the O tiers with an O3 code generator, the light ones with their own), writing both to the
        disk cache: (object code, optimised IR).  `split` (a dict) gets the seconds of the parse
        and of the code generation added to its "parse" and "codegen"."""
        t0 = time.perf_counter()
        mod = self._parse(text, symbol)
        try:
            t1 = time.perf_counter()
            self._optimize(mod, tier)
            llvm_ir = str(mod)          # before code generation, which rewrites the module
            t2 = time.perf_counter()
            with self._borrowed(3 if tier[0] == "O" else int(tier[-1])) as tm:
                obj = self._emit_object(tm, mod)
            if split is not None:
                split["parse"] += t1 - t0
                split["codegen"] += time.perf_counter() - t2
        finally:
            mod.close()
        digest = objcache.digest(llvm_ir.encode())
        if cache_dir is not None:                     # .ll first: .o (which names its digest) after
            digest = objcache.write_ir(cache_dir, symbol, llvm_ir)
            objcache.write_object(cache_dir, symbol, tier, obj, digest)
            library.link(cache_dir, symbol, tier, obj, digest)
        return obj, llvm_ir

    def _add(self, obj, symbol, tier, names, force=False) -> tuple:
        """Under the engine lock: add the object code `obj` (unless the symbol's code is resident
        already, from a concurrent compile or `load`, and not `force`) and return the addresses of
        `names`."""
        base = names[0]
        with self.lock:
            if obj is not None and (force or symbol not in self.resident):
                self.ee.add_object_file(llvm.ObjectFileRef.from_data(obj))
                self.resident[symbol] = tier
            return tuple(self.ee.get_function_address(symbol + n[len(base):]) for n in names)


_cache_dir = objcache.cache_dir     # the name `driver.kernel_store` imports


def _unlocked(name: str):
    """The llvmlite C function `name` without llvmlite's process-wide lock.  llvmlite serialises every
    call into LLVM with one lock (`ffi.lib`), held for the whole of an O3 pipeline or a code
    generation (0.1-1 s), so a tiered kernel's background upgrade would stall every other compile.
    A compile's module lives in an LLVM context of its own and its target machine is borrowed by
    one thread (`_Engine._borrowed`): these calls share no LLVM state with other threads, which LLVM
    allows.  (Falls back to the locked call if llvmlite changes its wrapper.)"""
    from llvmlite.binding import ffi
    fn = getattr(ffi.lib, name)
    return getattr(fn, "_cfn", fn)


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "fn"


_ENGINE: _Engine | None = None
_ENGINE_LOCK = threading.Lock()


def get_engine() -> _Engine:
    """The process-wide engine, created (and llvmlite imported) on first use."""
    global _ENGINE
    if _ENGINE is None:
        with _ENGINE_LOCK:
            if _ENGINE is None:
                _ENGINE = _Engine()
    return _ENGINE


def compile_function(fn, opt: int = 3, cache: bool = True, quick: bool = False) -> CompiledFunction:
    """Verify, emit, optimise (new pass manager, `opt` in 0..3) and JIT the IR function `fn`
    (`ctensor.ir.Function`).  `cache=False` bypasses the on-disk object cache (the in-process one
    always applies).  `quick`: the first tier of a tiered compile (`driver.tiering`): SROA and CFG
    simplification (`QUICK_PASSES`) and the O0 code generator (`QUICK_TIER`: 3-8x faster to make
    than O3, 1.2-4x slower to run), never cached on disk, its packed entry forwarding to the code
    `CompiledFunction.forward_to` names.  Raises ValueError for an `opt` outside 0..3,
    `ctensor.ir.IRError` for IR the verifier rejects."""
    if opt not in (0, 1, 2, 3):
        raise ValueError(f"opt must be 0..3, got {opt!r}")
    # the engine takes its lock only to add code: compiles in several threads overlap
    return get_engine().compile(fn, opt, cache, quick)


def compile_llvm(text: str, base: str, names, opt: int = 3, cache: bool = True) -> tuple:
    """JIT textual LLVM IR defining functions `names` (each starting with `base`, the first equal to
    it) into the process-wide engine; returns (addresses of `names`, optimised IR).  The module must
    not refer to process-specific addresses if `cache` is true (it may be reused by other
    processes from the disk cache)."""
    if opt not in (0, 1, 2, 3):
        raise ValueError(f"opt must be 0..3, got {opt!r}")
    if cache and _ENGINE is None:       # a warm start: the shared library, without the engine
        symbol = symbol_of(text, base, _tier(text, opt))
        got = library.load(objcache.cache_dir(), symbol, tuple(n[len(base):] for n in names))
        llvm_ir = got and objcache.read_ir(got[3], symbol, got[2])
        if llvm_ir is not None:
            return got[0], llvm_ir
    return get_engine().compile_llvm(text, base, names, opt, cache)


__all__ = ["compile_function", "compile_llvm", "load_compiled", "CompiledFunction", "get_engine", "PACKED_CFUNC",
           "symbol_of"]
