"""Walks of the stored coordinates of a SparseList fiber (spikes whose fill makes the loop body a
no-op): `q = seek(start); while stop(q) <= ext.stop: body at stop(q); q++`, and the counted walk of a
fiber covered by the extent (no seek, no coordinate test).

Source: Looplets paper §4.5 (sparse iteration when the fill annihilates); the counted walk is ours
(`lower.tile.lower_piece`: a whole grid cell).
"""
from __future__ import annotations

from ..extents import Extent, lim_le, lim_lt
from ..ir import build as b
from ..ir import nodes as ir
from ..lower.lowerer import lower
from ..lower.notation import Loop
from .nodes import FillLeaf, Lookup, Run, Walk
from .rewrite import _accesses, _bind, _noop_on, _rewrite


WHOLE_SPLIT_NEST = 2     # nested "whole fiber" versions allowed below one (4 copies of a body at most)


def try_spike_walk(ctx, loop, acc) -> bool:
    """A lone stepper of spikes whose fill makes the body a no-op (x * 0, x & false, min= inf...):
    visit its stored coordinates only — `q = seek(start); while stop(q) <= ext.stop: body at
    stop(q); q++` — instead of merging extents with Limit arithmetic (the sparse iteration of the
    Looplets paper §4.5 when the fill annihilates).  Emits nothing and returns False otherwise."""
    st, ext = acc.tns, loop.ext
    if not st.spikes or st.stop_eps != 0 or not _noop_on(ctx, loop, acc, FillLeaf(st.fill)):
        return False
    go = ctx.mut(ir.I1, ext.nonempty(), loop.idx + "_go")
    ctx.if_(ir.Read(go), lambda: st.seek(ctx, ext))
    visit, at = _visit(ctx, loop, acc, st), _at(ctx, loop, st)

    def walk():
        with ctx.block() as body:
            s = at()

            def step():
                visit(s)
                # the extent lies inside the stepper's phase, which ends at its last stop: a stop
                # before ext.stop has a successor, so the next load stays in the buffer
                ctx.assign(go, lim_lt(s, ext.stop))
                st.next(ctx, b.TRUE)
            ctx.if_(lim_le(s, ext.stop), step, lambda: ctx.assign(go, b.FALSE))
        ctx.emit(ir.While(ir.Read(go), body))

    if st.last is None:
        walk()
        return True
    # every coordinate left in the fiber is <= its last one <= ext.stop: a second version of the
    # body loops on positions.  Each such split doubles the code below it, so a body that already
    # holds WHOLE_SPLIT_NEST nested splits gets none (a d-dimensional box over pinpoints:
    # 2^d copies of the innermost loop otherwise); the innermost levels, where it pays, keep it.
    outer, ctx.whole_splits = ctx.whole_splits, 0
    with ctx.block() as general:
        walk()
    inner = ctx.whole_splits
    if inner >= WHOLE_SPLIT_NEST:
        ctx.extend(general)
    else:
        # bound here, before the `if` (the general version, collected above, is not emitted yet)
        whole = ctx.let(b.land(ir.Read(go), lim_le(st.last(), ext.stop)), loop.idx + "_whole")
        with ctx.block() as counted:
            ctx.assume(whole)
            _counted_walk(ctx, loop, acc, st)
        ctx.emit(ir.If(whole, counted, general))
        inner += 1
    ctx.whole_splits = max(outer, inner)
    return True


def _visit(ctx, loop, acc, st):
    """visit(s): lower the loop body at the stored coordinate s, the stepper's current spike tail."""
    def visit(s):
        point = Extent(s, s, loop.ext.continuous)
        spike = st.chunk(ctx)
        new = _rewrite(ctx, loop, lambda a: a is acc, lambda a: Run(spike.tail), point)
        # the stored point is a piece of its own wherever the body is not a no-op on the fill
        with ctx.pinning(loop.idx, b.TRUE if loop.ext.continuous else None):
            lower(ctx, Loop(loop.idx, point, new))
    return visit


def _at(ctx, loop, st):
    """at(): bind the stepper's current stored coordinate (inside the loop being emitted)."""
    def at():
        st.preamble(ctx)
        s = _bind(ctx, st.stop(ctx), loop.idx + "_at", True)
        ctx.assume(lim_le(loop.ext.start, s))     # the cursor is at or after the extent's start
        return s
    return at


def _counted_walk(ctx, loop, acc, st):
    """`while more: body at the current coordinate; next` — every coordinate left in the fiber is
    known to lie in the extent."""
    visit, at = _visit(ctx, loop, acc, st), _at(ctx, loop, st)
    with ctx.block() as body:
        s = at()
        ctx.assume(lim_le(s, loop.ext.stop))
        visit(s)
        st.next(ctx, b.TRUE)
    ctx.emit(ir.While(st.more(ctx), body))


def walk_pass(ctx, loop):
    """A Walk: when its access is covered at the loop (every stored coordinate lies in the extent,
    `lower.tile.lower_piece`) and the body is a no-op on the fill, the counted walk from the cursor
    (no seek, no coordinate test, no load of the last coordinate); otherwise the fallback."""
    acc = _accesses(loop, Walk)[0]
    st = acc.tns.stepper
    walkable = st.spikes and st.stop_eps == 0 and st.more is not None
    # alone at the loop: a looplet that would cut the extent goes first (a box's phases before a
    # walk of the whole fiber)
    if loop.idx in acc.covered and walkable and _alone(loop, acc) and _noop_on(ctx, loop, acc, FillLeaf(st.fill)):
        _counted_walk(ctx, loop, acc, st)
        return
    body = _rewrite(ctx, loop, lambda a: a is acc, lambda a: acc.tns.fallback())
    lower(ctx, Loop(loop.idx, loop.ext, body))


def _alone(loop, acc) -> bool:
    """Is `acc` the only access at the loop that cuts the extent (the others are point-wise
    writers or runs)?"""
    return all(a is acc or isinstance(a.tns, (Lookup, Run)) for a in _accesses(loop, object))
