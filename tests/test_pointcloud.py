"""`ctensor.apps.pointcloud` (continuous paper §7.4): KPConv and radius neighbours against scipy's
cKDTree + numpy, with a neighbour exactly at the radius, queries that are not cloud points,
float32, workers, errors, and a point cloud sampled from a pyvista mesh."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

import ctensor as ct
import ctensor.apps.pointcloud as pc

RNG = np.random.default_rng(11)


def reference(points, features, kps, weights, radius, sigma, queries):
    """KPConv by cKDTree neighbours and numpy (the KPConv repository's math, one query at a time)."""
    out = np.zeros((len(queries), weights.shape[2]))
    for i, js in enumerate(cKDTree(points).query_ball_point(queries, radius)):
        js = np.asarray(js, int)
        if not len(js):
            continue
        d = points[js][:, None, :] - queries[i] - kps[None]            # (nj, K, 3)
        h = np.maximum(0.0, 1.0 - np.sqrt((d * d).sum(2)) / sigma)      # (nj, K)
        out[i] = np.einsum("jk,jc,kcm->m", h, features[js], weights)
    return out


def cloud(n=700, cin=6, cout=5, k=15):
    pts = RNG.uniform(0, 1, (n, 3))
    radius = 0.125
    kps = RNG.uniform(-radius / 2, radius / 2, (k, 3))
    return pts, RNG.standard_normal((n, cin)), kps, RNG.standard_normal((k, cin, cout)), radius, radius / 2


def relerr(got, want):
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-300)


def test_kpconv_matches_kdtree_reference():
    pts, f, kps, w, r, s = cloud()
    # a query off the cloud with a neighbour at exactly the radius (0.375 - 0.25 = 0.125, exact in
    # binary), and queries that are not cloud points
    pts[0] = [0.375, 0.5, 0.5]
    kps[0] = [r, 0.0, 0.0]          # a kernel point on the ball's surface, as KPConv's outer shell
    queries = np.vstack([[0.25, 0.5, 0.5], RNG.uniform(-0.1, 1.1, (60, 3))])
    assert 0 in cKDTree(pts).query_ball_point(queries[0], r)
    got = pc.kpconv(pts, f, kps, w, r, s, queries=queries)
    assert got.shape == (61, 5) and got.dtype == np.float64
    assert relerr(got, reference(pts, f, kps, w, r, s, queries)) <= 1e-6
    # the boundary neighbour counts: moving it just outside changes the answer
    far = pts.copy()
    far[0, 0] = np.nextafter(0.375, 1.0)
    alone = pc.kpconv(far, f, kps, w, r, s, queries=queries[:1])
    assert relerr(alone, reference(far, f, kps, w, r, s, queries[:1])) <= 1e-6
    assert not np.allclose(alone, got[:1])


def test_kpconv_every_point_float32_and_workers():
    pts, f, kps, w, r, s = cloud(n=400)
    want = reference(pts, f, kps, w, r, s, pts)
    got = pc.kpconv(pts, f, kps, w, r, s)
    assert relerr(got, want) <= 1e-6
    got32 = pc.kpconv(pts.astype(np.float32), f.astype(np.float32), kps, w.astype(np.float32), r, s)
    assert got32.dtype == np.float32
    want32 = reference(pts.astype(np.float32).astype(float), f.astype(np.float32).astype(float), kps,
                       w.astype(np.float32).astype(float), r, s, pts.astype(np.float32).astype(float))
    assert relerr(got32, want32) <= 1e-5
    # workers: enough queries for two chunks (workers.MIN_CHUNK rows each); the same bits
    q = RNG.uniform(0, 1, (8300, 3))
    assert np.array_equal(pc.kpconv(pts, f, kps, w, r, s, queries=q, workers=2),
                          pc.kpconv(pts, f, kps, w, r, s, queries=q, workers=1))


