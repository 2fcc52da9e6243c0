"""Interval levels under a `UniformGrid`: each interval listed in every cell it meets.

Source: the continuous paper's uniform grid (§7.1–7.2, Fig. 23: `Grid[x, j]` lists interval j in
every cell it overlaps), as a format: `UniformGrid(SparseRunList(child), edges)` bins a 1-D track
`A[x]` (`ct.intervals(..., grid=)`); `UniformGrid(SparseRunList(SparseList(Pattern())))` bins an
interval set `S[x, id]` (`ct.interval_index`; x outermost, as the grid bins the first mode).

Cell c is the half-open [e[c], e[c+1]).  An interval meets every cell from the one holding its
left end to the one holding its right end; a closed right end exactly at an edge e[c] meets cell
c in that one point (so it is listed there), an open one does not.  The stored endpoints are the
interval's own, not clipped to the cell: the tile loop (`ctensor.lower.tile`) restricts x to the
cell, so the part of a run inside each cell is what the cell contributes, and a cell edge never
shows up as a stored bound (a stored bound is a change of value; under the counting measure a
piece bounded by one is a candidate pinpoint, a piece cut by a cell edge is not: a run [a, c]
clipped to {c} by the cell [c, ..) counts only where another access's piece changes at c,
`lower.tile.cell_point`; counting beside another grid tensor is refused, `_check_counting_intervals`).

Every interval must lie inside [e[0], e[n]) (the grid reads the fill outside), so ±inf endpoints
are refused with the edges chosen from the data (FormatError naming the interval).  Listing an
interval in k cells stores it k times: a grid that would list more than `max_entries(n)` entries
is refused (FormatError) before anything of that size is allocated.
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from .element import Pattern
from .grid_edges import MAX_CELLS, MAX_CELLS_PER_POINT, axis_edges
from .level import as_array
from .sparse_list import SparseList
from .sparse_run_list import SparseRunList, endpoints_ok
from .tensor import Tensor
from .uniform_grid import UniformGrid, check_edges

MAX_ENTRIES_PER_INTERVAL = 64      # entries of a gridded interval level: at most this many per interval,
MAX_ENTRIES = 2**24                 # or this many in all, whichever is larger (~40 bytes each)


def max_entries(n: int) -> int:
    return max(MAX_ENTRIES_PER_INTERVAL * n, MAX_ENTRIES)


def track_edges(left, right, grid) -> np.ndarray:
    """Cell edges for intervals [left, right]: `grid` an int (that many cells, uniform over the
    bulk of the finite endpoints as `grid_edges.axis_edges` makes them for points, top edge just
    above the largest) or a strictly increasing finite float array of edges (validated by the
    UniformGrid).  Raises FormatError on a bad grid or too many cells."""
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        n = len(left)
        if grid < 1:
            raise FormatError(f"grid = {grid!r} is not a positive integer number of cells")
        if grid > max(MAX_CELLS_PER_POINT * n, MAX_CELLS):
            raise FormatError(f"grid: {grid} cells for {n} intervals; at most max({MAX_CELLS_PER_POINT} per interval, "
                              f"{MAX_CELLS}) (each cell costs 8 bytes)")
        v = np.concatenate([left, right]).astype(np.float64)
        return axis_edges(v[np.isfinite(v)], int(grid))
    if isinstance(grid, (bool, str)) or grid is None:
        raise FormatError(f"grid: expected a number of cells or an array of cell edges, got {grid!r}")
    return as_array(grid, "grid", np.float64)


def cell_span(edges, lv, le, rv, re, name="interval"):
    """(first, last) cell met by each interval [lv (ε le), rv (ε re)] (int64 arrays), against the
    half-open cells [e[c], e[c+1]).  Raises FormatError naming the first interval not inside
    [e[0], e[n]) (infinite ends included)."""
    n = len(edges) - 1
    # an open left end at an edge starts just above it, in the same cell as a closed one
    first = np.searchsorted(edges, lv, side="right") - 1
    last = np.searchsorted(edges, rv, side="right") - 1
    # an open right end at an edge e[c] stops just below it: the cell before
    at = (last >= 0) & (last <= n) & (re < 0)
    at[at] = edges[last[at]] == rv[at]
    last = last - at
    bad = np.flatnonzero((first < 0) | (last >= n) | (last < first))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"{name} {k} [{lv[k].item()!r}, {rv[k].item()!r}] is not inside the grid's cells "
                          f"[{edges[0].item()!r}, {edges[-1].item()!r}) (a UniformGrid reads its fill outside "
                          "them; pass edges that cover every interval, or no grid)")
    return first.astype(np.int64), last.astype(np.int64)


def listing(first, last, ncells, what="intervals"):
    """Entry k of interval `owner[k]` in cell `cell[k]`, for intervals sorted so that their cell
    ranges do not go back (a run list's intervals are sorted and disjoint); plus the cells' ptr.
    Raises FormatError when the entries exceed `max_entries`, before allocating them."""
    cnt = last - first + 1
    total = int(cnt.sum()) if len(cnt) else 0
    if total > max_entries(len(cnt)):
        k = int(np.argmax(cnt))
        raise FormatError(f"grid: listing each of {len(cnt)} {what} in every cell it meets takes {total} entries "
                          f"(interval {k} meets {int(cnt[k])} cells); at most {max_entries(len(cnt))} "
                          f"(max({MAX_ENTRIES_PER_INTERVAL} per interval, {MAX_ENTRIES})): use fewer cells")
    owner = np.repeat(np.arange(len(cnt), dtype=np.int64), cnt)
    cell = np.repeat(first - (np.cumsum(cnt) - cnt), cnt) + np.arange(total, dtype=np.int64)
    ptr = np.zeros(ncells + 1, np.int64)
    np.cumsum(np.bincount(cell, minlength=ncells), out=ptr[1:])
    return owner, cell, ptr


def grid_runs(lvl: SparseRunList, grid) -> UniformGrid:
    """`UniformGrid(SparseRunList(child))` of a one-fiber run-list level `lvl` (validated, as
    `ct.intervals` builds it) whose child is an Element or Pattern leaf: every run listed in every
    cell it meets, with its own endpoints, closedness and value.  Raises FormatError (see the
    module docstring)."""
    edges = track_edges(lvl.left, lvl.right, grid)
    check_edges(edges, "grid")
    le, re = lvl.eps_arrays()
    first, last = cell_span(edges, lvl.left, le, lvl.right, re)
    owner, _, ptr = listing(first, last, len(edges) - 1)
    child = lvl.child
    if not isinstance(child, Pattern):
        child = type(child)(child.fill, val=child.val[owner], dtype=child.val.dtype)
    eps = {} if lvl.closed is not None else dict(left_eps=lvl.left_eps[owner], right_eps=lvl.right_eps[owner])
    runs = SparseRunList(child, ptr, lvl.left[owner], lvl.right[owner], lvl.closed, **eps)
    return UniformGrid(runs, edges)


def interval_index(start, end, closed="left", grid=8) -> Tensor:
    """A boolean interval set S[x, id]: id k (integer, 0..n-1) holds the real interval
    [start[k], end[k]] (closedness per `closed`); intervals of different ids may overlap (genomic
    intervals, paper §7.2), binned by a uniform grid (§7.1, Fig. 23).  `ct.interval_set` is the
    same set with the id outermost, S[id, x]; here x is outermost so that a UniformGrid can bin it.

    Format: UniformGrid(SparseRunList(SparseList(Pattern()))) (grid=None: without the grid): the
    disjoint pieces of x between consecutive endpoints (closed=None, Limit endpoints), each listing
    the ids covering it in increasing order; under the grid a piece is listed in every cell it
    meets, with its own endpoints.  (The counting measure sees these pieces: a point where an
    endpoint of another id cuts an interval is a piece of its own, as in any S[x, id] layout.)

    start, end : 1-D float arrays (n,); finite with a grid (its cells must hold every interval).
    closed : 'left' | 'right' | 'both' | 'neither', or a sequence of those per interval.
    grid : int (cells, uniform over the bulk of the endpoints), a float array of cell edges, or None.

    Raises FormatError on a wrong shape or dtype, NaN, ±inf with a grid, an empty interval, an
    interval outside the given edges, or more entries than `max_entries(n)` (k intervals
    overlapping one piece store k ids there: the listing can grow as the square of the overlap).
    """
    from .constructors import _closed_arrays
    s, e = (as_array(a, nm, np.float64) for a, nm in ((start, "start"), (end, "end")))
    if s.shape != e.shape:
        raise FormatError(f"start has {s.shape[0]} entries but end has {e.shape[0]}")
    for a, nm in ((s, "start"), (e, "end")):
        bad = np.flatnonzero(np.isnan(a) | (~np.isfinite(a) if grid is not None else False))
        if bad.size:
            raise FormatError(f"{nm}[{int(bad[0])}] = {a[bad[0]].item()!r} is not finite (a grid's cells are finite)"
                              if grid is not None else f"{nm}[{int(bad[0])}] is NaN")
    n = len(s)
    _, le, re = _closed_arrays(closed, n)
    bad = np.flatnonzero(~endpoints_ok(s, le, e, re) | np.isposinf(s) | np.isneginf(e))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"start[{k}] = {s[k].item()!r} is not before end[{k}] = {e[k].item()!r} (the interval is "
                          "empty with its closedness)")
    lv, lve, rv, rve, cptr, ids = _pieces(s, le, e, re)
    if grid is None:
        child = SparseList(Pattern(), cptr, ids, shape=n)
        runs = SparseRunList(child, np.array([0, len(lv)], np.int64), lv, rv, None, lve, rve)
        return Tensor(runs, name="interval_index", owned=True)
    edges = track_edges(s, e, grid)
    check_edges(edges, "grid")
    cell_span(edges, s, le, e, re)                       # every interval inside the cells
    per = np.diff(cptr)
    f, z = cell_span(edges, lv, lve, rv, rve, "piece")
    total = int(((z - f + 1) * per).sum())
    if total > max_entries(n):
        raise FormatError(f"grid: listing the pieces of {n} intervals in every cell they meet takes {total} id "
                          f"entries; at most {max_entries(n)}: use fewer cells")
    owner, _, ptr = listing(f, z, len(edges) - 1, "pieces")
    k = per[owner]                                       # ids of each (cell, piece) entry
    kptr = np.zeros(len(owner) + 1, np.int64)
    np.cumsum(k, out=kptr[1:])
    at = np.repeat(cptr[owner] - kptr[:-1], k) + np.arange(int(kptr[-1]), dtype=np.int64)
    child = SparseList(Pattern(), kptr, ids[at], shape=n)
    runs = SparseRunList(child, ptr, lv[owner], rv[owner], None, lve[owner], rve[owner])
    return Tensor(UniformGrid(runs, edges), name="interval_index", owned=True)


def _pieces(s, le, e, re):
    """The disjoint pieces of x cut by the intervals [s (ε le), e (ε re)] and covered by some:
    (left, left ε, right, right ε, ptr, ids): piece p holds ids[ptr[p]:ptr[p+1]], increasing.
    Raises FormatError when the (piece, id) pairs exceed `max_entries`, before listing them."""
    n = len(s)
    # the boundaries of the pieces: each start, and just after each end (ε +1 of the end's Limit)
    bv = np.concatenate([s, e])
    be = np.concatenate([le, re + 1]).astype(np.int8)
    order = np.lexsort((be, bv))
    bv, be = bv[order], be[order]
    keep = np.r_[True, (bv[1:] != bv[:-1]) | (be[1:] != be[:-1])] if len(bv) else np.zeros(0, bool)
    bv, be = bv[keep], be[keep]
    first = _rank(bv, be, s, le)                         # the piece starting at each start
    cnt = _rank(bv, be, e, re + 1) - first               # up to the piece starting just after its end
    total = int(cnt.sum()) if n else 0
    if total > max_entries(n):
        raise FormatError(f"{n} overlapping intervals cover {total} (piece, id) pairs; at most {max_entries(n)} "
                          "(the pieces of S[x, id] list every id covering them)")
    ids = np.repeat(np.arange(n, dtype=np.int64), cnt)
    piece = np.repeat(first - (np.cumsum(cnt) - cnt), cnt) + np.arange(total, dtype=np.int64)
    o = np.argsort(piece, kind="stable")                 # ids ascend within a piece
    piece, ids = piece[o], ids[o]
    npieces = max(len(bv) - 1, 0)
    per = np.bincount(piece, minlength=npieces)[:npieces]
    used = np.flatnonzero(per)                           # pieces covered by some id (gaps are the fill)
    ptr = np.zeros(len(used) + 1, np.int64)
    np.cumsum(per[used], out=ptr[1:])
    rve = (be[used + 1].astype(np.int16) - 1).astype(np.int8)
    return bv[used], be[used], bv[used + 1], rve, ptr, ids


def _rank(bv, be, v, ep):
    """Index of each Limit (v, ep) among the sorted distinct boundaries (bv, be), where it is
    present; a value has at most two boundaries, (v, 0) before (v, +1)."""
    lo = np.searchsorted(bv, v, side="left")
    return lo + (be[lo] != ep)
