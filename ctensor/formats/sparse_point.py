"""`SparsePoint(child)`: exactly one coordinate per fiber — a real pinpoint or an integer id — and
no ptr array (child position = parent position).

Source: Finch.jl `sparse_point_levels.jl` (which allows at most one coordinate and keeps a ptr; ours
holds exactly one, the common case of point sets where every x has one y and every (x, y) one id,
so it stores 8 bytes per entry instead of a SparseList's 16); continuous paper §5.2 (pinpoints).
Unfurls to Pinpoint(c, child, fill): where the loop body annihilates on the fill, the generated
code is one test `start <= c <= stop` per fiber; otherwise it falls back to
Sequence[Phase(stop = c, Spike(fill, child)), Phase(fill)].
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..extents import Extent, SymLimit
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F32, F64, I64, PtrType
from ..limits import Limit
from ..looplets.nodes import FillLeaf, Fiber, PhaseSpec, Pinpoint, Run, Sequence, Spike
from ..looplets.truncate import truncate
from .affine import see
from .level import Level, as_array, as_shape, check_coords, coord_suffix, real_coords


class SparsePoint(Level):
    """Exactly one coordinate per fiber.

    Parameters
    ----------
    child : Level
    idx : array, one coordinate per parent position: float64 pinpoints on a real axis (float32 kept
        without a copy, read widened to float64), or integer
        ids in [0, shape-1] when `shape` is given
    shape : int, optional — makes the axis integer (ids), like SparseList's `shape`
    positions : bool — integer axis only: the id of fiber p is p itself and no idx is stored
        (points stored in id order, e.g. the ranks of a spatial index: 8 bytes per point saved
        and one load less per visited point)

    Raises FormatError (at validation) when idx has the wrong length, holds NaN/inf, or an id is
    outside [0, shape-1] (with `positions`: when there are more fibers than `shape`).
    """

    pinpoints = True

    def __init__(self, child: Level, idx=None, shape=None, positions: bool = False):
        self.child = child
        self.shape = as_shape(shape, "SparsePoint")
        self.coord = "real" if shape is None else "int"
        self.positions = bool(positions)
        if self.positions and (self.coord != "int" or idx is not None):
            raise FormatError("SparsePoint(positions=True) needs an integer axis (shape=) and no idx")
        self.idx = real_coords(idx, "idx") if shape is None else \
            (None if idx is None else as_array(idx, "idx", np.int64))

    def format_key(self):
        return ("SparsePoint", self.coord + ("=pos" if self.positions else ""), self.child.format_key()) + \
            coord_suffix(self.idx)

    def format_str(self):
        return f"SparsePoint({self.child.format_str()}{', positions=True' if self.positions else ''})"

    def empty(self):
        return SparsePoint(self.child.empty(), shape=self.shape, positions=self.positions)

    def has_data(self):
        return (self.positions or self.idx is not None) and self.child.has_data()

    def child_count(self, npos):
        return npos

    def arrays(self):
        extra = [self.shape] if self.coord == "int" else []
        return extra + ([] if self.positions else [self.idx]) + self.child.arrays()

    def validate(self, npos, name):
        if self.positions:
            if npos > self.shape:
                raise FormatError(f"{name}: {npos} fibers with positions as ids need shape >= {npos}, "
                                  f"got shape {self.shape}")
        elif self.idx is None or len(self.idx) != npos:
            raise FormatError(f"{name}.idx: expected {npos} coordinates, one per fiber")
        else:
            check_coords(self.idx, self.coord, self.shape, name)
        self.child.validate(npos, name)

    def coord_at(self, pos):
        return pos if self.positions else self.idx[pos].item()

    def eval(self, pos, coords):
        x = coords[0]
        if self.coord == "int":
            return self.child.eval(pos, coords[1:]) if x == int(self.coord_at(pos)) else self.fill
        return self.child.eval(pos, coords[1:]) if Limit.of(x) == Limit(self.coord_at(pos)) else self.fill

    def pieces(self, pos):
        c = self.coord_at(pos)
        c = (Limit(c), Limit(c)) if self.coord == "real" else c
        for rest, v in self.child.pieces(pos):
            yield (c,) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        if mode != "read":
            # an output is written as a SparseList fiber (ptr, idx: at most one entry fits, any
            # number can be written); the runtime drops ptr after checking each fiber holds one
            # entry, or raises FormatError naming the fiber (`runtime.narrow_output`)
            from .sparse_list import VSparseList
            return VSparseList(ctx, self, name, mode)
        return VSparsePoint(ctx, self, name)


class VSparsePoint:
    is_leaf = False

    def __init__(self, ctx, lvl, name):
        self.lvl, self.name, self.fill, self.coord = lvl, name, lvl.fill, lvl.coord
        real = lvl.coord == "real"
        if not real:
            self.shape = ir.Read(ctx.param(name + "_shape", I64, ("shape", lvl, "shape")))
        self.idx = None if lvl.positions else \
            ir.Read(ctx.param(name + "_idx", PtrType((F32 if coord_suffix(lvl.idx) else F64) if real else I64),
                              ("read", lvl, "idx")))
        self.child = lvl.child.virtualize(ctx, name + "c", "read")

    view = None          # a CoordView when read through an affine index (`formats.affine`)

    def extent(self):
        if self.coord == "real":
            return Extent.real()
        return Extent.integer(b.i64(0), b.sub(self.shape, b.i64(1)))

    def unfurl_reversed(self, ctx, pos, ext):
        return self.unfurl(ctx, pos, ext, "read")    # one point: the same nest in either order

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        x = see(self, SymLimit(pos if self.idx is None else b.load_wide(self.idx, pos), b.i8(0), True), True)
        x = SymLimit(ctx.let(x.v, self.name + "_x"), x.e, True)
        spike = Spike(FillLeaf(self.fill), Fiber(self.child, pos))
        continuous = self.coord == "real"

        def first(ctx, e):  # the phase may end before x: truncate the spike to it
            return truncate(spike, Extent(e.start, x, continuous), e)
        return Pinpoint(x, Fiber(self.child, pos), FillLeaf(self.fill),
                        lambda: Sequence([PhaseSpec(first, stop=lambda ctx, e: x),
                                          PhaseSpec(lambda ctx, e: Run(FillLeaf(self.fill)))]))