def test_influence_boundary_and_tiny_sigma():
    """The influence max(0, sigma - d) * (1 / sigma) that kpconv runs (`EINSUMS["kpconv_scaled"]`) is 0
    for a neighbour at exactly sigma from a kernel point and equals the paper's max(0, 1 - d / sigma)
    elsewhere; a sigma whose inverse overflows runs the paper's form (no 0 * inf)."""
    pts = np.array([[0.5, 0.5, 0.5], [0.625, 0.5, 0.5], [0.5, 0.5625, 0.5]])
    f = np.array([[1.0], [2.0], [4.0]])
    w = np.ones((1, 1, 1))
    kps = np.zeros((1, 3))
    q = pts[:1]
    # neighbours at 0.125 (exactly sigma: influence 0) and 0.0625 (influence 0.5), the query itself 1
    got = pc.kpconv(pts, f, kps, w, 0.25, 0.125, queries=q)
    assert got[0, 0] == 1.0 * 1.0 + 0.0 * 2.0 + 0.5 * 4.0
    assert relerr(got, reference(pts, f, kps, w, 0.25, 0.125, q)) <= 1e-15
    tiny = 5e-324                               # 1 / tiny overflows to inf
    assert not np.isfinite(1.0 / tiny)
    got = pc.kpconv(pts, f, kps, w, 0.25, tiny, queries=q)
    assert np.all(np.isfinite(got)) and got[0, 0] == 1.0       # only the query itself is in reach


def test_paper_einsum_in_3d():
    """The paper's KPConv einsum (§7.4, Fig. 26) in 3-D as written, In[x + r, ...] with offsets r,
    the nested kernel-point reduction and sqrt(...) on pinpoints, through ct.einsum on public
    formats: points under a grid (the compiler reads them at a = x + r, `driver.grid_offsets`),
    kernel points stored by point, W contracted by BLAS (`driver.dense_split`)."""
    pts, f, kps, w, r, s = cloud(n=300, cin=3, cout=2)
    q = RNG.uniform(0, 1, (25, 3))
    Q = ct.Tensor(ct.Dense(ct.SparsePoint(ct.SparsePoint(ct.SparsePoint(ct.Pattern(), q[:, 2].copy()),
                                                         q[:, 1].copy()), q[:, 0].copy()), len(q)))
    KP = ct.Tensor(ct.Dense(ct.SparsePoint(ct.SparsePoint(ct.SparsePoint(ct.Pattern(), kps[:, 2].copy()),
                                                          kps[:, 1].copy()), kps[:, 0].copy()), len(kps)))
    dense = lambda a: ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))) if a.ndim == 2 else
                                ct.Dense(ct.Dense(ct.Dense(ct.Element(0.0)))), a)
    args = dict(Q=Q, P=ct.points(pts, grid=4), Ball=ct.box([-r] * 3, [r] * 3), F=dense(f), KP=KP, W=dense(w),
                R2=r * r, sigma=s)
    k = ct.compile(pc.EINSUMS["kpconv"], order=pc.ORDERS["kpconv"], **args)
    assert "cell" in k.ir                      # tile loops over the grid's cells
    got = k(**args).to_numpy()
    assert relerr(got, reference(pts, f, kps, w, r, s, q)) <= 1e-12


def test_radius_neighbors_csr():
    pts = RNG.uniform(0, 1, (500, 3))
    pts[7] = [0.375, 0.5, 0.5]
    q = np.vstack([[0.25, 0.5, 0.5], RNG.uniform(-0.2, 1.2, (80, 3)), pts[:20]])
    indptr, indices = pc.radius_neighbors(pts, q, 0.125)
    assert indptr.dtype == np.int64 and indices.dtype == np.int64 and indptr.shape == (len(q) + 1,)
    assert indptr[0] == 0 and indptr[-1] == len(indices)
    for i, want in enumerate(cKDTree(pts).query_ball_point(q, 0.125)):
        assert indices[indptr[i]:indptr[i + 1]].tolist() == sorted(want)
    assert 7 in indices[:indptr[1]]
    big = RNG.uniform(0, 1, (8300, 3))
    a = pc.radius_neighbors(pts, big, 0.05, workers=2)
    b = pc.radius_neighbors(pts, big, 0.05)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    e = pc.radius_neighbors(pts, np.zeros((0, 3)), 0.1)
    assert e[0].tolist() == [0] and e[1].shape == (0,)


