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
from ..looplets.nodes import (AcceptRun, Deferred, Fiber, Lookup, Phase, PhaseSpec, Run, Sequence,
                              Spike, Stepper, Switch, Thunk)


def _move(x: SymLimit, d) -> SymLimit:
    return SymLimit(b.add(x.v, d), x.e)


def _move_ext(ext: Extent, d) -> Extent:
    return Extent(_move(ext.start, d), _move(ext.stop, d), ext.continuous)


def rewrap(node, d=None, leaf=None):
    """Rebuild a looplet nest lazily, through its callables.  With `d`, the nest (inner frame u) is
    seen from the outer frame x = u - d: extents going in move by +d, coordinates coming out by -d.
    With `leaf`, every leaf it hands out is passed through leaf(node)."""
    go = lambda n: rewrap(n, d, leaf)
    into = (lambda e: e) if d is None else (lambda e: _move_ext(e, d))
    out = (lambda x: x) if d is None else (lambda x: _move(x, b.neg(d)))
    if isinstance(node, Thunk):
        return Thunk(go(node.body), node.preamble, node.epilogue)
    if isinstance(node, Deferred):
        return Deferred(lambda: go(node.make()))
    if isinstance(node, Lookup):
        return Lookup(lambda ctx, j: go(node.body(ctx, j if d is None else _move(j, d))))
    if isinstance(node, Run):
        return Run(go(node.body))
    if isinstance(node, Spike):
        return Spike(go(node.body), go(node.tail))
    if isinstance(node, Phase):
        return Phase(lambda ctx, ext: go(node.body(ctx, into(ext))),
                     start=None if node.start is None else out(node.start),
                     stop=None if node.stop is None else out(node.stop))
    if isinstance(node, Sequence):
        return Sequence([PhaseSpec(body=(lambda s: lambda ctx, ext: go(s.body(ctx, into(ext))))(s),
                                   stop=None if s.stop is None else
                                   (lambda s: lambda ctx, ext: out(s.stop(ctx, into(ext))))(s))
                         for s in node.phases])
    if isinstance(node, Stepper):
        return Stepper(seek=lambda ctx, ext: node.seek(ctx, into(ext)), preamble=node.preamble,
                       stop=lambda ctx: out(node.stop(ctx)), chunk=lambda ctx: go(node.chunk(ctx)),
                       next=node.next, stop_eps=node.stop_eps)
    if isinstance(node, Switch):
        return Switch([(c, go(n)) for c, n in node.cases])
    if isinstance(node, AcceptRun):
        return AcceptRun(lambda ctx, ext: go(node.body(ctx, into(ext))))
    return node if leaf is None else leaf(node)   # a leaf: the shift belongs to this index only


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

    def _wrap_child(self, node):
        if isinstance(node, Fiber) and node.level is self.level.child and not getattr(node.level, "is_leaf", False) \
                and any(k > self.depth for k in self.shifts):
            return Fiber(VShifted(node.level, self.shifts, self.depth + 1), node.pos)
        return node

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        d = self.shifts.get(self.depth)
        inner = self.level.unfurl(ctx, pos, ext if d is None else _move_ext(ext, d), mode, dirty)
        return rewrap(inner, d, self._wrap_child)

    def read_leaf(self, ctx, pos):
        return self.level.read_leaf(ctx, pos)
