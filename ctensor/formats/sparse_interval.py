"""`SparseInterval(child)` (one interval per fiber) and `SparsePoint(child)` (one pinpoint per fiber).

Source: Finch.jl `sparse_interval_levels.jl`, `sparse_point_levels.jl`; continuous paper §5.2 and
§7.2 (query boxes and genomic intervals: each id owns exactly one interval, intervals of different
ids may overlap).  Child position = parent position (no ptr array).

SparseInterval unfurls to Sequence[Phase(stop = left − ε, fill), Phase(stop = right, child),
Phase(fill)]; SparsePoint to Sequence[Phase(stop = x, Spike(fill, child)), Phase(fill)].
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..extents import Extent, SymLimit
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, PtrType
from ..limits import Limit
from ..looplets.nodes import FillLeaf, Fiber, PhaseSpec, Run, Sequence, Spike
from ..looplets.truncate import truncate
from .level import Level, as_array, check_no_nan, closed_eps
from .sparse_run_list import endpoints_ok


class SparseInterval(Level):
    """Exactly one interval per fiber over a real axis.

    Parameters
    ----------
    child : Level
    left, right : float64 arrays (one entry per parent position)
    closed : {'left', 'right', 'both', 'neither'} — homogeneous closedness ('left' = [a, b))
    """

    coord = "real"

    def __init__(self, child: Level, left=None, right=None, closed="left"):
        closed_eps(closed)
        self.child, self.closed = child, closed
        self.left = None if left is None else as_array(left, "left", np.float64)
        self.right = None if right is None else as_array(right, "right", np.float64)

    @property
    def finite(self) -> bool:
        """Every left endpoint is above -inf: a compile-time fact that lets the compiler compare
        plain floats (an interval starting at -inf needs the extent's ε at run time)."""
        return self.left is not None and bool(np.isfinite(self.left).all())

    def format_key(self):
        return ("SparseInterval", self.closed, self.finite, self.child.format_key())

    def format_str(self):
        return f"SparseInterval({self.child.format_str()}, closed={self.closed!r})"

    def empty(self):
        return SparseInterval(self.child.empty(), closed=self.closed)

    def has_data(self):
        return self.left is not None and self.child.has_data()

    def child_count(self, npos):
        return npos

    def arrays(self):
        return [self.left, self.right] + self.child.arrays()

    def validate(self, npos, name):
        if self.left is None or self.right is None:
            raise FormatError(f"{name}: SparseInterval has no data")
        for a, nm in ((self.left, "left"), (self.right, "right")):
            if len(a) != npos:
                raise FormatError(f"{name}.{nm}: expected {npos} endpoints, got {len(a)}")
            check_no_nan(a, f"{name}.{nm}")
        le, re = closed_eps(self.closed)
        bad = np.flatnonzero(~endpoints_ok(self.left, le, self.right, re))
        if bad.size:
            k = int(bad[0])
            raise FormatError(f"{name}: interval {k} is empty or reversed (start {self.left[k].item()!r}, end {self.right[k].item()!r})")
        self.child.validate(npos, name)

    def _limits(self, k):
        le, re = closed_eps(self.closed)
        return Limit(self.left[k].item(), le), Limit(self.right[k].item(), re)

    def eval(self, pos, coords):
        lo, hi = self._limits(pos)
        x = Limit.of(coords[0])
        return self.child.eval(pos, coords[1:]) if lo <= x <= hi else self.fill

    def pieces(self, pos):
        for rest, v in self.child.pieces(pos):
            yield (self._limits(pos),) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        if mode != "read":
            from ..errors import InvalidProgramError
            raise InvalidProgramError("SparseInterval cannot be an output format; use SparseRunList")
        return VSparseInterval(ctx, self, name)


class VSparseInterval:
    is_leaf = False
    coord = "real"

    def __init__(self, ctx, lvl, name):
        self.lvl, self.name, self.fill = lvl, name, lvl.fill
        self.left = ir.Read(ctx.param(name + "_left", PtrType(F64), ("read", lvl, "left")))
        self.right = ir.Read(ctx.param(name + "_right", PtrType(F64), ("read", lvl, "right")))
        self.child = lvl.child.virtualize(ctx, name + "c", "read")

    def extent(self):
        return Extent.real()

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        le, re = closed_eps(self.lvl.closed)
        lo = SymLimit(ctx.let(b.load(self.left, pos), self.name + "_l"), b.i8(le), self.lvl.finite)
        hi = SymLimit(ctx.let(b.load(self.right, pos), self.name + "_r"), b.i8(re), True)
        fill = lambda ctx, e: Run(FillLeaf(self.fill))
        return Sequence([PhaseSpec(fill, stop=lambda ctx, e: Extent.real().minus_unit(lo)),
                         PhaseSpec(lambda ctx, e: Run(Fiber(self.child, pos)), stop=lambda ctx, e: hi),
                         PhaseSpec(fill)])


class SparsePoint(Level):
    """Exactly one pinpoint per fiber over a real axis (Finch's SparsePoint).

    Parameters
    ----------
    child : Level
    idx : float64 array, one coordinate per parent position
    """

    coord = "real"

    def __init__(self, child: Level, idx=None):
        self.child = child
        self.idx = None if idx is None else as_array(idx, "idx", np.float64)

    def format_key(self):
        return ("SparsePoint", self.child.format_key())

    def format_str(self):
        return f"SparsePoint({self.child.format_str()})"

    def empty(self):
        return SparsePoint(self.child.empty())

    def has_data(self):
        return self.idx is not None and self.child.has_data()

    def child_count(self, npos):
        return npos

    def arrays(self):
        return [self.idx] + self.child.arrays()

    def validate(self, npos, name):
        if self.idx is None or len(self.idx) != npos:
            raise FormatError(f"{name}.idx: expected {npos} coordinates")
        check_no_nan(self.idx, f"{name}.idx")
        bad = np.flatnonzero(np.isinf(self.idx))
        if bad.size:
            raise FormatError(f"{name}.idx[{int(bad[0])}] is infinite")
        self.child.validate(npos, name)

    def eval(self, pos, coords):
        x = Limit.of(coords[0])
        return self.child.eval(pos, coords[1:]) if x == Limit(self.idx[pos].item()) else self.fill

    def pieces(self, pos):
        c = Limit(self.idx[pos].item())
        for rest, v in self.child.pieces(pos):
            yield ((c, c),) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        if mode != "read":
            from ..errors import InvalidProgramError
            raise InvalidProgramError("SparsePoint cannot be an output format; use SparseList")
        return VSparsePoint(ctx, self, name)


class VSparsePoint:
    is_leaf = False
    coord = "real"

    def __init__(self, ctx, lvl, name):
        self.lvl, self.name, self.fill = lvl, name, lvl.fill
        self.idx = ir.Read(ctx.param(name + "_idx", PtrType(F64), ("read", lvl, "idx")))
        self.child = lvl.child.virtualize(ctx, name + "c", "read")

    def extent(self):
        return Extent.real()

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        x = SymLimit(ctx.let(b.load(self.idx, pos), self.name + "_x"), b.i8(0))
        spike = Spike(FillLeaf(self.fill), Fiber(self.child, pos))

        def first(ctx, e):  # the phase may end before x: truncate the spike to it
            return truncate(spike, Extent(e.start, x, True), e)
        return Sequence([PhaseSpec(first, stop=lambda ctx, e: x),
                         PhaseSpec(lambda ctx, e: Run(FillLeaf(self.fill)))])
