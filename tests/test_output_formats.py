"""out= in the one-entry-per-fiber formats (SparsePoint, SparseInterval, `runtime.narrow_output`):
equal to the default output wherever the result fits, FormatError naming the fiber where it does
not — never a dropped piece.  The default output is the oracle here (itself tested against the
reference interpreter in test_differential); a few cases are also checked against the
interpreter directly."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor.limits import Limit

from .helpers import CLOSED, breakpoints_1d, oracle, probes
from .test_differential import interval_tensor

FILL = {"+": 0.0, "min": math.inf, "max": -math.inf}


def same_values(got, want, *tensors):
    """got and want agree at every probe point around every breakpoint (1-D real tensors)."""
    for p in probes(breakpoints_1d(want, got, *tensors)):
        assert got[p] == want[p], (p, got[p], want[p])


def runs_per_fiber(t):
    return np.diff(t.level.ptr)


@settings(max_examples=40)
@given(interval_tensor(), st.integers(-6, 12), st.integers(1, 6), st.sampled_from(CLOSED),
       st.sampled_from(["+", "min", "max"]))
def test_sparse_interval_equals_the_default_output(A, a, w, closed, semiring):
    """A window W (one interval) times, plus or min'd with a random interval tensor A: one run or
    several; SparseInterval holds it exactly when the default SparseRunList has one run."""
    fill = FILL[semiring]
    W = ct.intervals([float(a)], [float(a + w)], values=[2.0], closed=closed, fill=fill)
    if semiring == "+":
        text, args = "C[x] = A[x] * W[x]", dict(A=A, W=W)
    else:   # A's fill must be ⊕'s identity too: rebuild A with it
        A2 = ct.Tensor(ct.SparseRunList(ct.Element(fill, val=A.level.child.val), ptr=A.level.ptr, left=A.level.left,
                                        right=A.level.right, closed=A.level.closed, left_eps=A.level.left_eps,
                                        right_eps=A.level.right_eps))
        text, args = f"C[x] = {semiring}(A[x], W[x])", dict(A=A2, W=W)
    want = ct.einsum(text, semiring=semiring, **args)
    n = runs_per_fiber(want)[0]
    le, re = want.level.eps_arrays()
    one_closedness = n == 1 or (len(set(le[np.isfinite(want.level.left)])) <= 1 and
                                len(set(re[np.isfinite(want.level.right)])) <= 1)
    if n == 1 and one_closedness:
        got = ct.einsum(text, semiring=semiring, out=ct.SparseInterval(ct.Element(fill)), **args)
        assert isinstance(got.level, ct.SparseInterval)
        same_values(got, want, *args.values())
    else:
        with pytest.raises(ct.FormatError, match=r"C's fiber 0 (holds \d+ entries|is empty)"):
            ct.einsum(text, semiring=semiring, out=ct.SparseInterval(ct.Element(fill)), **args)


def test_sparse_interval_closedness_and_the_oracle():
    A = ct.intervals([0.0, 1.0], [1.0, 3.0], values=[2.0, 2.0], closed="left")    # touching: one run
    B = ct.intervals([0.5], [2.0], values=[1.5], closed="both")
    text = "C[x] = A[x] * B[x]"
    got = ct.einsum(text, A=A, B=B, out=ct.SparseInterval(ct.Element(0.0)))
    assert got.level.closed == "both" and got.pieces() == [(((Limit(0.5), Limit(2.0)),), 3.0)]
    ref = oracle(text, A=A, B=B)
    for p in probes([0.0, 0.5, 1.0, 2.0, 3.0]):
        assert got[p] == ref.at((p.value, p.eps)), p
    # asked for another closedness than the result's: FormatError naming the interval
    with pytest.raises(ct.FormatError, match=r"\[0.5, 2.0\].*closed='left' was asked for"):
        ct.einsum(text, A=A, B=B, out=ct.SparseInterval(ct.Element(0.0), closed="left"))
    # several closednesses in one output: FormatError too (one per level)
    S = ct.interval_set([0.0, 5.0], [1.0, 6.0], closed="both")
    R = ct.intervals([0.0, 5.0], [1.0, 6.0], values=[1.0, 2.0], closed=["left", "both"])
    with pytest.raises(ct.FormatError, match=r"C's fiber 1 \(C\[1, :\]\) holds \[5.0, 6.0\]"):
        ct.einsum("C[i, x] = S[i, x] * R[x]", S=S, R=R, out=ct.Dense(ct.SparseInterval(ct.Element(0.0))))


@pytest.mark.parametrize("semiring", ["+", "or"])
def test_sparse_interval_under_dense_and_a_merged_output(semiring):
    """C[i, x] with one interval per id (Dense over SparseInterval); and the coverage depth of
    identical intervals, a revisited output merged by the runtime, which fits in one run."""
    S = ct.interval_set([0.0, 2.0, -1.0], [1.0, 4.0, 0.5], closed="left")
    A = ct.intervals([-2.0], [5.0], values=[3.0])
    text = "C[i, x] = S[i, x] * A[x]" if semiring != "or" else "C[i, x] = S[i, x] & (A[x] > 0)"
    want = ct.einsum(text, S=S, A=A, semiring=semiring)
    got = ct.einsum(text, S=S, A=A, semiring=semiring,
                    out=ct.Dense(ct.SparseInterval(ct.Element(want.fill))))
    assert [(c, v) for c, v in got.pieces()] == [(c, v) for c, v in want.pieces()]
    Same = ct.interval_set([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], closed="both")
    got = ct.einsum("C[x] = Same[i, x] * d(i; counting)", Same=Same, out=ct.SparseInterval(ct.Element(0)))
    assert got.pieces() == [(((Limit(1.0), Limit(2.0)),), 3)]
    Nested = ct.interval_set([1.0, 0.0], [2.0, 3.0])
    with pytest.raises(ct.FormatError, match="C's fiber 0 holds 3 entries"):
        ct.einsum("C[x] = Nested[i, x] * d(i; counting)", Nested=Nested, out=ct.SparseInterval(ct.Element(0)))


@settings(max_examples=30)
@given(st.lists(st.integers(-6, 12), min_size=1, max_size=4, unique=True), st.integers(-6, 12), st.integers(0, 5),
       st.sampled_from(["+"]))
def test_sparse_point_real_equals_the_default_output(xs, a, w, semiring):
    """Pinpoints P times a window: SparsePoint holds the result when one point survives."""
    xs = sorted(float(x) for x in xs)
    P = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.arange(1.0, len(xs) + 1)), ptr=[0, len(xs)], idx=xs))
    W = ct.intervals([float(a)], [float(a + w)], values=[2.0], closed="both")
    text = "C[x] = P[x] * W[x]"
    want = ct.einsum(text, P=P, W=W, semiring=semiring)
    n = int(np.diff(want.level.ptr)[0])
    if n == 1:
        got = ct.einsum(text, P=P, W=W, semiring=semiring, out=ct.SparsePoint(ct.Element(0.0)))
        assert isinstance(got.level, ct.SparsePoint) and got.pieces() == want.pieces()
        same_values(got, want, P, W)
    else:
        with pytest.raises(ct.FormatError, match="C's fiber 0 " + ("holds" if n else "is empty")):
            ct.einsum(text, P=P, W=W, semiring=semiring, out=ct.SparsePoint(ct.Element(0.0)))


@pytest.mark.parametrize("semiring", ["+", "min", "max", "or"])
def test_sparse_point_integer_ids(semiring):
    """An integer SparsePoint under Dense: one id per row (rows holding only the fill store id 0
    with the fill, the same tensor); a row with two ids raises FormatError naming the row."""
    fill = {"+": 0, "min": math.inf, "max": -math.inf, "or": False}[semiring]
    kind = {"+": np.int64, "or": bool}.get(semiring, np.float64)
    M = np.full((4, 3), fill, kind)
    M[0, 1], M[2, 0], M[3, 2] = 5, 7, 1
    T = ct.Tensor(ct.Dense(ct.Dense(ct.Element(fill)), 4), data=M)
    text = "C[i, j] = T[i, j]"
    got = ct.einsum(text, T=T, semiring=semiring, out=ct.Dense(ct.SparsePoint(ct.Element(fill), shape=3)))
    assert isinstance(got.level.child, ct.SparsePoint)
    np.testing.assert_array_equal(got.to_numpy(), M)
    np.testing.assert_array_equal(got.to_numpy(), ct.einsum(text, T=T, semiring=semiring).to_numpy())
    M[1, 0] = M[1, 2] = M[0, 1]
    T = ct.Tensor(ct.Dense(ct.Dense(ct.Element(fill)), 4), data=M)
    with pytest.raises(ct.FormatError, match=r"C's fiber 1 \(C\[1, :\]\) holds 2 entries \(0, 2\)"):
        ct.einsum(text, T=T, semiring=semiring, out=ct.Dense(ct.SparsePoint(ct.Element(fill), shape=3)))


def test_sparse_point_empty_fiber_and_a_merged_output():
    """A real SparsePoint cannot hold an empty fiber (a stored point cuts the counting partition);
    a revisited output (a sum over ids, merged by the runtime) narrows after the merge."""
    P = ct.points(np.array([[1.0]]))
    W = ct.intervals([5.0], [6.0])
    with pytest.raises(ct.FormatError, match="C's fiber 0 is empty.*use SparseList"):
        ct.einsum("C[x] = P[x, j] * W[x] * d(j; counting)", P=P, W=W, out=ct.SparsePoint(ct.Element(0.0)))
    T = ct.Tensor(ct.Dense(ct.SparsePoint(ct.Element(0.0, val=[1.0, 2.0, 4.0]), idx=[1.5, 1.5, 1.5]), 3))
    text = "C[x] = T[i, x] * d(i; counting)"
    got = ct.einsum(text, T=T, out=ct.SparsePoint(ct.Element(0.0)))
    assert got.pieces() == ct.einsum(text, T=T).pieces() == [(((Limit(1.5), Limit(1.5)),), 7.0)]
    T2 = ct.Tensor(ct.Dense(ct.SparsePoint(ct.Element(0.0, val=[1.0, 2.0]), idx=[1.5, 2.5]), 2))
    with pytest.raises(ct.FormatError, match=r"C's fiber 0 holds 2 entries \(1.5, 2.5\)"):
        ct.einsum(text, T=T2, out=ct.SparsePoint(ct.Element(0.0)))


@pytest.mark.parametrize("closed", CLOSED)
def test_integer_sparse_interval(closed):
    """An integer SparseInterval holds one range of consecutive ids of one value per fiber (an
    empty range where a row is all fill); other rows raise FormatError naming the row."""
    m = np.array([[0, 5, 5], [0, 0, 0], [7, 0, 0], [2, 2, 2]])
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0)), 4), data=m)
    fmt = ct.Dense(ct.SparseInterval(ct.Element(0), shape=3, closed=closed))
    got = ct.einsum("C[i, j] = M[i, j]", M=M, out=fmt)
    np.testing.assert_array_equal(got.to_numpy(), m)
    ref = oracle("C[i, j] = M[i, j]", M=M)
    assert all(got[i, j] == ref.at(i, j) for i in range(4) for j in range(3))
    assert ct.einsum("s[] = C[i, j] * d(i, j; counting, counting)", C=got) == m.sum()
    for row, why in (([5, 4, 0], r"ids 0 and 1 \(values 5, 4\).*values differ"), ([5, 0, 5], "ids 0 and 2.*ids differ")):
        M2 = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0)), 4), data=np.array([m[0], row, m[2], m[3]]))
        with pytest.raises(ct.FormatError, match=r"C's fiber 1 \(C\[1, :\]\) holds " + why):
            ct.einsum("C[i, j] = M[i, j]", M=M2, out=fmt)
