"""Box and radius search over 2-D points, each computed by a ctensor einsum (`EINSUMS`).

Source: the continuous tensor paper §7.1.  Points are the pinpoint tensor `P[x, y, id]`; a box is
`B[x, y]`, closed on every side; the searches are

    box:     Out[id] = (B[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)
    radius:  the same, masked by sqrt((x - ox)**2 + (y - oy)**2) <= r over the circle's bounding box

`index(points)` stores P under a uniform grid (`ct.points(..., grid=...)`, UniformGrid levels over x
and y), so a query visits the cells its box overlaps rather than an x-slab; the einsum is the one
above.  Boundaries are closed, as Shapely's `STRtree.query(box)` / `predicate="dwithin"` treat them:
a point on a box edge, or at distance exactly r (computed as GEOS does, `sqrt(dx*dx + dy*dy)`), is
inside.

| function | Shapely 2 | returns |
|---|---|---|
| `box_query(pts, lo, hi)` | `STRtree.query(box(*lo, *hi))` | sorted int64 point ids |
| `box_query(pts, lo[m,2], hi[m,2])` | `STRtree.query(boxes)` | int64 (2, k): query index, point id |
| `radius_query(pts, center, r)` | `STRtree.query(point, "dwithin", r)` | sorted int64 point ids |
| `radius_query(pts, centers[m,2], r)` | same, batched (r scalar or per centre) | int64 (2, k) |

Single queries (`PointIndex.box` / `.radius`) run through a native CPython entry point
(`ctensor.runtime.pyentry`, ~0.3 µs from Python plus the kernel) whenever it accepts the arguments;
anything it does not accept (bad input, strings, empty index) takes the Python path, which raises the
errors below.  Set CTENSOR_NATIVE_ENTRY=0 in the environment to always take the Python path (read
when an index builds its entry, at its first query of each kind).

Threads.  One `PointIndex` may be queried from many threads at once.  The Python path of single
queries packs one argument block per thread (the query box is written into it in place); the
native entry has a block of its own and holds the GIL from the moment it writes the query until it
returns, so no other thread can touch its block meanwhile, except for large queries (expected
`spatial_entry.RELEASE_AT` ids or more), whose kernel runs without the GIL while a second thread's
query takes the Python path.  Batched queries (`box_many`, `radius_many`, and the module functions
with arrays of queries) take `workers=` (default 1, -1 for every core): the queries are split into
that many contiguous chunks (of at least `workers.MIN_CHUNK` queries), each chunk's kernel call
runs on a thread of a ThreadPoolExecutor without the GIL, and the pairs are concatenated in query
order, identical to `workers=1`.  A bad `workers` raises TypeError (not an int) or ValueError (0
or below -1).

Pairs are sorted by query index, then point id; with sort=False each query's ids come in the
index's layout order, as Shapely's come in tree order (`ctensor.apps.spatial_batch`).  Sorted ids
come from `sort_ids`.  `pts` is a `PointIndex` (built once by `index`) or anything `index` accepts.
Errors: `ctensor.FormatError` (NaN coordinates, wrong shape, lo > hi, negative or NaN radius),
`TypeError` (geometries that are not points, non-numeric input).
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from ..errors import FormatError
from .dask_broadcast import is_dask_array
from ..formats.constructors import grid_point_levels
from ..formats.grid_order import grid_order
from ..formats.grid_edges import bulk_range, grid_cells, grid_edges
from ..formats.element import Pattern
from ..formats.level import as_flag
from ..formats.sparse_list import SparseList
from ..formats.tensor import Tensor
from .spatial_batch import EINSUMS, BatchQueries, box_tensor
from .spatial_entry import disk_box_scalar as _disk_box_scalar, query_entry
from .spatial_input import as_coords, cell_points_arg, pair_arg, radius_arg, replay
from .workers import check_workers, compiled

__all__ = ["EINSUMS", "PointIndex", "box_query", "index", "radius_query"]

CELL_POINTS = 16     # average points per grid cell: 8, 16, 32 measured at 1e6 and 1e7 points; 16 is best
                     # or within noise of best on every benchmark query (benchmarks/bench_spatial.py)


class PointIndex(BatchQueries):
    """2-D points stored as `P[x, y, id]` under a uniform grid, built once, queried many times.

    Parameters
    ----------
    points : (n, 2) float array (x, y), or an array/sequence of Shapely Points.
    cell_points : average number of points per grid cell (the grid has about n / cell_points cells,
        shaped like the bulk of the points; far outliers go into an end cell on their side, see
        `ctensor.formats.grid_edges`).

    The tensor's ids are ranks in the grid layout (cell, x, y), so every query writes them in
    increasing order into a SparseList output; `perm` maps a rank to the row of `points`.
    Attributes: `tensor`, `perm`, `n`, `bounds` (xmin, ymin, xmax, ymax), `build_seconds`,
    `nbytes` (tensor + perm), `kernels` (name -> compiled Kernel, after use).
    """

    def __init__(self, points, cell_points: int = CELL_POINTS):
        t0 = time.perf_counter()
        cell_points = cell_points_arg(cell_points)
        c = as_coords(points)
        self.n = n = len(c)
        lo = (c[:, 0].min(), c[:, 1].min()) if n else (0.0, 0.0)
        hi = (c[:, 0].max(), c[:, 1].max()) if n else (1.0, 1.0)
        self.bounds = (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))
        bulk = [bulk_range(c[:, k]) for k in range(2)] if n else [(0.0, 1.0)] * 2
        edges = grid_edges(c, _grid_shape(n, [b - a for a, b in bulk], cell_points))
        cell = grid_cells(c, edges)
        order, cell = grid_order(c, cell, edges, with_cells=True)
        self.perm = order.astype(np.int32 if n < 2**31 else np.int64)
        # the sorted coordinates column by column into a Fortran-ordered array, whose columns the
        # levels then keep as views (c[order] and a copy of each column: 0.8 s of 1e7 points, ~0.2 s
        # so).  ids None: the ranks 0..n-1, stored as positions.  Not validated again
        # (`validate=False`): the coordinates are finite (`as_coords`), every point's cell was
        # checked against the stored edges by `grid_cells`, and the levels are built sorted by
        # (cell, x, y, rank) -- the checks `UniformGrid.validate` would redo (0.3-0.5 s at 1e7)
        cols = np.empty((n, 2), np.float64, order="F")
        for k in range(2):
            np.take(c[:, k], order, out=cols[:, k])
        self.tensor = Tensor(grid_point_levels(cols, None, n, cell, edges), name="points",
                             validate=False)
        self._reset()
        self.build_seconds = time.perf_counter() - t0

    def _reset(self):
        """Compiled kernels, argument blocks, native entries: per process, built on first use.
        `_local.calls`: this thread's single-query PackedCalls (Python path); `_entry_calls`: the
        native entries' own PackedCalls, which no Python path touches."""
        self.kernels, self._native, self._entry_calls = {}, {}, {}
        self._local, self._lock = threading.local(), threading.Lock()

    def __getstate__(self):
        state = dict(self.__dict__)
        for k in ("kernels", "_native", "_entry_calls", "_local", "_lock"):
            del state[k]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset()

    @property
    def nbytes(self) -> int:
        return self.tensor.nbytes + self.perm.nbytes

    # ------------------------------------------------------------------ single queries
    def _call(self, name, scalars=()):
        """This thread's packed call of a single-query kernel, with a query box it owns: each query
        rewrites the box's four endpoints (and the scalars) in place and reruns it.  One per thread:
        a block shared by threads would have one thread's box rewritten under another's kernel."""
        calls = getattr(self._local, "calls", None)
        if calls is None:
            calls = self._local.calls = {}
        call = calls.get(name)
        if call is None:
            call = calls[name] = self._new_call(name, scalars)
        return call

    def _new_call(self, name, scalars):
        """A new packed call of single-query kernel `name` (compiled once), with its own query box."""
        box = box_tensor(np.zeros((1, 2)), np.zeros((1, 2)), batched=False)
        args = dict(B=box, P=self.tensor, **{s: 0.0 for s in scalars})
        k = compiled(self.kernels, name, EINSUMS[name], args, out=SparseList(Pattern(), shape=self.n))
        call = k.pack(**args)
        xl, yl = box.levels()[0], box.levels()[1]
        call.box = (xl.left, xl.right, yl.left, yl.right)
        return call

    def _run(self, call, x0, y0, x1, y1, sort):
        box = call.box
        box[0][0], box[1][0], box[2][0], box[3][0] = x0, x1, y0, y1
        call.run()
        nnz = int(call.buffer(0, "ptr", 2, np.int64)[1])
        return self._sorted(self.perm.take(call.buffer(0, "idx", nnz, np.int64)).astype(np.int64), sort)

    def box(self, lo, hi, sort: bool = True) -> np.ndarray:
        """Ids of the points in the closed box [lo[0], hi[0]] × [lo[1], hi[1]], int64, sorted (or in
        the grid's layout order with sort=False, as Shapely returns tree order).  Raises FormatError
        (not two numbers, NaN, lo > hi)."""
        fn = self._native.get("box")
        if fn is None:
            fn = self._native_entry("box")
        if fn:
            try:
                x0, y0 = lo
                x1, y1 = hi
            except (TypeError, ValueError):
                pass
            else:
                ids = fn(x0, y0, x1, y1)
                if ids is not None:
                    return self._sorted(ids, sort)
                lo, hi = replay(lo, (x0, y0)), replay(hi, (x1, y1))
        x0, y0 = pair_arg(lo, "lo")
        x1, y1 = pair_arg(hi, "hi")
        if not (x0 <= x1 and y0 <= y1):
            k = 0 if not x0 <= x1 else 1
            raise FormatError(f"lo[{k}] = {(x0, y0)[k]!r} is greater than hi[{k}] = {(x1, y1)[k]!r}")
        if self.n == 0:
            return np.zeros(0, np.int64)
        box = self._clip(x0, y0, x1, y1)
        return np.zeros(0, np.int64) if box is None else self._run(self._call("box"), *box, sort)

    def radius(self, center, r, sort: bool = True) -> np.ndarray:
        """Ids of the points at distance <= r from center (closed disk), int64, sorted unless
        sort=False.  Raises FormatError (center not two numbers or NaN, r not a finite number >= 0)."""
        fn = self._native.get("radius")
        if fn is None:
            fn = self._native_entry("radius")
        if fn:
            try:
                ox, oy = center
            except (TypeError, ValueError):
                pass
            else:
                ids = fn(ox, oy, r)
                if ids is not None:
                    return self._sorted(ids, sort)
                center = replay(center, (ox, oy))
        ox, oy = pair_arg(center, "center")
        r = radius_arg(r)
        if self.n == 0:
            return np.zeros(0, np.int64)
        call = self._call("radius", ("ox", "oy", "r"))
        call.set_scalar("ox", ox)
        call.set_scalar("oy", oy)
        call.set_scalar("r", r)
        box = self._clip(*_disk_box_scalar(ox, oy, r))
        return np.zeros(0, np.int64) if box is None else self._run(call, *box, sort)

    def _sorted(self, ids, sort):
        """int64 ids, sorted if asked (`sort_ids`)."""
        if sort is not True and sort is not False:       # identity tests: this is the hot path
            sort = as_flag(sort, "sort")
        return sort_ids(ids, self.n) if sort else ids

    def _native_entry(self, name):
        """The native entry of single-query kernel `name` (`runtime.pyentry`), built once: the
        validations of `_pair`, `_radius` and `box` as its checks (any failure -> None -> the Python
        path raises), `_disk_box_scalar` and `_clip` as its prologue, `perm` applied to its ids.
        False when unavailable (empty index, CTENSOR_NATIVE_ENTRY=0).  The entry gets a packed
        call of its own (`_entry_calls`), which no Python path shares; the entry keeps it to one
        thread at a time (`spatial_entry`: the GIL, or its busy flag for large queries)."""
        with self._lock:
            fn = self._native.get(name)
            return self._build_entry(name) if fn is None else fn

    def _build_entry(self, name):
        entry = None
        if self.n:
            radius = name == "radius"
            call = self._entry_calls[name] = self._new_call(name, ("ox", "oy", "r") if radius else ())
            entry = query_entry(call, radius, self.bounds, self.perm, self.n)
        fn = self._native[name] = False if entry is None else entry.fn
        return fn

    def _clip(self, x0, y0, x1, y1):
        """The box clamped to the points' bounding box (finite endpoints whatever the box's, the
        same points inside, lo <= hi kept: clamping is monotone), or None when the box misses it.
        Exact: a margin around the bounds would round away beyond 2**53 (nanosecond timestamps)."""
        ax, ay, bx, by = self.bounds     # conditional expressions: builtin min/max cost ~100 ns each
        if x0 > bx or x1 < ax or y0 > by or y1 < ay:
            return None
        x0 = ax if x0 < ax else x0
        x1 = bx if x1 > bx else x1
        y0 = ay if y0 < ay else y0
        y1 = by if y1 > by else y1
        return x0, y0, x1, y1


