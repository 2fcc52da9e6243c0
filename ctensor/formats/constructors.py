"""Constructors of the public API: `intervals`, `interval_set`, `points`, `box` (DESIGN.md §6).

Each validates its input and raises `FormatError` naming the argument and the first bad index
(NaN, unsorted, overlapping, start after end, wrong shape or dtype) before building the levels.
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from .dense import Dense
from .element import Element, Pattern, kind_of
from .level import CLOSED, Level, as_array, as_flag, check_no_nan, closed_eps, real_endpoints
from .sparse_interval import SparseInterval
from .sparse_list import SparseList
from .sparse_point import SparsePoint
from .sparse_run_list import SparseRunList, endpoints_ok
from .tensor import Tensor
from .grid_edges import grid_cells, grid_edges
from .grid_order import grid_order
from .uniform_grid import UniformGrid


MAX_DIMS = 64       # real axes of `points` and `box`: a level each (deeper nests exceed the recursion limit)


def _closed_arrays(closed, n):
    if isinstance(closed, str):
        le, re = closed_eps(closed)
        return None, np.full(n, le, np.int8), np.full(n, re, np.int8)
    try:
        names = list(closed)
    except TypeError:
        raise TypeError(f"closed: expected one of {sorted(CLOSED)} or a sequence of them (one per interval), "
                        f"got {closed!r}") from None
    if len(names) != n:
        raise FormatError(f"closed: expected {n} closedness names, got {len(names)}")
    le = np.empty(n, np.int8)
    re = np.empty(n, np.int8)
    for k, c in enumerate(names):
        if not isinstance(c, str) or c not in CLOSED:
            raise FormatError(f"closed[{k}] = {c!r} is not one of {sorted(CLOSED)}")
        le[k], re[k] = CLOSED[c]
    return "mixed", le, re


def intervals(start, end, values=None, closed="left", fill=0.0, *, sort=False, merge=False, grid=None) -> Tensor:
    """A 1-D piecewise-constant tensor A[x] over a real axis: value k on interval k, `fill` elsewhere.

    Parameters
    ----------
    start, end : 1-D float arrays (n,)
        Interval endpoints (±inf allowed: start may be -inf, end may be +inf).
    values : 1-D array (n,) of bool, int or float, optional
        None gives a boolean tensor (true on the intervals, fill false) stored as a Pattern.
    closed : 'left' | 'right' | 'both' | 'neither', or a sequence of those per interval
        'left' means [start, end).  A per-interval sequence gives Limit endpoints (heterogeneous).
    fill : value outside the intervals (ignored for boolean tensors, whose fill is False).
    sort : sort the intervals by start first.
    merge : for boolean tensors, merge overlapping or touching intervals (as `bedtools merge`).
    grid : None, int (number of cells) or float array of cell edges — a spatial index: the runs
        under a UniformGrid, each listed in every cell [e[c], e[c+1]) it meets
        (`ctensor.formats.grid_intervals`; paper §7.1–7.2).  The tensor denotes the same function.

    Returns a Tensor with format SparseRunList(Element(fill)) or SparseRunList(Pattern()), under
    UniformGrid with `grid`.

    Raises
    ------
    FormatError : wrong shape or dtype, NaN, start after end (or an empty half-open interval),
        intervals out of order or overlapping — closed intervals sharing an endpoint overlap; with
        `grid`, an interval outside the cells (±inf ends) or more entries than the grid allows.
    """
    s, e = real_endpoints(start, end, ("start", "end"))     # float32 pairs stay float32 (read widened)
    if s.shape != e.shape:
        raise FormatError(f"start has {s.shape[0]} entries but end has {e.shape[0]}")
    n = s.shape[0]
    check_no_nan(s, "start")
    check_no_nan(e, "end")
    v = None
    if values is not None:
        v = np.asarray(values)
        if v.ndim != 1 or v.shape[0] != n:
            raise FormatError(f"values: expected shape ({n},), got {v.shape}")
        try:
            kind_of(v.dtype)
        except FormatError:
            raise FormatError(f"values: expected bool, integer or float values, got dtype {v.dtype}") from None
        check_no_nan(v, "values")
    mode, le, re = _closed_arrays(closed, n)
    bad = np.flatnonzero(np.isposinf(s) | np.isneginf(e))
    if bad.size:
        raise FormatError(f"interval {int(bad[0])}: start is +inf or end is -inf")
    bad = np.flatnonzero(~endpoints_ok(s, le, e, re))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"start[{k}] = {s[k].item()!r} is not before end[{k}] = {e[k].item()!r} "
                          f"(the interval is empty with closed={closed if isinstance(closed, str) else closed[k]!r})")
    if as_flag(sort, "sort"):
        order = np.lexsort((re, e, le, s))       # by start Limit (value, ε), then end
        s, e, le, re = s[order], e[order], le[order], re[order]
        v = None if v is None else v[order]
    if as_flag(merge, "merge"):
        if v is not None:
            raise FormatError("merge=True merges boolean intervals only (values must be None)")
        # _merge needs the intervals sorted by start Limit (value, then ε)
        bad = np.flatnonzero((s[1:] < s[:-1]) | ((s[1:] == s[:-1]) & (le[1:] < le[:-1])))
        if bad.size:
            k = int(bad[0]) + 1
            raise FormatError(f"start[{k}] = {s[k].item()!r}: interval {k} starts before the previous one "
                              f"(start[{k - 1}] = {s[k - 1].item()!r}); merge=True needs intervals sorted by "
                              "start: pass sort=True as well")
        s, e, le, re = _merge(s, e, le, re)
        n = len(s)
    if n > 1:
        ok = ~endpoints_ok(s[1:], le[1:], e[:-1], re[:-1])       # end[k] < start[k+1]
        bad = np.flatnonzero(~ok)
        if bad.size:
            k = int(bad[0]) + 1
            what = "starts before the previous one" if s[k] < s[k - 1] else "overlaps the previous one"
            raise FormatError(f"start[{k}] = {s[k].item()!r}: interval {k} {what} (interval {k - 1} ends at "
                              f"end[{k - 1}] = {e[k - 1].item()!r}); pass sort=True / merge=True to canonicalise")
    ptr = np.array([0, n], np.int64)
    if v is not None and v.dtype.kind in "biu" and not _integral(fill):
        v = v.astype(np.float64)                 # a fractional, infinite or NaN fill needs float values
    try:
        child = Pattern() if v is None else Element(fill, val=v, dtype=v.dtype)
    except FormatError as exc:                   # the Element's argument is this function's `values`
        msg = str(exc)
        raise FormatError("values" + msg[3:] if msg.startswith("val") else msg) from None
    if mode is None:
        lvl = SparseRunList(child, ptr, s, e, closed)
    else:
        lvl = SparseRunList(child, ptr, s, e, None, le, re)
    if grid is not None:
        from .grid_intervals import grid_runs
        lvl.validate(1, "intervals")
        return Tensor(grid_runs(lvl, grid), name="intervals")
    return Tensor(lvl, name="intervals")


def _integral(x) -> bool:
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return True
    return isinstance(x, (float, np.floating)) and bool(np.isfinite(x)) and x == int(x)


def _merge(s, e, le, re):
    """Union of boolean intervals sorted by start: touching ([a,b) then [b,c)) and overlapping
    intervals fuse.  Vectorised: Limits are ranked once, then a running maximum of end ranks marks
    where a new merged interval begins (start > every earlier end + ε)."""
    n = len(s)
    if n == 0:
        return s, e, le, re
    ends_plus = np.minimum(re.astype(np.int16) + 1, 1)
    vals = np.concatenate([s, e])
    eps = np.concatenate([le.astype(np.int16), ends_plus])
    order = np.lexsort((eps, vals))
    rank = np.empty(2 * n, np.int64)
    sorted_keys = np.stack([vals[order], eps[order]])
    newkey = np.ones(2 * n, bool)
    newkey[1:] = (sorted_keys[:, 1:] != sorted_keys[:, :-1]).any(axis=0)
    rank[order] = np.cumsum(newkey) - 1                  # equal Limits share a rank
    start_rank, end_rank = rank[:n], rank[n:]
    reach = np.maximum.accumulate(end_rank)              # furthest end+ε so far
    begins = np.ones(n, bool)
    begins[1:] = start_rank[1:] > reach[:-1]
    group = np.cumsum(begins) - 1
    first = np.flatnonzero(begins)
    # the merged end is the end with the largest rank in its group
    last_of_group = np.zeros(len(first), np.int64)
    best = np.full(len(first), -1, np.int64)
    erank = rank[n:]
    np.maximum.at(best, group, erank)
    pick = np.flatnonzero(erank == best[group])
    last_of_group[group[pick]] = pick
    return s[first], e[last_of_group], le[first], re[last_of_group]


def interval_set(start, end, closed="left") -> Tensor:
    """A 2-D boolean tensor S[i, x]: id i (integer, 0..n-1) owns one interval of the real axis x.

    Intervals of different ids may overlap (genomic intervals, continuous paper §7.2).  Format:
    Dense(SparseInterval(Pattern())).  Raises FormatError on NaN, start after end or shape errors.
    """
    s = as_array(start, "start", np.float64)
    e = as_array(end, "end", np.float64)
    if s.shape != e.shape:
        raise FormatError(f"start has {s.shape[0]} entries but end has {e.shape[0]}")
    check_no_nan(s, "start")
    check_no_nan(e, "end")
    lo, hi = closed_eps(closed)
    bad = np.flatnonzero(~endpoints_ok(s, lo, e, hi))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"start[{k}] = {s[k].item()!r} is not before end[{k}] = {e[k].item()!r} (closed={closed!r})")
    return Tensor(Dense(SparseInterval(Pattern(), s, e, closed), s.shape[0]), name="interval_set")


def points(coords, grid=None) -> Tensor:
    """A boolean tensor P[x0, ..., x{d-1}, id] of n points in d real dimensions (pinpoints,
    continuous paper §5.2, §7.1); id is the row of `coords` (integer, 0..n-1).

    coords : (n, d) float array.
    grid : None, int, or sequence of ints (one per binned axis, at most d) — the spatial index.
        None: levels SparseList over each real axis (equal coordinates share a fiber), then SparseList
        over the id, then Pattern; a box query scans the x-slab of the box.
        Otherwise a grid uniform over the bulk of the points (`ctensor.formats.grid_edges`: far
        outliers go into an end cell on their side): UniformGrid levels for the
        first m axes (an int bins all d axes with that many cells each), above the coordinate levels
        of each cell (`ctensor.formats.uniform_grid`); a level whose fibers all hold exactly one
        coordinate is stored as SparsePoint (no ptr).  The einsum is unchanged: the compiler runs a
        tile loop per binned axis (`ctensor.lower.tile`), so a box visits only the cells it overlaps.

    Raises FormatError on NaN/inf, wrong ndim or dtype, or a grid that is not positive integers.
    """
    single = getattr(coords, "dtype", None) == np.float32           # float32 stays float32 (read widened)
    c = as_array(coords, "coords", np.float32 if single else np.float64, ndim=2)
    n, d = c.shape
    if not 1 <= d <= MAX_DIMS:
        raise FormatError(f"coords: {d} dimensions; need 1 to {MAX_DIMS} (one level per dimension)")
    bad = np.argwhere(~np.isfinite(c))
    if bad.size:
        i, j = bad[0]
        raise FormatError(f"coords[{i}, {j}] = {c[i, j].item()!r} is not finite")
    if grid is None:
        order = np.lexsort(tuple(c[:, j] for j in reversed(range(d))))
        # every buffer below is computed here (c[order] copies): nothing to detach
        return Tensor(point_levels(c[order], order.astype(np.int64), n), name="points", owned=True)
    edges = grid_edges(c, grid)
    cell = grid_cells(c, edges)
    order, cells = grid_order(c, cell, edges, with_cells=True)
    # not validated again: coordinates finite (checked above), each point's cell checked against
    # the edges by `grid_cells`, rows sorted by (cell, coordinates, id); np.take by rows, not
    # c[order] (5x slower for an (n, d) array)
    return Tensor(grid_point_levels(np.take(c, order, axis=0), order.astype(np.int64), n, cells, edges),
                  name="points", validate=False)


def grid_point_levels(cs, ids, nids, cell, edges) -> Level:
    """UniformGrid levels over `point_levels` of rows sorted by (cell, coordinates)."""
    ncells = int(np.prod([len(e) - 1 for e in edges]))
    level = point_levels(cs, ids, nids, fiber=cell, nfibers=ncells, compact=True)
    for e in reversed(edges):
        level = UniformGrid(level, e)
    return level


def point_levels(cs, ids, nids, fiber=None, nfibers=1, compact=False) -> Level:
    """Coordinate levels of rows `cs` (n, d) sorted lexicographically (within `fiber`, the fiber of
    the first level of each row), then the id level; `ids` None: the ids are the row positions
    0..n-1 (a spatial index's ranks).  compact: a level below the first whose fibers each hold
    exactly one coordinate is a SparsePoint."""
    n, d = cs.shape
    # newp[k, r]: row r starts a new group of its first k+1 coordinates (row r differs from row r-1
    # in one of them, or in its fiber); one row of newp per coordinate, each contiguous
    newp = np.ones((d, n), bool)
    if n:
        for k in range(d):
            np.not_equal(cs[1:, k], cs[:-1, k], out=newp[k, 1:])
            if k:
                newp[k, 1:] |= newp[k - 1, 1:]
            elif fiber is not None:
                newp[0, 1:] |= fiber[1:] != fiber[:-1]
    parent = np.zeros(n, np.int64) if fiber is None else fiber
    nparents = nfibers
    rows = False            # every row its own group (parent r = r): each deeper level holds one per fiber
    lvls = []               # (counts per fiber, None when every fiber holds one; coordinates)
    for k in range(d):
        starts = newp[k]
        if rows:
            lvls.append((None, np.ascontiguousarray(cs[:, k])))
            continue
        every = bool(starts.all())
        counts = np.bincount(parent if every else parent[starts], minlength=nparents)
        lvls.append((counts, np.ascontiguousarray(cs[:, k]) if every else cs[starts, k]))
        if every:
            rows, nparents = True, n
        else:
            parent = np.cumsum(starts) - 1
            nparents = int(starts.sum())
    if rows:
        counts = None
    else:
        counts = np.bincount(parent, minlength=nparents) if n else np.zeros(nparents, np.int64)
    one = lambda cnt, k: compact and k > 0 and (cnt is None or bool((cnt == 1).all()))
    if ids is None:
        ids = np.arange(n, dtype=np.int64) if not one(counts, d) else None
    if one(counts, d):
        # ids in storage order 0..n-1 (a spatial index's ranks) are the positions: store none
        positions = ids is None or (len(ids) <= nids and np.array_equal(ids, np.arange(len(ids))))
        level = SparsePoint(Pattern(), None if positions else ids, shape=nids, positions=positions)
    else:
        level = SparseList(Pattern(), _offsets(counts, n), ids, shape=nids)
    for k in reversed(range(d)):
        counts, idx = lvls[k]
        level = SparsePoint(level, idx) if one(counts, k) else SparseList(level, _offsets(counts, n), idx, real=True)
    return level


def _offsets(counts, n) -> np.ndarray:
    """Fiber offsets from per-fiber counts (None: n fibers of one entry each)."""
    if counts is None:
        return np.arange(n + 1, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def box(lo, hi, closed="both") -> Tensor:
    """A boolean tensor B[x0, ..., x{d-1}]: true on the box lo <= x <= hi (closedness per `closed`).

    Format: SparseInterval over each axis, then Pattern.  Raises FormatError when lo > hi, on NaN or
    when lo and hi differ in length."""
    lo = as_array(np.atleast_1d(lo), "lo", np.float64)
    hi = as_array(np.atleast_1d(hi), "hi", np.float64)
    if lo.shape != hi.shape:
        raise FormatError(f"lo has {lo.shape[0]} coordinates but hi has {hi.shape[0]}")
    if lo.shape[0] > MAX_DIMS:
        raise FormatError(f"lo: {lo.shape[0]} dimensions; at most {MAX_DIMS} (one level per dimension)")
    check_no_nan(lo, "lo")
    check_no_nan(hi, "hi")
    le, re = closed_eps(closed)
    bad = np.flatnonzero(~endpoints_ok(lo, le, hi, re))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"lo[{k}] = {lo[k].item()!r} is not below hi[{k}] = {hi[k].item()!r} (closed={closed!r})")
    level = Pattern()
    for k in reversed(range(lo.shape[0])):
        level = SparseInterval(level, lo[k:k + 1], hi[k:k + 1], closed)
    return Tensor(level, name="box")
