"""Invariant factors become loop guards (`ctensor.lower.hoist`): a factor that reads only runtime
scalars once its indices are pinpoints (a distance test, a kernel weight) is computed once before
the loops it does not depend on, which run only where it is non-zero.  Results against numpy."""
from __future__ import annotations

import numpy as np

import ctensor as ct


def dense(a):
    return ct.Tensor(ct.Dense(ct.Element(0.0)) if a.ndim == 1 else ct.Dense(ct.Dense(ct.Element(0.0))), a)


def test_distance_test_guards_the_inner_loops():
    """Out[i, c] = sum_j [|x_i - y_j| <= r] F[j, c]: the test is computed per pair (i, j), outside c
    (out= keeps the loop over c in the kernel: no dense split, `driver.dense_split`)."""
    rng = np.random.default_rng(3)
    X, Y = rng.uniform(0, 10, 30), rng.uniform(0, 10, 50)
    F = rng.uniform(-1, 1, (50, 4))
    text = "Out[i, c] = Q[x, i] * P[y, j] * ((x - y) * (x - y) <= r2) * F[j, c] * d(x, y, j; counting, counting, counting)"
    k = ct.compile(text, Q=ct.points(X[:, None]), P=ct.points(Y[:, None]), F=dense(F), r2=1.0,
                   out=ct.Dense(ct.Dense(ct.Element(0.0))))
    got = k(Q=ct.points(X[:, None]), P=ct.points(Y[:, None]), F=dense(F), r2=1.0).to_numpy()
    want = ((X[:, None] - Y[None]) ** 2 <= 1.0) @ F
    np.testing.assert_allclose(got, want, atol=1e-12)
    ir = k.ir
    assert "let %guard" in ir
    # the guard is tested before the loop over c, not inside it
    assert ir.index("if (%guard") < ir.index("for %c")


def test_float_weight_is_computed_once_and_skips_zeros():
    """A weight max(0, 1 - |x - y|): where it is 0 the inner loop does not run; elsewhere it
    multiplies as one scalar."""
    rng = np.random.default_rng(4)
    X, Y = rng.uniform(0, 5, 20), rng.uniform(0, 5, 25)
    F = rng.uniform(-1, 1, (25, 3))
    text = "Out[i, c] = Q[x, i] * P[y, j] * max(0, 1 - abs(x - y)) * F[j, c] * d(x, y, j; counting, counting, counting)"
    args = dict(Q=ct.points(X[:, None]), P=ct.points(Y[:, None]), F=dense(F))
    k = ct.compile(text, **args)
    want = np.maximum(0, 1 - np.abs(X[:, None] - Y[None])) @ F
    np.testing.assert_allclose(k(**args).to_numpy(), want, atol=1e-12)
    assert "%guard" in k.ir and "!= 0.0" in k.ir


def test_not_hoisted_under_other_reductions():
    """Under min the guard would change nothing to skip (0 does not annihilate min): no guard."""
    rng = np.random.default_rng(5)
    X, Y = rng.uniform(0, 5, 8), rng.uniform(0, 5, 9)
    F = rng.uniform(1, 2, (9, 2))
    text = "Out[i, c] = Q[x, i] * P[y, j] * abs(x - y) * F[j, c] * d(x, y, j; counting, counting, counting)"
    args = dict(Q=ct.points(X[:, None]), P=ct.points(Y[:, None]), F=dense(F))
    k = ct.compile(text, semiring="min", out=ct.Dense(ct.Dense(ct.Element(np.inf))), **args)
    assert "%guard" not in k.ir
    want = (np.abs(X[:, None, None] - Y[None, :, None]) * F[None]).min(1)
    np.testing.assert_allclose(k(**args).to_numpy(), want, atol=1e-12)
