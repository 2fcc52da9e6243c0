"""Point-cloud convolution (KPConv) and radius neighbours in 3-D, each one compiled einsum (`EINSUMS`).

Source: the continuous tensor paper §7.4, Fig. 26-27 (KPConv, Thomas et al. 2019: rigid kernel,
linear influence, sum aggregation).  The points are the pinpoint tensor `P[a, b, e, j]` under a
uniform grid (`ct.points(..., grid=...)` levels: `UniformGrid` over x, y, z, then each cell's
points), the queries `Q[i, x, y, z]` (one row per query), and for every query the compiled code
visits only the grid cells the ball's bounding box `Ball[r, s, u]` overlaps, tests the
closed ball `|p - q|² <= radius²`, and, for `kpconv`, weighs each neighbour's features by every
kernel point k in reach (the index expression `sqrt(...)` evaluated on the pinpoints p, q, v of
`KP[k, r + p, ...]`, paper Fig. 26(b)).  The paper's einsum, in 3-D, with the kernel points KP
stored by point k and their weights W[k, c, m] as a factor of their own:

    kpconv:  Out[i, m] = Q[i, x, y, z] * P[x + r, y + s, z + u, j] * Ball[r, s, u] * (r*r + s*s + u*u <= R2)
                         * F[j, c] * KP[k, r + p, s + q, u + v] * max(0, 1 - sqrt(p*p + q*q + v*v) / sigma)
                         * W[k, c, m] * d(x, y, z, r, s, u, j, c, p, q, v, k; counting, ...)

`Ball[r, s, u] * (r*r + ... <= R2)` is the paper's Circle1 (a box the grid can prune by, and the
exact test).  `kpconv` runs this einsum with the influence written `max(0, sigma - sqrt(...)) *
inv_sigma` (`EINSUMS["kpconv_scaled"]`: the same value, no division per kernel point).  The
compiler reads the grid-binned P at the neighbour's coordinate rather than at an offset
(`ctensor.driver.grid_offsets`: r -> a - x, the same sum).  The trailing dense factor `W[k, c, m]` is a
channel contraction the compiler hands to BLAS (`ctensor.driver.dense_split`): the compiled kernel
builds `A[i, k, c]` (the weighted neighbour features), numpy's matrix product does
`A.reshape(n, K*C_in) @ W.reshape(K*C_in, C_out)`.  Queries run in blocks of rows so that A stays
small (`BLOCK_VALUES`).

Units: the coordinates, `radius` and `sigma` in one unit of length (any); kernel points are offsets
from the query in that unit.  Closedness: a point at distance exactly `radius` is a neighbour
(closed ball, distance compared squared: `dx*dx + dy*dy + dz*dz <= radius*radius` in float64, as
scipy's cKDTree does); a kernel point at distance exactly `sigma` has influence 0.
Errors: FormatError (wrong shapes, NaN/inf coordinates or values, negative/NaN radius or sigma,
sigma = 0, rows of features not matching points), TypeError (non-numeric arrays or scalars, a bad
`workers`), each naming the argument and its first offending element.
Threads: calls may run in many threads at once (kernels are compiled once under a lock and hold no
buffers between calls); `workers=` splits the queries into contiguous chunks run on threads, with
results identical to `workers=1`.  Each chunk's dense contraction runs in numpy's BLAS, which
starts threads of its own by default (OpenBLAS: one per core): with `workers` > 1, limit BLAS to
one thread (`OPENBLAS_NUM_THREADS=1` before numpy is imported, or threadpoolctl), else the
chunks' BLAS threads compete for the same cores (40k points at C = 32 on 2 cores: workers=2 is
1.8x faster than workers=1 with one BLAS thread, 1.1x with OpenBLAS's default).
"""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

