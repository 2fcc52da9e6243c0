"""`grid_order` (the order of a grid's points: cell, then coordinates, then row) against a lexsort
of all keys: the radix sort with the cell edges (`_radix_order`) and the comparison sort without,
on ties, repeated points, far outliers, cells too narrow for float64, and more than 2**15 cells."""
import numpy as np
import pytest

from ctensor.formats.grid_order import grid_order
from ctensor.formats.grid_edges import grid_cells, grid_edges


def lexsort_order(c, cell):
    return np.lexsort(tuple(c[:, j] for j in reversed(range(c.shape[1]))) + (cell,))


def cloud(rng, kind, n, d):
    if kind == "normal":
        return rng.standard_normal((n, d))
    if kind == "ties":                      # few distinct values: many equal x0, equal points
        return rng.integers(0, 4, (n, d)).astype(np.float64)
    if kind == "outlier":                   # one far point: end cells much wider than the rest
        return np.vstack([rng.standard_normal((n, d)), np.full((1, d), 1e6)])
    if kind == "tiny":                      # cells too narrow for the rank scale (2**15 / width = inf)
        return rng.standard_normal((n, d)) * 1e-305
    return np.vstack([rng.standard_normal((n, d)), np.full((1, d), 1e300), np.full((1, d), -1e300)])


@pytest.fixture(params=["packed", "passes"])
def radix(request, monkeypatch, sorter):
    """`_radix_order`'s two ways: (cell, rank, row) packed into int64 values and sorted (by numpy
    or polars: `sorter`), or the int16 radix passes (forced here, used when the keys need more
    than 63 bits)."""
    from ctensor.formats import grid_order as module
    if request.param == "passes":
        monkeypatch.setattr(module, "PACKED_BITS", 0)
    return request.param


@pytest.mark.parametrize("kind", ["normal", "ties", "outlier", "tiny", "huge"])
def test_grid_order_equals_lexsort(kind, radix):
    rng = np.random.default_rng(len(kind))
    for t in range(300):
        n, d = int(rng.integers(1, 200)), int(rng.integers(1, 4))
        c = cloud(rng, kind, n, d)
        if t % 3 == 0:
            c = np.asfortranarray(c)
        grid = tuple(int(m) for m in rng.integers(1, 30, int(rng.integers(1, d + 1))))
        edges = grid_edges(c, grid)
        cell = grid_cells(c, edges)
        want = lexsort_order(c, cell)
        assert np.array_equal(grid_order(c, cell, edges), want), (kind, t, grid)
        assert np.array_equal(grid_order(c, cell), want), (kind, t, grid)
        order, cells = grid_order(c, cell, edges, with_cells=True)
        assert np.array_equal(order, want) and np.array_equal(cells, cell[want]), (kind, t, grid)


def test_grid_order_many_cells(radix):
    """Cell numbers of more than one 15-bit digit: two radix passes over the cell."""
    rng = np.random.default_rng(7)
    c = rng.standard_normal((50_000, 3))
    c[::97] = c[1::97]                      # repeated points: their rows stay in row order
    edges = grid_edges(c, (40, 40, 30))
    cell = grid_cells(c, edges)
    assert cell.max() >= 2**15
    assert np.array_equal(grid_order(c, cell, edges), lexsort_order(c, cell))
