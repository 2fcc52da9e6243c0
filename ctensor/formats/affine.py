"""Affine access wrappers: `A[a*x + b]` (Offset, Scale), `A[y + x]` (Toeplitz) and `A[~x]`
(Permissive) — Finch's `offset.jl`, `scale.jl`, `toeplitz.jl`, `permissive.jl`; Looplets paper's
Shift; digest §1.6.

One access dimension `c_1*i_1 + ... + c_k*i_k + c` is lowered at the index of its terms that the
loop order visits last, x; the other indices are then bound to one value each (their loops sit
outside and reach this access only on pinpoints, paper §4.3 rule 2), so the dimension reads
`u = a*x + b` with a = the coefficient of x and b = c + the other terms: a Toeplitz access is an
Offset by the outer index's current value (Finch: `Lookup(v -> Offset(A, v))`).

**One frame only** (digest pitfall 4).  Finch moves extents into the tensor's frame (u) and
coordinates back out (x); the float round trip `a*((u - b)/a) + b` then decides whether a cursor
advances or a spike is truncated.  Here extents never move: the level is given a `CoordView` and
maps every coordinate it loads, once, into the loop's frame, `x = (u - b)/a`; seeks, step stops,
truncations and advancement all compare x-frame values, and one stored value always maps to the
same x.  For a < 0 the view reverses the order, so the level iterates its fiber backwards
(`formats.reverse`) with the closedness of every endpoint flipped (`[s, e)` becomes `(.., ..]`).

A permissive integer mode (`v[~(i + 1)]`) reads `missing` outside the level's declared extent
[0, shape-1] (Finch: `Sequence[Phase(Run(missing)), Phase(inner), Phase(Run(missing))]`); a real
mode's extent is the whole line, so `~` changes nothing there.  `missing` propagates through
every operator but `coalesce`, and an assignment of `missing` is dropped (`lower.simplify`).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace

from ..errors import InvalidProgramError
from ..extents import SymLimit, lim_max, lim_min
from ..ir import build as b
from ..ir import nodes as ir
from ..looplets.nodes import (AcceptRun, Deferred, FillLeaf, Fiber, Lookup, Phase, PhaseSpec, Run,
                              Pinpoint, Sequence, Spike, Stepper, Switch, Thunk, Walk)
from ..lower.notation import MISSING, Lit, subst_expr, uses_index

# a coordinate below every x-frame coordinate of a viewed integer level (stored ids are >= 0,
# but a shift can move them below -1, the unviewed empty-fiber sentinel)
INT_BOTTOM = -(2 ** 62)


# ------------------------------------------------------------------------------------ x-frame view
class CoordView:
    """x = (u - b)/a: how a level's stored coordinate u is seen from the loop's frame.

    a, b: IR expressions (f64 on a real mode; i64 on an integer mode, where a is ±1); sign: the
    compile-time sign of a.  On a real mode ε keeps its sign for a > 0 and flips for a < 0."""

    def __init__(self, a, b_, sign: int, continuous: bool):
        self.a, self.b, self.sign, self.continuous = a, b_, sign, continuous

    def value(self, u):
        a, c = self.a, self.b
        if not self.continuous:                       # a = ±1: exact
            return b.sub(u, c) if self.sign > 0 else b.sub(c, u)
        if b.is_const(u) and math.isinf(u.value):     # ±inf stays a compile-time constant
            return b.f64(u.value * self.sign)
        if b.is_const(a, 1.0):
            return b.sub(u, c)
        if b.is_const(a, -1.0):
            return b.sub(c, u)
        return b.div(b.sub(u, c), a)

    def out(self, u: SymLimit, finite: bool | None = None) -> SymLimit:
        """The x-frame Limit of a stored Limit u.  `finite` (x above -inf): kept for a > 0; for
        a < 0 it must be given (it holds when u is below +inf)."""
        e = u.e if self.sign > 0 else b.neg(u.e)
        fin = u.finite if self.sign > 0 else bool(finite)
        return SymLimit(self.value(u.v), e, fin)

    def into(self, j):
        """u = a*x + b for an integer x (Dense lookups)."""
        return b.add(b.mul(self.a, j), self.b) if self.sign > 0 else b.sub(self.b, j)


def see(level, u: SymLimit, finite: bool | None = None) -> SymLimit:
    """A level's stored coordinate u in the loop's frame (u itself when the level has no view)."""
    view = getattr(level, "view", None)
    return u if view is None else view.out(u, finite)


def viewed(level, view: CoordView):
    """A copy of a virtual level that sees its coordinates through `view` (state stays shared)."""
    if view.sign < 0 and not hasattr(level, "unfurl_reversed"):
        raise InvalidProgramError(f"{type(level).__name__[1:]} cannot be read with a negative index "
                                  "coefficient (reversed iteration is not implemented for it)")
    v = copy.copy(level)
    v.view = view
    return v


# ------------------------------------------------------------------------------- the dimension map
@dataclass(frozen=True, eq=False)
class DimMap:
    """One access dimension as lowered at its last loop index x: u = coef*x + const.

    coef, const: notation expressions (`Lit`, `Val`, `Call`; const may hold `Idx` of outer indices
    until their loops bind them, and is None for 0); kind: 'int' | 'real'; permissive: `~`."""
    coef: object
    const: object
    kind: str
    permissive: bool = False

    def uses(self, idx) -> bool:
        return uses_index(self.coef, idx) or uses_index(self.const, idx)

    def subst(self, idx, value) -> "DimMap":
        return replace(self, coef=subst_expr(self.coef, idx, value), const=subst_expr(self.const, idx, value))

    @property
    def identity(self) -> bool:
        return isinstance(self.coef, Lit) and self.coef.value == 1 and self.const is None and not self.permissive


# ------------------------------------------------------------------------------------ the wrapper
class VAffine:
    """A tensor's virtual root read through DimMaps at some depths: unfurling depth k sees the
    level through map k (a view, a sign switch, missing phases) and hands out children wrapped
    for the deeper maps."""

    is_leaf = False

    def __init__(self, level, maps: dict, depth: int = 0):
        self.level, self.maps, self.depth = level, maps, depth
        self.fill = level.fill
        self.coord = getattr(level, "coord", None)
        self.tile = getattr(level, "tile", False)

    def extent(self):
        return self.level.extent()

    def uses_index(self, idx) -> bool:
        return any(m.uses(idx) for d, m in self.maps.items() if d >= self.depth)

    def subst(self, idx, value) -> "VAffine":
        return VAffine(self.level, {d: m.subst(idx, value) if d >= self.depth else m
                                    for d, m in self.maps.items()}, self.depth)

    def _wrap_child(self, node):
        if isinstance(node, Fiber) and node.level is self.level.child and not getattr(node.level, "is_leaf", False) \
                and any(k > self.depth for k in self.maps):
            return replace(node, level=VAffine(node.level, self.maps, self.depth + 1))
        return node

    def read_leaf(self, ctx, pos):
        return self.level.read_leaf(ctx, pos)

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        m = self.maps.get(self.depth)
        if m is None or m.identity:
            return rewrap(self.level.unfurl(ctx, pos, ext, mode, dirty), self._wrap_child)
        a, c = _coefficients(ctx, m)
        continuous = m.kind == "real"

        def nest(sign):
            view = CoordView(a, c, sign, continuous)
            lvl = viewed(self.level, view)
            inner = lvl.unfurl_reversed(ctx, pos, ext) if sign < 0 else lvl.unfurl(ctx, pos, ext, mode, dirty)
            inner = rewrap(inner, self._wrap_child)
            return _permissive(lvl, view, inner) if m.permissive and not continuous else inner
        return _by_sign(a, nest)

    def unfurl_union(self, ctx, pos, present=None):
        """The union protocol (`formats.run_union`) of a run list or real pinpoint level read
        through a real map u = a*x + b: the level's own, on a view; walked from its last entry when
        a < 0.  None when the level has no union protocol or the map is an integer one."""
        m = self.maps.get(self.depth)
        union = getattr(self.level, "unfurl_union", None)
        if union is None:
            return None
        if m is None or m.identity:
            lp = union(ctx, pos, present=present)      # also a level above the mapped one (a byte map)
            return None if lp is None else rewrap(lp, self._wrap_child)
        if m.kind != "real" or not self.level.union_readable():     # decided before any code is emitted
            return None
        a, c = _coefficients(ctx, m)
        return _by_sign(a, lambda sign: viewed(self.level, CoordView(a, c, sign, True)).unfurl_union(
            ctx, pos, reverse=sign < 0, present=present))


def _coefficients(ctx, m: DimMap):
    """(a, b) of u = a*x + b as IR values; on a real mode the kernel fails with STATUS_BAD_AFFINE
    unless both are finite and a != 0."""
    from ..lower.ops import to_ir
    want = "int" if m.kind == "int" else "float"
    a = ctx.let(to_ir(ctx, m.coef, want), "scale")
    c = b.const(0, a.type) if m.const is None else ctx.let(to_ir(ctx, m.const, want), "shift")
    if m.kind == "real":
        finite = lambda v: b.lt(ir.Un("abs", v), b.f64(math.inf))     # false for ±inf and NaN
        bad = b.lnot(b.land(b.land(finite(a), finite(c)), b.ne(a, b.f64(0.0))))
        ctx.fail_if(bad, ir.STATUS_BAD_AFFINE)
    return a, c


def _by_sign(a, nest):
    """nest(sign) for the sign of the scale a: one nest for a constant, else a Switch on a > 0."""
    if b.is_const(a):
        return nest(1 if a.value > 0 else -1)
    return Switch([(b.lt(b.const(0, a.type), a), nest(1)), (b.TRUE, nest(-1))])


def _permissive(level, view: CoordView, inner):
    """Missing outside the level's declared integer extent [lo, hi], seen in the x-frame."""
    ext = level.extent()
    lo, hi = _saturated_out(view, ext.start), _saturated_out(view, ext.stop)
    if view.sign < 0:
        lo, hi = hi, lo
    miss = lambda ctx, e: Run(FillLeaf(MISSING))
    # phase ends clamped into the loop's extent e: lo - 1 and hi + 1 would wrap around int64 for
    # an image at its limits (v[~(c - i)], c = 2**63 - 1), and the phases would overlap
    return Sequence([PhaseSpec(miss, stop=lambda ctx, e: ext.minus_unit(lim_max(lo, e.start))),
                     PhaseSpec(lambda ctx, e: inner, stop=lambda ctx, e: lim_min(hi, e.stop)),
                     PhaseSpec(miss)])


