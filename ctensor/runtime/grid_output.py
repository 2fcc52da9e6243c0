"""out= a `UniformGrid` over a real coordinate level: the output binned into the given cells.

The kernel writes the level below the grid (the result as it would be without it: one fiber of
sorted pinpoints); `bin_output` then builds the grid from it in the runtime: every stored
coordinate goes to the cell [edges[c], edges[c+1]) holding it, and since the coordinates are
sorted the cells are too, so the grid's child is the written level with a new `ptr` (one fiber
per cell, no entry moved).  The edges are the call's (`out=`'s), never part of the kernel: a
kernel is compiled for the level below the grid, so one kernel serves any edges.

Supported: one UniformGrid at the top of `out=`, with `edges` given, over a real SparseList
(pinpoints; continuous paper §7.1, the spatial index as a format) or over a SparseRunList holding
the leaf (each run listed in every cell it meets with its own endpoints,
`formats.grid_intervals.grid_runs`, as `ct.intervals(..., grid=)` builds a track).  Refused with
InvalidProgramError: no edges, a chain of grids, a grid over any other level.  A result with a
coordinate or run outside [edges[0], edges[n]) raises FormatError naming it (a grid stores
nothing outside its cells; a run list output's fill regions ±inf often are: bin a product with a
bounded factor).
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError, InvalidProgramError
from ..formats.grid_intervals import grid_runs
from ..formats.sparse_list import SparseList
from ..formats.sparse_run_list import SparseRunList
from ..formats.uniform_grid import UniformGrid


def split_grid(out):
    """(grid, the format the kernel writes) for a UniformGrid out= (a Level or Tensor), else None;
    InvalidProgramError for a grid output this module does not build."""
    lvl = getattr(out, "level", out)
    if not isinstance(lvl, UniformGrid):
        return None
    if lvl.edges is None:
        raise InvalidProgramError("out= UniformGrid(...) needs its edges (edges=...): the cells the output is "
                                  "binned into")
    c = lvl.child
    if not (isinstance(c, SparseList) and c.coord == "real" or isinstance(c, SparseRunList) and c.child.is_leaf):
        raise InvalidProgramError(f"out= {lvl.format_str()}: a UniformGrid output is built over a real SparseList "
                                  "(pinpoints) or a SparseRunList holding the leaf only (one grid, binning the "
                                  "first mode)")
    e = lvl.edges
    if len(e) < 2 or not np.isfinite(e).all() or (np.diff(e) <= 0).any():
        raise FormatError("out= UniformGrid: edges must be at least 2 finite, strictly increasing values")
    return lvl, lvl.child.empty()


def bin_output(grid: UniformGrid, written, out: str) -> UniformGrid:
    """The UniformGrid over `written` (a one-fiber real SparseList or SparseRunList, the kernel's
    output)."""
    if isinstance(written, SparseRunList):
        # every run listed in every cell it meets, with its own endpoints (`formats.grid_intervals`);
        # FormatError naming a run outside the cells
        g = grid_runs(written, grid.edges)
        g.axis = 0
        return g
    e, idx = grid.edges, written.idx
    cell = np.searchsorted(e, idx, side="right") - 1
    bad = np.flatnonzero((cell < 0) | (cell >= len(e) - 1))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"out= {grid.format_str()}: {out} stores coordinate {idx[k].item()!r} (entry {k}), "
                          f"outside the grid's cells [{e[0].item()!r}, {e[-1].item()!r})")
    n = len(e) - 1
    ptr = np.searchsorted(cell, np.arange(n + 1), side="left").astype(np.int64)
    child = SparseList(written.child, ptr, idx, real=True)
    g = UniformGrid(child, e)
    g.axis = 0
    return g
