"""KPConv layers: ctensor.apps.pointcloud.kpconv against PyTorch and a numba + BLAS reference.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m pytest \
        benchmarks/bench_pointcloud.py --benchmark-json=pc.json -p no:xdist -p no:cacheprovider \
        [--benchmark-timer=time.process_time]
    python benchmarks/pointcloud_report.py pc.json

On a loaded machine, CPU time (`--benchmark-timer=time.process_time`: every implementation runs
on one thread) is distorted least by the other processes; wall time is the default.

Paper protocol (continuous paper §7.4, Fig. 27; KPConv's ModelNet40 layers): 10,000 points sampled
on pyvista's airplane mesh (`ctensor.examples.pointclouds`), radius giving ~30 neighbours, K = 15
kernel points in a ball of radius/2, sigma = radius / 2.5, C_in = C_out = C ∈ {8, ..., 256}, float64
everywhere (ctensor computes in float64), one thread (torch.set_num_threads(1); numpy's BLAS is
single-threaded by the environment below).  Layers: `full` (every point a query) and `strided`
(every 4th point a query, N/4 queries over all N points).

Implementations (each checked against the numba reference before timing):
  ctensor       pc.kpconv(points, features, kernel_points, weights, radius, sigma, queries): the grid,
                the neighbour search, the weighted sums and the BLAS product all timed.
  ctensor_index the same with the cloud's grid index built once (`pc.index`, untimed): the search is
                still timed.
  torch_kpconv  the KPConv repository's math (KPConv-PyTorch `KPConv.forward`, rigid, linear
                influence, sum): padded neighbour matrix with a shadow point, gather, (nq, K, H)
                influences, matmul, K separate (nq, C) x (C, C) products summed.
  torch_opt     optimised PyTorch: index_select, one bmm for the weighted features, one GEMM
                (nq, K*C) x (K*C, C).
  numba_blas    a numba weighted sum A[q, k, c] over the CSR neighbours, then one numpy GEMM.
The peers are *given* the neighbour lists (cKDTree, not timed); ctensor finds its own.
"""
from __future__ import annotations

import os
from functools import cache

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
import pytest
from numba import njit
from scipy.spatial import cKDTree

import ctensor.apps.pointcloud as pc

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

N, K = 10_000, 15
CHANNELS = [8, 16, 32, 64, 128, 256]
LAYERS = {"full": 1, "strided": 4}


@cache
def cloud():
    from ctensor.examples.pointclouds import paper_radius, sample_mesh
    pts = sample_mesh("airplane", N, seed=0)
    r = paper_radius(pts, 30)
    rng = np.random.default_rng(0)
    kps = rng.uniform(-r / 2, r / 2, (K, 3))
    return pts, kps, r, r / 2.5


@cache
def layer(name, c):
    pts, kps, r, s = cloud()
    q = pts[::LAYERS[name]].copy()
    rng = np.random.default_rng(c)
    f = rng.standard_normal((N, c))
    w = rng.standard_normal((K, c, c)) / np.sqrt(K * c)
    nb = cKDTree(pts).query_ball_point(q, r)
    indptr = np.zeros(len(q) + 1, np.int64)
    np.cumsum([len(x) for x in nb], out=indptr[1:])
    indices = np.concatenate([np.sort(x) for x in nb]).astype(np.int64)
    return dict(pts=pts, kps=kps, r=r, s=s, q=q, f=f, w=w, indptr=indptr, indices=indices)


# ---------------------------------------------------------------- numba weighted sum + BLAS
@njit(cache=False, fastmath=False)
def _weighted_sum(pts, q, indptr, indices, kps, f, sigma, a):
    for i in range(q.shape[0]):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            for k in range(kps.shape[0]):
                d0 = pts[j, 0] - q[i, 0] - kps[k, 0]
                d1 = pts[j, 1] - q[i, 1] - kps[k, 1]
                d2 = pts[j, 2] - q[i, 2] - kps[k, 2]
                h = 1.0 - np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) / sigma
                if h > 0:
                    for c in range(f.shape[1]):
                        a[i, k, c] += h * f[j, c]


def numba_blas(d):
    a = np.zeros((len(d["q"]), K, d["f"].shape[1]))
    _weighted_sum(d["pts"], d["q"], d["indptr"], d["indices"], d["kps"], d["f"], d["s"], a)
    return a.reshape(len(a), -1) @ d["w"].reshape(-1, d["w"].shape[2])


