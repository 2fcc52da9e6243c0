"""The dense split (`ctensor.driver.dense_split`): a trailing dense factor W whose kept indices only
it reads is contracted by numpy/BLAS after a kernel builds the rest.  Checked against numpy on
einsums other than KPConv: sparse x dense matrix products, a two-index contraction, transposed
outputs and W layouts, a continuous (Lebesgue) reduction before the contraction; and the programs
the rule must leave alone."""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct
from ctensor.driver.dense_split import SplitKernel, plan_split

RNG = np.random.default_rng(7)


def dense(a):
    level = ct.Element(0.0)
    for _ in range(a.ndim):
        level = ct.Dense(level)
    return ct.Tensor(level, np.asarray(a, float))


def csr(a):
    """A 2-D matrix stored Dense over rows, SparseList over columns."""
    rows, cols = np.nonzero(a)
    ptr = np.searchsorted(rows, np.arange(a.shape[0] + 1))
    return ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0, val=a[rows, cols]), ptr, cols, shape=a.shape[1]),
                              a.shape[0]))


def sparse_matrix(n, m, density=0.2):
    return np.where(RNG.random((n, m)) < density, RNG.uniform(-1, 1, (n, m)), 0.0)


def test_radius_graph_convolution():
    """Out[i, m] = sum_{j near i, c} F[j, c] W[c, m] (a graph convolution over a radius graph): the
    kernel sums the neighbours' features A[i, c], BLAS mixes the channels."""
    X, Y = RNG.uniform(0, 10, (30, 2)), RNG.uniform(0, 10, (60, 2))
    F, W = RNG.uniform(-1, 1, (60, 5)), RNG.uniform(-1, 1, (5, 7))
    text = ("Out[i, m] = Q[x, y, i] * P[a, b, j] * ((a - x)*(a - x) + (b - y)*(b - y) <= r2) * F[j, c] * W[c, m]"
            " * d(x, y, a, b, j, c; counting, counting, counting, counting, counting, counting)")
    args = dict(Q=ct.points(X), P=ct.points(Y), F=dense(F), W=dense(W), r2=4.0)
    k = ct.compile(text, **args)
    assert isinstance(k, SplitKernel) and k.split.contracted == ("c",)
    near = ((X[:, None, :] - Y[None]) ** 2).sum(2) <= 4.0
    np.testing.assert_allclose(k(**args).to_numpy(), near @ F @ W, rtol=1e-12, atol=1e-12)
    # the same kernel for other sizes of the same formats
    args.update(P=ct.points(Y[:9]), F=dense(F[:9, :2]), W=dense(W[:2, :3]))
    np.testing.assert_allclose(ct.einsum(text, **args).to_numpy(), near[:, :9] @ F[:9, :2] @ W[:2, :3], atol=1e-12)


def test_two_contracted_indices_and_layouts():
    """O[m, i] = sum_{k,c} A[i, k] B[i, c] W[c, m, k]: the output transposed, W's kept index in the
    middle (as written, no loop order reads W and writes O in storage order; split, it compiles)."""
    A, B = sparse_matrix(12, 4, 0.5), sparse_matrix(12, 6, 0.5)
    W = RNG.uniform(-1, 1, (6, 5, 4))
    text = "O[m, i] = A[i, k] * B[i, c] * W[c, m, k] * d(k, c; counting, counting)"
    k = ct.compile(text, A=dense(A), B=dense(B), W=dense(W))
    assert isinstance(k, SplitKernel)
    want = np.einsum("ik,ic,cmk->mi", A, B, W)
    np.testing.assert_allclose(k(A=dense(A), B=dense(B), W=dense(W)).to_numpy(), want, atol=1e-12)


