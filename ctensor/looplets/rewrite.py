"""What every looplet pass does to the loop body: substitute the looplets it lowers, truncate the
others to the sub-extent it creates, resolve what became a leaf (`lower.lowerer.resolve`); and the
small helpers the passes share (`looplets.passes`, `looplets.walk`).

Source: Looplets paper §4 (truncation, §4.3), digest §2.3-2.4.
"""
from __future__ import annotations

from dataclasses import replace

from ..extents import SymLimit, lim_eq
from ..ir import build as b
from ..lower.lowerer import at_index, is_tracked, resolve, settle_presence
from ..lower.notation import map_accesses, walk_accesses
from .truncate import truncate


def _rewrite(ctx, loop, pick, make, ext_new=None):
    """Substitute make(acc) for accesses at the loop index selected by `pick`; truncate the others."""
    tracked = False

    def f(acc):
        nonlocal tracked
        if not at_index(acc, loop.idx):
            return acc
        if pick(acc):
            new = make(acc)
        elif ext_new is not None:
            if loop.idx in acc.covered and not _same(loop.ext, ext_new):
                # the looplet is lowered on part of the extent its cursor was set up for: it must
                # seek and test again (a picked access keeps the mark: the pass cut the extent
                # to its own range)
                acc = replace(acc, covered=acc.covered - {loop.idx})
            new = truncate(acc.tns, loop.ext, ext_new)
        else:
            return acc
        out = resolve(ctx, acc, new)
        tracked = tracked or is_tracked(out)
        return out
    body = map_accesses(loop.body, f)
    return settle_presence(body) if tracked else body


def _same(ext, sub) -> bool:
    eq = lambda x, y: x == y or b.is_const(lim_eq(x, y), True)
    return sub is ext or (eq(sub.start, ext.start) and eq(sub.stop, ext.stop))


def _accesses(loop, cls):
    return [a for a in walk_accesses(loop.body) if at_index(a, loop.idx) and isinstance(a.tns, cls)]


def _bind(ctx, x: SymLimit, hint, finite=None) -> SymLimit:
    # a min/max keeps its operands for lim_le, bound here too: read later, they must still have
    # the values they had at this point
    parts = None if x.parts is None else (x.parts[0], _bind(ctx, x.parts[1], hint + "_a"),
                                          _bind(ctx, x.parts[2], hint + "_b"))
    out = SymLimit(ctx.let(x.v, hint), ctx.let(x.e, hint + "_e"), x.finite if finite is None else finite, parts)
    if out.finite:                       # a fact for the guard prover (stored coordinates are finite)
        ctx.assume(b.lt(b.f64(float("-inf")), out.v))
    return out


def _noop_on(ctx, loop, acc, leaf) -> bool:
    """Is the loop body a no-op where access `acc` reads `leaf` (x * 0, x & false, min= inf...)?"""
    from ..lower.simplify import simplify
    return simplify(_rewrite(ctx, loop, lambda a: a is acc, lambda a: leaf)) is None
