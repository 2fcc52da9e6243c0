"""Grids over points with far outliers (`ctensor.formats.grid_edges`): the cells are uniform over
the bulk of each axis and the outliers go into an end cell on their side, so the index does not
collapse into one cell; answers checked against numpy and the plain (grid-less) points."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
import ctensor.apps.spatial as sp
from ctensor.formats.grid_edges import axis_edges, bulk_range, grid_cells, grid_edges
from ctensor.formats.uniform_grid import uniform_edges

from .test_grid import BOX, inside

FAR = st.sampled_from([1e6, -1e6, 1e12, -3e9, 0.0, 5e5])


@st.composite
def points_with_outliers(draw):
    """64..160 points on a 0..40 integer lattice shifted by `base`, plus 0..3 far points."""
    n = draw(st.integers(64, 160))
    base = draw(st.sampled_from([0.0, 1000.0, -1e4]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    c = base + rng.integers(0, 41, size=(n, 2)).astype(float)
    far = draw(st.lists(st.tuples(FAR, FAR), max_size=3))
    return np.vstack([c] + [np.array(far, float).reshape(-1, 2)]), base


@settings(deadline=None)
@given(points_with_outliers(), st.one_of(st.integers(3, 9), st.tuples(st.integers(1, 9), st.integers(1, 9))),
       st.integers(-2, 42), st.integers(-2, 42), st.integers(0, 45), st.integers(0, 45), st.booleans())
def test_box_queries_over_outliers_match_numpy(pc, grid, x0, y0, w, h, huge):
    c, base = pc
    lo = np.array([base + x0, base + y0]) - (1e13 if huge else 0.0)
    hi = np.array([base + x0 + w, base + y0 + h]) + (1e13 if huge else 0.0)
    want = np.flatnonzero(inside(c, lo, hi, "both"))
    B = ct.box(lo, hi, closed="both")
    for P in (ct.points(c, grid=grid), ct.points(c)):
        got = ct.einsum(BOX, B=B, P=P).to_numpy()
        assert np.flatnonzero(got).tolist() == want.tolist()
    idx = sp.index(c, cell_points=4)
    assert idx.box(lo, hi).tolist() == want.tolist()
    assert idx.box_many(lo[None], hi[None])[1].tolist() == want.tolist()
    ctr = np.array([base + x0, base + y0])
    d = np.sqrt(((c - ctr) ** 2).sum(1))
    assert idx.radius(ctr, float(w)).tolist() == np.flatnonzero(d <= w).tolist()


def test_uniform_data_keeps_the_uniform_edges():
    v = np.random.default_rng(0).uniform(0, 100, 10_000)
    assert np.array_equal(axis_edges(v, 50), uniform_edges(v.min(), v.max(), 50))
    assert bulk_range(v[:10]) == (v[:10].min(), v[:10].max())     # too few values to trim


@pytest.mark.parametrize("far", [[1e7], [-1e9], [1e7, -1e7], [0.0] * 100])
def test_far_points_go_into_end_cells(far):
    """One far point put every other point into one cell of a 250-cell axis; now the bulk keeps
    (almost) all the cells.  (The null-island case: 1% of the rows at 0, the bulk at 1e5.)"""
    rng = np.random.default_rng(1)
    bulk = rng.uniform(1e5, 1e5 + 1e4, 10_000) if far[0] == 0.0 else rng.uniform(0, 1e4, 10_000)
    v = np.concatenate([bulk, far])
    e = axis_edges(v, 250)
    assert len(e) == 251 and (np.diff(e) > 0).all() and e[0] == v.min() and e[-1] > v.max()
    counts = np.bincount(grid_cells(v[:, None], [e]), minlength=250)
    assert counts.max() <= 3 * len(v) / 250, counts.max()           # was len(v): one cell held them all
    used = np.unique(grid_cells(bulk[:, None], [e]))
    assert (e[used + 1] - e[used] < 1e4 / 200).all()               # the bulk's cells are narrow


def test_cell_counts_of_one_and_two_ignore_outliers():
    """Fewer than 3 cells have no interior: uniform edges over [min, max], every point placed."""
    v = np.concatenate([np.random.default_rng(2).uniform(0, 1, 500), [1e9]])
    for m in (1, 2):
        e = axis_edges(v, m)
        assert np.array_equal(e, uniform_edges(v.min(), v.max(), m))
        cell = grid_cells(v[:, None], [e])
        assert ((e[cell] <= v) & (v < e[cell + 1])).all()


def test_spatial_index_over_outliers_matches_shapely():
    shapely = pytest.importorskip("shapely")
    rng = np.random.default_rng(3)
    c = np.vstack([rng.uniform(0, 1e4, size=(50_000, 2)), [[1e8, 1e8], [-1e8, 3.0], [0.0, -5e7]]])
    idx = sp.index(c)
    cells = np.bincount(grid_cells(c, [l.edges for l in idx.tensor.levels()[:2]]))
    assert cells.max() < 100                                   # the bulk has its own cells
    tree = shapely.STRtree(shapely.points(c))
    for lo, hi in [((4000, 4950), (6000, 5050)), ((-2e8, -2e8), (2e8, 2e8)), ((9990, 0), (2e8, 1e4))]:
        want = np.sort(tree.query(shapely.box(*lo, *hi)))
        assert idx.box(lo, hi).tolist() == want.tolist()


def test_grid_edges_are_what_points_store():
    c = np.array([[0.0, 0.0]] * 70 + [[float(i), float(i % 7)] for i in range(1, 70)] + [[1e9, -1e9]])
    P = ct.points(c, grid=(6, 4))
    stored = [l.edges for l in P.levels()[:2]]
    for s, e in zip(stored, grid_edges(c, (6, 4))):
        assert np.array_equal(s, e)


@settings(deadline=None)
@given(points_with_outliers(), st.sampled_from([2, 3, 7, (2,), (5, 4)]), st.sampled_from([0.0, 1.0, 2.5]),
       st.sampled_from(["A[x] * P[x, y, id]", "(A[x] + 1) * P[x, y, id]", "A[y] * P[x, y, id]"]),
       st.integers(-5, 40), st.integers(0, 30))
def test_grid_reads_beside_a_track_that_does_not_annihilate(pc, grid, fill, body, a, w):
    """A track whose fill is not 0 beside a gridded P makes the grid seek from inside a cell (the
    cell's own lower edge had overwritten the grid's interior edge in the seek: IRError)."""
    c, base = pc
    A = ct.intervals([base + a], [base + a + w], values=[3.0], fill=fill, closed="both")
    text = f"Out[id] = {body} * d(x, y; counting, counting)"
    want = ct.einsum(text, A=A, P=ct.points(c)).to_numpy()
    got = ct.einsum(text, A=A, P=ct.points(c, grid=grid)).to_numpy()
    np.testing.assert_array_equal(got, want)
