"""ctensor.apps.graphics (issue 29): trilinear interpolation on sparse voxel grids and volume
rendering, against a float64 numpy trilinear reference and a per-ray numpy compositing loop."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ctensor as ct
from ctensor.apps import graphics as g

from .test_mixed_index import trilinear


def reference(V, occ, pts):
    """float64 trilinear interpolation of the occupied voxels' values (others 0), per channel."""
    W = np.where(occ[..., None], V.astype(np.float64), 0.0)
    return np.stack([trilinear(W[..., c], pts) for c in range(V.shape[3])], 1)


def special_points(shape, rng, n=400):
    X, Y, Z = shape
    pts = rng.uniform(-1.5, np.array(shape) + 0.5, (n, 3))
    pts[:80] = rng.integers(0, min(shape), (80, 3))                  # voxel centres
    pts[80:160] = np.round(pts[80:160] * 2) / 2                      # faces, edges, corners
    pts[160:170] = [[-0.5, 0, 0], [X - 0.5, 1, 1], [X - 1, Y - 1, Z - 1], [-1, -1, -1], [X, Y, Z],
                    [1e9, 1, 1], [-1e300, 2, 2], [0.5, 0.5, 0.5], [X - 0.5, Y - 0.5, Z - 0.5], [2, -0.5, 3]]
    return pts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_matches_numpy_trilinear(dtype):
    rng = np.random.default_rng(11)
    shape = (9, 7, 8)
    V = np.where(rng.random(shape + (1,)) < 0.3, rng.uniform(-1, 1, shape + (5,)), 0.0).astype(dtype)
    grid = g.voxel_grid(V)
    occ = (V != 0).any(-1)
    assert (grid.shape, grid.channels, grid.dtype, grid.occupied) == (shape, 5, np.dtype(dtype), int(occ.sum()))
    pts = special_points(shape, rng)
    got = g.interpolate(grid, pts)
    assert got.shape == (len(pts), 5) and got.dtype == dtype       # computed in float64, rounded once
    np.testing.assert_allclose(got, reference(V, occ, pts), atol=1e-5 if dtype == np.float32 else 1e-12)


def test_occupied_mask_and_memory():
    """Only occupied voxels are stored (others read 0, whatever their values); memory is the int32
    index plus the occupied rows."""
    rng = np.random.default_rng(12)
    V = rng.uniform(0.1, 1, (6, 6, 6, 3)).astype(np.float32)
    occ = rng.random((6, 6, 6)) < 0.2
    grid = g.voxel_grid(V, occupied=occ)
    assert grid.nbytes == 6 ** 3 * 4 + int(occ.sum()) * 3 * 4
    pts = special_points((6, 6, 6), rng, 200)
    np.testing.assert_allclose(g.interpolate(grid, pts), reference(V, occ, pts), atol=1e-5)
    assert g.interpolate(grid, np.zeros((0, 3))).shape == (0, 3)


def test_chunks_and_remainder(monkeypatch):
    """Points run through one packed call in chunks (coordinates rewritten in place) plus one for
    the remainder: the same values as one chunk."""
    rng = np.random.default_rng(15)
    V = np.where(rng.random((7, 7, 7, 1)) < 0.5, rng.uniform(0, 1, (7, 7, 7, 3)), 0.0)
    grid = g.voxel_grid(V)
    pts = rng.uniform(-1, 8, (1003, 3))
    one = g.interpolate(grid, pts)
    monkeypatch.setattr(g, "_CHUNK_POINTS", 100)
    assert np.array_equal(g.interpolate(grid, pts), one)
    np.testing.assert_allclose(one, reference(V, (V != 0).any(-1), pts), atol=1e-12)


@pytest.mark.parametrize("layout", ["fortran", "transposed", "float32 fortran", "strided"])
def test_point_layouts(monkeypatch, layout):
    """Points whose columns are contiguous (Fortran order, a (3, M) array transposed) are read in
    place by the kernel (`PackedCall.set_input`), other layouts and dtypes converted: all give the
    C-order float64 result exactly, in chunks and with workers."""
    rng = np.random.default_rng(16)
    V = np.where(rng.random((7, 7, 7, 1)) < 0.5, rng.uniform(0, 1, (7, 7, 7, 3)), 0.0)
    grid = g.voxel_grid(V)
    pts = rng.uniform(-1, 8, (1003, 3))
    if layout == "float32 fortran":
        pts = pts.astype(np.float32)
    one = g.interpolate(grid, np.ascontiguousarray(pts, np.float64))
    other = {"fortran": lambda: np.asfortranarray(pts), "transposed": lambda: np.ascontiguousarray(pts.T).T,
             "float32 fortran": lambda: np.asfortranarray(pts),
             "strided": lambda: np.repeat(pts, 2, axis=0)[::2]}[layout]()
    monkeypatch.setattr(g, "_CHUNK_POINTS", 100)
    assert np.array_equal(g.interpolate(grid, other), one)
    assert np.array_equal(g.interpolate(grid, other, workers=2), one)


