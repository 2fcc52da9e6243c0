"""`Out[...] += expr` (Finch §3 thaw, `runtime.accumulate`) equals `Out_old ⊕ result` computed
separately (the result by a plain einsum, ⊕ by numpy on the values at probe points), under +,
min, max and or; Out itself is not modified.  And out= UniformGrid (`runtime.grid_output`)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct

from .helpers import breakpoints_1d, oracle, probes
from .test_differential import interval_tensor

OPS = {"+": lambda a, b: a + b, "min": min, "max": max, "or": lambda a, b: bool(a) or bool(b)}
FILL = {"+": 0.0, "min": math.inf, "max": -math.inf, "or": False}


def with_fill(t, fill):
    """t's runs with another fill (the identity of the semiring under test); booleans for 'or'."""
    lv = t.level
    val = lv.child.val.astype(bool) if fill is False else lv.child.val
    return ct.Tensor(ct.SparseRunList(ct.Element(fill, val=val), ptr=lv.ptr, left=lv.left, right=lv.right,
                                      closed=lv.closed, left_eps=lv.left_eps, right_eps=lv.right_eps))


@settings(max_examples=40)
@given(interval_tensor(), interval_tensor(), interval_tensor(), st.sampled_from(sorted(OPS)))
def test_accumulate_runs_equals_old_plus_result(C, A, B, semiring):
    fill = FILL[semiring]
    C, A, B = (with_fill(t, fill) for t in (C, A, B))
    expr = "A[x] & B[x]" if semiring == "or" else ("A[x] * B[x]" if semiring == "+" else f"{semiring}(A[x], B[x])")
    before = C.pieces()
    got = ct.einsum(f"C[x] += {expr}", C=C, A=A, B=B, semiring=semiring)
    res = ct.einsum(f"C[x] = {expr}", A=A, B=B, semiring=semiring)
    assert C.pieces() == before                     # the old tensor is not modified
    assert isinstance(got.level, ct.SparseRunList)
    for p in probes(breakpoints_1d(C, A, B, got)):
        assert got[p] == OPS[semiring](C[p], res[p]), (p, got[p], C[p], res[p])


@pytest.mark.parametrize("semiring", ["+", "min", "max", "or"])
def test_accumulate_dense_and_ids_with_a_reduction(semiring):
    """C[i] += M[i, j] (reduced over j) in Dense and in an id SparseList: C_old ⊕ (⊕_j M[i, j])."""
    rng = np.random.default_rng(3)
    fill = {"+": 0, "min": math.inf, "max": -math.inf, "or": False}[semiring]
    dt = {"+": np.int64, "or": bool}.get(semiring, np.float64)
    m = rng.integers(-3, 4, (5, 4)).astype(dt)
    m[rng.random((5, 4)) < 0.4] = fill
    c = rng.integers(-3, 4, 5).astype(dt)
    c[[1, 3]] = fill
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(fill)), 5), data=m)
    red = {"+": np.sum, "min": np.min, "max": np.max, "or": np.any}[semiring]
    want = np.array([OPS[semiring](c[i], red(m[i])) for i in range(5)], dt)
    for fmt in (ct.Dense(ct.Element(fill)), ct.SparseList(ct.Element(fill), shape=5)):
        C = ct.Tensor(fmt, data=c)
        got = ct.einsum("C[i] += M[i, j] * d(j; counting)", C=C, M=M, semiring=semiring)
        np.testing.assert_array_equal(got.to_numpy(), want)
        np.testing.assert_array_equal(C.to_numpy(), c)


def test_accumulate_user_semiring():
    """Log-sum-exp as a user ⊕ (`ct.Semiring`): C_old ⊕ result by the same ⊕ in numpy."""
    lse = ct.Semiring("max(a, b) + log(1 + exp(min(a, b) - max(a, b)))", zero=-math.inf, name="lse")
    m = np.array([[0.0, 1.0], [2.0, -math.inf], [-math.inf, -math.inf]])
    c = np.array([0.5, -math.inf, 3.0])
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(-math.inf)), 3), data=m)
    C = ct.Tensor(ct.Dense(ct.Element(-math.inf)), data=c)
    got = ct.einsum("C[i] += M[i, j] * d(j; counting)", C=C, M=M, semiring=lse).to_numpy()
    want = np.logaddexp(c, np.logaddexp.reduce(m, axis=1))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_accumulate_pinpoints_scalars_and_reading_the_old_value():
    P = ct.Tensor(ct.SparseList(ct.Element(0.0, val=[1.0, 2.0]), ptr=[0, 2], idx=[0.5, 1.5]))
    Q = ct.Tensor(ct.SparseList(ct.Element(0.0, val=[10.0, 20.0]), ptr=[0, 2], idx=[1.5, 3.0]))
    got = ct.einsum("P[x] += Q[x]", P=P, Q=Q)
    assert [(c[0][0].value, v) for c, v in got.pieces()] == [(0.5, 1.0), (1.5, 12.0), (3.0, 20.0)]
    # the right-hand side may read the old value: P_old + 2 * P_old
    got = ct.einsum("P[x] += P[x] * 2", P=P)
    assert [v for _, v in got.pieces()] == [3.0, 6.0]
    # 0-d: a Python scalar accumulated with ⊕, against the oracle
    A = ct.intervals([0.0, 2.0], [1.0, 4.0], values=[1.0, 2.0])
    assert ct.einsum("s[] += A[x] * d(x; lebesgue)", s=1.5, A=A) == 1.5 + oracle("s[] = A[x] * d(x; lebesgue)", A=A).value
    plain = ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, semiring="max")
    assert ct.einsum("s[] += A[x] * d(x; lebesgue)", s=7.0, A=A, semiring="max") == max(7.0, plain)
    assert ct.einsum("s[] += A[x] * d(x; lebesgue)", s=-7.0, A=A, semiring="max") == max(-7.0, plain)


