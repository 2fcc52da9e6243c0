"""The counting measure at a stored pinpoint of an outer level (paper §4.2, Fig. 5).

P[x, j] with x outer: a stored x is a pinpoint only of the slices j it stores, unless the other
accesses' pieces isolate it too.  The spike pass tags such spikes (`pin_tails`, `Access.pins`)
and hands the collapse a `lower.context.PinTail`; the phase, stepper and pinpoint passes record
the own bounds of the pieces around (`phase_cuts`, `Context.cutting`), from which the collapse
decides whether the point counts for every inner coordinate (`lower.lowerer._pinned`).
"""
from __future__ import annotations

from dataclasses import replace
from functools import reduce

from ..extents import lim_eq
from ..ir import build as b
from ..lower.context import PinTail
from ..lower.lowerer import at_index
from ..lower.notation import Loop, map_accesses, walk_accesses, walk_assigns
from .nodes import FillLeaf, Spike, Stepper


def phase_cuts(phases, ext):
    """[(access name, 'start' | 'stop', SymLimit)]: the own bounds of the phase accesses `phases`
    at a loop over `ext`, for `PinTail` (none on an integer index)."""
    if not ext.continuous:
        return []
    return [(a.name, side, lim) for a in phases
            for side, lim in (("start", a.tns.start), ("stop", a.tns.stop)) if lim is not None]


def _spikes(loop):
    """(spikes at the loop index, those a tag applies to: fill on the left of a stored point
    whose inner levels are still to read)."""
    spikes = [a for a in walk_accesses(loop.body) if at_index(a, loop.idx) and isinstance(a.tns, Spike)]
    return spikes, [a for a in spikes if isinstance(a.tns.body, FillLeaf) and len(a.idxs) > 1]


def cut_first(loop) -> bool:
    """Should the steppers at the loop cut the extent before the spikes are split?  Yes when the
    spikes would be tagged under the counting measure: a stepper lowered inside the spike's tail is
    seeked to the point c and never sees its own chunk stop at c⁻ (a run open at c ends there), so
    it could not tell that it isolates c; stepping first, that stop ends a step and the tail's
    extent is the point itself (`pin_tails`: `left`)."""
    if not loop.ext.continuous or not any(a.measures.get(loop.idx) == "counting" for a in walk_assigns(loop.body)):
        return False
    spikes, tagged = _spikes(loop)
    return bool(spikes) and len(tagged) == len(spikes) and \
        any(at_index(a, loop.idx) and isinstance(a.tns, Stepper) for a in walk_accesses(loop.body))


def pin_tails(ctx, loop):
    """Tag the spikes whose tail is a stored pinpoint of an outer level (fill on its left, inner
    levels still to read) with `Access.pins`, and say whether the tail point is a pinpoint for
    every inner coordinate (`sure`: an i1, a `PinTail` decided at the collapse, or None: as the
    enclosing spike said): another spike is a leaf or has a stored left part, or the other
    accesses cut a piece on both sides of it (`PinTail`).  The counting measure then counts the
    point where `sure` or a tagged access stores its inner coordinates (`lower.lowerer.collapse`);
    paper §4.2, Fig. 5, and the oracle's `_isolated`: a pinpoint of the slice, whatever the level
    order."""
    ext, outer = loop.ext, ctx.pin_sure.get(loop.idx)
    if not ext.continuous:
        return loop, outer
    spikes, tagged = _spikes(loop)
    if len(tagged) < len(spikes):
        return loop, b.TRUE
    if not tagged:
        return loop, outer
    body = map_accesses(loop.body, lambda a: replace(a, pins=a.pins | {loop.idx}) if any(a is t for t in tagged)
                        else a)
    names = frozenset(a.name for a in tagged)
    if isinstance(outer, PinTail):       # a tagged spike inside another's tail: same point
        return Loop(loop.idx, ext, body), replace(outer, tagged=outer.tagged | names)
    if outer is not None:
        return Loop(loop.idx, ext, body), outer
    # the extent's own start at c cuts on the left unless a tagged access's phase put it there
    # (the steps of a tagged access start just after its stored points, never at one)
    theirs = [lim_eq(lim, ext.stop) for name, s, lim in ctx.pin_cuts.get(loop.idx, [])
              if s == "start" and name in names]
    left = b.land(ext.is_pinpoint(), b.lnot(reduce(b.lor, theirs, b.FALSE)))
    return Loop(loop.idx, ext, body), PinTail(ext.stop, names, left)
