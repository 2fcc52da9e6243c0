"""The lowering context: where looplet passes and levels emit IR.

It owns the statement stack (structured blocks), fresh names, kernel parameters (one per runtime
buffer or scalar, in argument order) and small code helpers that levels share: `let` binding,
mutable variables, growable buffers; the galloping/binary searches used by `seek` are in
`lower.search`.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

from ..analysis.guards import GuardProver
from ..extents import lim_eq
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, I64, PtrType, ScalarType
from .search import Searches
from .tile import SUFFIX


class Context(Searches):
    def __init__(self, prove_guards: bool = False, cut_at: int | None = None):
        # the z3 guard prover (`ctensor.analysis.guards`) and the facts it reasons from, or None
        self.prover = GuardProver() if prove_guards else None
        # tiering (`driver.tiering`): once statements × loops emitted pass `cut_at`, the kernel gets a
        # first tier, and its guards are left to the optimised tier's lowering (`GuardProver.cut`)
        self._cut_at = cut_at if self.prover else None
        self._emitted = self._loops = 0
        self.params: list[ir.Var] = []
        self.param_roles: list[tuple] = []      # (role, owner, buffer name) per param
        self._stack: list[list] = [[]]
        self._names: dict[str, int] = {}
        self.epilogue: list = []                # statements run after the main loop nest
        self.writebacks: list = []              # stores of grown buffers' cells, also run on failure
        self._overflow = None                   # i64 flag of checked int sums (`overflow_flag`)
        # sparse outputs take appends in any coordinate order (a revisited output, merged after the
        # call by `runtime.merge_output`) instead of failing with STATUS_OUTPUT_ORDER
        self.unordered_output = False
        # the output's ⊕ is idempotent: a pass whose run overlaps the fiber's previous run, starts
        # at or after it and has an equal value extends that run (v ⊕ v = v) instead of failing the
        # order check (`formats.run_folds`): a union of intervals in start order in one pass
        self.fold_overlaps = False
        self.union_reads = False        # some access is read by the union protocol (`formats.run_union`)
        self.whole_splits = 0           # depth of "whole fiber" versions in the body being lowered
        # real index -> i1 or PinTail: the extent being lowered is a pinpoint for every inner
        # coordinate (`looplets.pins.pin_tails`; read by `lower.lowerer.collapse` under counting)
        self.pin_sure: dict = {}
        # real index -> [(access name, 'start' | 'stop', SymLimit)]: the own bounds of the phases,
        # chunks and pinpoints around the extent being lowered, for `PinTail`
        self.pin_cuts: dict = {}
        self.run_levels: dict = {}      # real index -> names of accesses of outer run-list levels
        # real index -> {(name, inner indices): (access, RunNeighbours)}: the outer run-list
        # accesses being lowered there that can locate their runs (`lower.run_counting`)
        self.run_around: dict = {}
        self.run_unlocated: dict = {}   # real index -> names of those that cannot (for good)
        self.index_kinds: dict = {}     # index -> 'int' | 'real' (the plan's)
        self.loop_order: tuple = ()     # the loop nest's indices, outermost first
        self.grid_tensors: frozenset = frozenset()     # names of tensors stored under UniformGrid levels
        self.cell_starts: dict = {}     # binned index -> SymLimits of the current cells' lower edges (`lower.tile`)

    @contextmanager
    def pinning(self, idx: str, sure):
        """Scope in which `pin_sure[idx]` is `sure` (None: unchanged)."""
        old = self.pin_sure.get(idx)
        if sure is None:
            yield
            return
        self.pin_sure[idx] = sure
        try:
            yield
        finally:
            if old is None:
                del self.pin_sure[idx]
            else:
                self.pin_sure[idx] = old

    @contextmanager
    def cutting(self, idx: str, cuts, runs=()):
        """Scope in which `pin_cuts[idx]` also holds `cuts`; the names of `runs` (steppers of outer
        run-list levels at `idx`) join `run_levels[idx]` for good: their phases' bounds count too."""
        stack = self.pin_cuts.setdefault(idx, [])
        n = len(stack)
        stack.extend(cuts)
        # at a tile loop x#cell (`lower.tile`) the other tensors read with x cut x's partition: the
        # inner loop over x, which runs on one piece, must see them; a grid's cell edges are no cut
        base = idx[:-len(SUFFIX)] if idx.endswith(SUFFIX) else None
        inner = self.pin_cuts.setdefault(base, []) if base is not None else []
        m = len(inner)
        inner.extend(c for c in cuts if c[0] not in self.grid_tensors)
        self.run_levels.setdefault(idx, set()).update(a.name for a in runs)
        try:
            yield
        finally:
            del stack[n:]
            del inner[m:]

    @contextmanager
    def locating(self, idx: str, found):
        """Scope in which `run_around[idx]` also holds `found`: [(access, RunNeighbours)] of outer
        run-list accesses (with inner levels) unfurled at `idx`."""
        table = self.run_around.setdefault(idx, {})
        added = []
        for acc, nb in found:
            key = (acc.name, tuple(acc.idxs[1:]))
            if key not in table:
                table[key] = (acc, nb)
                added.append(key)
            elif table[key][0] is not acc:
                # two reads of one tensor at the same inner indices (A[x, i], A[x + 1, i]): their
                # cuts carry one name, so neither can be told apart at a point (refused there)
                self.run_unlocated.setdefault(idx, set()).add(acc.name)
        try:
            yield
        finally:
            for key in added:
                del table[key]

    def pin_test(self, idx: str):
        """i1: the point being collapsed is a pinpoint of index `idx` for every inner coordinate."""
        sure = self.pin_sure.get(idx, b.TRUE)
        return sure.test(self.pin_cuts.get(idx, [])) if isinstance(sure, PinTail) else sure

    # ---------------------------------------------------------------- names and params
    def fresh(self, hint: str) -> str:
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return hint if n == 0 else f"{hint}_{n}"

    def param(self, hint: str, ty, role=None) -> ir.Var:
        v = ir.Var(self.fresh(hint), ty, "param")
        self.params.append(v)
        self.param_roles.append(role)
        return v

    # ---------------------------------------------------------------- emission
    def emit(self, stmt):
        self._stack[-1].append(stmt)
        if self._cut_at is not None:
            self._emitted += 1
            if isinstance(stmt, (ir.While, ir.For)):
                self._loops += 1
            if self._emitted * max(self._loops, 1) > self._cut_at:
                self.prover.cut, self._cut_at = True, None

    def extend(self, stmts):
        """Emit the statements of a block collected by `block()`."""
        self._stack[-1].extend(stmts)

    @contextmanager
    def block(self):
        """Collect the statements emitted inside the `with` into a fresh list."""
        body: list = []
        self._stack.append(body)
        if self.prover:
            self.prover.push()                  # facts assumed inside hold only inside
        try:
            yield body
        finally:
            self._stack.pop()
            if self.prover:
                self.prover.pop()

    # ---------------------------------------------------------------- facts (guard prover)
    def assume(self, cond):
        """State that i1 `cond` holds from here to the end of the current block (a fact of the
        lowering, e.g. a stored coordinate is finite); the guard prover may use it."""
        if self.prover:
            self.prover.assume(cond)

    def prove(self, cond):
        """A guard decided at compile time when z3 proves it under the known facts (TRUE/FALSE),
        possibly with implied conjuncts dropped; `cond` itself when unproved or switched off.
        Prefer `if_(..., prove=True)`, which asks only when the guarded code is not empty."""
        return self.prover.prove(cond) if self.prover else cond

    def pinpoint_test(self, ext):
        """Is the continuous extent `ext` a pinpoint: a constant when decided at compile time,
        else the run-time test.  A proof of "never a pinpoint" is not used: callers keep it as a
        run-time error (fail_if) rather than a compile error from an assumption."""
        pin = ext.is_pinpoint()
        if not b.is_const(pin):
            proved = self.prove(pin)
            pin = pin if b.is_const(proved, False) else proved
        return pin

    def let(self, expr, hint: str = "v"):
        """Bind an expression to an SSA value unless it is already trivial."""
        if isinstance(expr, (ir.Const, ir.Read)) and (not isinstance(expr, ir.Read) or expr.var.kind != "mut"):
            return expr
        v = ir.Var(self.fresh(hint), expr.type, "let")
        self.emit(ir.Let(v, expr))
        if self.prover:
            self.prover.define(v, expr)
        return ir.Read(v)

    def mut(self, ty, init, hint: str = "m") -> ir.Var:
        v = ir.Var(self.fresh(hint), ty, "mut")
        self.emit(ir.Assign(v, init))
        return v

    def top_mut(self, ty, init, hint: str = "m") -> ir.Var:
        """A mutable variable initialised once at the kernel's entry, whatever block is open: state
        that outlives one unfurl of a fiber (a search finger)."""
        v = ir.Var(self.fresh(hint), ty, "mut")
        self._stack[0].insert(0, ir.Assign(v, init))
        return v

    def assign(self, var: ir.Var, value):
        self.emit(ir.Assign(var, value))

    def guard(self, cond, then_fn, prove=False):
        """Emit `if cond {then_fn()}`, if-converted to selects when the body only binds values and
        updates accumulators (no stores, loops or returns).  This keeps the merge loop branchless:
        the guard is a data-dependent extent test that a branch predictor cannot learn.  The body's
        loads read positions of live cursors, which are in bounds whether or not cond holds.
        prove: let the guard prover decide cond (see `if_`)."""
        if b.is_const(cond):
            self.if_(cond, then_fn)
            return
        decided = self.prover.decided if self.prover else 0
        with self.block() as body:
            self.assume(cond)
            then_fn()
        if not body:
            return
        if prove and self.prover:
            cond = self.prover.prove(cond)
            if b.is_const(cond):
                if cond.value:
                    self.extend(body)
                return
        # an `if` inside that the prover removed (using cond) may have protected a load: such a
        # body must stay behind a branch, not run speculatively
        speculative_ok = not self.prover or self.prover.decided == decided or not any(map(_loads, body))
        if speculative_ok and all(isinstance(s, (ir.Let, ir.Assign)) for s in body):
            c = self.let(cond, "guard")
            for s in body:
                if isinstance(s, ir.Assign):
                    self.emit(ir.Assign(s.var, b.select(c, s.value, ir.Read(s.var))))
                else:
                    self.emit(s)
        else:
            self.emit(ir.If(cond, body, []))

    def if_(self, cond, then_fn, else_fn=None, prove=False):
        """Emit `if cond {then_fn()} else {else_fn()}`, folding constant conditions.

        prove: ask the guard prover (`ctensor.analysis.guards`) to decide or narrow cond — once
        the branches are built (each under cond, resp. its negation, as a fact) and only when one
        of them emitted code: a guard around nothing costs no z3 call."""
        if b.is_const(cond, True):
            then_fn()
            return
        if b.is_const(cond, False):
            if else_fn:
                else_fn()
            return
        with self.block() as t:
            self.assume(cond)
            then_fn()
        e: list = []
        if else_fn:
            with self.block() as e:
                self.assume(b.lnot(cond))
                else_fn()
        if not (t or e):
            return
        if prove and self.prover:
            cond = self.prover.prove(cond)
            if b.is_const(cond):                # the taken branch was built under a true fact
                self.extend(t if cond.value else e)
                return
        self.emit(ir.If(cond, t, e))

    def fail_if(self, cond, status: int):
        """Return `status` when `cond` holds, after writing back the output buffers grown so far
        (`GrowBuffer`): the caller frees them, or reuses them in a later call of its block."""
        def fail():
            for s in self.writebacks:
                self.emit(s)
            self.emit(ir.Return(status))
        self.if_(cond, fail)

    def checked_mul(self, count, shape):
        """count * shape (i64, both >= 0) for the size of an output buffer, failing with
        STATUS_OUT_OF_MEMORY when it exceeds MAX_ELEMS (a Dense output of shape 2**32 x 2**32
        wrapped around to a small buffer)."""
        # in float64 (no division in a loop; rounding is far below the margin of MAX_ELEMS)
        size = b.mul(b.cast(F64, count), b.cast(F64, shape))
        self.fail_if(b.lt(b.f64(float(MAX_ELEMS)), size), ir.STATUS_OUT_OF_MEMORY)
        return b.mul(count, shape)

    # ---------------------------------------------------------------- results
    def overflow_flag(self) -> ir.Var:
        """An i64 whose sign bit records that some checked int64 sum wrapped (`ops.checked_add`
        ORs the overflow sign into it; no branch in the loop, so it still vectorizes).  It is
        tested once, after the loop nest (`statements`): STATUS_INT_OVERFLOW."""
        if self._overflow is None:
            self._overflow = self.top_mut(I64, b.i64(0), "ovf")
        return self._overflow

    def statements(self) -> list:
        assert len(self._stack) == 1
        if self._overflow is not None:
            flag, self._overflow = self._overflow, None
            self.fail_if(b.lt(ir.Read(flag), b.i64(0)), ir.STATUS_INT_OVERFLOW)
        return self._stack[0]