from ..formats.constructors import grid_point_levels
from ..formats.grid_order import grid_order
from ..formats.dense import Dense
from ..formats.element import Element, Pattern
from ..formats.grid_edges import grid_cells, grid_edges, interior
from ..formats.sparse_interval import SparseInterval
from ..formats.sparse_list import SparseList
from ..formats.sparse_point import SparsePoint
from ..formats.tensor import Tensor
from ..driver.dense_split import dense_array
from .pointcloud_input import coords_arg, layer_args, length_arg
from .workers import check_workers, chunks, compiled, map_chunks

__all__ = ["EINSUMS", "ORDERS", "CloudIndex", "index", "kpconv", "radius_neighbors"]

_BALL = ("Q[i, x, y, z] * P[x + r, y + s, z + u, j] * Ball[r, s, u] * (r*r + s*s + u*u <= R2)")
EINSUMS = {
    "kpconv": "Out[i, m] = " + _BALL + " * F[j, c] * KP[k, r + p, s + q, u + v]"
              " * max(0, 1 - sqrt(p*p + q*q + v*v) / sigma) * W[k, c, m]"
              " * d(x, y, z, r, s, u, j, c, p, q, v, k; " + ", ".join(["counting"] * 12) + ")",
    "neighbors": "Out[i, j] = " + _BALL + " * d(x, y, z, r, s, u; " + ", ".join(["counting"] * 6) + ")",
}
# what `kpconv` runs: the paper's influence max(0, 1 - d / sigma) as max(0, sigma - d) * inv_sigma,
# equal for sigma > 0 (exactly 0 at d = sigma, as before), without a division per (neighbour,
# kernel point): the strided layer's kernel 2-5% faster at C = 8-32.  The paper's form runs when
# 1 / sigma overflows (sigma < 1 / DBL_MAX: 0 * inf would be NaN)
EINSUMS["kpconv_scaled"] = EINSUMS["kpconv"].replace("max(0, 1 - sqrt(p*p + q*q + v*v) / sigma)",
                                                     "max(0, sigma - sqrt(p*p + q*q + v*v)) * inv_sigma")
# queries outermost (one output row at a time), then the neighbour, then the kernel points; the
# channel loop innermost (contiguous in F and in the output)
ORDERS = {
    "kpconv": ("i", "x", "y", "z", "r", "s", "u", "j", "k", "p", "q", "v", "c", "m"),
    "kpconv_scaled": ("i", "x", "y", "z", "r", "s", "u", "j", "k", "p", "q", "v", "c", "m"),
    "neighbors": ("i", "x", "y", "z", "r", "s", "u", "j"),
}

CELL_RADII = 1.0        # grid cell side in radii (a query's box then overlaps 2-3 cells per axis)
# rows of queries per kernel call: A[rows, K, C_in] holds about BLOCK_VALUES values (4 MB: the rows the
# kernel wrote are still in cache when BLAS reads them), and at least MIN_ROWS rows (BLAS's products
# lose speed on fewer).  Against 16 MB blocks of 64+ rows: strided and full layers at C = 32-128
# 5-8% faster, full C = 64 16%, C = 256 and C <= 16 equal (interleaved, load ~5)
BLOCK_VALUES = 1 << 19
MIN_ROWS = 512
_KERNELS: dict = {}     # name -> Kernel (compiled once per format; `workers.compiled` locks)
_LOCK = threading.Lock()


