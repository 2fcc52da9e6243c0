"""`SparseInterval(child)`: one interval per fiber (`SparsePoint`, one pinpoint per fiber, is in
`sparse_point.py`).

Source: Finch.jl `sparse_interval_levels.jl`, `sparse_point_levels.jl`; continuous paper §5.2 and
§7.2 (query boxes and genomic intervals: each id owns exactly one interval, intervals of different
ids may overlap).  Child position = parent position (no ptr array).

SparseInterval unfurls to Sequence[Phase(stop = left − ε, fill), Phase(stop = right, child),
Phase(fill)].

SparseInterval also has an integer mode (Finch's own SparseInterval: a contiguous range of ids per
fiber, `shape` given); there a fiber may hold the empty range, so "ids lo..hi-1 of a data set" can
describe zero candidates.
"""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from ..errors import FormatError
from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F32, F64, I64, PtrType
from ..limits import Limit
from ..looplets.nodes import FillLeaf, Fiber, PhaseSpec, Run, RunNeighbours, Sequence
from .affine import see
from .level import DEFAULT_CLOSED, Facts, Level, as_array, as_shape, check_no_nan, closed_eps, coord_suffix, real_endpoints
from .sparse_run_list import endpoints_ok


class SparseInterval(Level):
    """Exactly one interval per fiber, over a real axis or (with `shape`) an integer axis.

    Parameters
    ----------
    child : Level
    left, right : arrays, one entry per parent position: float64 on a real axis; int64 on an
        integer axis, where the fiber holds the integers of the interval (`closed='left'`:
        left..right-1) and `left == right` (closed='left') is the empty range
    closed : {'left', 'right', 'both', 'neither'} — homogeneous closedness ('left' = [a, b)); as a
        real `out=` level left at the default, the result's one closedness (FormatError if its
        runs have several), given explicitly exactly that one (`runtime.narrow_output`)
    shape : int, optional — integer axis with coordinates 0..shape-1 (Finch's SparseInterval)

    Raises FormatError (at validation) on NaN, a reversed or (real axis) empty interval, or an
    integer range outside [0, shape-1].
    """

    def __init__(self, child: Level, left=None, right=None, closed=DEFAULT_CLOSED, shape=None):
        closed_eps(closed)
        self.child, self.closed = child, closed
        self.coord = "real" if shape is None else "int"
        self.shape = as_shape(shape, "SparseInterval")
        if shape is None:
            self.left, self.right = real_endpoints(left, right)
        else:
            self.left = None if left is None else as_array(left, "left", np.int64)
            self.right = None if right is None else as_array(right, "right", np.int64)

    # the two facts below scan `left`; levels are immutable once built, so each is computed once

    @cached_property
    def finite(self) -> bool:
        """Every left endpoint is above -inf: a compile-time fact that lets the compiler compare
        plain floats (an interval starting at -inf needs the extent's ε at run time)."""
        return self.left is not None and self.coord == "real" and bool(np.isfinite(self.left).all())

    @cached_property
    def unbounded(self) -> bool:
        """Every interval starts at -inf (prefixes (-inf, t), as rank and count queries use): the
        compiler then knows the start at compile time and drops the searches for it."""
        return (self.left is not None and self.coord == "real" and len(self.left) > 0
                and bool(np.isneginf(self.left).all()))

    @cached_property
    def tiled(self) -> bool:
        """Integer ranges that tile 0..n-1 in order (fiber p holds left[p]..right[p]-1 and the next
        fiber starts where it ends): "the ids stored under each coordinate" of a sorted list, with
        no id array.  Then the ids below a fiber are right[p-1], which lets a counting reduction
        over a parent level collapse to a difference of two loads (`ctensor.looplets.count`)."""
        if self.coord != "int" or self.left is None or self.closed != "left" or not len(self.left):
            return False
        return bool(self.left[0] == 0 and (self.left[1:] == self.right[:-1]).all())

    def format_key(self):
        if self.coord == "int":
            return ("SparseInterval", "int", self.closed, Facts((self.tiled,)), self.child.format_key())
        return ("SparseInterval", self.closed, Facts((self.finite, self.unbounded)), self.child.format_key()) + \
            coord_suffix(self.left)

    def format_str(self):
        return f"SparseInterval({self.child.format_str()}, closed={self.closed!r})"

    def empty(self):
        return SparseInterval(self.child.empty(), closed=self.closed, shape=self.shape)

    def _int_range(self):
        """Inclusive integer bounds (lo, hi) of every fiber; hi = lo - 1 for an empty one."""
        le, re = closed_eps(self.closed)
        return self.left + le, self.right + re

    def has_data(self):
        return self.left is not None and self.child.has_data()

    def child_count(self, npos):
        return npos

    def arrays(self):
        extra = [self.shape] if self.coord == "int" else []
        return extra + [self.left, self.right] + self.child.arrays()

    def validate(self, npos, name):
        if self.left is None or self.right is None:
            raise FormatError(f"{name}: SparseInterval has no data")
        for a, nm in ((self.left, "left"), (self.right, "right")):
            if len(a) != npos:
                raise FormatError(f"{name}.{nm}: expected {npos} endpoints, got {len(a)}")
            check_no_nan(a, f"{name}.{nm}")
        if self.coord == "int":
            lo, hi = self._int_range()
            bad = np.flatnonzero(hi < lo - 1)
            if bad.size:
                k = int(bad[0])
                raise FormatError(f"{name}: interval {k} is reversed (left {self.left[k]}, right {self.right[k]})")
            bad = np.flatnonzero((hi >= lo) & ((lo < 0) | (hi >= self.shape)))
            if bad.size:
                k = int(bad[0])
                raise FormatError(f"{name}: interval {k} = [{lo[k]}, {hi[k]}] is outside [0, {self.shape - 1}]")
            self.child.validate(npos, name)
            return
        le, re = closed_eps(self.closed)
        bad = np.flatnonzero(~endpoints_ok(self.left, le, self.right, re))
        if bad.size:
            k = int(bad[0])
            raise FormatError(f"{name}: interval {k} is empty or reversed (start {self.left[k].item()!r}, end {self.right[k].item()!r})")
        # ±inf are not points of the real line: [inf, inf] or [-inf, -inf] holds none
        bad = np.flatnonzero(np.isposinf(self.left) | np.isneginf(self.right))
        if bad.size:
            k = int(bad[0])
            raise FormatError(f"{name}: interval {k} starts at +inf or ends at -inf (start "
                              f"{self.left[k].item()!r}, end {self.right[k].item()!r})")
        self.child.validate(npos, name)

    def _limits(self, k):
        le, re = closed_eps(self.closed)
        return Limit(self.left[k].item(), le), Limit(self.right[k].item(), re)

    def eval(self, pos, coords):
        if self.coord == "int":
            lo, hi = (int(a[pos]) for a in self._int_range())
            return self.child.eval(pos, coords[1:]) if lo <= coords[0] <= hi else self.fill
        lo, hi = self._limits(pos)
        x = Limit.of(coords[0])
        return self.child.eval(pos, coords[1:]) if lo <= x <= hi else self.fill

    def pieces(self, pos):
        if self.coord == "int":                 # one piece per integer, as Dense lists them
            lo, hi = (int(a[pos]) for a in self._int_range())
            for i in range(lo, hi + 1):
                for rest, v in self.child.pieces(pos):
                    yield (i,) + rest, v
            return
        for rest, v in self.child.pieces(pos):
            yield (self._limits(pos),) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        if mode != "read":
            # an output is written as a SparseRunList fiber (runs coalesced as written), or on an
            # integer axis as a SparseList of ids; the runtime keeps the one run (the one range
            # of consecutive ids of one value) after checking, or raises FormatError naming the
            # fiber (`runtime.narrow_output`)
            if self.coord == "int":
                from .sparse_list import VSparseList
                return VSparseList(ctx, self, name, mode)
            from .sparse_run_list import VSparseRunList
            return VSparseRunList(ctx, self, name, mode)
        return VSparseInterval(ctx, self, name)