@pytest.mark.parametrize("order", ["C", "F"])
def test_nan_in_a_later_chunk_is_named(monkeypatch, order):
    """Points are checked for NaN/inf chunk by chunk as the kernel reads them: the first bad
    element is named with its row in the caller's array, also from a later chunk or worker."""
    grid = g.voxel_grid(np.ones((4, 4, 4, 2)))
    pts = np.asarray(np.random.default_rng(17).uniform(0, 3, (1003, 3)), order=order)
    pts[777, 1], pts[901, 0] = np.nan, np.inf
    monkeypatch.setattr(g, "_CHUNK_POINTS", 100)
    for workers in (1, 2):
        with pytest.raises(ct.FormatError, match=r"points\[777, 1\] = nan is not finite"):
            g.interpolate(grid, pts, workers=workers)
    pts[777, 1] = 0.0
    with pytest.raises(ct.FormatError, match=r"points\[901, 0\] = inf is not finite"):
        g.interpolate(grid, pts)


def test_workers_and_threads_give_identical_results():
    rng = np.random.default_rng(13)
    V = np.where(rng.random((10, 10, 10, 1)) < 0.4, rng.uniform(0, 1, (10, 10, 10, 2)), 0.0)
    grid = g.voxel_grid(V)
    pts = rng.uniform(-1, 11, (9000, 3))
    one = g.interpolate(grid, pts)
    assert np.array_equal(one, g.interpolate(grid, pts, workers=2))
    assert np.array_equal(one, g.interpolate(grid, pts, workers=-1))
    with ThreadPoolExecutor(4) as ex:
        outs = list(ex.map(lambda k: g.interpolate(grid, pts[k::4]), range(4)))
    for k in range(4):
        assert np.array_equal(outs[k], one[k::4])


def test_sample_rays():
    o = np.array([[0.0, 0, 0], [1, 2, 3]])
    d = np.array([[1.0, 0, 0], [0, 0, 2]])
    pts, t = g.sample_rays(o, d, 1.0, [5.0, 3.0], 4)
    assert pts.shape == (2, 4, 3) and t.shape == (2, 4)
    np.testing.assert_allclose(t, [[1.5, 2.5, 3.5, 4.5], [1.25, 1.75, 2.25, 2.75]])
    np.testing.assert_allclose(pts[1, 0], [1, 2, 3 + 2 * 1.25])


def composite_loop(feat, delta, density, colour, background):
    """Per-ray front-to-back compositing, written independently of graphics_render."""
    out = np.zeros((feat.shape[0], len(colour)))
    for r in range(feat.shape[0]):
        trans = 1.0
        for k in range(feat.shape[1]):
            a = 1.0 - np.exp(-max(feat[r, k, density], 0.0) * delta[r])
            out[r] += trans * a * feat[r, k, colour]
            trans *= 1.0 - a
        out[r] += trans * np.asarray(background)
    return out


def test_render_matches_compositing_reference():
    rng = np.random.default_rng(14)
    V = np.where(rng.random((12, 12, 12, 1)) < 0.3, rng.uniform(0, 1, (12, 12, 12, 4)), 0.0).astype(np.float32)
    V[..., 0] *= 3.0                                   # density channel
    grid = g.voxel_grid(V)
    o = np.tile([-4.0, 5.5, 6.0], (20, 1)) + rng.normal(0, 0.5, (20, 3))
    d = np.column_stack([np.ones(20), rng.normal(0, 0.3, (20, 2))]) * 1.5
    near, far, S = 1.0, 12.0, 40
    img = g.render(grid, o, d, near, far, S, background=[1.0, 0.5, 0.0])
    pts, _ = g.sample_rays(o, d, near, far, S)
    feat = reference(V, (V != 0).any(-1), pts.reshape(-1, 3)).reshape(20, S, 4)
    delta = (far - near) / S * np.linalg.norm(d, axis=1)
    want = composite_loop(feat, delta, 0, [1, 2, 3], [1.0, 0.5, 0.0])
    np.testing.assert_allclose(img, want, atol=1e-5)
    assert np.array_equal(img, g.render(grid, o, d, near, far, S, background=[1.0, 0.5, 0.0], workers=2))
    assert (img[:, 2] > 0).any()        # rays hit the occupied voxels


