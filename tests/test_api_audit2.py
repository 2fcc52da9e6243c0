"""The public Tensor/format API, found by an adversarial audit (session 19): each case was an internal
exception, a silently ignored or misread argument, or an answer that depended on the storage format."""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct
from ctensor.limits import Limit

from .helpers import oracle


def test_points_with_integers_past_2_53_name_the_coordinate():
    """as_array picked a whole row of a 2-D array for the error message (numpy ValueError)."""
    with pytest.raises(ct.FormatError, match=r"coords\[1, 0\] = 1152921504606846977"):
        ct.points(np.array([[0, 1], [2**60 + 1, 3]], dtype=np.int64))


@pytest.mark.parametrize("build, match", [
    (lambda: ct.SparseRunList(ct.Element(0.0), [0, 1], [0.0], [2.0]), r"val"),
    (lambda: ct.SparseRunList(ct.Element(0.0, val=[5.0]), None, [0.0], [2.0]), r"no data"),
    (lambda: ct.Dense(ct.Element(0.0, val=[1.0, 2.0, 3.0])), r"no shape"),
])
def test_a_level_tree_with_some_buffers_missing_is_refused(build, match):
    """Only a tree with no buffers at all is an empty tensor; these were read as all-fill."""
    with pytest.raises(ct.FormatError, match=match):
        ct.Tensor(build())
    assert ct.Tensor(ct.SparseRunList(ct.Element(0.0))).is_empty_format      # an output format


def test_eps_arrays_need_heterogeneous_closedness():
    """left_eps/right_eps with closed='left' were dropped: (0, 1] was stored as [0, 1)."""
    with pytest.raises(ct.FormatError, match="closed=None"):
        ct.SparseRunList(ct.Element(0.0, val=[1.0]), [0, 1], [0.0], [1.0], "left", left_eps=[1], right_eps=[0])
    T = ct.Tensor(ct.SparseRunList(ct.Element(0.0, val=[1.0]), [0, 1], [0.0], [1.0], None,
                                   left_eps=[1], right_eps=[0]))
    assert (T[0.0], T[0.5], T[1.0]) == (0.0, 1.0, 1.0)


def test_dense_data_into_a_real_sparse_list_is_refused():
    """SparseList(real=True) from dense data silently became an integer level."""
    with pytest.raises(ct.FormatError, match="real"):
        ct.Tensor(ct.SparseList(ct.Element(0.0), real=True), np.array([0.0, 2.0, 0.0]))
    T = ct.Tensor(ct.SparseList(ct.Element(0.0)), np.array([0.0, 2.0, 0.0]))    # unshaped: takes the ids
    assert T.pieces() == [((1,), 2.0)]


@pytest.mark.parametrize("level", [
    lambda: ct.Dense(ct.Element(0.0, val=[0.0, 2.0, 0.0]), 3),
    lambda: ct.SparseList(ct.Element(0.0, val=[2.0]), [0, 1], [1], shape=3),
    lambda: ct.SparsePoint(ct.Element(0.0, val=[2.0]), [1], shape=3),
    lambda: ct.SparseInterval(ct.Element(0.0, val=[2.0]), [1], [1], closed="both", shape=3),
])
def test_integer_reads_out_of_range_raise_for_every_format(level):
    """Dense raised IndexError, the sparse levels returned the fill."""
    T = ct.Tensor(level())
    assert T[1] == 2.0 and T[0] == 0.0
    for i in (3, -1, 100):
        with pytest.raises(IndexError, match="out of range"):
            T[i]


def test_an_unhashable_semiring_names_the_argument():
    A = ct.intervals([0.0], [1.0], values=[1.0])
    for bad in (["+"], {"op": "+"}):
        with pytest.raises(TypeError, match="semiring="):
            ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, semiring=bad)


def test_shapes_past_int64_are_refused_when_built():
    """The kernel's packing overflowed (OverflowError) at the first einsum."""
    for lvl in (lambda: ct.SparseList(ct.Element(0.0), shape=2**64), lambda: ct.SparsePoint(ct.Element(0.0), shape=2**63)):
        with pytest.raises(ct.FormatError, match="2\\*\\*63"):
            lvl()


@pytest.mark.parametrize("flag", ["owned", "validate"])
def test_tensor_flags_are_booleans(flag):
    """owned='no' was truthy: the caller's arrays were kept uncopied and a later write corrupted it."""
    lvl = ct.SparseRunList(ct.Element(0.0, val=np.array([3.0])), np.array([0, 1]), np.array([0.0]), np.array([2.0]))
    with pytest.raises(TypeError, match=f"{flag}="):
        ct.Tensor(lvl, **{flag: "no"})


@pytest.mark.parametrize("a, b", [(Limit(2.0, 1), Limit(3.0, -1)), (Limit(3.0, -1), Limit(1.0, 1)),
                                  (Limit(-2.0, 1), Limit(3.0, 1)), (Limit(0.0, 1), Limit(0.0, -1)),
                                  (Limit(0.0, 1), Limit(5.0)), (Limit(2.0), Limit(-1.0, -1))])
def test_limit_times_limit_is_the_product_of_the_neighbourhoods(a, b):
    """(a + sε)(b + tε) = ab + (at + bs)ε + stε²; the code took sign(a)t + sign(b)s."""
    e = 1e-9
    p = (a.value + a.eps * e) * (b.value + b.eps * e)
    want = 0 if p == a.value * b.value else (1 if p > a.value * b.value else -1)
    assert a * b == Limit(a.value * b.value, want)


def test_zero_dimensional_inputs():
    """A 0-d tensor (only a leaf, as ct.box([], []) returns) is read as T[] in an einsum; it failed
    with an internal repr."""
    T = ct.Tensor(ct.Element(0.0, val=[3.0]))
    A = ct.intervals([0.0, 2.0], [1.0, 5.0], values=[1.0, 2.0])
    assert ct.einsum("s[] = T[] * 2", T=T) == 6.0
    text = "s[] = A[x] * T[] * d(x; lebesgue)"
    assert ct.einsum(text, A=A, T=T) == 21.0 == oracle(text, A=A, T=T).value
    C = ct.einsum("C[x] = A[x] + T[]", A=A, T=T)
    assert [C[x] for x in (-1.0, 0.5, 1.5, 3.0, 9.0)] == [3.0, 4.0, 3.0, 5.0, 3.0]
    assert ct.einsum("s[] = B[] * A[x] * d(x; lebesgue)", A=A, B=ct.box([], [])) == 7.0


def test_measure_under_and_names_the_precedence():
    """`A & B * d(..)` parses as A & (B * d(..)): the error says where the measure must go."""
    S = ct.interval_set([0.0], [1.0])
    with pytest.raises(ct.InvalidProgramError,
                       match=r"must multiply the whole expression.*\(A\[\.\.\] & B\[\.\.\]\) \* d"):
        ct.einsum("O[j] = S[i, x] & S[j, x] * d(i, x; counting, boolean)", S=S, semiring="or")
