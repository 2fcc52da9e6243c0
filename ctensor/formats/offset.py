"""Offset wrapper: `A[x + d]` reads A shifted by a runtime amount d (Finch `offset.jl`; Looplets
paper's Shift; digest §1.6).

The wrapper forwards every looplet hook of the wrapped level: extents going in are moved into the
tensor's frame (`+ d`), coordinates coming out are moved back (`- d`).  Cursor advancement compares
values computed in one frame only (a chunk's stop is `stored - d` both when it bounds a step and
when it is tested for being finished), so the float round trip `(u - d) + d` never decides whether
a cursor moves (digest pitfall 4).
"""
from __future__ import annotations

from ..extents import Extent, SymLimit
from ..ir import build as b
from ..looplets.nodes import (AcceptRun, Deferred, Lookup, Phase, PhaseSpec, Run, Sequence, Spike,
                              Stepper, Switch, Thunk)


def _move(x: SymLimit, d) -> SymLimit:
    return SymLimit(b.add(x.v, d), x.e)


def _move_ext(ext: Extent, d) -> Extent:
    return Extent(_move(ext.start, d), _move(ext.stop, d), ext.continuous)


def shift(node, d):
    """The looplet `node` (inner frame u) seen from the outer frame x = u - d."""
    nd = b.neg(d)
    if isinstance(node, Thunk):
        return Thunk(shift(node.body, d), node.preamble, node.epilogue)
    if isinstance(node, Deferred):
        return Deferred(lambda: shift(node.make(), d))
    if isinstance(node, Lookup):
        return Lookup(lambda ctx, j: shift(node.body(ctx, _move(j, d)), d))
    if isinstance(node, Run):
        return Run(shift(node.body, d))
    if isinstance(node, Spike):
        return Spike(shift(node.body, d), shift(node.tail, d))
    if isinstance(node, Phase):
        return Phase(lambda ctx, ext: shift(node.body(ctx, _move_ext(ext, d)), d),
                     start=None if node.start is None else _move(node.start, nd),
                     stop=None if node.stop is None else _move(node.stop, nd))
    if isinstance(node, Sequence):
        return Sequence([PhaseSpec(body=(lambda spec: lambda ctx, ext: shift(spec.body(ctx, _move_ext(ext, d)), d))(s),
                                   stop=None if s.stop is None else
                                   (lambda spec: lambda ctx, ext: _move(spec.stop(ctx, _move_ext(ext, d)), nd))(s))
                         for s in node.phases])
    if isinstance(node, Stepper):
        return Stepper(seek=lambda ctx, ext: node.seek(ctx, _move_ext(ext, d)),
                       preamble=node.preamble,
                       stop=lambda ctx: _move(node.stop(ctx), nd),
                       chunk=lambda ctx: shift(node.chunk(ctx), d),
                       next=node.next, stop_eps=node.stop_eps)
    if isinstance(node, Switch):
        return Switch([(c, shift(n, d)) for c, n in node.cases])
    if isinstance(node, AcceptRun):
        return AcceptRun(lambda ctx, ext: shift(node.body(ctx, _move_ext(ext, d)), d))
    return node        # leaves: the shift belongs to this index only


class VShifted:
    """A tensor's virtual root with offsets at some depths: unfurling depth k shifts by shifts[k]
    and hands out children wrapped for the deeper shifts."""

    is_leaf = False

    def __init__(self, level, shifts: dict, depth: int = 0):
        self.level, self.shifts, self.depth = level, shifts, depth
        self.fill = level.fill
        self.coord = getattr(level, "coord", None)

    def extent(self):
        return self.level.extent()

    def _wrap_children(self, node):
        from ..looplets.nodes import Fiber
        if isinstance(node, Fiber) and node.level is self.level.child:
            return Fiber(VShifted(node.level, self.shifts, self.depth + 1), node.pos) \
                if any(k > self.depth for k in self.shifts) and not getattr(node.level, "is_leaf", False) else node
        return node

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        d = self.shifts.get(self.depth)
        inner = self.level.unfurl(ctx, pos, ext if d is None else _move_ext(ext, d), mode, dirty)
        out = inner if d is None else shift(inner, d)
        return _map_leaves(out, self._wrap_children)

    def read_leaf(self, ctx, pos):
        return self.level.read_leaf(ctx, pos)


def _map_leaves(node, fn):
    """Apply fn to the leaves a looplet nest hands out (lazily, through its callables)."""
    if isinstance(node, Thunk):
        return Thunk(_map_leaves(node.body, fn), node.preamble, node.epilogue)
    if isinstance(node, Deferred):
        return Deferred(lambda: _map_leaves(node.make(), fn))
    if isinstance(node, Lookup):
        return Lookup(lambda ctx, j: _map_leaves(node.body(ctx, j), fn))
    if isinstance(node, Run):
        return Run(_map_leaves(node.body, fn))
    if isinstance(node, Spike):
        return Spike(_map_leaves(node.body, fn), _map_leaves(node.tail, fn))
    if isinstance(node, Phase):
        return Phase(lambda ctx, ext: _map_leaves(node.body(ctx, ext), fn), node.start, node.stop)
    if isinstance(node, Sequence):
        return Sequence([PhaseSpec((lambda s: lambda ctx, ext: _map_leaves(s.body(ctx, ext), fn))(s), s.stop)
                         for s in node.phases])
    if isinstance(node, Stepper):
        return Stepper(node.seek, node.preamble, node.stop, lambda ctx: _map_leaves(node.chunk(ctx), fn),
                       node.next, node.stop_eps)
    if isinstance(node, Switch):
        return Switch([(c, _map_leaves(n, fn)) for c, n in node.cases])
    if isinstance(node, AcceptRun):
        return AcceptRun(lambda ctx, ext: _map_leaves(node.body(ctx, ext), fn))
    return fn(node)