# sizes of `sort_ids`' strategies, measured on this machine (AMD EPYC, numpy 2.4: its int64 sort
# takes 0.8 µs for 256 ids but 12 µs for 1000, its int32 sort 6.7 µs, and 10,000 ids take 242 µs,
# 137 µs and 83 µs by int64 sort, int32 sort and the counting passes)
INT32_SORT_AT = 384
RADIX_SORT_AT = 4096


def sort_ids(ids, n):
    """Distinct int64 ids in [0, n) sorted: numpy's int64 sort for a few hundred, its int32 sort
    from INT32_SORT_AT (when n fits), and from RADIX_SORT_AT two stable counting passes over 16-bit
    digits (numpy's stable argsort of uint16 keys is a radix sort: O(k) each, against the O(k log k)
    of a comparison sort of 1e4-1e5 random ids, which costs about as much as Shapely's whole query).
    May sort `ids` in place."""
    k = len(ids)
    if k < INT32_SORT_AT or n > 2**31:
        ids.sort()
        return ids
    if k < RADIX_SORT_AT:
        small = ids.astype(np.int32)
        small.sort()
        return small.astype(np.int64)
    s = ids[np.argsort(ids.astype(np.uint16), kind="stable")]        # low 16 bits (the cast wraps)
    if n > 2**16:
        s = s[np.argsort((s >> 16).astype(np.uint16), kind="stable")]
    return s


