"""Truncation: restrict a looplet defined on extent `ext` to a sub-extent `sub` (digest §2.4).

Run, Lookup, Thunk, Stepper, Sequence, Phase and AcceptRun are self-similar (phase ranges are
absolute, steppers re-seek), so they come back unchanged.  A Spike keeps its tail only if `sub`
still ends where `ext` ends: decided at compile time when the fold proves it, otherwise a Switch.
"""
from __future__ import annotations

from ..extents import lim_eq, lim_lt
from ..ir import build as b
from .nodes import Run, Spike, Switch


def truncate(node, ext, sub):
    if isinstance(node, Spike):
        if sub.stop == ext.stop or b.is_const(lim_eq(sub.stop, ext.stop), True):
            return node
        cut = lim_lt(sub.stop, ext.stop)
        if b.is_const(cut, True):
            return Run(node.body)
        return Switch([(cut, Run(node.body)), (b.TRUE, node)])
    if isinstance(node, Switch):
        return Switch([(c, truncate(n, ext, sub)) for c, n in node.cases])
    return node
