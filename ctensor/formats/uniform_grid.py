"""`UniformGrid(child, edges)`: a tile level that bins a real axis into cells, above the levels that
store the coordinates themselves (a spatial index as a format).

Source: the continuous paper's uniform grid (§7.1–7.2, Fig. 23, IGD-style), recast as the "binned
layout" of shape-spf-z3-digest §4 items 6–7: a real axis x is split into (cell, x), and the cell
level sits above every coordinate level, so `Points[x, y, id]` is stored as
`UniformGrid(UniformGrid(SparseList(SparsePoint(SparsePoint(Pattern())))))` — cells of x, cells of
y, then the points of each cell sorted by x, y.  The einsum is unchanged: the tensor still has the
modes (x, y, id); the lowering (`ctensor.lower.tile`) runs a *tile loop* per binned axis before the
coordinate loops, so a box query visits only the cells it overlaps instead of an x-slab.

A grid level reads no index of its own.  A chain of m grid levels at the top of a tensor bins its
first m modes in order (grid k bins mode k; `Tensor` assigns `axis`).  Cell c of a fiber covers the
half-open [edges[c], edges[c+1]); the coordinates stored below cell c must lie in it (validated),
and nothing is stored outside [edges[0], edges[n]).  Child position of (fiber p, cell c): p*n + c.

The binned level may also store intervals (SparseRunList, SparseInterval; any closedness, Limit
endpoints too): an interval stored below cell c must meet it (validated), and is read there
clipped to the cell, so an interval listed in every cell it meets (`grid_intervals`,
`ct.intervals(..., grid=)`, `ct.interval_index`) denotes the same function as without the grid;
`pieces` reports it once.  Raises FormatError (naming the tensor, the entry and the cell) for a
stored coordinate or interval outside its cell, or edges that are not finite and increasing.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import FormatError, InvalidProgramError
from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, I64, PtrType
from ..limits import Limit, plus_eps
from ..looplets.nodes import FillLeaf, Fiber, PhaseSpec, Run, Sequence, Stepper, Thunk
from .affine import see
from .level import Level, as_array, closed_eps


class UniformGrid(Level):
    """Tile level over a real axis: `n` cells [edges[c], edges[c+1]) per fiber.

    Parameters
    ----------
    child : Level
        The level of each cell's fiber (another UniformGrid for the next axis, or the coordinate
        levels: real SparseList / SparsePoint pinpoints, or SparseRunList / SparseInterval
        intervals).
    edges : float64 array (n+1,), strictly increasing and finite
        Cell boundaries; uniform spacing of the interior edges edges[1] .. edges[n-1] (of all of
        them when n < 3) makes the seek O(1) (an estimate corrected by a scan), so the two end
        cells may be wide (`grid_edges.axis_edges` puts far outliers there); any strictly
        increasing edges are correct.
    """

    coord = "real"
    tile = True

    def __init__(self, child: Level, edges=None):
        self.child = child
        self.edges = None if edges is None else as_array(edges, "edges", np.float64)
        self.axis = None          # set by Tensor: grid k of the top chain bins mode k

    @property
    def n(self) -> int:
        return len(self.edges) - 1

    @property
    def ndim(self) -> int:
        return self.child.ndim

    def format_key(self):
        return ("UniformGrid", self.child.format_key())

    def format_str(self):
        return f"UniformGrid({self.child.format_str()})"

    def empty(self):
        return UniformGrid(self.child.empty())

    def has_data(self):
        return self.edges is not None and self.child.has_data()

    def child_count(self, npos):
        return npos * self.n

    def arrays(self):
        return [self.n, self.edges] + self.child.arrays()

    def validate(self, npos, name):
        check_edges(self.edges, f"{name}.edges")
        lvl = self.binned_level()
        if getattr(lvl, "coord", "int") != "real" or type(lvl).__name__ not in BINNABLE:
            raise FormatError(f"{name}: a UniformGrid must bin a real coordinate level ({', '.join(BINNABLE)}), "
                              f"not {type(lvl).__name__}")
        self.child.validate(self.child_count(npos), name)
        self._check_cells(npos, name)

    def _check_cells(self, npos, name):
        """Every coordinate stored below cell c lies in [edges[c], edges[c+1])."""
        grids, lvl = [self], self.child
        while getattr(lvl, "tile", False):
            grids.append(lvl)
            lvl = lvl.child
        inner = int(np.prod([g.n for g in grids[1:]], dtype=np.int64))
        nfib = npos * self.n * inner
        owner = np.arange(nfib, dtype=np.int64)        # fiber of the first coordinate level
        for _ in range(self.axis or 0):                # walk down to the mode this grid bins
            owner = _entry_owner(lvl, owner, nfib, name)
            nfib = len(owner)
            lvl = lvl.child
        bounds = stored_bounds(lvl)
        if bounds is None:
            raise FormatError(f"{name}: a UniformGrid must bin a real coordinate level ({', '.join(BINNABLE)}), "
                              f"not {type(lvl).__name__}")
        owner = _entry_owner(lvl, owner, nfib, name)
        cell = (owner // inner) % self.n
        lo, hi = self.edges[cell], self.edges[cell + 1]
        (lv, _), (rv, re) = bounds
        # an entry [l, r] meets the half-open cell [lo, hi) iff l < hi and r >= lo (r = lo only when
        # closed there: ε(r) = 0); a pinpoint is the case l = r
        bad = np.flatnonzero(~((lv < hi) & ((rv > lo) | ((rv == lo) & (re == 0)))))
        if bad.size:
            k = int(bad[0])
            what = (f"coordinate {lv[k].item()!r}" if lv is rv else
                    f"interval [{lv[k].item()!r}, {rv[k].item()!r}] (ε {int(re[k])} at the end)")
            raise FormatError(f"{name}: {what} (entry {k}) is stored in cell {int(cell[k])} "
                              f"= [{lo[k].item()!r}, {hi[k].item()!r}) of a UniformGrid but does not meet it")

    def binned_level(self) -> Level:
        """The coordinate level of the mode this grid bins (`axis`) below the grid chain."""
        lvl = self
        while getattr(lvl, "tile", False):
            lvl = lvl.child
        for _ in range(self.axis or 0):
            lvl = lvl.child
        return lvl

    def cell_of(self, x):
        """Cell holding the coordinate x (a float or Limit), or None outside the grid."""
        x = Limit.of(x)
        c = int(np.searchsorted(self.edges, x.value, side="right")) - 1
        if x.eps < 0 and 0 <= c <= self.n and self.edges[c] == x.value:
            c -= 1                                     # just below an edge: the previous cell
        return c if 0 <= c < self.n else None

    def eval(self, pos, coords):
        c = self.cell_of(coords[self.axis])
        return self.fill if c is None else self.child.eval(pos * self.n + c, coords)

    def pieces(self, pos):
        """The child's pieces of each cell, the binned mode clipped to the cell [e[c], e[c+1]); the
        parts of one stored interval listed in consecutive cells are joined again, so an interval
        is reported once (its part in each cell is what `eval` reads there, and a cell edge is no
        change of value: the counting measure must not see a point [e[c], e[c]] there)."""
        out, k = [], self.axis
        for c in range(self.n):
            lo, hi = Limit(self.edges[c].item()), Limit(self.edges[c + 1].item(), -1)
            for coords, v in self.child.pieces(pos * self.n + c):
                a, z = max(coords[k][0], lo), min(coords[k][1], hi)
                if a <= z:
                    out.append((coords[:k], coords[k], coords[k + 1:], v, a, z))
        out.sort(key=lambda p: (p[0], p[2], p[1], p[4]))
        joined = []
        for head, own, tail, v, a, z in out:
            last = joined[-1] if joined else None
            if last is not None and last[:4] == (head, own, tail, v) and plus_eps(last[5]) == a:
                joined[-1] = last[:5] + (z,)
            else:
                joined.append((head, own, tail, v, a, z))
        for head, _, tail, v, a, z in joined:
            yield head + ((a, z),) + tail, v

    def virtualize(self, ctx, name, mode="read"):
        if mode != "read":
            raise InvalidProgramError("UniformGrid is an index format for inputs; it cannot be an output format")
        return VUniformGrid(ctx, self, name)


BINNABLE = ("SparseList", "SparsePoint", "SparseRunList", "SparseInterval")


def check_edges(e, name):
    """FormatError naming `name` and the first bad edge unless `e` is 1-D, finite, strictly
    increasing, with at least 2 entries."""
    if e is None or e.ndim != 1 or len(e) < 2:
        raise FormatError(f"{name}: a UniformGrid needs at least 2 edges (1 cell)")
    bad = np.flatnonzero(~np.isfinite(e))
    if bad.size:
        raise FormatError(f"{name}[{int(bad[0])}] = {e[bad[0]].item()!r} is not finite")
    bad = np.flatnonzero(np.diff(e) <= 0)
    if bad.size:
        k = int(bad[0]) + 1
        raise FormatError(f"{name}[{k}] = {e[k].item()!r} is not greater than {name}[{k - 1}]")


def _entry_owner(lvl, owner, nfib, name):
    """For each entry of `lvl` (whose fibers are 0..nfib-1), the value of `owner` at its fiber."""
    ptr = getattr(lvl, "ptr", None)
    if ptr is not None:
        return np.repeat(owner, np.diff(ptr[:nfib + 1]))
    if type(lvl).__name__ in ("SparsePoint", "SparseInterval"):     # one entry per fiber
        return owner
    raise FormatError(f"{name}: a UniformGrid cannot sit above a {type(lvl).__name__} level")


def stored_bounds(lvl):
    """((left values, left ε), (right values, right ε)) of every entry of a real coordinate level,
    as arrays (a pinpoint c is [c, c]: the same array twice, ε 0), or None for any other level."""
    if getattr(lvl, "coord", "int") != "real":
        return None
    kind = type(lvl).__name__
    if kind in ("SparseList", "SparsePoint") and getattr(lvl, "idx", None) is not None:
        z = np.zeros(len(lvl.idx), np.int8)
        return (lvl.idx, z), (lvl.idx, z)
    if kind == "SparseRunList":
        le, re = lvl.eps_arrays()
        return (lvl.left, le), (lvl.right, re)
    if kind == "SparseInterval":
        le, re = closed_eps(lvl.closed)
        n = len(lvl.left)
        return (lvl.left, np.full(n, le, np.int8)), (lvl.right, np.full(n, re, np.int8))
    return None


class Cell(NamedTuple):
    """The bounds of the cell a grid's child fiber holds (`Fiber.cell`, read by `lower.tile`);
    `clips`: the binned level stores intervals, which the cell may clip to a point at `lo`."""
    lo: object
    stop: object
    clips: bool = False


class VUniformGrid:
    is_leaf = False
    coord = "real"
    tile = True

    def __init__(self, ctx, lvl: UniformGrid, name):
        self.lvl, self.name, self.fill = lvl, name, lvl.fill
        self.n = ir.Read(ctx.param(name + "_n", I64, ("shape", lvl, "n")))
        self.edges = ir.Read(ctx.param(name + "_edges", PtrType(F64), ("read", lvl, "edges")))
        self.child = lvl.child.virtualize(ctx, name + "g", "read")
        self.clips = type(lvl.binned_level()).__name__ in ("SparseRunList", "SparseInterval")

    view = None          # a CoordView (a > 0 only) when the binned mode is read through an affine index

    def extent(self):
        return Extent.real()

    def _edge(self, c):
        """Edge c as a Limit just below it (cells are half-open), in the loop's frame.

        Through an affine view x = (u - b)/a the images are rounded, and a point of a cell can map
        onto the image of the cell's top edge: the last point of an axis sits one ulp below the
        top edge e[n] (`uniform_edges`), and fl(nextup(1) + 1) = 2 = fl(1 + 1).  Every point lies
        in [e[0], e[n]), so in the loop's frame the outer edges are -inf and +inf, which nothing
        rounds onto.  An interior edge can still meet a point's image when the map loses more
        precision than the gap between them (a point within about one ulp of the mapped edge)."""
        u = SymLimit(b.load(self.edges, c), b.i8(-1), True)
        if self.view is None:
            return u
        x = see(self, u)
        v = b.select(b.eq(c, b.i64(0)), b.f64(-math.inf), b.select(b.eq(c, self.n), b.f64(math.inf), x.v))
        return SymLimit(v, x.e, False)

    def _stop(self, c):
        return self._edge(b.add(c, b.i64(1)))

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        st, nm = {}, self.name

        def preamble(ctx):
            st["c"] = ctx.mut(I64, b.i64(0), nm + "_c")
            # through a view the outer edges are ±inf (`_edge`): no longer known to be above -inf
            fin = self.view is None
            st["first"] = SymLimit(ctx.let(self._edge(b.i64(0)).v, nm + "_lo"), b.i8(-1), fin)
            st["last"] = SymLimit(ctx.let(self._edge(self.n).v, nm + "_hi"), b.i8(-1), True)
            st["base"] = ctx.let(b.mul(pos, self.n), nm + "_base")
            # the seek's estimate off + (x - lo) * scale, from the interior edges e[1] .. e[n-1] when
            # n >= 3 (the end cells of `grid_edges.axis_edges` may be wide), else e[0] .. e[n]
            # (`grid_edges.interior`); every load is in bounds (n >= 1: edges has n + 1 >= 2 entries)
            three = b.le(b.i64(3), self.n)
            one = b.select(three, b.i64(1), b.i64(0))
            lo = b.load(self.edges, one)
            hi = b.load(self.edges, b.sub(self.n, one))
            st["glo"] = ctx.let(lo, nm + "_glo")
            st["off"] = ctx.let(b.cast(F64, one), nm + "_goff")
            st["scale"] = ctx.let(b.div(b.cast(F64, b.sub(self.n, b.add(one, one))), b.sub(hi, lo)), nm + "_gscale")

        def seek(ctx, e):
            # estimate the cell arithmetically (clamped before the float -> int conversion, so
            # ±inf never reaches it), then let a finger search correct it against the stored edges
            nf = b.cast(F64, self.n)
            t = b.add(st["off"], b.mul(b.sub(e.start.v, st["glo"]), st["scale"]))
            t = b.minimum(b.maximum(t, b.f64(0.0)), b.sub(nf, b.f64(1.0)))
            finger = ctx.mut(I64, b.cast(I64, t), nm + "_guess")
            key = lambda c: lim_le(e.start, self._stop(c))
            ctx.assign(st["c"], ctx.search_near(key, b.i64(0), self.n, finger, nm + "_s"))

        def step_preamble(ctx):
            st["cv"] = ctx.let(ir.Read(st["c"]), nm + "_cv")
            st["stop"] = SymLimit(ctx.let(self._stop(st["cv"]).v, nm + "_stop"), b.i8(-1), True)
            st["lo"] = SymLimit(ctx.let(self._edge(st["cv"]).v, nm + "_cell_lo"), b.i8(0), self.view is None)

        def nxt(ctx, full):
            ctx.assign(st["c"], b.add(ir.Read(st["c"]), b.cast(I64, full)))

        stepper = Stepper(seek=seek, preamble=step_preamble, stop=lambda ctx: st["stop"],
                          chunk=lambda ctx: Run(Fiber(self.child, ctx.let(b.add(st["base"], st["cv"]), nm + "_q"),
                                                      cell=Cell(st["lo"], st["stop"], self.clips))),
                          next=nxt, stop_eps=-1)
        return Thunk(cells_between_fills(stepper, self.fill, st), preamble=preamble)


def cells_between_fills(stepper, fill, st) -> Sequence:
    """The real axis of a cell level: the fill value before the first cell's edge `st["first"]`,
    the cells (`stepper`) up to the last edge `st["last"]`, the fill value after (UniformGrid,
    UnitCells)."""
    run_fill = lambda ctx, e: Run(FillLeaf(fill))
    return Sequence([PhaseSpec(run_fill, stop=lambda ctx, e: Extent.real().minus_unit(st["first"])),
                     PhaseSpec(lambda ctx, e: stepper, stop=lambda ctx, e: st["last"]),
                     PhaseSpec(run_fill)])


def uniform_edges(lo: float, hi: float, n: int) -> np.ndarray:
    """n equal cells covering [lo, hi] (hi inside the last cell: the top edge is nudged up one ulp)."""
    top = math.nextafter(hi, math.inf)
    # hi - lo may overflow (a range wider than the largest float): inf / NaN edges, which the
    # increasing check below turns into one cell
    with np.errstate(over="ignore", invalid="ignore"):
        e = lo + (hi - lo) * (np.arange(n + 1, dtype=np.float64) / n)
        e[0], e[-1] = lo, top
        if n > 1 and not (np.diff(e) > 0).all():     # a range too narrow (or too wide) for n cells
            return np.array([lo, top])
    return e
