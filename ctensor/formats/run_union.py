"""The union protocol of a run list: a SparseRunList fiber (or a SparseList of pinpoints, runs
[x, x]) read as one Stepper over the whole line whose chunks alternate gap and run, each a Run of
a *runtime* value (the fill in a gap).

The usual unfurl (`VSparseRunList.unfurl`) describes a chunk as a Sequence of a fill phase and a
stored phase, so the lowering can skip what the fill annihilates (`x * 0`, `x & false`).  Where
k fibers are combined by an operator the fill does not annihilate (`T0[x] | T1[x] | …`, a sum),
there is nothing to skip, and the Sequence passes emit a case for every combination of the k
cursors' states: 2**k code paths or more (k = 5 unions compiled in seconds, k = 7 in minutes).
Here every chunk is one Run whose value is selected at run time, so the Stepper pass merges the
k fibers with one body: the k-way merge of breakpoints a hand-written sweep does, linear code.
Chosen per access by `lower.nest.mark_unions`; exact for any fill (the gap's value is the fill).

State of the cursor: q (the current stored run, or q_stop past the last) and `inside` (the
cursor is in run q, not in the gap before it).  Touching runs (next start = stop + ε) have an
empty gap between them, which is skipped; a gap of canonical input is otherwise non-empty.
"""
from __future__ import annotations

import math

from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, I1, I8, I64
from ..looplets.nodes import FillLeaf, Run, Stepper, Thunk, Value
from .element import ir_type


def unfurl_union(lv, ctx, pos, left_at, right_at, reverse=False, present=None):
    """The union protocol of fiber `pos` of the read level `lv` (a VSparseRunList, or a
    VSparseList of real coordinates, whose child is an Element or Pattern leaf; its `ptr`,
    `fill`, `child` and `name`).  left_at(k), right_at(k): the SymLimits, in the loop's frame, of
    the first and last coordinates of stored entry k (equal for a pinpoint).  `reverse`: the
    loop's frame reverses storage order (a view with a < 0, `formats.reverse`), so the cursor's
    t-th entry is stored entry lo + hi - 1 - t of the fiber's [lo, hi).  `present`: an i1, false
    for a fiber that is not stored (`looplets.nodes.Fiber`), read as empty."""
    st, n = {}, lv.name
    kind = lv.child.kind
    ty = ir_type(kind)
    line = Extent.real()
    at = (lambda t: b.sub(st["mirror"], t)) if reverse else (lambda t: t)
    left, right = (lambda t: left_at(at(t))), (lambda t: right_at(at(t)))

    def preamble(ctx):
        st["q"] = ctx.mut(I64, b.load(lv.ptr, pos), n + "_q")
        stop = b.load(lv.ptr, b.add(pos, b.i64(1)))
        if present is not None:
            stop = b.select(present, stop, ir.Read(st["q"]))
        st["q_stop"] = ctx.let(stop, n + "_q_stop")
        if reverse:
            st["mirror"] = ctx.let(b.add(ir.Read(st["q"]), b.sub(st["q_stop"], b.i64(1))), n + "_mirror")
        st["in"] = ctx.mut(I1, b.FALSE, n + "_in")
        # the current chunk's stop and value, recomputed only when the cursor moves (`load`)
        st["sv"] = ctx.mut(F64, b.f64(math.inf), n + "_sv")
        st["se"] = ctx.mut(I8, b.i8(0), n + "_se")
        st["v"] = ctx.mut(ty, _const(lv.fill, kind), n + "_val")

    def load(ctx):
        """The chunk at (q, in): run q (its stop and value), the gap before it (its start - ε and
        the fill), or past the last run a gap to +inf (beyond every loop's stop: never `full`)."""
        qv = ctx.let(ir.Read(st["q"]), n + "_at")
        sv, se, val = st["sv"], st["se"], st["v"]

        def run():
            r = right(qv)
            ctx.assign(sv, r.v)
            ctx.assign(se, r.e)
            ctx.assign(val, _leaf_expr(lv.child.read_leaf(ctx, at(qv)), kind))

        def gap():
            g = line.minus_unit(left(qv))
            ctx.assign(sv, g.v)
            ctx.assign(se, g.e)
            ctx.assign(val, _const(lv.fill, kind))

        def past():
            ctx.assign(sv, b.f64(math.inf))
            ctx.assign(se, b.i8(0))
            ctx.assign(val, _const(lv.fill, kind))
        ctx.if_(b.lt(qv, st["q_stop"]), lambda: ctx.if_(ir.Read(st["in"]), run, gap), past)

    def seek(ctx, e):
        q, q_stop = st["q"], st["q_stop"]

        def search():
            key = lambda k: lim_le(e.start, right(k))
            ctx.assign(q, ctx.search_first_ge(key, ir.Read(q), q_stop, n + "_s"))
        ctx.if_(b.lt(ir.Read(q), q_stop),
                lambda: ctx.if_(b.lnot(lim_le(e.start, right(ir.Read(q)))), search))
        # the first run ending at or after the start: the cursor is inside it when it has begun
        ctx.assign(st["in"], b.FALSE)
        ctx.if_(b.lt(ir.Read(q), q_stop),
                lambda: ctx.assign(st["in"], lim_le(left(ir.Read(q)), e.start)))
        load(ctx)

    def step_preamble(ctx):
        st["qv"] = ctx.let(ir.Read(st["q"]), n + "_qv")
        st["inside"] = ctx.let(ir.Read(st["in"]), n + "_inside")
        st["stop"] = SymLimit(ctx.let(ir.Read(st["sv"]), n + "_stop"), ctx.let(ir.Read(st["se"]), n + "_stop_e"))
        st["val"] = ctx.let(ir.Read(st["v"]), n + "_value")

    def chunk(ctx):
        return Run(Value(st["val"], kind))

    def nxt(ctx, full):
        q, qv = st["q"], st["qv"]

        def advance():
            def leave_run():
                # the next run begins right after this one (touching): the gap is empty
                nq = ctx.let(b.add(qv, b.i64(1)), n + "_nq")
                ctx.assign(q, nq)
                touch = ctx.mut(I1, b.FALSE, n + "_touch")
                ctx.if_(b.lt(nq, st["q_stop"]),
                        lambda: ctx.assign(touch, _touching(right(qv), left(nq))))
                ctx.assign(st["in"], ir.Read(touch))
            ctx.if_(st["inside"], leave_run, lambda: ctx.assign(st["in"], b.TRUE))
            load(ctx)
        ctx.if_(full, advance)

    stepper = Stepper(seek=seek, preamble=step_preamble, stop=lambda ctx: st["stop"], chunk=chunk, next=nxt)
    return Thunk(stepper, preamble=preamble)


def _touching(r: SymLimit, l: SymLimit):
    """i1: the Limit l is r + ε (l follows r with no point between them)."""
    return b.land(b.eq(r.v, l.v), b.eq(b.add(r.e, b.i8(1)), l.e))


def _const(value, kind):
    return (b.TRUE if value else b.FALSE) if kind == "bool" else b.const(value, ir_type(kind))


def _leaf_expr(leaf, kind):
    return _const(leaf.value, kind) if isinstance(leaf, FillLeaf) else leaf.expr