# ---------------------------------------------------------------- PyTorch peers
@cache
def torch_inputs(name, c):
    d = layer(name, c)
    counts = np.diff(d["indptr"])
    h = int(counts.max())
    pad = np.full((len(d["q"]), h), N, np.int64)          # shadow neighbour N (KPConv's convention)
    pad[np.arange(h)[None, :] < counts[:, None]] = d["indices"]
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))
    return dict(s_pts=t(d["pts"]), q_pts=t(d["q"]), inds=t(pad), x=t(d["f"]), kp=t(d["kps"]),
                w=t(d["w"]), sigma=d["s"])


def torch_kpconv(t):
    """KPConv-PyTorch `KPConv.forward` (rigid kernel, linear influence, sum aggregation)."""
    s_pts = torch.cat((t["s_pts"], torch.zeros_like(t["s_pts"][:1, :]) + 1e6), 0)
    neighbors = s_pts[t["inds"], :] - t["q_pts"].unsqueeze(1)
    differences = neighbors.unsqueeze(2) - t["kp"]
    sq_distances = torch.sum(differences ** 2, dim=3)
    all_weights = torch.clamp(1 - torch.sqrt(sq_distances) / t["sigma"], min=0.0)
    all_weights = torch.transpose(all_weights, 1, 2)
    x = torch.cat((t["x"], torch.zeros_like(t["x"][:1, :])), 0)
    neighb_x = x[t["inds"], :]
    weighted_features = torch.matmul(all_weights, neighb_x).permute((1, 0, 2))
    kernel_outputs = torch.matmul(weighted_features, t["w"])
    return torch.sum(kernel_outputs, dim=0)


def torch_opt(t):
    """index_select + bmm + one GEMM."""
    nq, h = t["inds"].shape
    s_pts = torch.cat((t["s_pts"], torch.zeros_like(t["s_pts"][:1, :]) + 1e6), 0)
    flat = t["inds"].reshape(-1)
    rel = s_pts.index_select(0, flat).view(nq, h, 1, 3) - t["q_pts"].view(nq, 1, 1, 3) - t["kp"]
    infl = torch.clamp(1 - torch.linalg.vector_norm(rel, dim=3) / t["sigma"], min=0.0)     # (nq, h, K)
    x = torch.cat((t["x"], torch.zeros_like(t["x"][:1, :])), 0)
    feats = x.index_select(0, flat).view(nq, h, -1)
    wf = torch.bmm(infl.transpose(1, 2), feats)                                           # (nq, K, C)
    return wf.reshape(nq, -1) @ t["w"].reshape(-1, t["w"].shape[2])


def ours(d):
    return pc.kpconv(d["pts"], d["f"], d["kps"], d["w"], d["r"], d["s"], queries=d["q"])


@cache
def cloud_index():
    pts, _, r, _ = cloud()
    return pc.index(pts, r)


def ours_indexed(d):
    """The grid index built once per cloud (`pc.index`, untimed, as a network's layers share it);
    the neighbour search, weighted sums and BLAS product timed."""
    return pc.kpconv(cloud_index(), d["f"], d["kps"], d["w"], d["r"], d["s"], queries=d["q"])


IMPLS = {
    "ctensor": (ours, layer),
    "ctensor_index": (ours_indexed, layer),
    "numba_blas": (numba_blas, layer),
    "torch_kpconv": (lambda t: torch_kpconv(t).numpy(), torch_inputs),
    "torch_opt": (lambda t: torch_opt(t).numpy(), torch_inputs),
}


@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize("name", list(LAYERS))
def test_kpconv_layer(benchmark, name, c, impl):
    fn, inputs = IMPLS[impl]
    args = inputs(name, c)
    got = fn(args)                                  # warm: compile, JIT, allocator
    want = numba_blas(layer(name, c))
    assert np.abs(got - want).max() <= 1e-9 * max(np.abs(want).max(), 1.0), impl
    benchmark.group = f"{name} C={c}"
    benchmark.extra_info.update(layer=name, channels=c, impl=impl, queries=len(layer(name, c)["q"]),
                                neighbours=float(np.diff(layer(name, c)["indptr"]).mean()))
    rounds = 3 if c >= 128 else 5
    benchmark.pedantic(fn, args=(args,), rounds=rounds, iterations=1, warmup_rounds=1)