class CloudIndex:
    """Points under a uniform grid of cells about `radius` wide, built once (`index`), usable by
    every `kpconv` / `radius_neighbors` call on these points, at any radius (the cell size only
    changes the speed).  Attributes: `points` (N, 3) float64, `tensor` P[x, y, z, j] whose ids j
    are ranks in the grid layout, `perm[rank]` the row of the point in `points`, `n`."""

    def __init__(self, pts: np.ndarray, radius: float):
        self.points = pts
        n = len(pts)
        # the per-axis work (extent, edges, cells, the sort by x) reads columns: a Fortran-ordered
        # copy makes each contiguous (an axis reduction of the (n, 3) rows is 30x slower)
        cols = np.asfortranarray(pts)
        span = cols.max(0) - cols.min(0) if n else np.ones(3)
        cell = max(radius * CELL_RADII, 1e-300)
        counts = lambda w: [int(min(max(1, s / w), max(1, n))) if math.isfinite(s / w) else 1 for s in span]
        shape = counts(cell)
        # never more cells than points: widen the cells by the cube root of the excess (then 5% at a
        # time for the rounding), which keeps them as close to `cell` as the cap allows (halving
        # every axis overshot up to 8x: the strided layer's kernel ~2-5% slower with those cells)
        grow = (np.prod(shape, dtype=np.float64) / max(n, 1)) ** (1 / 3)
        while np.prod(shape, dtype=np.float64) > max(n, 1):
            cell *= max(grow, 1.05)
            grow = 1.0
            shape = counts(cell)
        self.edges = grid_edges(cols, tuple(shape)) if n else [np.array([0.0, 1.0])] * 3
        cells = grid_cells(cols, self.edges) if n else np.zeros(0, np.int64)
        order = grid_order(cols, cells, self.edges) if n else np.zeros(0, np.int64)
        self.perm = order
        # each column gathered by np.take into a Fortran-ordered array: the levels store columns,
        # which are then views, not copies.  Not validated again (`validate=False`): the
        # coordinates are finite (`coords_arg`), every point's cell was checked against the stored
        # edges by `grid_cells`, and the levels are built sorted by (cell, x, y, z, rank) -- the
        # checks `UniformGrid.validate` would redo (0.33 ms of a 0.8 ms build at 10k points)
        sorted_cols = np.empty((n, 3), np.float64, order="F")
        for k in range(3):
            np.take(cols[:, k], order, out=sorted_cols[:, k])
        self.tensor = Tensor(grid_point_levels(sorted_cols, None, n,
                                               np.take(cells, order), self.edges),
                             name="points", validate=False)
        self.n = n

    def query_order(self, q: np.ndarray) -> np.ndarray:
        """Queries sorted by grid cell (neighbouring queries read neighbouring points); queries
        outside the grid count in its end cells (`grid_cells` takes points inside it only).
        Queries that are the cloud's points (a full layer) are in cell order already: `perm`."""
        if q is self.points or (q.shape == self.points.shape and np.array_equal(q, self.points)):
            return self.perm
        # any order is correct: the cell estimate of the grid's seek (`interior`) is enough, and a
        # key below 2**15 sorts as int16 (numpy's radix sort: 2500 queries 0.15 -> 0.05 ms)
        cell = np.zeros(len(q), np.int64)
        for k, e in enumerate(self.edges):
            lo, scale, off = interior(e)
            m = len(e) - 1
            with np.errstate(over="ignore", invalid="ignore"):
                t = (q[:, k] - lo) * (scale if np.isfinite(scale) else 0.0) + off
            cell *= m
            cell += np.minimum(np.fmax(t, 0.0), m - 1).astype(np.int64)
        key = cell.astype(np.int16) if np.prod([len(e) - 1 for e in self.edges]) <= 2**15 else cell
        return np.argsort(key, kind="stable")


def index(points, radius) -> CloudIndex:
    """The grid index of `points` ((N, 3) float array) with cells about `radius` wide, for the calls
    that reuse one cloud (the layers of a KPConv network at one level); pass it as `points`.
    Raises FormatError / TypeError as `kpconv`."""
    return points if isinstance(points, CloudIndex) else CloudIndex(coords_arg(points, "points"),
                                                                     length_arg(radius, "radius"))


def _cloud(points, radius):
    """(coordinates, CloudIndex) of `points`, an index or an array (checked)."""
    if isinstance(points, CloudIndex):
        return points.points, points
    pts = coords_arg(points, "points")
    return pts, None


def _queries(q: np.ndarray) -> Tensor:
    """Q[i, x, y, z]: one pinpoint per row."""
    z = SparsePoint(Pattern(), np.ascontiguousarray(q[:, 2]))
    y = SparsePoint(z, np.ascontiguousarray(q[:, 1]))
    # the columns are copies made here (q is a strided (n, 3) array): owned, not copied again
    return Tensor(Dense(SparsePoint(y, np.ascontiguousarray(q[:, 0])), len(q)), name="queries", owned=True)


