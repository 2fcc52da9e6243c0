"""The continuous paper's other two case studies, written against the public API and checked by brute
force: trilinear interpolation on a sparse voxel grid (§7.3, Fig. 25) and a KPConv-style point
convolution (§7.4, Fig. 26)."""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct


def voxel_grid(V, occ):
    """Grid[x, y, z] of unit voxels [i, i+1) x [j, j+1) x [k, k+1): only occupied ones stored."""
    n = V.shape[0]
    xs, l1, ptr1, l2, ptr2, vals = [], [], [0], [], [0], []
    for i in range(n):
        if not occ[i].any():
            continue
        xs.append(i)
        for j in range(n):
            if occ[i, j].any():
                l1.append(j)
                ks = np.flatnonzero(occ[i, j])
                l2.extend(ks)
                vals.extend(V[i, j, ks])
                ptr2.append(len(l2))
        ptr1.append(len(l1))
    f = lambda a: np.asarray(a, float)
    z = ct.SparseRunList(ct.Element(0.0, val=f(vals)), np.array(ptr2), f(l2), f(l2) + 1)
    y = ct.SparseRunList(z, np.array(ptr1), f(l1), f(l1) + 1)
    return ct.Tensor(ct.SparseRunList(y, np.array([0, len(xs)]), f(xs), f(xs) + 1), name="Grid")


def test_trilinear_interpolation_along_a_ray():
    """Out[t] = Time[t] * Grid[o + d*t + x, ...] * Box[x, y, z] * d(x, y, z; lebesgue^3): the
    box-filtered value at each sample t of the ray o + d*t (the box's overlap volume with each voxel
    weighs its value)."""
    rng = np.random.default_rng(0)
    n = 6
    occ = rng.random((n, n, n)) < 0.3
    V = np.where(occ, rng.uniform(0.1, 1, (n, n, n)), 0.0)
    ts = np.linspace(0, 5, 23)
    Time = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.ones(len(ts))), [0, len(ts)], ts), name="Time")
    Box = ct.box([-0.5] * 3, [0.5] * 3, closed="left")
    o, d = np.array([1.0, 1.3, 0.7]), np.array([0.9, 0.8, 1.0])
    out = ct.einsum("Out[t] = Time[t] * Grid[ox + dx*t + x, oy + dy*t + y, oz + dz*t + z] * Box[x, y, z]"
                    " * d(x, y, z; lebesgue, lebesgue, lebesgue)", Time=Time, Grid=voxel_grid(V, occ), Box=Box,
                    ox=o[0], oy=o[1], oz=o[2], dx=d[0], dy=d[1], dz=d[2])
    got = {c[0][0].value: v for c, v in out.pieces()}
    cells = np.arange(n)
    for t in ts:
        p = o + d * t
        w = [np.clip(np.minimum(cells + 1, p[m] + 0.5) - np.maximum(cells, p[m] - 0.5), 0, None) for m in range(3)]
        want = np.einsum("i,j,k,ijk->", w[0], w[1], w[2], V)
        assert got.get(float(t), 0.0) == pytest.approx(want, abs=1e-12)


def test_kpconv_point_convolution():
    """Out[i, m] = Σ Q[x, y, i] P[x + r, y + s, j] [r² + s² <= R1] F[j, c] K[r + p, s + q, k] W[k, c, m]
    max(0, 1 - |(p, q)| / σ): each query point i gathers the input points j within R1; each neighbour's
    features are weighted by the kernel points k near its offset (linear correlation, KPConv)."""
    rng = np.random.default_rng(2)
    NP, NQ, NK, C, M = 120, 12, 4, 3, 2
    P, Q, K = rng.uniform(0, 4, (NP, 2)), rng.uniform(0, 4, (NQ, 2)), rng.uniform(-0.6, 0.6, (NK, 2))
    F, W = rng.uniform(-1, 1, (NP, C)), rng.uniform(-1, 1, (NK, C, M))
    dense = lambda a: ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))) if a.ndim == 2 else
                                ct.Dense(ct.Dense(ct.Dense(ct.Element(0.0)))), a)
    text = ("Out[i, m] = Q[x, y, i] * P[x + r, y + s, j] * (r*r + s*s <= R1) * F[j, c] * K[r + p, s + q, k]"
            " * W[k, c, m] * max(0, 1 - sqrt(p*p + q*q) / sig)"
            " * d(x, y, r, s, j, c, p, q, k; counting, counting, counting, counting, counting, counting,"
            " counting, counting, counting)")
    got = ct.einsum(text, Q=ct.points(Q), P=ct.points(P), F=dense(F), K=ct.points(K), W=dense(W),
                    R1=1.0, sig=0.5).to_numpy()
    want = np.zeros((NQ, M))
    for i in range(NQ):
        for j in range(NP):
            r = P[j] - Q[i]
            if r @ r <= 1.0:
                for k in range(NK):
                    pq = K[k] - r
                    want[i] += max(0.0, 1 - np.sqrt(pq @ pq) / 0.5) * (F[j] @ W[k])
    np.testing.assert_allclose(got, want, atol=1e-12)
