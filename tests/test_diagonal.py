"""Diagonal accesses `B[x, x]`, `B[i, i]` (paper Fig. 2: an index may repeat in an access).

Both dimensions are lowered at the loop of the repeated index (`lang.diagonal`): the outer level
is unfurled, and inside each of its pieces the child fiber is read at the same index.  Oracle: the
reference interpreter (tests/oracle), which evaluates B(x, x) on the Fig. 5 partition; for
integer modes also numpy's `einsum('ii->')` / `diagonal`.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct

from .test_fuzz_multidim import INT_LEVELS, REAL_LEVELS, compare, examples, nest, seeds


def test_trace_and_diagonal_of_a_dense_matrix():
    m = np.arange(16.0).reshape(4, 4)
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), m)
    assert ct.einsum("s[] = M[i, i]", M=M) == np.einsum("ii->", m)
    assert ct.einsum("O[i] = M[i, i]", M=M).to_numpy().tolist() == np.diagonal(m).tolist()
    got = ct.einsum("O[i, j] = M[i, i] * M[j, j]", M=M).to_numpy()
    assert np.array_equal(got, np.outer(np.diagonal(m), np.diagonal(m)))


def test_diagonal_of_a_non_square_matrix_names_both_modes():
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.ones((2, 3)))
    with pytest.raises(ct.FormatError, match="index 'i': M has 3 coordinates along mode 1 but M has 2 along mode 0"):
        ct.einsum("s[] = M[i, i]", M=M)


def test_points_on_the_line_y_equals_x():
    rows = np.array([[0.0, 0.0], [1.0, 2.0], [2.5, 2.5], [2.5, 3.0], [-1.0, -1.0]])
    P = ct.points(rows)                                               # P[x, y, id]
    assert ct.einsum("s[] = P[x, x, i] * d(x, i; counting, counting)", P=P) == 3
    on = ct.einsum("O[i] = P[x, x, i] * d(x; counting)", P=P).to_numpy().tolist()
    assert on == [1, 0, 1, 0, 1]


def test_the_length_of_a_box_along_the_diagonal():
    B = ct.box([0.0, 1.0], [2.0, 4.0])                                # [0, 2] x [1, 4]
    assert ct.einsum("s[] = B[x, x] * d(x; lebesgue)", B=B) == pytest.approx(1.0)   # x in [1, 2]


@examples(8)
@given(seeds, st.sampled_from(REAL_LEVELS), st.sampled_from(REAL_LEVELS), st.sampled_from(REAL_LEVELS))
def test_real_diagonals_against_the_oracle(seed, ka, kb, kc):
    A = nest(seed, [ka, kb, "E"])
    B = nest(seed + 7, [kc, "E"])
    for text in ["s[] = A[x, x] * d(x; lebesgue)", "s[] = A[x, x] * d(x; counting)", "O[x] = A[x, x]",
                 "s[] = A[x, x] * B[x] * d(x; lebesgue)", "O[x] = A[x, x] * B[x]",
                 "s[] = A[x, x] * B[x] * d(x; counting)"]:
        compare(text, A=A, B=B)


@examples(6)
@given(seeds, st.sampled_from(REAL_LEVELS), st.sampled_from(REAL_LEVELS), st.sampled_from(["D", "SLi", "SIi"]))
def test_diagonal_above_and_below_an_integer_mode(seed, ka, kb, ki):
    A = nest(seed, [ka, kb, ki, "E"])                                 # A[x, x, i]: slices i below
    C = nest(seed, [ki, ka, kb, "E"])                                 # C[i, x, x]
    compare("O[i] = A[x, x, i] * d(x; lebesgue)", A=A)
    compare("O[i] = A[x, x, i] * d(x; counting)", A=A)
    compare("O[i] = C[i, x, x] * d(x; lebesgue)", C=C)
    compare("O[i, x] = C[i, x, x]", C=C)


@examples(6)
@given(seeds, st.sampled_from(INT_LEVELS), st.sampled_from(INT_LEVELS))
def test_integer_diagonals_against_numpy(seed, ka, kb):
    A = nest(seed, [ka, kb, "E"])
    n0, n1 = (m.shape for m in A.modes())
    if n0 != n1:
        with pytest.raises(ct.FormatError, match="coordinates along mode"):
            ct.einsum("s[] = A[i, i]", A=A)
        return
    dense = A.to_numpy()
    assert ct.einsum("s[] = A[i, i]", A=A) == pytest.approx(np.trace(dense))
    assert ct.einsum("O[i] = A[i, i]", A=A).to_numpy().tolist() == pytest.approx(np.diagonal(dense).tolist())
    compare("O[i] = A[i, i]", A=A)


def test_counting_on_a_real_diagonal_whose_fill_adds_is_refused():
    """(1 - A[x, x]) counts A's fill points: whether a stored point of A's outer level is a
    pinpoint of x -> A(x, x) depends on the child storing it, which the lowering does not decide."""
    A = nest(3, ["SLr", "SI", "E"])
    with pytest.raises(ct.InvalidProgramError, match="diagonal access on real index 'x' under the counting"):
        ct.einsum("s[] = (1 - A[x, x]) * d(x; counting)", A=A)


def test_repeated_output_index_and_mixed_kinds_are_refused():
    S = ct.interval_set([0.0, 1.0], [3.0, 2.0])
    M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.eye(2))
    with pytest.raises(ct.InvalidProgramError, match="output indices repeat"):
        ct.einsum("C[i, i] = M[i, i]", M=M)
    with pytest.raises(ct.InvalidProgramError, match="both integer and real"):
        ct.einsum("s[] = S[x, x] * d(x; lebesgue)", S=S)


@examples(6)
@given(seeds, st.sampled_from(REAL_LEVELS), st.sampled_from(REAL_LEVELS),
       st.sampled_from(["A[x, 2*x]", "A[x + 1, x]", "A[-x, x]", "A[x, c - x]", "A[0.5*x, x + c]"]))
def test_affine_diagonals_against_the_oracle(seed, ka, kb, form):
    """Each dimension reads x alone through its own affine map (Offset, Scale, reversed)."""
    A = nest(seed, [ka, kb, "E"])
    B = nest(seed + 7, [REAL_LEVELS[seed % 5], "E"])
    for text in [f"s[] = {form} * d(x; lebesgue)", f"O[x] = {form} * B[x]", f"s[] = {form} * B[x] * d(x; counting)"]:
        compare(text, A=A, B=B, c=0.5)


def test_counting_on_a_diagonal_under_max_is_refused():
    """Under max a fill point adds 0, not nothing: P[x, x, i] with no point on the diagonal would
    give 0.0 where the oracle says -inf (found by the differential fuzzer, seed 21 program 167)."""
    P = ct.points(np.array([[0.0, 1.0], [2.0, 3.0]]))
    with pytest.raises(ct.InvalidProgramError, match="reduction whose identity is 0"):
        ct.einsum("s[] = P[x, x, i] * d(x; counting)", semiring="max", P=P)
    assert ct.einsum("s[] = P[x, x, i] * d(x; counting)", P=P) == 0


def test_affine_and_grid_diagonals_under_counting_are_refused_where_the_plain_rule_does():
    """Found by the differential fuzzer: an affine diagonal under counting with min counted the outer
    coordinates of points off it (0.0 where the oracle says inf), an affine diagonal of a box
    beside a sum counted a point piece cut per dimension (3.0 for 0.0), and a diagonal of a
    grid-binned tensor read a point off the diagonal (3.0 for 0.0)."""
    P = ct.points(np.array([[0.0, -1.0], [3.0, 1.0]]))
    with pytest.raises(ct.InvalidProgramError, match="diagonal access on real index 'x' under the counting"):
        ct.einsum("s[] = P[x, 2*x, i] * d(x; counting)", semiring="min", P=P)
    B = ct.box([-np.inf, -2.0], [1.0, 0.0], closed="right")
    A = ct.intervals([-np.inf], [4.0], values=[3.0], closed="neither")
    with pytest.raises(ct.InvalidProgramError, match="diagonal access on real index 'x' under the counting"):
        ct.einsum("s[] = (B[0.5*x + 1, -2*x - 2] + A[x]) * d(x; counting)", A=A, B=B)
    inner = ct.SparseList(ct.Element(0.0, val=np.array([3.0])), np.array([0, 1]), np.array([-1.0]))
    G = ct.Tensor(ct.UniformGrid(ct.SparseList(inner, np.array([0, 1]), np.array([-2.0])), np.array([-3.0, 5.0])))
    with pytest.raises(ct.InvalidProgramError, match="diagonal read of a tensor stored under UniformGrid"):
        ct.einsum("s[] = T[x, x] * d(x; counting)", T=G)
    assert ct.einsum("s[] = P[x, 2*x, i] * d(x; counting)", P=P) == 0      # a factor under +: lowered
