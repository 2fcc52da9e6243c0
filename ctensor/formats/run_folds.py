"""How a run-list output (`VSparseRunList`) folds an entry into the run before it instead of
appending one: coalescing a run that starts right after the previous run with an equal value
(run-length canonical output), and, under an idempotent ⊕ over a revisited output
(`Context.fold_overlaps`), folding a run that starts within it (a union of intervals visited in
start order, written in one pass).  Source: Finch's run-length writers (digest §1.4) and the
continuous paper's union of intervals (§7.2).

The level's last committed run (left, left ε, right, right ε) is held in the registers `_last`
(made in `declare`): the entry at slot qos - 1 that the order check, coalesce and fold compare
with, kept in registers instead of reloaded from the buffers it was just stored to (a union
folding millions of intervals otherwise waits on a store-to-load round trip through memory per
interval).  They are read only when that slot belongs to the fiber (first <= qos - 1); every
write of the level commits through `append_entry`, which assigns them, or through `_set_right`.
"""
from __future__ import annotations

from ..extents import SymLimit, lim_le, lim_max
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I1


class RunFolds:
    """The fold and coalesce of a run-list output level (needs `name`, `child`, `bufs`, `_last`)."""

    def _stored_right(self):
        """The right end of the last committed run (slot qos - 1), from its registers."""
        return SymLimit(ir.Read(self._last[2]), ir.Read(self._last[3]), True)

    def _set_right(self, ctx, p, v, eps):
        """Store a new right end of the run at slot p (= qos - 1) and keep its registers equal."""
        ctx.emit(ir.Store(self.bufs["right"].data, p, v))
        ctx.emit(ir.Store(self.bufs["right_eps"].data, p, eps))
        ctx.assign(self._last[2], v)
        ctx.assign(self._last[3], eps)

    def _fold(self, ctx, q, e, begin):
        """An idempotent ⊕ over a revisited output (`Context.fold_overlaps`): a run that starts
        within or right after the previous run of the fiber (previous start <= start <= previous
        stop + ε) with an equal value is folded into it, its stop the greater of the two; a union
        of intervals visited in start order is then written in one pass, with no merge after the
        call.  Other overlaps still fail the order check (the runtime merges those passes)."""
        same = getattr(self.child, "same_value", None)
        if same is None:
            return b.FALSE, None
        p = ctx.let(b.sub(q, b.i64(1)), self.name + "_fprev")
        L, Le, R, Re = (ir.Read(v) for v in self._last)     # slot p's run, from its registers
        cond = ctx.mut(I1, b.FALSE, self.name + "_overlap")

        def check():        # slot p is a committed entry of this fiber
            after = lim_le(SymLimit(L, Le), e.start)
            within = lim_le(e.start, SymLimit(R, b.add(Re, b.i8(1))))
            ctx.assign(cond, b.land(b.land(after, within), same(ctx, p, q)))
        ctx.if_(b.le(begin, p), check)

        def extend(ctx):
            stop = lim_max(self._stored_right(), e.stop)
            # both bound before the registers change: the ε's select reads the old right end
            v, eps = ctx.let(stop.v, self.name + "_fold_v"), ctx.let(stop.e, self.name + "_fold_e")
            self._set_right(ctx, p, v, eps)
        return ir.Read(cond), extend

    def _coalesce(self, ctx, q, e, begin):
        """Run-length canonical output: a run that starts right after the previous run of the same
        fiber (next start = previous stop + ε) with an equal value extends that run."""
        same = getattr(self.child, "same_value", None)
        if same is None:
            return b.FALSE, None
        p = ctx.let(b.sub(q, b.i64(1)), self.name + "_prev")
        R, Re = ir.Read(self._last[2]), ir.Read(self._last[3])    # slot p's right end
        # slot p's child value is loaded only when p >= begin (a committed entry of this fiber)
        cond = ctx.mut(I1, b.FALSE, self.name + "_touch")

        def check():
            touch = b.land(b.eq(R, e.start.v), b.eq(b.add(Re, b.i8(1)), e.start.e))
            ctx.assign(cond, b.land(touch, same(ctx, p, q)))
        ctx.if_(b.le(begin, p), check)

        def extend(ctx):
            self._set_right(ctx, p, e.stop.v, e.stop.e)
        return ir.Read(cond), extend