def test_accumulate_refusals():
    A = ct.intervals([0.0], [1.0], values=[1.0])
    S = ct.Tensor(ct.SparseInterval(ct.Element(0.0, val=[1.0]), left=[0.0], right=[2.0]))
    with pytest.raises(ct.InvalidProgramError, match="thaw is not implemented for SparseInterval"):
        ct.einsum("S[x] += A[x]", S=S, A=A)
    with pytest.raises(TypeError, match="pass the tensor .* as C="):
        ct.einsum("C[x] += A[x]", A=A)
    with pytest.raises(TypeError, match="do not pass out="):
        ct.einsum("C[x] += A[x]", C=A, A=A, out=ct.SparseRunList(ct.Element(0.0)))
    with pytest.raises(ct.InvalidProgramError, match=r"runs through ct.einsum"):
        ct.compile("C[x] += A[x]", C=A, A=A)
    with pytest.raises(ct.InvalidProgramError, match="fill"):         # C's fill must be ⊕'s identity
        ct.einsum("C[x] += A[x]", C=A, A=A, semiring="min")


def test_uniform_grid_output():
    """out=UniformGrid(SparseList) with edges: the result binned into the cells, equal to the
    unbinned result; read back through the grid; refusals."""
    rng = np.random.default_rng(5)
    xs = np.unique(rng.uniform(0.0, 10.0, 40))
    P = ct.Tensor(ct.SparseList(ct.Element(0.0, val=rng.uniform(1, 2, len(xs))), ptr=[0, len(xs)], idx=xs))
    W = ct.intervals([2.0], [7.5], values=[3.0])
    text = "C[x] = P[x] * W[x]"
    edges = np.linspace(0.0, 10.0, 6)
    got = ct.einsum(text, P=P, W=W, out=ct.UniformGrid(ct.SparseList(ct.Element(0.0)), edges=edges))
    want = ct.einsum(text, P=P, W=W, out=ct.SparseList(ct.Element(0.0)))
    assert isinstance(got.level, ct.UniformGrid) and got.pieces() == want.pieces()
    assert list(got.level.child.ptr) == list(np.searchsorted(want.level.idx, edges))
    box = ct.intervals([3.0], [6.0])
    assert ct.einsum("s[] = G[x] * B[x] * d(x; counting)", G=got, B=box) == \
        ct.einsum("s[] = G[x] * B[x] * d(x; counting)", G=want, B=box)
    with pytest.raises(ct.FormatError, match="outside the grid's cells"):
        ct.einsum(text, P=P, W=W, out=ct.UniformGrid(ct.SparseList(ct.Element(0.0)), edges=[0.0, 5.0]))
    with pytest.raises(ct.InvalidProgramError, match="needs its edges"):
        ct.einsum(text, P=P, W=W, out=ct.UniformGrid(ct.SparseList(ct.Element(0.0))))
    with pytest.raises(ct.InvalidProgramError, match="over a real SparseList"):
        ct.einsum(text, P=P, W=W, out=ct.UniformGrid(ct.SparseInterval(ct.Element(0.0)), edges=edges))


@settings(max_examples=25)
@given(interval_tensor(allow_inf=False), interval_tensor(allow_inf=False), st.integers(1, 6))
def test_uniform_grid_over_runs_output(A, B, ncells):
    """out=UniformGrid(SparseRunList) with edges: each run of the result listed in every cell it
    meets; the same values at every probe as the unbinned result, the same integral."""
    text = "C[x] = A[x] * B[x]"
    edges = np.linspace(-7.0, 13.0, ncells + 1)
    want = ct.einsum(text, A=A, B=B)
    got = ct.einsum(text, A=A, B=B, out=ct.UniformGrid(ct.SparseRunList(ct.Element(0.0)), edges=edges))
    assert isinstance(got.level, ct.UniformGrid)
    for p in probes(breakpoints_1d(A, B, want)):
        assert got[p] == want[p], p
    integral = "s[] = C[x] * d(x; lebesgue)"
    assert ct.einsum(integral, C=got) == pytest.approx(ct.einsum(integral, C=want))
    with pytest.raises(ct.FormatError, match="not inside the grid's cells"):    # runs to ±inf
        ct.einsum("C[x] = A[x] + 1", A=A, out=ct.UniformGrid(ct.SparseRunList(ct.Element(0.0)), edges=edges))