class VSparseInterval:
    is_leaf = False

    def __init__(self, ctx, lvl, name):
        self.lvl, self.name, self.fill = lvl, name, lvl.fill
        self.coord = lvl.coord
        ty = (F32 if coord_suffix(lvl.left) else F64) if lvl.coord == "real" else I64
        if lvl.coord == "int":
            self.shape = ir.Read(ctx.param(name + "_shape", I64, ("shape", lvl, "shape")))
        self.left = ir.Read(ctx.param(name + "_left", PtrType(ty), ("read", lvl, "left")))
        self.right = ir.Read(ctx.param(name + "_right", PtrType(ty), ("read", lvl, "right")))
        self.child = lvl.child.virtualize(ctx, name + "c", "read")

    def extent(self):
        if self.coord == "int":
            return Extent.integer(b.i64(0), b.sub(self.shape, b.i64(1)))
        return Extent.real()

    @property
    def leaf_count(self):
        """f(ctx, pos): leaves stored in fibers 0..pos-1 (right[pos-1], or 0) when the ranges are
        tiled and every leaf is true; None otherwise."""
        if not (self.lvl.tiled and getattr(self.child, "leaf_count", None) is not None and self.fill in (0, False)):
            return None

        def count(ctx, pos):
            n = ctx.mut(I64, b.i64(0), self.name + "_below")
            ctx.if_(b.lt(b.i64(0), pos), lambda: ctx.assign(n, b.load(self.right, b.sub(pos, b.i64(1)))))
            return ctx.let(ir.Read(n), self.name + "_n")
        return count

    view = None          # a CoordView when read through an affine index (`formats.affine`)

    def unfurl_reversed(self, ctx, pos, ext):
        return self.unfurl(ctx, pos, ext, "read")    # one interval: its endpoints swap in `_ends`

    def _ends(self, lo: SymLimit, hi: SymLimit):
        """The fiber's interval [lo, hi] in the loop's frame (swapped by a reversing view)."""
        if self.view is None:
            return lo, hi
        if self.view.sign > 0:
            return see(self, lo), see(self, hi)
        # the image of hi is above -inf unless hi = +inf (a real right endpoint may be); lo's is,
        # since a left endpoint is never +inf
        return see(self, hi, self.coord == "int"), see(self, lo, True)

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        le, re = closed_eps(self.lvl.closed)
        if self.coord == "int":
            return self._unfurl_int(ctx, pos, le, re)
        if self.lvl.unbounded:
            lo = SymLimit.const(Limit(-math.inf, le))
        else:
            lo = SymLimit(b.load_wide(self.left, pos), b.i8(le), self.lvl.finite)
        hi = SymLimit(b.load_wide(self.right, pos), b.i8(re), True)
        lo, hi = self._ends(lo, hi)
        bind = lambda x, h: x if b.is_const(x.v) else SymLimit(ctx.let(x.v, self.name + h), x.e, x.finite)
        lo, hi = bind(lo, "_l"), bind(hi, "_r")
        fill = lambda ctx, e: Run(FillLeaf(self.fill))
        # the one run of the fiber, for the counting measure at its ends (`RunNeighbours`)
        around = RunNeighbours(lambda ctx: b.TRUE, lambda ctx, p: (b.land(lim_le(lo, p), lim_le(p, hi)), pos),
                               lambda k: Fiber(self.child, k))
        return Sequence([PhaseSpec(fill, stop=lambda ctx, e: Extent.real().minus_unit(lo)),
                         PhaseSpec(lambda ctx, e: Run(Fiber(self.child, pos)), stop=lambda ctx, e: hi),
                         PhaseSpec(fill)], runs=True, around=around)

    def _unfurl_int(self, ctx, pos, le, re):
        lo, hi = self._ends(SymLimit(b.add(b.load(self.left, pos), b.i64(le)), b.i8(0), True),
                            SymLimit(b.add(b.load(self.right, pos), b.i64(re)), b.i8(0), True))
        lo = ctx.let(lo.v, self.name + "_l")
        before = ctx.let(b.sub(lo, b.i64(1)), self.name + "_b")
        # an empty range (hi = lo - 1) makes the middle phase empty, never a step backwards
        hi = ctx.let(b.maximum(hi.v, before), self.name + "_r")
        fill = lambda ctx, e: Run(FillLeaf(self.fill))
        return Sequence([PhaseSpec(fill, stop=lambda ctx, e: SymLimit(before, b.i8(0), True)),
                         PhaseSpec(lambda ctx, e: Run(Fiber(self.child, pos)),
                                   stop=lambda ctx, e: SymLimit(hi, b.i8(0), True)),
                         PhaseSpec(fill)])
