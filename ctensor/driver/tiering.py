"""Tiered compilation: a large kernel is callable in a fraction of its full compile time (issue 27
item 5: a cold compile of an app kernel ready in < 0.2 s), as JITs with a baseline tier do.

The full compile of a kernel is its lowering with the z3 guard proofs (continuous paper §6.3) and
LLVM at O3.  For the app kernels both grow with the kernel: the spatial box query spends ~0.16 s in
O3 and code generation, a KPConv kernel ~0.5 s there and ~0.3 s in the proofs (95 z3 checks and
the facts they are asked under).  So the driver (`pipeline._compile`) lowers a kernel once, with
its proofs while it is small: once the statements × loops it has emitted pass `work_threshold()`,
the guard prover stops (`GuardProver.cut`: later guards are kept as emitted).  Then:

* a kernel whose IR stayed small is compiled as before, at O3: one lowering, every proof done;
* a larger one (statements × loops of its IR > `work_threshold()`, and ≤ `MAX_WORK` if its proofs
  were not cut) is compiled at once at the first tier (`engine.compile_function(quick=True)`: SROA,
  CFG simplification, O0 code generation; it runs 1.2-4x slower) and returned, while a background
  thread (`upgrade`) lowers it again with every proof (when some were cut) and compiles it at O3.
  When that is done the kernel is promoted (`Kernel._promote`): the first tier's packed entry
  forwards to the optimised one (`CompiledFunction.forward_to`), so every caller that holds its
  address (the native runner, a spatial entry, numba code) runs the optimised code from its next
  call, and the optimised kernel, not the first tier, goes to the disk cache.  Beyond `MAX_WORK`
  the optimised code takes a light size tier anyway (`codegen.tiers`), as fast to make as a first
  tier.

Results never depend on the tier: the two differ only in guards z3 proved redundant and in LLVM's
optimisation, which keeps IEEE semantics (no fast-math flags).  What a kernel exposes as code —
`ir`, `llvm_ir`, `address`, `abi`, `llvm_module()`, `guard_stats`, `fn` — waits for the optimised
tier (`Kernel.wait_optimized`), so inspecting or embedding a kernel is deterministic.

The upgrade threads are not daemons: an exiting process finishes them (and so fills the disk
cache for the next one).  `CTENSOR_TIERED=0` turns tiering off (every kernel compiled in full before
it is returned); `CTENSOR_TIER_WORK` moves the threshold.
"""
from __future__ import annotations

import os
import threading
import time

from ..ir import nodes as ir

# IR statements × loops above which a kernel gets a first tier: the spatial box kernel is ~17k
# (0.16 s of O3), KPConv's ~49k (0.5 s), the genomics depth and count kernels 1.5k-3.5k (< 0.05 s)
WORK_THRESHOLD = 5_000
# ... and up to which: beyond, the optimised code itself takes a light size tier (`codegen.tiers`,
# ~5-8 LLVM lines per IR statement), as fast to make as a first tier, which would only double it
MAX_WORK = 1_000_000

_LOCK = threading.Lock()
_PENDING: set = set()            # upgrade threads still running


def enabled() -> bool:
    """Is tiering on (`CTENSOR_TIERED`, default on; read at each compile)?"""
    return os.environ.get("CTENSOR_TIERED", "1").strip().lower() not in ("0", "false", "off", "no")


def work_threshold() -> int:
    try:
        return int(os.environ.get("CTENSOR_TIER_WORK", WORK_THRESHOLD))
    except ValueError:
        return WORK_THRESHOLD


def size(fn: ir.Function) -> tuple:
    """(statements, loops) of an IR function, nested ones included: its size before LLVM."""
    n, loops, todo = 0, 0, [fn.body]
    while todo:
        for s in todo.pop():
            n += 1
            if isinstance(s, ir.If):
                todo += [s.then, s.orelse]
            elif isinstance(s, (ir.While, ir.For)):
                loops += 1
                todo.append(s.body)
    return n, loops


def work(fn: ir.Function) -> int:
    """Statements × loops of an IR function: the LLVM pipeline's cost grows like it (`codegen.tiers`)."""
    n, loops = size(fn)
    return n * max(loops, 1)


def first_tier(fn: ir.Function) -> bool:
    """Should `fn` (a kernel whose proofs were not cut) be compiled at the first tier, its optimised
    code following in the background?  The caller checks `enabled()`."""
    return work_threshold() < work(fn) <= MAX_WORK


def upgrade(kernel, build, on_final=None) -> None:
    """Run `build()` -> (spec, compiled, fn) of `kernel`'s optimised tier in a background thread,
    then promote `kernel` to it and call `on_final(spec, fn)` (the disk cache's store).  A failure
    leaves `kernel` at its first tier, correct and slower (`Kernel.wait_optimized` returns False)."""
    def run():
        try:
            from ..runtime.recursion import deep
            t0 = time.perf_counter()
            try:
                # at the interpreter's own recursion limit first: `deep` raises the process-wide
                # limit while it runs, which a test framework sees change under it (hypothesis warns)
                spec, compiled, fn = build()
            except RecursionError:
                spec, compiled, fn = deep(build)()      # a deeply nested program (`runtime.recursion`)
            spec.compile_seconds = {**spec.compile_seconds, "background": time.perf_counter() - t0}
            kernel._promote(spec, compiled, fn)
            if on_final is not None:
                on_final(spec, fn)
        except BaseException as e:       # noqa: BLE001 - the kernel keeps its first tier
            kernel._promotion_failed(e)
        finally:
            with _LOCK:
                _PENDING.discard(threading.current_thread())

    t = threading.Thread(target=run, name=f"ctensor-tier2-{kernel.es.out}", daemon=False)
    with _LOCK:
        try:
            t.start()
        except RuntimeError as e:        # no thread to spare, or the interpreter is exiting
            kernel._promotion_failed(e)
            return
        _PENDING.add(t)


def wait() -> None:
    """Wait for every pending upgrade of this process (benchmarks, before timing kernels)."""
    while True:
        with _LOCK:
            pending = next(iter(_PENDING), None)
        if pending is None:
            return
        pending.join()