def test_bad_input():
    V = np.zeros((3, 3, 3, 2), np.float32)
    V[1, 1, 1] = 1
    grid = g.voxel_grid(V)
    with pytest.raises(ct.FormatError, match=r"points\[1, 2\] = nan is not finite"):
        g.interpolate(grid, [[0, 0, 0], [1, 1, np.nan]])
    with pytest.raises(ct.FormatError, match=r"points\[0, 0\] = inf"):
        g.interpolate(grid, [[np.inf, 0, 0]])
    with pytest.raises(ct.FormatError, match=r"points\[0, 2\] = inf"):
        g.interpolate(grid, [[1.0, 1.0, np.inf], [0, -np.inf, 0]])
    # finite points whose sum overflows (the finiteness check's first pass) are accepted
    assert not g.interpolate(grid, [[1e308, 1e308, 1e308], [-1e308, -1e308, 1.0]]).any()
    with pytest.raises(ct.FormatError, match=r"points: expected shape \(n, 3\), got \(4,\)"):
        g.interpolate(grid, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError, match="points: expected a real numeric array, got dtype <U1"):
        g.interpolate(grid, [["a", "b", "c"]])
    with pytest.raises(TypeError, match="grid: expected a VoxelGrid"):
        g.interpolate(V, [[0.0, 0, 0]])
    with pytest.raises(TypeError, match="workers"):
        g.interpolate(grid, [[0.0, 0, 0]], workers=1.5)
    with pytest.raises(TypeError, match="values: expected float32 or float64, got dtype int64"):
        g.voxel_grid(np.zeros((2, 2, 2, 1), np.int64))
    with pytest.raises(TypeError, match="values: expected a numpy array"):
        g.voxel_grid([[[[1.0]]]])
    with pytest.raises(ct.FormatError, match=r"values: expected shape \(X, Y, Z, C\), got \(2, 2, 2\)"):
        g.voxel_grid(np.zeros((2, 2, 2)))
    W = V.copy()
    W[2, 0, 1, 1] = np.nan
    with pytest.raises(ct.FormatError, match=r"values\[2, 0, 1, 1\] = nan is not finite"):
        g.voxel_grid(W)
    with pytest.raises(ct.FormatError, match=r"occupied: expected shape \(3, 3, 3\)"):
        g.voxel_grid(V, occupied=np.ones((3, 3), bool))
    with pytest.raises(TypeError, match="occupied: expected a bool array"):
        g.voxel_grid(V, occupied=np.ones((3, 3, 3)))
    o, d = np.zeros((2, 3)), np.ones((2, 3))
    with pytest.raises(ct.FormatError, match=r"far\[1\] = 0.5 is below near\[1\] = 1.0"):
        g.sample_rays(o, d, 1.0, [2.0, 0.5], 4)
    with pytest.raises(ct.FormatError, match=r"directions: expected shape \(2, 3\)"):
        g.sample_rays(o, np.ones((3, 3)), 0.0, 1.0, 4)
    with pytest.raises(ct.FormatError, match=r"origins\[0, 1\] = nan"):
        g.sample_rays([[0, np.nan, 0]], [[1, 0, 0]], 0.0, 1.0, 4)
    with pytest.raises(TypeError, match="n_samples"):
        g.sample_rays(o, d, 0.0, 1.0, 4.0)
    with pytest.raises(ValueError, match="n_samples"):
        g.sample_rays(o, d, 0.0, 1.0, 0)
    with pytest.raises(ValueError, match=r"colour\[1\]: channel 2 is not in 0 .. 1"):
        g.render(grid, o, d, 0.0, 1.0, 4, density=0, colour=(1, 2))
    with pytest.raises(TypeError, match="density"):
        g.render(grid, o, d, 0.0, 1.0, 4, density="0", colour=(1,))
    with pytest.raises(ct.FormatError, match="background"):
        g.render(grid, o, d, 0.0, 1.0, 4, colour=(1,), background=[0.0, 1.0])