def _saturated_out(view: CoordView, u: SymLimit) -> SymLimit:
    """The x-frame image x = u - b (or b - u) of an integer extent's end, saturated to int64: the
    image of id 0 or shape - 1 lies beyond int64 for b near its limits (v[~(c - i)], c = -2**63),
    where a wrapped end would make the missing and stored phases overlap (cells counted twice)."""
    p, q = (u.v, view.b) if view.sign > 0 else (view.b, u.v)
    x = view.out(u, True)
    zero = b.i64(0)
    high = b.land(b.lt(q, zero), b.lt(x.v, p))          # p - q for q < 0 is above p unless it wrapped
    low = b.land(b.lt(zero, q), b.lt(p, x.v))
    v = b.select(high, b.i64(2**63 - 1), b.select(low, b.i64(-2**63), x.v))
    return SymLimit(v, x.e, x.finite)


def _around(nb, go):
    """`RunNeighbours` whose run fibers are wrapped as the looplet's leaves are."""
    return None if nb is None else replace(nb, fiber=lambda k: go(nb.fiber(k)))


def rewrap(node, leaf):
    """Rebuild a looplet nest lazily, through its callables, passing every leaf it hands out
    through leaf(node)."""
    go = lambda n: rewrap(n, leaf)
    if isinstance(node, Thunk):
        return Thunk(go(node.body), node.preamble, node.epilogue, _around(node.around, go))
    if isinstance(node, Deferred):
        return Deferred(lambda: go(node.make()))
    if isinstance(node, Lookup):
        return Lookup(lambda ctx, j: go(node.body(ctx, j)))
    if isinstance(node, Run):
        return Run(go(node.body))
    if isinstance(node, Spike):
        return Spike(go(node.body), go(node.tail))
    if isinstance(node, Phase):
        return Phase(lambda ctx, ext: go(node.body(ctx, ext)), start=node.start, stop=node.stop)
    if isinstance(node, Sequence):
        # (`runs` kept: an outer run-list level read through a view still counts per slice)
        return Sequence([PhaseSpec(body=(lambda s: lambda ctx, ext: go(s.body(ctx, ext)))(s), stop=s.stop)
                         for s in node.phases], runs=node.runs, around=_around(node.around, go))
    if isinstance(node, Stepper):
        return replace(node, chunk=lambda ctx: go(node.chunk(ctx)))
    if isinstance(node, Pinpoint):
        return Pinpoint(node.coord, go(node.body), go(node.empty), lambda: go(node.fallback()))
    if isinstance(node, Walk):
        return Walk(go(node.stepper), lambda: go(node.fallback()))
    if isinstance(node, Switch):
        return Switch([(c, go(n)) for c, n in node.cases])
    if isinstance(node, AcceptRun):
        return AcceptRun(lambda ctx, ext: go(node.body(ctx, ext)))
    return leaf(node)

