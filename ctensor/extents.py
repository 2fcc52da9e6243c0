"""Closed extents over integer and continuous (Limit) coordinates, symbolic or constant.

Source: Finch.jl `src/dimensions.jl`; continuous paper §6.1; DESIGN.md §2.  Every extent is closed,
`[start, stop]`.  Both kinds store their endpoints as `SymLimit` pairs (value, ε) of IR expressions:

* integer extents: value type i64, ε always 0, unit 1, measure `stop − start + 1`;
* continuous extents: value type f64, ε ∈ {-1,0,+1}, unit ε, measure `stop − start` (a Limit).

Consecutive sub-extents chain as `next_start = prev_stop + unit`.  Emptiness is `stop < start` under
the full Limit order (`[a+ε, a]` is empty, `[a, a]` is a pinpoint).  Because the pairs are built
with the folding constructors of `ctensor.ir.build`, homogeneous closedness (constant ε) folds away
at compile time and no ε byte is ever loaded or stored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .ir import build as b
from .ir.types import F64, I8, I64
from .limits import Limit


@dataclass(frozen=True)
class SymLimit:
    """A Limit whose value and ε are IR expressions (ε has type i8).

    `finite` is a compile-time fact: the value is known to be above -inf (true of stored right
    endpoints and pinpoints, which constructors validate, and of anything a guard has checked)."""
    v: object
    e: object
    finite: bool = field(default=False, compare=False)
    # ("min" | "max", a, b) when this Limit was built as the min/max of a and b: comparisons with
    # it are decided on a and b, which are often cheaper (see lim_le)
    parts: tuple = field(default=None, compare=False, repr=False)

    @staticmethod
    def const(x, continuous=True) -> "SymLimit":
        x = Limit.of(x)
        if continuous:
            return SymLimit(b.f64(x.value), b.i8(x.eps), x.value > -math.inf)
        return SymLimit(b.i64(x.value), b.i8(0), True)

    @property
    def is_const(self) -> bool:
        return b.is_const(self.v) and b.is_const(self.e)


def lim_le(x: SymLimit, y: SymLimit):
    if x == y:
        return b.TRUE
    if _bottom(x) and y.finite:          # (-inf, e) lies below every value known to be above -inf
        return b.TRUE
    if _bottom(y) and x.finite:
        return b.FALSE
    if b.is_const(x.e) and b.is_const(y.e):
        return b.le(x.v, y.v) if x.e.value <= y.e.value else b.lt(x.v, y.v)
    # z <= min(a, b) iff z <= a and z <= b (and so on): the parts often have constant ε, or are
    # loop-invariant where the min is not
    if y.parts is not None:
        op, a, c = y.parts
        return (b.land if op == "min" else b.lor)(lim_le(x, a), lim_le(x, c))
    if x.parts is not None:
        op, a, c = x.parts
        return (b.lor if op == "min" else b.land)(lim_le(a, y), lim_le(c, y))
    if x.v.type == F64 and (b.is_const(x.e) or b.is_const(y.e)):
        # one ε known: a single float comparison against the other side moved to the adjacent
        # double when ε decides it (x < v iff x <= nextdown(v) for doubles), loop-invariant when
        # that side is, instead of the two-comparison lexicographic test
        if b.is_const(x.e):
            return b.le(x.v, b.select(b.le(x.e, y.e), y.v, b.nextdown(y.v)))
        return b.le(b.select(b.le(x.e, y.e), x.v, b.nextup(x.v)), y.v)
    return b.lor(b.lt(x.v, y.v), b.land(b.eq(x.v, y.v), b.le(x.e, y.e)))


def lim_lt(x: SymLimit, y: SymLimit):
    return b.lnot(lim_le(y, x))


def lim_eq(x: SymLimit, y: SymLimit):
    if x == y:
        return b.TRUE
    return b.land(b.eq(x.v, y.v), b.eq(x.e, y.e))


def _top(x: SymLimit):
    return b.is_const(x.v, math.inf) and b.is_const(x.e)


def _bottom(x: SymLimit):
    return b.is_const(x.v, -math.inf) and b.is_const(x.e)


def _e_le(x: SymLimit, y: SymLimit) -> bool:
    """Compile-time: x.e <= y.e for constant ε parts."""
    return b.is_const(x.e) and b.is_const(y.e) and x.e.value <= y.e.value


def lim_min(x: SymLimit, y: SymLimit) -> SymLimit:
    if x == y:
        return x
    # (+inf, e) is above every value with ε <= e; (-inf, e) below every value with ε >= e
    if _top(x) and _e_le(y, x) or _bottom(y) and _e_le(y, x):
        return y
    if _top(y) and _e_le(x, y) or _bottom(x) and _e_le(x, y):
        return x
    if _bottom(x) and y.finite:
        return x
    if _bottom(y) and x.finite:
        return y
    fin = x.finite and y.finite
    if x.e == y.e:
        return SymLimit(b.minimum(x.v, y.v), x.e, fin)
    c = lim_le(x, y)
    return SymLimit(b.select(c, x.v, y.v), b.select(c, x.e, y.e), fin, _parts("min", x, y))


def lim_max(x: SymLimit, y: SymLimit) -> SymLimit:
    if x == y:
        return x
    if _bottom(x) and _e_le(x, y) or _top(y) and _e_le(x, y):
        return y
    if _bottom(y) and _e_le(y, x) or _top(x) and _e_le(y, x):
        return x
    if _bottom(x) and y.finite:
        return y
    if _bottom(y) and x.finite:
        return x
    fin = x.finite or y.finite
    if x.e == y.e:
        return SymLimit(b.maximum(x.v, y.v), x.e, fin)
    c = lim_le(x, y)
    return SymLimit(b.select(c, y.v, x.v), b.select(c, y.e, x.e), fin, _parts("max", x, y))


def _leaves(x: SymLimit) -> int:
    return 1 if x.parts is None else _leaves(x.parts[1]) + _leaves(x.parts[2])


def _parts(op, x, y):
    """Remember the operands of a min/max for lim_le, unless the tree grows past 4 leaves (a
    comparison of two such Limits expands into the product of their leaf counts)."""
    return (op, x, y) if _leaves(x) + _leaves(y) <= 4 else None


def _sat_add(e, k: int):
    """Saturating e + k for an i8 ε expression."""
    if b.is_const(e):
        return b.i8(max(-1, min(1, e.value + k)))
    s = b.add(e, b.i8(k))
    return b.minimum(s, b.i8(1)) if k > 0 else b.maximum(s, b.i8(-1))


@dataclass(frozen=True)
class Extent:
    start: SymLimit
    stop: SymLimit
    continuous: bool

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def real(start=Limit(-math.inf, 1), stop=Limit(math.inf, -1)) -> "Extent":
        """A continuous extent; the default is the whole real line (-inf, +inf), open at both
        ends, so no looplet ever visits the points ±inf themselves."""
        return Extent(SymLimit.const(start), SymLimit.const(stop), True)

    @staticmethod
    def integer(start, stop) -> "Extent":
        """[start, stop] with i64 expressions (or ints)."""
        s = b.i64(start) if isinstance(start, int) else start
        t = b.i64(stop) if isinstance(stop, int) else stop
        return Extent(SymLimit(s, b.i8(0)), SymLimit(t, b.i8(0)), False)

    # ------------------------------------------------------------------ arithmetic
    def plus_unit(self, x: SymLimit) -> SymLimit:
        if self.continuous:
            return SymLimit(x.v, _sat_add(x.e, 1), x.finite)
        return SymLimit(b.add(x.v, b.i64(1)), x.e, x.finite)

    def minus_unit(self, x: SymLimit) -> SymLimit:
        if self.continuous:      # same value: a finite value stays finite
            return SymLimit(x.v, _sat_add(x.e, -1), x.finite)
        return SymLimit(b.sub(x.v, b.i64(1)), x.e, x.finite)

    def with_bounds(self, start: SymLimit, stop: SymLimit) -> "Extent":
        return Extent(start, stop, self.continuous)

    def intersect(self, other: "Extent") -> "Extent":
        return Extent(lim_max(self.start, other.start), lim_min(self.stop, other.stop), self.continuous)

    def union(self, other: "Extent") -> "Extent":
        return Extent(lim_min(self.start, other.start), lim_max(self.stop, other.stop), self.continuous)

    def nonempty(self):
        """i1 expression: stop >= start under the full Limit order.  A continuous extent ending at
        -inf is empty too: the point -inf is not a real number, and a stepper whose every start
        has ε 0 may begin its first step there (passes.stepper_pass)."""
        ok = lim_le(self.start, self.stop)
        if self.continuous and not self.stop.finite:
            ok = b.land(ok, b.lt(b.f64(float("-inf")), self.stop.v))
        return ok

    def is_pinpoint(self):
        """i1 expression: the extent is a single point (measure 0 continuous, 1 integer)."""
        if self.continuous:
            return lim_eq(self.start, self.stop)
        return b.eq(self.start.v, self.stop.v)

    def length(self):
        """Lebesgue length with ε dropped (f64), or the point count (i64) of an integer extent."""
        if self.continuous:
            # lowered extents never end at -inf (see nonempty), so inf - inf cannot occur at run
            # time; a constant pinpoint at ±inf still has length 0
            if self.start.v == self.stop.v:
                return b.f64(0.0)
            d = b.sub(self.stop.v, self.start.v)
            if b.is_const(d) and d.value != d.value:
                return b.f64(0.0)
            return d
        return b.add(b.sub(self.stop.v, self.start.v), b.i64(1))

    def finite_pinpoint(self):
        """i1: a pinpoint at a real number (the counting measure never counts the point -inf)."""
        if not self.continuous:
            return b.TRUE
        return b.land(self.is_pinpoint(), b.lt(b.f64(float("-inf")), self.start.v))

    def positive_length(self):
        """i1: Lebesgue length > 0 (continuous) / at least one point (integer)."""
        if self.continuous:
            return b.lt(self.start.v, self.stop.v)
        return b.le(self.start.v, self.stop.v)


__all__ = ["SymLimit", "Extent", "lim_le", "lim_lt", "lim_eq", "lim_min", "lim_max", "F64", "I8", "I64"]
