"""The searches levels emit to `seek` a sorted buffer: galloping then binary search from a
position (Finch's `scansearch`), and an outward search from a finger kept across calls.

A mixin of `lower.context.Context`: the methods emit IR through its `let`, `mut`, `if_`, `block`
and `emit`.  Every probe index stays inside [lo, hi), so no load leaves the buffer.
"""
from __future__ import annotations

from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I1, I64

# positions a forward search from a finger scans one by one before it gallops
SCAN = 4


class Searches:
    def search_first_ge(self, key_ge, lo, hi, hint="q"):
        """Smallest q in [lo, hi) with key_ge(q) true (i1), or hi; key_ge must be monotone.

        Requires lo < hi.  Galloping from lo, then binary search: O(log d) probes for a jump of d
        (Finch's `scansearch`).  Every probe index is < hi, so no load leaves the buffer."""
        step = self.mut(I64, b.i64(1), hint + "_step")
        low = self.mut(I64, lo, hint + "_lo")

        def advance(probe):
            self.assign(low, probe)
            self.assign(step, b.add(ir.Read(step), ir.Read(step)))
        self._probe_loop(hint, lambda: b.add(ir.Read(low), ir.Read(step)), lambda q: b.lt(q, hi),
                         lambda q: b.lnot(key_ge(q)), advance)
        high = self.mut(I64, b.minimum(b.add(ir.Read(low), ir.Read(step)), hi), hint + "_hi")
        # key is false at every position low moved to; only the unchecked start may hold
        self.if_(key_ge(ir.Read(low)), lambda: self.assign(high, ir.Read(low)))
        self._bisect(key_ge, low, high, hint + "_mid")
        return self.let(ir.Read(high), hint + "_found")

    def _probe_loop(self, hint, probe_of, in_bounds, keep_going, advance):
        """while in_bounds(probe) and keep_going(probe): advance(probe), with probe = probe_of()
        recomputed each round: the loop shape of every scan and gallop below."""
        go = self.mut(I1, b.TRUE, hint + "_go")
        with self.block() as body:
            probe = self.let(probe_of(), hint + "_probe")
            self.if_(in_bounds(probe),
                     lambda: self.if_(keep_going(probe), lambda: advance(probe), lambda: self.assign(go, b.FALSE)),
                     lambda: self.assign(go, b.FALSE))
        self.emit(ir.While(ir.Read(go), body))

    def _bisect(self, key_ge, low, high, hint):
        """Binary search between mutable bounds: the answer is in [low, high] and key(high) is
        true or high is the search's upper bound; leaves the answer in `high`."""
        with self.block() as body:
            m = self.let(b.add(ir.Read(low), ir.Bin("div", b.sub(ir.Read(high), ir.Read(low)), b.i64(2))), hint)
            self.if_(key_ge(m), lambda: self.assign(high, m), lambda: self.assign(low, b.add(m, b.i64(1))))
        self.emit(ir.While(b.lt(ir.Read(low), ir.Read(high)), body))

    def search_near(self, key_ge, lo, hi, finger, hint="q"):
        """Smallest q in [lo, hi) with key_ge(q) true, or hi, searching outward from the position
        `finger` (a mutable variable, clamped to [lo, hi]) and leaving the answer in it.

        From the finger h: a short branch-free scan forward of SCAN positions (sorted queries move
        the answer by a position or two; a gallop costs several mispredicted branches),
        then a gallop if the scan ran out; if the answer did not move forward and key(h-1) holds,
        a gallop backward.  O(log d) for an answer d positions away, at most about twice a binary
        search for an arbitrary finger.  Every load is at a position in [lo, hi)."""
        if b.is_const(key_ge(lo), True):      # e.g. a search for -inf: the first position
            return lo
        res = self.mut(I64, lo, hint + "_res")

        def nonempty():
            h = self.let(b.maximum(lo, b.minimum(ir.Read(finger), hi)), hint + "_h")
            near = self.let(b.minimum(b.add(h, b.i64(SCAN)), hi), hint + "_near")
            # the scan is branch-free: key is monotone, so the answer's offset from h within the
            # window is the number of false keys there; a loop exiting after a varying number of
            # probes mispredicts about once per search (~30 ns a query on 100k sorted queries)
            # Probes are clamped into [lo, hi): past hi they read key(hi - 1), false only when the
            # answer is hi itself, which the clamp of the sum gives.
            last = self.let(b.sub(hi, b.i64(1)), hint + "_last")
            moved = b.i64(0)
            for k in range(SCAN):
                probe = b.minimum(b.add(h, b.i64(k)), last)
                moved = b.add(moved, b.select(key_ge(probe), b.i64(0), b.i64(1)))
            p = self.let(b.minimum(b.add(h, moved), hi), hint + "_p")
            self.assign(res, p)
            # did not move and the previous position already qualifies: the answer is behind h
            prev = self.let(b.maximum(b.sub(h, b.i64(1)), lo), hint + "_prev")   # in [lo, hi)
            back = self.let(b.land(b.land(b.eq(p, h), b.lt(lo, h)), key_ge(prev)), hint + "_back")
            ahead = b.land(b.eq(p, near), b.lt(near, hi))
            self.if_(back, lambda: self.assign(res, self._backward(key_ge, lo, prev, hint)),
                     lambda: self.if_(ahead, lambda: self.assign(
                         res, self.search_first_ge(key_ge, near, hi, hint + "_g"))))
        self.if_(b.lt(lo, hi), nonempty)
        self.assign(finger, ir.Read(res))
        return self.let(ir.Read(res), hint + "_at")

    def _backward(self, key_ge, lo, h, hint):
        """The answer is in [lo, h] (key(h) true): gallop down from h to a position whose key is
        false (or lo), then binary search between."""
        high = self.mut(I64, h, hint + "_bh")
        step = self.mut(I64, b.i64(1), hint + "_bs")

        def retreat(probe):
            self.assign(high, probe)
            self.assign(step, b.add(ir.Read(step), ir.Read(step)))
        self._probe_loop(hint + "_b", lambda: b.sub(ir.Read(high), ir.Read(step)), lambda q: b.le(lo, q),
                         key_ge, retreat)
        # key is true at high (or high is the original bound); false at high - step or below lo
        low = self.mut(I64, b.maximum(lo, b.add(b.sub(ir.Read(high), ir.Read(step)), b.i64(1))), hint + "_bl")
        self._bisect(key_ge, low, high, hint + "_bm")
        return ir.Read(high)