def test_continuous_reduction_before_the_contraction():
    """Out[q, m] = sum_c (∫ S[q, x] G[c, x] dx) W[c, m]: per query interval, the overlap length
    with each channel's intervals, then a dense channel mix."""
    S = ct.interval_set([0.0, 1.5, 3.0], [2.0, 4.0, 3.5])
    starts = [np.array([0.5, 2.5]), np.array([1.0]), np.array([0.0, 3.2])]
    ends = [np.array([1.0, 3.0]), np.array([3.0]), np.array([0.25, 4.0])]
    ptr = np.cumsum([0] + [len(s) for s in starts])
    G = ct.Tensor(ct.Dense(ct.SparseRunList(ct.Element(0.0, val=np.ones(ptr[-1])), ptr, np.concatenate(starts),
                                            np.concatenate(ends)), 3))
    W = RNG.uniform(-1, 1, (3, 4))
    text = "Out[q, m] = S[q, x] * G[c, x] * W[c, m] * d(x, c; lebesgue, counting)"
    k = ct.compile(text, order=["q", "c", "x", "m"], S=S, G=G, W=dense(W))
    assert isinstance(k, SplitKernel)
    lo, hi = np.array([0.0, 1.5, 3.0]), np.array([2.0, 4.0, 3.5])
    overlap = np.array([[sum(max(0.0, min(h, e) - max(l, s)) for s, e in zip(starts[c], ends[c])) for c in range(3)]
                        for l, h in zip(lo, hi)])
    np.testing.assert_allclose(k(S=S, G=G, W=dense(W)).to_numpy(), overlap @ W, atol=1e-12)


@pytest.mark.parametrize("text, options", [
    ("C[i, m] = A[i, j] * B[j, m] * d(j; counting)", {}),                  # j sparse in A: A'[i, j] would be dense
    ("C[i, m] = A[i, j] * B[j, m] * B[j, m] * d(j; counting)", {}),        # W read twice
    ("C[i, m] = A[i, j] * B[j, m] * d(j; counting)", {"semiring": "max"}),  # not a sum
    ("C[i, j, m] = A[i, j] * B[j, m]", {}),                                # j kept by both: a batch index
    ("C[i, m] = (A[i, j] + B[j, m]) * d(j; counting)", {}),                # not a product
])
def test_programs_left_as_written(text, options):
    A, B = sparse_matrix(6, 5, 0.5), RNG.uniform(-1, 1, (5, 3))
    k = ct.compile(text, A=csr(A), B=dense(B), **options)
    assert not isinstance(k, SplitKernel)
    assert plan_split(text, {"A": csr(A), "B": dense(B)}, options.get("semiring")) is None


def test_out_format_keeps_the_loop_nest():
    A, B = sparse_matrix(6, 5, 0.5), RNG.uniform(-1, 1, (5, 3))
    text = "C[i, m] = A[i, j] * B[j, m] * d(j; counting)"
    k = ct.compile(text, A=csr(A), B=dense(B), out=ct.Dense(ct.Dense(ct.Element(0.0))))
    assert not isinstance(k, SplitKernel)
    np.testing.assert_allclose(k(A=csr(A), B=dense(B)).to_numpy(), A @ B, atol=1e-12)


def test_contracted_extent_mismatch_is_an_error():
    A, B = sparse_matrix(6, 5, 0.5), RNG.uniform(-1, 1, (4, 3))
    with pytest.raises(ct.FormatError, match="B"):
        ct.einsum("C[i, m] = A[i, j] * B[j, m] * d(j; counting)", A=csr(A), B=dense(B))


def test_non_finite_w_runs_the_program_as_written():
    """A W holding inf is not split (in BLAS, 0 * inf would reach the rows the loop nest never
    visits): in the radius graph convolution a query with no neighbour gets 0, not NaN."""
    X = np.array([[0.0, 0.0], [50.0, 50.0]])            # the second query has no neighbour
    Y = np.array([[0.5, 0.0], [0.0, 1.0], [9.0, 9.0]])
    F = np.array([[1.0, 0.0], [2.0, 1.0], [1.0, 1.0]])
    W = np.array([[np.inf, 1.0], [2.0, 0.0]])
    text = ("Out[i, m] = Q[x, y, i] * P[a, b, j] * ((a - x)*(a - x) + (b - y)*(b - y) <= r2) * F[j, c] * W[c, m]"
            " * d(x, y, a, b, j, c; counting, counting, counting, counting, counting, counting)")
    args = dict(Q=ct.points(X), P=ct.points(Y), F=dense(F), W=dense(W), r2=4.0)
    k = ct.compile(text, **args)
    assert isinstance(k, SplitKernel)
    got = k(**args).to_numpy()
    assert got[0].tolist() == [np.inf, 3.0] and got[1].tolist() == [0.0, 0.0]      # A[0] = F0 + F1 = [3, 1]
    finite = np.where(np.isfinite(W), W, 5.0)
    args["W"] = dense(finite)
    np.testing.assert_allclose(k(**args).to_numpy(), [[3.0 * 5.0 + 1.0 * 2.0, 3.0], [0.0, 0.0]])
