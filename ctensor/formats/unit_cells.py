"""`UnitCells(child, shape, rows=None)`: a real axis cut into unit cells [i - 0.5, i + 0.5),
i = 0 .. shape-1, each holding one child fiber — a voxel grid's axis, with O(1) locate.

Source: the continuous paper's §7.3 (Fig. 25): a voxel grid is piecewise constant over cells
centred at integer coordinates; a sorted run list (SparseRunList) finds a cell by a search, this
level by arithmetic (cell = floor(x + 0.5)), as a dense index grid does.  Two layouts:

* `rows=None`: every cell is stored, child position p*shape + i (a Dense level whose coordinates
  are cells of the real line);
* `rows` (int32 or int64, npos*shape entries): cell i of fiber p holds child row rows[p*shape + i],
  or is empty (the fill) where it is -1 — "a dense index level pointing into compact rows", as an
  index grid does for sparse voxels: three levels `UnitCells(UnitCells(UnitCells(Dense(Element),
  Z, rows), Y), X)` store an X*Y*Z int32 index plus one row of channel values per occupied voxel.

Read through an affine index (`Grid[u + x]`, formats.affine) the level sees its cell edges in the
loop's frame (x = (u - b)/a, a > 0 only: a negative coefficient is refused, reversed iteration is
not implemented); the seek takes the estimate floor(u + 0.5) when it passes two compares against
those same edges and corrects it by a search otherwise, so one cell edge is always the same x-frame
value and rounding never skips or repeats a cell.  An input format only (not writable).
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError, InvalidProgramError
from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, I32, I64, PtrType
from ..limits import Limit
from ..looplets.nodes import FillLeaf, Fiber, Run, Stepper, Switch, Thunk
from .affine import see
from .level import Level, as_shape
from .uniform_grid import cells_between_fills


class UnitCells(Level):
    """Real level of `shape` unit cells [i - 0.5, i + 0.5) per fiber (closed below, open above).

    Parameters
    ----------
    child : Level
        The level of each cell's fiber (another UnitCells for the next axis, or the values).
    shape : int
        Cells per fiber; coordinates outside [-0.5, shape - 0.5) read the fill.
    rows : int32 or int64 array (npos*shape,), optional
        Child row of each (fiber, cell), -1 for an empty cell; every row in 0 .. nrows-1 where
        nrows = rows.max() + 1 (rows may be shared).  None: every cell stored, row p*shape + i.
    """

    coord = "real"

    def __init__(self, child: Level, shape: int | None = None, rows=None):
        self.child, self.shape = child, as_shape(shape, "UnitCells")
        if rows is not None:
            rows = np.asarray(rows)
            if rows.dtype not in (np.int32, np.int64):
                if rows.dtype.kind not in "iu":
                    raise FormatError(f"UnitCells: rows must be an int32 or int64 array, got {rows.dtype}")
                rows = rows.astype(np.int64)
            rows = np.ascontiguousarray(rows.reshape(-1))
        self.rows = rows

    @property
    def indexed(self) -> bool:
        return self.rows is not None

    def format_key(self):
        return ("UnitCells", None if self.rows is None else str(self.rows.dtype), self.child.format_key())

    def format_str(self):
        r = "" if self.rows is None else f", rows={self.rows.dtype}"
        return f"UnitCells({self.child.format_str()}{r})"

    def empty(self):
        return UnitCells(self.child.empty(), self.shape, rows=None)

    def has_data(self):
        return self.shape is not None and self.child.has_data()

    def child_count(self, npos):
        if self.rows is None:
            return npos * self.shape
        return int(self.rows.max()) + 1 if self.rows.size else 0

    def arrays(self):
        return [self.shape] + ([] if self.rows is None else [self.rows]) + self.child.arrays()

    def validate(self, npos, name):
        if self.shape is None:
            raise FormatError(f"{name}: UnitCells level has no shape")
        if self.rows is not None:
            if len(self.rows) != npos * self.shape:
                raise FormatError(f"{name}.rows: expected {npos * self.shape} entries (fibers x shape), "
                                  f"got {len(self.rows)}")
            bad = np.flatnonzero(self.rows < -1)
            if bad.size:
                k = int(bad[0])
                raise FormatError(f"{name}.rows[{k}] = {int(self.rows[k])} is below -1 (-1 marks an empty cell)")
        self.child.validate(self.child_count(npos), name)

    def cell_of(self, x):
        """The cell holding coordinate x (a float or Limit), or None outside [-0.5, shape - 0.5)."""
        x = Limit.of(x)
        c = int(np.floor(x.value + 0.5)) if np.isfinite(x.value) else -1
        if x.eps < 0 and c - 0.5 == x.value:
            c -= 1                                  # just below an edge: the cell before it
        return c if 0 <= c < self.shape else None

    def _row(self, pos, c):
        q = pos * self.shape + c
        return q if self.rows is None else int(self.rows[q])

    def eval(self, pos, coords):
        c = self.cell_of(coords[0])
        q = -1 if c is None else self._row(pos, c)
        return self.fill if q < 0 else self.child.eval(q, coords[1:])

    def pieces(self, pos):
        for c in range(self.shape):
            q = self._row(pos, c)
            if q >= 0:
                for rest, v in self.child.pieces(q):
                    yield ((Limit(c - 0.5, 0), Limit(c + 0.5, -1)),) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        if mode != "read":
            raise InvalidProgramError("UnitCells is an input format; it cannot be an output format")
        return VUnitCells(ctx, self, name)


class VUnitCells:
    is_leaf = False
    coord = "real"

    def __init__(self, ctx, lvl: UnitCells, name):
        self.lvl, self.name, self.fill = lvl, name, lvl.fill
        self.n = ir.Read(ctx.param(name + "_shape", I64, ("shape", lvl, "shape")))
        self.rows = None
        if lvl.rows is not None:
            ty = I32 if lvl.rows.dtype == np.int32 else I64
            self.rows = ir.Read(ctx.param(name + "_rows", PtrType(ty), ("read", lvl, "rows")))
        self.child = lvl.child.virtualize(ctx, name + "u", "read")

    view = None          # a CoordView (a > 0 only) when read through an affine index (`formats.affine`)

    def extent(self):
        return Extent.real()

    def _edge(self, c, eps):
        """The edge c - 0.5 of cell c in the loop's frame, as a Limit with ε = eps."""
        return see(self, SymLimit(b.sub(b.cast(F64, c), b.f64(0.5)), b.i8(eps), True))

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        st, nm = {}, self.name

        def preamble(ctx):
            st["c"] = ctx.mut(I64, b.i64(0), nm + "_c")
            st["first"] = SymLimit(ctx.let(self._edge(b.i64(0), 0).v, nm + "_lo"), b.i8(0), True)
            st["last"] = SymLimit(ctx.let(self._edge(self.n, -1).v, nm + "_hi"), b.i8(-1), True)
            st["base"] = ctx.let(b.mul(pos, self.n), nm + "_base")

        def seek(ctx, e):
            # estimate the cell floor(u + 0.5) of u, the extent start in the level's frame (clamped in
            # float, so ±inf and NaN never reach the conversion); it is the answer — the first cell
            # whose x-frame stop is >= the start — when that cell qualifies and the one before does
            # not (two compares); a rounded estimate is corrected by a search (every probe in range)
            u = e.start.v if self.view is None else b.add(b.mul(self.view.a, e.start.v), self.view.b)
            top = b.sub(b.cast(F64, self.n), b.f64(1.0))
            t = b.add(u, b.f64(0.5))
            t = b.select(b.lt(t, b.f64(0.0)), b.f64(0.0), t)       # NaN fails both tests: cell 0
            t = b.select(b.lt(top, t), top, t)
            g = ctx.let(b.maximum(b.cast(I64, t), b.i64(0)), nm + "_guess")
            key = lambda c: lim_le(e.start, self._edge(b.add(c, b.i64(1)), -1))
            res = ctx.mut(I64, g, nm + "_at")

            def lower():        # the guess qualifies: is an earlier cell the first?
                early = b.land(b.lt(b.i64(0), g), key(b.sub(g, b.i64(1))))
                ctx.if_(early, lambda: ctx.assign(res, ctx.search_first_ge(key, b.i64(0), g, nm + "_sb")))

            def higher():       # it does not: a later cell (or n, past the last)
                nxt = b.add(g, b.i64(1))
                ctx.if_(b.lt(nxt, self.n), lambda: ctx.assign(res, ctx.search_first_ge(key, nxt, self.n, nm + "_sa")),
                        lambda: ctx.assign(res, self.n))
            ctx.if_(key(g), lower, higher)
            ctx.assign(st["c"], ir.Read(res))

        def step_preamble(ctx):
            st["cv"] = ctx.let(ir.Read(st["c"]), nm + "_cv")
            st["stop"] = SymLimit(ctx.let(self._edge(b.add(st["cv"], b.i64(1)), -1).v, nm + "_stop"), b.i8(-1), True)

        def nxt(ctx, full):
            ctx.assign(st["c"], b.add(ir.Read(st["c"]), b.cast(I64, full)))

        def chunk(ctx):
            q = ctx.let(b.add(st["base"], st["cv"]), nm + "_q")
            if self.rows is None:
                return Run(Fiber(self.child, q))
            row = ctx.let(b.cast(I64, b.load(self.rows, q)), nm + "_row")
            return Switch([(b.le(b.i64(0), row), Run(Fiber(self.child, row))), (b.TRUE, Run(FillLeaf(self.fill)))])

        stepper = Stepper(seek=seek, preamble=step_preamble, stop=lambda ctx: st["stop"], chunk=chunk,
                          next=nxt, stop_eps=-1)
        return Thunk(cells_between_fills(stepper, self.fill, st), preamble=preamble)
