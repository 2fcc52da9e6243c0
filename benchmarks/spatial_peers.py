"""Peers' glue and the numba reference grid of bench_spatial.py: answers of Shapely, cKDTree and
pykdtree turned into ctensor's contracts (sorted ids; (2, k) pairs grouped by query, sorted or not),
by the fastest numpy conversion found, and a uniform grid in numba (a reference, not a peer)."""
from __future__ import annotations

import itertools

import numpy as np
from numba import njit

from ctensor.apps.spatial import sort_ids

try:
    from threadpoolctl import threadpool_limits
except ImportError:          # the `bench` extra installs it with pykdtree
    threadpool_limits = None


def sorted_ids(ids, n):
    """A peer's ids (of n points) sorted by the function ctensor's default path sorts its own with
    (`spatial.sort_ids`: counting passes from 4096 ids): the peer pays no more for the sort than
    ctensor does, so the ratio is that of the queries."""
    return sort_ids(np.asarray(ids, np.int64), n)          # a fresh answer: sorted in place


def sorted_pairs(p):
    """(2, k) pairs grouped by query sorted by (query, id), as ctensor's batches sort them (one
    int64 key, timsort: q is already sorted)."""
    n = int(p[1].max()) + 1 if p.shape[1] else 1
    key = p[0].astype(np.int64) * n + p[1]
    key.sort(kind="stable")
    return np.stack(np.divmod(key, n))


def ball_pairs(lists) -> np.ndarray:
    """cKDTree.query_ball_point's per-query id lists as int64 (2, k) pairs (query, id), in the
    lists' order (the conversion is part of what a user of cKDTree pays for pairs)."""
    counts = np.fromiter(map(len, lists), np.int64, len(lists))
    ids = np.fromiter(itertools.chain.from_iterable(lists), np.int64, int(counts.sum()))
    return np.stack([np.repeat(np.arange(len(lists), dtype=np.int64), counts), ids])


def knn_pairs(tree, n, c, r, k, threads):
    """pykdtree's k nearest within r of each centre as (2, k) pairs (query, id) in distance order;
    threads=1 limits its OpenMP pool to one thread."""
    if threads == 1:          # threadpoolctl comes with the bench extra, as pykdtree
        with threadpool_limits(limits=1, user_api="openmp"):
            _, idx = tree.query(c, k=k, distance_upper_bound=r)
    else:
        _, idx = tree.query(c, k=k, distance_upper_bound=r)
    idx = idx.reshape(len(c), -1)
    q, j = np.nonzero(idx < n)
    return np.stack([q, idx[q, j].astype(np.int64)])


# ---------------------------------------------------------------- numba reference: a uniform grid
@njit(cache=False)
def _grid_build(xy, nc):
    lo0, lo1 = xy[:, 0].min(), xy[:, 1].min()
    w0 = (xy[:, 0].max() - lo0) / nc * (1 + 1e-12)
    w1 = (xy[:, 1].max() - lo1) / nc * (1 + 1e-12)
    cell = np.empty(xy.shape[0], np.int64)
    for i in range(xy.shape[0]):
        cell[i] = min(int((xy[i, 0] - lo0) / w0), nc - 1) * nc + min(int((xy[i, 1] - lo1) / w1), nc - 1)
    order = np.argsort(cell)
    start = np.zeros(nc * nc + 1, np.int64)
    for i in range(xy.shape[0]):
        start[cell[i] + 1] += 1
    for k in range(nc * nc):
        start[k + 1] += start[k]
    return order, start, xy[order], np.array([lo0, lo1, w0, w1])


@njit(cache=False)
def _grid_query(order, start, sxy, geo, nc, x0, y0, x1, y1, cx, cy, r2, disk):
    out = np.empty(64, np.int64)
    k = 0
    a0 = max(int((x0 - geo[0]) / geo[2]), 0)
    a1 = min(int((x1 - geo[0]) / geo[2]), nc - 1)
    b0 = max(int((y0 - geo[1]) / geo[3]), 0)
    b1 = min(int((y1 - geo[1]) / geo[3]), nc - 1)
    for a in range(a0, a1 + 1):
        for c in range(b0, b1 + 1):
            for q in range(start[a * nc + c], start[a * nc + c + 1]):
                x, y = sxy[q, 0], sxy[q, 1]
                ok = x0 <= x <= x1 and y0 <= y <= y1
                if disk:
                    ok = ok and np.sqrt((x - cx) ** 2 + (y - cy) ** 2) <= r2
                if ok:
                    if k == out.shape[0]:
                        out = np.concatenate((out, np.empty(k, np.int64)))
                    out[k] = order[q]
                    k += 1
    return out[:k]


def grid_build(xy):
    """The numba grid of points xy (n, 2): about 8 points a cell."""
    nc = max(1, int(np.sqrt(len(xy) / 8)))
    return _grid_build(xy, nc) + (nc,)


def grid_box(g, lo, hi):
    order, start, sxy, geo, nc = g
    return _grid_query(order, start, sxy, geo, nc, lo[0], lo[1], hi[0], hi[1], 0.0, 0.0, 0.0, False)


def grid_radius(g, c, r):
    order, start, sxy, geo, nc = g
    return _grid_query(order, start, sxy, geo, nc, c[0] - r, c[1] - r, c[0] + r, c[1] + r, c[0], c[1], r, True)