def _kernel_points(kps: np.ndarray) -> Tensor:
    """KP[k, p, q, v]: kernel point k at offset (p, q, v) from the query."""
    return _queries(kps)


@functools.lru_cache(maxsize=64)
def _ball(radius: float) -> Tensor:
    """The bounding box of the closed ball, a little wider (four ulps of the radius and 1e-12 of it)
    so that rounding in the offset never cuts off a point the exact distance test accepts.  One
    tensor per radius, shared (tensors are immutable; the layers of a network reuse a radius)."""
    h = radius * (1 + 1e-12)
    for _ in range(4):
        h = math.nextafter(h, math.inf)
    lo = SparseInterval(Pattern(), np.array([-h]), np.array([h]), "both")
    mid = SparseInterval(lo, np.array([-h]), np.array([h]), "both")
    return Tensor(SparseInterval(mid, np.array([-h]), np.array([h]), "both"), name="ball")


def _dense(a: np.ndarray, name: str) -> Tensor:
    """A Dense tensor over the values of `a`, not copied (`owned`): the callers pass the gathered
    features (made here) or the checked weights, which the call only reads; a Dense tensor has no
    structure a concurrent write could break (C = 256: a 20 MB copy of the features saved)."""
    level = Element(0.0, val=np.ascontiguousarray(a, np.float64).reshape(-1))
    for n in reversed(a.shape):
        level = Dense(level, n)
    return Tensor(level, name=name, owned=True)