def _loads(s) -> bool:
    """Does a Let or Assign statement read memory?"""
    def has(e):
        if isinstance(e, ir.Load):
            return True
        return any(has(getattr(e, f)) for f in ("a", "b", "cond", "ptr", "index") if hasattr(e, f))
    return isinstance(s, (ir.Let, ir.Assign)) and has(s.value)


MAX_ELEMS = 2 ** 59      # a grown buffer's elements: its size in bytes (<= 8 per element) fits in int64


class GrowBuffer:
    """A kernel-owned buffer grown by doubling with libc realloc.

    The runtime passes a two-slot i64 cell [address, capacity] (address 0 = nothing allocated);
    the kernel keeps (pointer, capacity) in mutable variables and writes them back at the end.
    A negative capacity -n is a caller's buffer of n elements that already hold the output's fill
    value (`runtime.lend`): capacity n, and `filled` = n tells the leaf's declare not to set them
    again (the fill pass over the whole output costs as much as the rest of the writes)."""

    def __init__(self, ctx: Context, hint: str, elem: ScalarType, owner, attr: str):
        self.elem = elem
        self.cell = ctx.param(hint + "_cell", PtrType(I64), ("grow", owner, attr))
        self.ptr = ctx.mut(PtrType(elem), b.cast(PtrType(elem), b.load(ir.Read(self.cell), 0)), hint)
        given = ctx.let(b.load(ir.Read(self.cell), 1), hint + "_given")
        self.filled = ctx.let(b.maximum(b.sub(b.i64(0), given), b.i64(0)), hint + "_filled")
        self.cap = ctx.mut(I64, b.maximum(given, b.sub(b.i64(0), given)), hint + "_cap")
        back = [ir.Store(ir.Read(self.cell), b.i64(0), b.cast(I64, ir.Read(self.ptr))),
                ir.Store(ir.Read(self.cell), b.i64(1), ir.Read(self.cap))]
        ctx.epilogue += back
        ctx.writebacks += back

    @property
    def data(self):
        return ir.Read(self.ptr)

    def ensure(self, ctx: Context, n):
        """Make room for at least n elements (n: i64 expression); more than MAX_ELEMS elements (or a
        negative n, from an overflowed product) fail with STATUS_OUT_OF_MEMORY before any size
        computation could wrap around."""
        size = max(1, self.elem.bits // 8)

        def grow():
            ctx.fail_if(b.lt(b.i64(MAX_ELEMS), n), ir.STATUS_OUT_OF_MEMORY)
            want = b.maximum(n, b.maximum(b.mul(ir.Read(self.cap), b.i64(2)), b.i64(16)))
            newcap = ctx.let(b.minimum(want, b.i64(MAX_ELEMS)), "newcap")
            raw = ir.Call("realloc", (ir.Read(self.ptr), b.mul(newcap, b.i64(size))), PtrType(self.elem))
            p = ctx.let(raw, "grown")
            ctx.fail_if(b.eq(b.cast(I64, p), b.i64(0)), ir.STATUS_OUT_OF_MEMORY)
            ctx.assign(self.ptr, p)
            ctx.assign(self.cap, newcap)

        ctx.if_(b.lt(ir.Read(self.cap), n), grow)


@dataclass(frozen=True)
class PinTail:
    """The tail point c of spikes tagged with `Access.pins` (`looplets.pins.pin_tails`): a
    pinpoint for every inner coordinate when the other accesses cut the partition on both sides of
    c, so that the intersection of their pieces there is {c} (paper §4.2, Fig. 5).  Decided at the
    collapse, when the cuts of the accesses still being unfurled at c are known too."""
    c: object                 # SymLimit
    tagged: frozenset         # names of the tagged accesses: their own bounds do not cut for all
    left: object              # i1: the spike's extent started at c, and no tagged phase did

    def test(self, cuts):
        at_c = lambda side: reduce(b.lor, [lim_eq(lim, self.c) for name, s, lim in cuts
                                           if s == side and name not in self.tagged], b.FALSE)
        return b.land(b.lor(self.left, at_c("start")), at_c("stop"))
