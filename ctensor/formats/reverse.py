"""Reversed read looplets: a fiber seen through a view x = (u - b)/a with a < 0 (`A[-x]`,
`A[b - 2*x]`; `formats.affine`).

The view reverses the order of coordinates, so the stepper walks the fiber's entries from the
last to the first, and what bounds a chunk in the loop's frame is the *left* stored endpoint: the
run [l, r] of the tensor is [x(r), x(l)] in the loop, each ε negated — a half-open [s, e) becomes
(x(e), x(s)].  Every coordinate is mapped once into the loop's frame (`CoordView`), so seeks, step
stops and advancement compare x-frame values only (digest pitfall 4).

Seek moves the cursor down to the last entry (in storage order) whose x-frame stop is at or after
the extent start: `key(k) = start <= x(stop_k)` holds for k up to the answer and fails above it,
so a galloping search downward from the cursor finds the first failing position (`_backward`).
"""
from __future__ import annotations

import math

from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I8, I64
from ..looplets.nodes import FillLeaf, Fiber, PhaseSpec, Run, Sequence, Spike, Stepper, Thunk
from .level import closed_eps


def _cursor(ctx, lvl, pos, st, last_of):
    """Preamble: the cursor at the fiber's last entry, the fiber's first entry `lo`, and the
    stepper phase's stop `last` = the x-frame stop of entry lo (or `last_of(None)`, a bottom
    sentinel, for an empty fiber)."""
    n = lvl.name
    st["lo"] = ctx.let(b.load(lvl.ptr, pos), n + "_lo")
    hi = ctx.let(b.load(lvl.ptr, b.add(pos, b.i64(1))), n + "_hi")
    st["q"] = ctx.mut(I64, b.sub(hi, b.i64(1)), n + "_q")
    bottom = last_of(None)
    last = ctx.mut(bottom.v.type, bottom.v, n + "_last")
    # the stop's ε is a constant for homogeneous levels; otherwise it is loaded with the value
    laste = None if b.is_const(last_of(st["lo"]).e) else ctx.mut(I8, bottom.e, n + "_last_e")

    def load():
        x = last_of(st["lo"])
        ctx.assign(last, x.v)
        if laste is not None:
            ctx.assign(laste, x.e)
    ctx.if_(b.lt(st["lo"], hi), load)
    st["last"] = SymLimit(ctx.let(ir.Read(last), n + "_last"),
                          bottom.e if laste is None else ctx.let(ir.Read(laste), n + "_last_e"))


def _seek(ctx, st, stop_at, hint):
    """Move the cursor down to the largest k with e.start <= stop_at(k) (see the module doc)."""
    def seek(ctx, e):
        q = st["q"]
        key_fails = lambda k: b.lnot(lim_le(e.start, stop_at(k)))

        def search():
            first_fail = ctx._backward(key_fails, st["lo"], ir.Read(q), hint)
            ctx.assign(q, b.sub(first_fail, b.i64(1)))
        ctx.if_(b.le(st["lo"], ir.Read(q)), lambda: ctx.if_(key_fails(ir.Read(q)), search))
    return seek


def _next(st):
    return lambda ctx, full: ctx.assign(st["q"], b.sub(ir.Read(st["q"]), b.cast(I64, full)))


def reversed_sparse_list(lvl, ctx, pos):
    """SparseList (pinpoints or ids, `lvl.view.sign < 0`): Spike chunks from the last entry down."""
    st, n = {}, lvl.name
    coord = lambda k: lvl._lim(b.load_wide(lvl.idx, k))

    def last_of(k):
        return SymLimit(b.const(lvl._bottom(), lvl.cty), b.i8(0)) if k is None else coord(k)

    def step_preamble(ctx):
        st["qv"] = ctx.let(ir.Read(st["q"]), n + "_qv")
        st["c"] = ctx.let(b.load_wide(lvl.idx, st["qv"]), n + "_c")
        st["slot"] = lvl.child_pos(ctx, pos, st["qv"])

    stepper = Stepper(seek=_seek(ctx, st, coord, n + "_s"), preamble=step_preamble,
                      stop=lambda ctx: lvl._lim(st["c"]),
                      chunk=lambda ctx: Spike(FillLeaf(lvl.fill), Fiber(lvl.child, st["slot"])),
                      next=_next(st), stop_eps=0, spikes=True, fill=lvl.fill)
    body = Sequence([PhaseSpec(body=lambda ctx, e: stepper, stop=lambda ctx, e: st["last"]),
                     PhaseSpec(body=lambda ctx, e: Run(FillLeaf(lvl.fill)))])
    return Thunk(body, preamble=lambda ctx: _cursor(ctx, lvl, pos, st, last_of))


def reversed_sparse_run_list(lvl, ctx, pos):
    """SparseRunList (`lvl.view.sign < 0`): run k is [x(right_k), x(left_k)] in the loop's frame."""
    from .affine import see
    st, n = {}, lvl.name
    # a left endpoint is never +inf (validated), so its image is above -inf; a right one may be +inf
    x_stop = lambda k: see(lvl, lvl._left(k), True)
    x_start = lambda k: see(lvl, lvl._right(k), False)
    stop_eps = None if lvl.closed is None else -closed_eps(lvl.closed)[0]

    def last_of(k):
        if k is None:    # an empty fiber: -inf sorts before every extent start (>= -inf + ε)
            return SymLimit(b.f64(-math.inf), b.i8(0 if stop_eps is None else stop_eps))
        return x_stop(k)

    def step_preamble(ctx):
        qv = st["qv"] = ctx.let(ir.Read(st["q"]), n + "_qv")
        st["l"] = lvl._bind(ctx, x_start(qv), n + "_l")
        st["r"] = lvl._bind(ctx, x_stop(qv), n + "_r")

    def chunk(ctx):
        e = Extent.real()
        return Sequence([PhaseSpec(body=lambda ctx, ext: Run(FillLeaf(lvl.fill)),
                                   stop=lambda ctx, ext: e.minus_unit(st["l"])),
                         PhaseSpec(body=lambda ctx, ext: Run(Fiber(lvl.child, st["qv"])))])

    stepper = Stepper(seek=_seek(ctx, st, x_stop, n + "_s"), preamble=step_preamble,
                      stop=lambda ctx: st["r"], chunk=chunk, next=_next(st), stop_eps=stop_eps)
    body = Sequence([PhaseSpec(body=lambda ctx, e: stepper, stop=lambda ctx, e: st["last"]),
                     PhaseSpec(body=lambda ctx, e: Run(FillLeaf(lvl.fill)))])
    return Thunk(body, preamble=lambda ctx: _cursor(ctx, lvl, pos, st, last_of))
