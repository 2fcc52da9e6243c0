"""Integer reductions stop at int64 overflow instead of wrapping (issue 31 (f)).

An int64 `+` reduction whose partial sum, or whose count of integer coordinates times a value,
leaves [-2**63, 2**63 - 1] makes the kernel return STATUS_INT_OVERFLOW, raised as a KernelError
that says so (a wrapped sum is a wrong answer).  Oracle: Python's unbounded ints.  Partial sums are
checked in the kernel's loop order, so a sum whose partial sum overflows is refused even where the
total would fit again (the order is the kernel's, not the user's; the check is conservative).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor import ir

BIG = 2 ** 62
I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63


def pinpoints(xs, vals):
    return ct.Tensor(ct.SparseList(ct.Element(0, val=np.array(vals, dtype=np.int64)), np.array([0, len(xs)]),
                                   np.array(xs, dtype=float)))


def dense(vals):
    return ct.Tensor(ct.Dense(ct.Element(0)), np.array(vals, dtype=np.int64))


def fill_only(fill, n):
    """A SparseList of n int coordinates storing nothing: its fill over all n (a counted run)."""
    return ct.Tensor(ct.SparseList(ct.Element(fill, val=np.array([], dtype=np.int64)), np.array([0, 0]),
                                   np.array([], dtype=np.int64), shape=n))


def overflows(text, **args):
    with pytest.raises(ct.KernelError, match="overflowed int64"):
        ct.einsum(text, **args)


def test_issue_example_two_pinpoints_of_2_pow_62():
    overflows("s[] = A[x] * d(x; counting)", A=pinpoints([0.0, 1.0], [BIG, BIG]))
    overflows("s[] = A[x] * d(x; counting)", A=pinpoints([0.0, 1.0], [-BIG, -BIG - 1]))


def test_sums_at_the_int64_limits_are_exact():
    assert ct.einsum("s[] = A[x] * d(x; counting)", A=pinpoints([0.0, 1.0], [BIG, BIG - 1])) == I64_MAX
    assert ct.einsum("s[] = A[x] * d(x; counting)", A=pinpoints([0.0, 1.0], [-BIG, -BIG])) == I64_MIN
    assert ct.einsum("s[] = D[i]", D=dense([BIG, BIG - 1, 0])) == I64_MAX


def test_dense_sum_and_tensor_output():
    overflows("s[] = D[i]", D=dense([BIG, BIG, -5]))      # the partial sum 2**63 is refused
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0))), np.array([[1, 2], [BIG, BIG]], dtype=np.int64))
    overflows("C[i] = M[i, j]", M=M)
    ok = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0))), np.array([[1, 2], [BIG, BIG - 1]], dtype=np.int64))
    assert ct.einsum("C[i] = M[i, j]", M=ok).to_numpy().tolist() == [3, I64_MAX]


@pytest.mark.parametrize("fill, n", [(2 ** 61, 3), (2 ** 61, 4), (-2 ** 61, 4), (-2 ** 61, 5), (I64_MAX, 1),
                                     (I64_MIN, 1), (I64_MIN, 2), (-1, 7), (3, 0)])
def test_count_of_int_coordinates_times_a_value(fill, n):
    """A run of n int coordinates holding one value adds n * value, checked (the counting weight)."""
    want = fill * n
    if I64_MIN <= want <= I64_MAX:
        assert ct.einsum("s[] = S[i]", S=fill_only(fill, n)) == want
    else:
        overflows("s[] = S[i]", S=fill_only(fill, n))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(I64_MIN, I64_MAX) | st.sampled_from([BIG, -BIG, I64_MAX, I64_MIN, 1, -1]),
                min_size=1, max_size=6))
def test_random_int_sums_equal_python_or_refuse(vals):
    """Against Python ints: the kernel's answer when no partial sum (in storage order, the order the
    kernel visits a Dense level) leaves int64, else the overflow error."""
    partial, fits = 0, True
    for v in vals:
        partial += v
        fits &= I64_MIN <= partial <= I64_MAX
    if fits:
        assert ct.einsum("s[] = D[i]", D=dense(vals)) == sum(vals)
    else:
        overflows("s[] = D[i]", D=dense(vals))


def test_float_sums_are_not_checked():
    D = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1e308, 1e308]))
    assert ct.einsum("s[] = D[i]", D=D) == float("inf")


def test_status_is_named():
    assert "overflowed int64" in ir.STATUS_NAMES[ir.nodes.STATUS_INT_OVERFLOW]
