"""Index sums that mix an integer index with a real one (issue 29): `Grid[o + d*t + x]` with t an
integer sample index (Time[t] over integers) — the continuous paper's §7.3 einsum as written.  The
integer index is bound by an outer loop and only shifts the real coordinate; checked against the
reference interpreter (tests/oracle) and a numpy trilinear reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct

from .helpers import oracle
from .test_differential import interval_tensor


def _ints(vals, sparse):
    vals = np.asarray(vals, float)
    if sparse:
        nz = np.flatnonzero(vals)
        return ct.Tensor(ct.SparseList(ct.Element(0.0, val=vals[nz]), [0, len(nz)], nz, shape=len(vals)), name="T")
    return ct.Tensor(ct.Dense(ct.Element(0.0), len(vals)), vals, name="T")


A = ct.intervals([0.0, 1.5, 2.5], [1.0, 2.5, 4.0], values=[1.0, 2.0, 3.0])
B = ct.intervals([-0.5], [0.5], values=[1.0])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("text,scalars", [
    ("O[t] = T[t] * A[c + 0.7*t + x] * B[x] * d(x; lebesgue)", {"c": 0.3}),
    ("O[t] = T[t] * A[c + k*t + x] * B[x] * d(x; lebesgue)", {"c": 0.25, "k": 0.5}),
    ("O[t] = T[t] * A[c - k*t + x] * B[x] * d(x; lebesgue)", {"c": 3.0, "k": 0.75}),
    ("O[t] = T[t] * A[t + x] * B[x] * d(x; lebesgue)", {}),
    ("s[] = T[t] * A[c + 0.5*t + x] * B[x] * d(x; lebesgue)", {"c": -0.2}),
    ("O[t] = T[t] * A[c + 0.5*t + 2*x] * B[x] * d(x; lebesgue)", {"c": 0.1}),
])
def test_int_index_in_real_sum_matches_oracle(text, scalars, sparse):
    T = _ints([1.0, 2.0, 0.0, 0.5, 1.0, 3.0], sparse)
    got = ct.einsum(text, T=T, A=A, B=B, **scalars)
    ref = oracle(text, T=T, A=A, B=B, **scalars)
    if text.startswith("s[]"):
        assert got == pytest.approx(ref.value, abs=1e-12)
    else:
        got = got.to_numpy()
        assert np.allclose(got, [ref.at(i) for i in range(6)], atol=1e-12, rtol=0)


def test_int_index_alone_on_a_real_mode_is_refused():
    T = _ints([1.0, 2.0], False)
    with pytest.raises(ct.InvalidProgramError, match="both integer and real"):
        ct.einsum("O[t] = T[t] * A[t]", T=T, A=A)


def test_real_dimension_lowered_at_the_int_index_is_refused():
    T = _ints([1.0, 2.0], False)
    with pytest.raises(ct.InvalidProgramError):
        ct.einsum("s[] = T[t] * A[t + x] * B[x] * d(x; lebesgue)", T=T, A=A, B=B, order=["x", "t"])


def centred_grid(V):
    """Grid[x, y, z] over cells [i - 0.5, i + 0.5): only non-zero voxels stored (SparseRunList^3)."""
    n = V.shape[0]
    f = lambda a: np.asarray(a, float)
    xs, ys, zs, p1, p2, vals = [], [], [], [0], [0], []
    for i in range(n):
        if not V[i].any():
            continue
        xs.append(i)
        for j in range(n):
            ks = np.flatnonzero(V[i, j])
            if len(ks):
                ys.append(j)
                zs.extend(ks)
                vals.extend(V[i, j, ks])
                p2.append(len(zs))
        p1.append(len(ys))
    z = ct.SparseRunList(ct.Element(0.0, val=f(vals)), np.array(p2), f(zs) - 0.5, f(zs) + 0.5)
    y = ct.SparseRunList(z, np.array(p1), f(ys) - 0.5, f(ys) + 0.5)
    return ct.Tensor(ct.SparseRunList(y, np.array([0, len(xs)]), f(xs) - 0.5, f(xs) + 0.5), name="Grid")


def trilinear(V, p):
    """float64 numpy trilinear interpolation of voxel-centre values V at points p (M, 3); outside
    voxels are 0."""
    n = np.array(V.shape[:3])
    p = np.clip(p, -2.0, n + 1.0)          # far outside stays outside, and floor fits int64
    lo = np.floor(p).astype(np.int64)
    out = np.zeros(len(p))
    for corner in np.ndindex(2, 2, 2):
        c = lo + corner
        w = np.prod(np.where(corner, p - lo, 1 - (p - lo)), axis=1)
        ok = np.all((c >= 0) & (c < n), axis=1)
        out[ok] += w[ok] * V[c[ok, 0], c[ok, 1], c[ok, 2]]
    return out


PAPER = ("Out[t] = Time[t] * Grid[ox + dx*t + x, oy + dy*t + y, oz + dz*t + z] * Box[x, y, z]"
         " * d(x, y, z; lebesgue, lebesgue, lebesgue)")


@pytest.mark.parametrize("time", ["int", "real"])
def test_paper_einsum_is_trilinear_interpolation(time):
    """§7.3: the box-filtered grid at o + d*t equals trilinear interpolation of the centre values,
    with t an integer sample index (Dense Time) or a real pinpoint (SparseList of real t)."""
    rng = np.random.default_rng(3)
    n = 7
    V = np.where(rng.random((n, n, n)) < 0.35, rng.uniform(0.1, 1, (n, n, n)), 0.0)
    o, d = np.array([-0.6, 0.4, 6.2]), np.array([0.45, 0.35, -0.4])
    ts = np.arange(18)
    Box = ct.box([-0.5] * 3, [0.5] * 3, closed="left")
    if time == "int":
        Time = ct.Tensor(ct.Dense(ct.Element(0.0), len(ts)), np.ones(len(ts)), name="Time")
    else:
        Time = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.ones(len(ts))), [0, len(ts)], ts.astype(float)),
                         name="Time")
    out = ct.einsum(PAPER, Time=Time, Grid=centred_grid(V), Box=Box,
                    ox=o[0], oy=o[1], oz=o[2], dx=d[0], dy=d[1], dz=d[2])
    want = trilinear(V, o + d * ts[:, None])
    if time == "int":
        got = out.to_numpy()
    else:
        vals = {c[0][0].value: v for c, v in out.pieces()}
        got = np.array([vals.get(float(t), 0.0) for t in ts])
    np.testing.assert_allclose(got, want, atol=1e-12)


# ------------------------------------------------------------------ random tensors and offsets


@settings(max_examples=12, deadline=None)      # every example compiles kernels
@given(interval_tensor(allow_inf=False), interval_tensor(allow_inf=False),
       st.lists(st.sampled_from([0.0, 1.0, -2.0, 0.5]), min_size=1, max_size=5),
       st.sampled_from([0.0, -1.5, 2.25]), st.sampled_from([1.0, 0.5, -0.75, 2.0]), st.booleans())
def test_random_int_shifts_match_oracle(A, B, tvals, c, k, sparse):
    """O[t] = T[t] * A[c + k*t + x] * B[x] dx on random run lists A, B (any closedness, touching
    and pinpoint pieces): equal to the oracle at every t."""
    T = _ints(tvals, sparse)
    text = "O[t] = T[t] * A[c + k*t + x] * B[x] * d(x; lebesgue)"
    got = ct.einsum(text, T=T, A=A, B=B, c=c, k=k).to_numpy()
    ref = oracle(text, T=T, A=A, B=B, c=c, k=k)
    assert np.allclose(got, [ref.at(i) for i in range(len(tvals))], rtol=1e-9, atol=1e-9)