@pytest.mark.parametrize("change, error, words", [
    (lambda a: a.update(points=np.where(np.arange(3) == 1, np.nan, a["points"])), ct.FormatError, "points[0, 1]"),
    (lambda a: a.update(radius=-1.0), ct.FormatError, "radius"),
    (lambda a: a.update(sigma=-0.1), ct.FormatError, "sigma"),
    (lambda a: a.update(sigma=0.0), ct.FormatError, "sigma"),
    (lambda a: a.update(radius=float("nan")), ct.FormatError, "radius"),
    (lambda a: a.update(features=a["features"][:-1]), ct.FormatError, "features"),
    (lambda a: a.update(weights=a["weights"][:, :-1]), ct.FormatError, "weights"),
    (lambda a: a.update(kernel_points=a["kernel_points"][:, :2]), ct.FormatError, "kernel_points"),
    (lambda a: a.update(queries=np.array([[0.0, 0.0, np.inf]])), ct.FormatError, "queries[0, 2]"),
    (lambda a: a.update(points=np.array([["a", "b", "c"]] * 30)), TypeError, "points"),
    (lambda a: a.update(radius="1"), TypeError, "radius"),
    (lambda a: a.update(workers=0), ValueError, "workers"),
])
def test_kpconv_errors(change, error, words):
    pts, f, kps, w, r, s = cloud(n=30)
    args = dict(points=pts, features=f, kernel_points=kps, weights=w, radius=r, sigma=s)
    change(args)
    with pytest.raises(error) as info:
        pc.kpconv(**args)
    assert words in str(info.value)


def test_prebuilt_index():
    """An index built once answers every call on its cloud, at other radii too, as the arrays do."""
    pts, f, kps, w, r, s = cloud(n=300)
    idx = pc.index(pts, r)
    q = RNG.uniform(0, 1, (40, 3))
    assert np.array_equal(pc.kpconv(idx, f, kps, w, r, s, queries=q), pc.kpconv(pts, f, kps, w, r, s, queries=q))
    assert relerr(pc.kpconv(idx, f, kps, w, 2 * r, s, queries=q), reference(pts, f, kps, w, 2 * r, s, q)) <= 1e-6
    for a, b in zip(pc.radius_neighbors(idx, q, r / 3), pc.radius_neighbors(pts, q, r / 3)):
        assert np.array_equal(a, b)
    with pytest.raises(ct.FormatError, match="radius"):
        pc.index(pts, -1.0)


def test_calls_from_many_threads():
    """Concurrent calls on different clouds answer as the same calls one after another."""
    from concurrent.futures import ThreadPoolExecutor
    layers = [cloud(n=200 + 50 * t) for t in range(4)]
    one = [pc.kpconv(*layer) for layer in layers]
    with ThreadPoolExecutor(4) as ex:
        many = list(ex.map(lambda layer: pc.kpconv(*layer), layers * 2))
    assert all(np.array_equal(a, b) for a, b in zip(one * 2, many))


def test_radius_neighbors_errors():
    pts = RNG.uniform(0, 1, (10, 3))
    with pytest.raises(ct.FormatError, match=r"queries\[1, 0\]"):
        pc.radius_neighbors(pts, np.array([[0, 0, 0], [np.nan, 0, 0]]), 0.1)
    with pytest.raises(ct.FormatError, match="radius"):
        pc.radius_neighbors(pts, pts, -0.5)
    with pytest.raises(ct.FormatError, match="points"):
        pc.radius_neighbors(pts[:, :2], pts, 0.5)


def test_kpconv_on_a_pyvista_mesh():
    """Points sampled on pyvista's airplane mesh, the paper's protocol scaled down (radius for ~30
    neighbours, K = 15)."""
    pytest.importorskip("pyvista")
    from ctensor.examples.pointclouds import paper_radius, sample_mesh
    pts = sample_mesh("airplane", 1500, seed=1)
    r = paper_radius(pts, 30)
    kps = RNG.uniform(-r / 2, r / 2, (15, 3))
    f, w = RNG.standard_normal((1500, 8)), RNG.standard_normal((15, 8, 4))
    q = pts[::5]
    got = pc.kpconv(pts, f, kps, w, r, r / 2.5, queries=q)
    assert relerr(got, reference(pts, f, kps, w, r, r / 2.5, q)) <= 1e-6
    counts = np.diff(pc.radius_neighbors(pts, pts, r)[0])
    assert 20 <= np.median(counts) <= 40