def kpconv(points, features, kernel_points, weights, radius, sigma, queries=None, workers: int = 1) -> np.ndarray:
    """One KPConv layer (rigid kernel, linear influence, sum aggregation; paper §7.4, Fig. 26).

    out[i] = sum over points j with |p_j - q_i| <= radius, kernel points k:
                 max(0, 1 - |p_j - q_i - kp_k| / sigma) * features[j] @ weights[k]

    Parameters
    ----------
    points : (N, 3) float array — the cloud's coordinates — or its `index` (built once).
    features : (N, C_in) float array — one feature row per point.
    kernel_points : (K, 3) float array — kernel point offsets relative to the query.
    weights : (K, C_in, C_out) float array.
    radius : float >= 0 — neighbours are the points in the closed ball of this radius.
    sigma : float > 0 — kernel point influence distance.
    queries : (n_queries, 3) float array, or None for every point (`points`).
    workers : threads the queries are split over (a positive int, or -1 for every core).

    Returns (n_queries, C_out) ndarray, float32 when `features` and `weights` are both float32, else
    float64 (computed in float64 either way).  Errors: see the module docstring.
    """
    workers = check_workers(workers)
    pts, cloud = _cloud(points, radius)
    pts, feats, kps, w, r, s, q, dtype = layer_args(pts, features, kernel_points, weights, radius, sigma, queries,
                                                    points_checked=cloud is not None)
    nq, cout = len(q), w.shape[2]
    if nq == 0 or len(pts) == 0 or len(kps) == 0 or cout == 0 or feats.shape[1] == 0:
        return np.zeros((nq, cout), dtype)
    cloud = cloud or CloudIndex(pts, r)
    fixed = dict(P=cloud.tensor, Ball=_ball(r), F=_dense(np.take(feats, cloud.perm, axis=0), "features"),
                 KP=_kernel_points(kps), W=_dense(w, "weights"), R2=r * r, sigma=s)
    name = "kpconv_scaled" if math.isfinite(1.0 / s) else "kpconv"
    if name == "kpconv_scaled":
        fixed["inv_sigma"] = 1.0 / s
    order = cloud.query_order(q)
    qs = np.take(q, order, axis=0)
    rows = max(MIN_ROWS, BLOCK_VALUES // max(1, len(kps) * feats.shape[1]))
    rows = -(-nq // -(-nq // rows))                  # blocks of equal size
    done = np.empty((nq, cout), np.float64)          # row a: query order[a]

    def run(lo, hi):
        for a in range(lo, hi, rows):
            b = min(a + rows, hi)
            args = dict(fixed, Q=_queries(qs[a:b]))
            k = compiled(_KERNELS, name, EINSUMS[name], args, order=ORDERS[name])
            done[a:b] = dense_array(k(**args), "kpconv output")
        return None

    # chunks write disjoint rows of `done`: the result does not depend on the split
    map_chunks(run, nq, workers)
    # back to the callers' row order by a gather of the inverse permutation (np.take: 2500 rows of
    # 8 values 0.03 ms, the scatter out[order] = done 0.12 ms)
    inv = np.empty(nq, np.int64)
    inv[order] = np.arange(nq, dtype=np.int64)
    out = np.take(done, inv, axis=0)
    return out if dtype == np.float64 else out.astype(dtype)


def radius_neighbors(points, queries, radius, workers: int = 1):
    """The points within distance `radius` of each query (closed ball), as CSR pairs.

    Parameters
    ----------
    points : (N, 3) float array, or its `index`.  queries : (n_queries, 3) float array.  radius : float >= 0, in
    the coordinates' unit.  workers : threads the queries are split over.

    Returns (indptr, indices): indptr int64 (n_queries + 1,), indices int64 (indptr[-1],); the
    neighbours of query i are indices[indptr[i]:indptr[i + 1]], rows of `points`, sorted increasing.
    Distance compared squared in float64 (`dx*dx + dy*dy + dz*dz <= radius*radius`), as scipy's
    cKDTree.query_ball_point.  Errors: FormatError (shapes, NaN/inf, negative radius), TypeError.
    """
    workers = check_workers(workers)
    pts, cloud = _cloud(points, radius)
    q = coords_arg(queries, "queries")
    r = length_arg(radius, "radius")
    nq = len(q)
    if nq == 0 or len(pts) == 0:
        return np.zeros(nq + 1, np.int64), np.zeros(0, np.int64)
    cloud = cloud or CloudIndex(pts, r)
    fixed = dict(P=cloud.tensor, Ball=_ball(r), R2=r * r)
    # queries in grid-cell order (neighbouring queries read neighbouring points), as in kpconv
    order = cloud.query_order(q)
    qs = np.take(q, order, axis=0)

    def run(lo, hi):
        args = dict(fixed, Q=_queries(qs[lo:hi]))
        k = compiled(_KERNELS, "neighbors", EINSUMS["neighbors"], args, order=ORDERS["neighbors"],
                     semiring="or", out=Dense(SparseList(Pattern(), shape=cloud.n)))
        fibers = k(**args).levels()[1]
        counts = np.diff(fibers.ptr)[: hi - lo]
        ids = np.take(cloud.perm, fibers.idx[: int(fibers.ptr[hi - lo])])
        # sort each row's ids: one stable sort of the key row * n + id (rows already in order: runs)
        base = np.repeat(np.arange(hi - lo, dtype=np.int64) * cloud.n, counts)
        key = base + ids
        key.sort(kind="stable")
        key -= base
        return counts, key

    parts = map_chunks(run, nq, workers)
    counts_s = np.concatenate([p[0] for p in parts])             # row a: query order[a]
    ids_s = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    start_s = np.zeros(nq + 1, np.int64)
    np.cumsum(counts_s, out=start_s[1:])
    # back to the caller's row order: row i is sorted row inv[i]; its ids are one gather
    inv = np.empty(nq, np.int64)
    inv[order] = np.arange(nq, dtype=np.int64)
    counts = np.take(counts_s, inv)
    indptr = np.zeros(nq + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    at = np.repeat(np.take(start_s, inv) - indptr[:-1], counts)
    at += np.arange(len(at), dtype=np.int64)
    return indptr, np.take(ids_s, at)