def _grid_shape(n, span, cell_points):
    """Cells per axis: about n / cell_points cells, with the aspect ratio of the bounding box."""
    cells = max(1.0, n / max(float(cell_points), 1.0))
    w, h = max(float(span[0]), 1e-300), max(float(span[1]), 1e-300)
    ratio = w / h                        # inf for a long flat box (or an overflowed span), NaN if both are
    nx = math.sqrt(cells * ratio) if ratio == ratio else math.sqrt(cells)
    nx = int(min(max(round(min(nx, cells)), 1), cells))
    ny = int(max(round(cells / nx), 1))
    return (nx, ny)


def index(points, cell_points: int = CELL_POINTS) -> PointIndex:
    """Build the point index once (see `PointIndex`); pass it to the queries."""
    return points if isinstance(points, PointIndex) else PointIndex(points, cell_points)


def box_query(points, lo, hi, sort: bool = True, workers: int = 1) -> np.ndarray:
    """Points in the closed box lo..hi: ids for lo, hi of shape (2,) (sorted unless sort=False);
    (2, k) pairs (query index, point id) for (m, 2) arrays of boxes (Shapely's
    `STRtree.query(boxes)` convention), grouped by query in query order, ids sorted within a query
    unless sort=False (then in layout order, as Shapely's tree order).
    `workers` (batches): threads the boxes are split over, in contiguous chunks; the pairs are the
    same as with workers=1.  Dask arrays of boxes give a Dask array of the pairs, block by block
    (`ctensor.apps.spatial_dask`).  Raises TypeError for a `sort` that is not a bool, TypeError or
    ValueError for a bad `workers` (see the module docstring)."""
    sort = as_flag(sort, "sort")
    check_workers(workers)
    idx = index(points)
    if is_dask_array(lo) or is_dask_array(hi):
        from .spatial_dask import box_many
        return box_many(idx, lo, hi, workers, sort)
    if np.ndim(lo) == 2 or np.ndim(hi) == 2:
        return idx.box_many(lo, hi, workers, sort)
    return idx.box(lo, hi, sort)


def radius_query(points, center, r, sort: bool = True, workers: int = 1) -> np.ndarray:
    """Points at distance <= r of center: ids for one centre (2,) (sorted unless sort=False); (2, k)
    pairs (query index, point id) for (m, 2) centres, with r a number or one radius per centre,
    ids sorted within each query unless sort=False (as `box_query`).  `workers` (batches): threads
    the centres are split over, in contiguous chunks; the pairs are the same as with workers=1.
    Dask arrays of centres (or radii) give a Dask array of the pairs (`ctensor.apps.spatial_dask`).
    Raises TypeError for a non-bool `sort`, TypeError or ValueError for a bad `workers`."""
    sort = as_flag(sort, "sort")
    check_workers(workers)
    idx = index(points)
    if is_dask_array(center) or is_dask_array(r):
        from .spatial_dask import radius_many
        return radius_many(idx, center, r, workers, sort)
    if np.ndim(center) == 2:
        return idx.radius_many(center, r, workers, sort)
    return idx.radius(center, r, sort)
