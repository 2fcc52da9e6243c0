"""Public API behaviour (DESIGN.md §6): point evaluation, pieces, formats, numpy round trips,
compiled kernels and their reuse, invalid programs, integer and continuous einsums."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ctensor as ct
from ctensor import Limit

INF = math.inf
LEB = "s[] = A[x] * B[x] * d(x; lebesgue)"


def bounds(t):
    """Pieces of a tensor with (value, eps) tuples for real modes."""
    out = []
    for coords, v in t.pieces():
        cs = tuple(c if isinstance(c, int) else ((c[0].value, c[0].eps), (c[1].value, c[1].eps))
                   for c in coords)
        out.append((cs, v))
    return out


# ------------------------------------------------------------------------------- evaluation
# value at: 0-ε, 0, 0+ε, 1, 2-ε, 2, 2+ε
EXPECTED = {
    "left":    [None, 1, 1, 1, 1, None, None],       # [0, 2)
    "right":   [None, None, 1, 1, 1, 1, None],       # (0, 2]
    "both":    [None, 1, 1, 1, 1, 1, None],          # [0, 2]
    "neither": [None, None, 1, 1, 1, None, None],    # (0, 2)
}
PROBES = [Limit(0.0, -1), 0.0, Limit(0.0, 1), 1.0, Limit(2.0, -1), 2.0, Limit(2.0, 1)]


@pytest.mark.parametrize("closed", sorted(EXPECTED))
def test_intervals_eval_each_closedness(closed):
    a = ct.intervals([0.0], [2.0], values=[7.5], closed=closed, fill=-1.0)
    got = [a[x] for x in PROBES]
    assert got == [7.5 if e else -1.0 for e in EXPECTED[closed]]


@pytest.mark.parametrize("closed", sorted(EXPECTED))
def test_boolean_intervals_eval(closed):
    a = ct.intervals([0.0], [2.0], closed=closed)
    assert [a[x] for x in PROBES] == [bool(e) for e in EXPECTED[closed]]
    assert a.fill is False


def test_left_closed_example_from_brief():
    a = ct.intervals([0.0], [2.0], values=[1.0])
    assert a[0.0] == 1.0 and a[Limit(2.0, -1)] == 1.0 and a[2.0] == 0.0
    assert a[np.nextafter(2.0, 0.0)] == 1.0 and a[np.nextafter(0.0, -1.0)] == 0.0


def test_many_intervals_eval_vs_numpy():
    rng = np.random.default_rng(0)
    ends = np.cumsum(rng.uniform(0.1, 1.0, 40))
    s, e = ends[0:-1:2], ends[1::2]
    vals = rng.normal(size=len(s))
    a = ct.intervals(s, e, values=vals, fill=0.0)
    xs = rng.uniform(ends[0] - 1, ends[-1] + 1, 500)
    idx = np.searchsorted(s, xs, side="right") - 1
    expect = np.where((idx >= 0) & (xs < e[np.maximum(idx, 0)]), vals[np.maximum(idx, 0)], 0.0)
    assert np.array_equal([a[x] for x in xs], expect)


def test_heterogeneous_eval_at_limits():
    a = ct.intervals([0.0, 1.0], [1.0, 2.0], values=[1.0, 2.0], closed=["left", "both"])
    assert [a[x] for x in (Limit(1.0, -1), 1.0, 2.0, Limit(2.0, 1))] == [1.0, 2.0, 2.0, 0.0]


def test_interval_set_eval():
    s = ct.interval_set([0.0, 1.0, 5.0], [2.0, 3.0, 6.0], closed="left")
    assert s.ndim == 2
    assert s[0, 0.0] is True and s[0, 2.0] is False and s[0, Limit(2.0, -1)] is True
    assert s[1, 1.5] is True and s[1, 0.5] is False
    assert s[2, 1.5] is False and s[2, 5.5] is True
    with pytest.raises(IndexError):
        s[0.5]


def test_interval_set_closed_both_eval():
    s = ct.interval_set([0.0], [2.0], closed="both")
    assert s[0, 2.0] is True and s[0, Limit(2.0, 1)] is False and s[0, Limit(0.0, -1)] is False


def test_points_eval_only_exact_coordinate_and_id():
    p = ct.points([[1.0, 2.0], [0.5, 2.0], [1.0, 3.0]])
    assert p.ndim == 3
    assert p[1.0, 2.0, 0] is True
    assert p[0.5, 2.0, 1] is True
    assert p[1.0, 3.0, 2] is True
    assert p[1.0, 2.0, 1] is False                      # right place, wrong id
    assert p[1.0, 3.0, 0] is False
    assert p[Limit(1.0, 1), 2.0, 0] is False              # infinitesimally off
    assert p[1.0, Limit(2.0, -1), 0] is False
    assert p[np.nextafter(1.0, 2.0), 2.0, 0] is False


def test_points_pieces_are_pinpoints():
    p = ct.points([[1.0], [0.5]])
    assert bounds(p) == [((((0.5, 0), (0.5, 0)), 1), True), ((((1.0, 0), (1.0, 0)), 0), True)]


def test_box_eval():
    b = ct.box([0.0, 1.0], [1.0, 2.0])                    # closed both by default
    assert b.ndim == 2
    assert b[0.0, 1.0] is True and b[1.0, 2.0] is True and b[0.5, 1.5] is True
    assert b[Limit(1.0, 1), 1.5] is False and b[0.5, 2.5] is False and b[-0.1, 1.5] is False
    h = ct.box([0.0], [1.0], closed="left")
    assert h[0.0] is True and h[Limit(1.0, -1)] is True and h[1.0] is False


# ----------------------------------------------------------------------- pieces / format / ndim
def test_pieces_ndim_format():
    a = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    assert a.ndim == 1
    assert bounds(a) == [((((0.0, 0), (2.0, -1)),), 3.0), ((((5.0, 0), (7.0, -1)),), 1.0)]
    assert "SparseRunList" in repr(a.format) and "Element" in repr(a.format)
    assert "Pattern" in repr(ct.intervals([0.0], [1.0]).format)
    s = ct.interval_set([0.0], [1.0])
    assert "Dense" in repr(s.format) and "SparseInterval" in repr(s.format)
    p = ct.points([[0.0, 1.0]])
    assert repr(p.format).count("SparseList") == 3 and "Pattern" in repr(p.format)
    assert "SparseInterval" in repr(ct.box([0.0], [1.0]).format)
    assert ct.intervals([], [], values=np.array([], float)).pieces() == []


def test_format_holds_no_data():
    a = ct.intervals([0.0], [1.0], values=[2.0])
    f = a.format
    assert isinstance(f, ct.SparseRunList) and not f.has_data()
    assert ct.Tensor(f)[0.5] == 0.0


def test_to_numpy_round_trip_dense_sparse_list_default():
    m = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    t = ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0))), m)
    assert np.array_equal(t.to_numpy(), m)


def test_to_numpy_round_trip_dense_sparse_list():
    m = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    t = ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0), shape=3)), m)
    assert t.ndim == 2
    out = t.to_numpy()
    assert out.dtype == np.float64 and np.array_equal(out, m)
    assert t.pieces() == [((0, 0), 1.0), ((0, 2), 2.0), ((1, 2), 3.0)]     # zeros not stored
    assert t[1, 2] == 3.0 and t[2, 0] == 0.0


def test_to_numpy_round_trip_dense_dense_int():
    m = np.arange(12).reshape(3, 4)
    t = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0))), m)
    out = t.to_numpy()
    assert out.dtype == np.int64 and np.array_equal(out, m)


def test_to_numpy_random_sparse():
    rng = np.random.default_rng(1)
    m = rng.normal(size=(6, 7)) * (rng.random((6, 7)) < 0.3)
    t = ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0), shape=7)), m)
    assert np.array_equal(t.to_numpy(), m)
    assert len(t.pieces()) == np.count_nonzero(m)


def test_to_numpy_shape_mismatch():
    with pytest.raises(ct.FormatError):
        ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.zeros(3))


@pytest.mark.parametrize("t", [ct.intervals([0.0], [1.0], values=[1.0]),
                               ct.interval_set([0.0], [1.0]),
                               ct.points([[0.0]]),
                               ct.box([0.0], [1.0])])
def test_to_numpy_on_real_tensor_is_type_error(t):
    with pytest.raises(TypeError):
        t.to_numpy()


# ------------------------------------------------------------------------------------ kernels
def test_compile_returns_kernel():
    a = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    b = ct.intervals([1.0], [6.0], values=[2.0])
    k = ct.compile(LEB, A=a, B=b)
    assert isinstance(k, ct.Kernel)
    assert isinstance(k.ir, str) and "while" in k.ir
    assert isinstance(k.llvm_ir, str) and "define" in k.llvm_ir
    assert isinstance(k.address, int) and k.address > 0
    assert k(A=a, B=b) == pytest.approx(8.0)               # [1,2)·3·2 + [5,6)·1·2
    assert ct.einsum(LEB, A=a, B=b) == pytest.approx(8.0)


def test_kernel_reused_for_same_format():
    a = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    b = ct.intervals([1.0], [6.0], values=[2.0])
    k = ct.compile(LEB, A=a, B=b)
    a2 = ct.intervals([0.0, 10.0, 20.0], [4.0, 11.0, 30.0], values=[1.0, 5.0, -2.0])
    b2 = ct.intervals([3.0, 10.5], [10.25, 25.0], values=[0.5, 4.0])
    assert ct.compile(LEB, A=a2, B=b2) is k
    # [3,4)·1·0.5 + [10,10.25)·5·0.5 + [10.5,11)·5·4 + [20,25)·(-2)·4
    expect = 1 * 0.5 * 1.0 + 5 * 0.5 * 0.25 + 5 * 4 * 0.5 + (-2) * 4 * 5.0
    assert expect == -28.875
    assert k(A=a2, B=b2) == pytest.approx(expect)
    assert k(A=b2, B=a2) == pytest.approx(expect)
    assert k(A=a, B=b) == pytest.approx(8.0)


def test_kernel_rejects_other_format():
    a = ct.intervals([0.0], [2.0], values=[3.0])
    b = ct.intervals([1.0], [6.0], values=[2.0])
    k = ct.compile(LEB, A=a, B=b)
    closed_both = ct.intervals([0.0], [2.0], values=[3.0], closed="both")
    with pytest.raises(TypeError):
        k(A=closed_both, B=b)
    with pytest.raises(TypeError):
        k(A=ct.intervals([0.0], [2.0]), B=b)                # Pattern leaf instead of Element
    with pytest.raises(TypeError):
        k(A=a)                                              # B missing
    assert ct.compile(LEB, A=closed_both, B=b) is not k


def test_kernel_on_empty_and_unbounded_tensors():
    a = ct.intervals([-INF], [INF], values=[2.0])
    b = ct.intervals([1.0, 3.0], [2.0, 3.5], values=[1.0, 4.0])
    assert ct.einsum(LEB, A=a, B=b) == pytest.approx(2.0 * (1.0 + 2.0))
    empty = ct.intervals(np.array([], float), np.array([], float), values=np.array([], float))
    assert ct.einsum(LEB, A=empty, B=b) == 0.0


# ---------------------------------------------------------------------------- invalid programs
A1 = ct.intervals([0.0], [2.0], values=[3.0])
B1 = ct.intervals([1.0], [6.0], values=[2.0])


def test_invalid_program_error_is_value_error():
    assert issubclass(ct.InvalidProgramError, ValueError)


@pytest.mark.parametrize("text", ["s[] = A[x] * * B[x]", "s[] = A[x", "s = A[x] * B[x]",
                                  "s[] = A[x] * B[x] * d(x; lebesgue) = 2"])
def test_unparsable(text):
    with pytest.raises(ct.InvalidProgramError):
        ct.einsum(text, A=A1, B=B1)


def test_real_reduction_without_measure():
    with pytest.raises(ct.InvalidProgramError, match=r"'x'.*measure"):
        ct.einsum("s[] = A[x] * B[x]", A=A1, B=B1)


def test_unknown_measure():
    with pytest.raises(ct.InvalidProgramError, match=r"lebesque"):
        ct.einsum("s[] = A[x] * B[x] * d(x; lebesque)", A=A1, B=B1)


def test_unknown_tensor():
    with pytest.raises(ct.InvalidProgramError, match=r"'Z'"):
        ct.einsum("s[] = A[x] * Z[x] * d(x; lebesgue)", A=A1, B=B1)


def test_missing_scalar():
    with pytest.raises(ct.InvalidProgramError, match=r"'c'"):
        ct.einsum("s[] = A[x] * c * d(x; lebesgue)", A=A1)


@pytest.mark.parametrize("text", ["s[] = A[x, y] * B[x] * d(x, y; lebesgue, lebesgue)",
                                  "s[] = S[x] * B[x] * d(x; lebesgue)"])
def test_wrong_number_of_indices(text):
    s = ct.interval_set([0.0], [1.0])
    with pytest.raises(ct.InvalidProgramError, match=r"modes"):
        ct.einsum(text, A=A1, B=B1, S=s)


def test_boolean_measure_with_plus_semiring():
    s = ct.interval_set([0.0, 1.0], [2.0, 3.0])
    # mixed measures: under the default '+' the boolean index reduces with ∨ inside the sum
    # (∑_i ∨_x, `ctensor.lang.nesting`): the number of non-empty rows
    assert ct.einsum("s[] = S[i, x] * d(i, x; counting, boolean)", S=s) == 2
    # ∨ reads a number as its truth value (as `|` does): under + over no other index, the ∨ itself
    assert ct.einsum("s[] = A[x] * B[x] * d(x; boolean)", A=A1, B=B1, semiring="+") is True
    # all-boolean measures default to 'or'; explicit 'or' is fine too
    assert ct.einsum("s[] = A[x] * B[x] * d(x; boolean)", A=A1, B=B1) is True
    assert ct.einsum("s[] = A[x] * B[x] * d(x; boolean)", A=A1, B=B1, semiring="or") is True
    far = ct.intervals([10.0], [11.0], values=[1.0])
    assert ct.einsum("s[] = A[x] * B[x] * d(x; boolean)", A=A1, B=far) is False


def test_unknown_semiring():
    with pytest.raises(ct.InvalidProgramError, match=r"semiring"):
        ct.einsum(LEB, A=A1, B=B1, semiring="times")


@pytest.mark.parametrize("order", [["y"], ["x", "x"], ["x", "y"]])
def test_order_not_a_permutation(order):
    with pytest.raises(ct.InvalidProgramError, match=r"order"):
        ct.einsum(LEB, A=A1, B=B1, order=order)


def test_empty_order_rejected():
    # index names used by no other test, so no cached kernel can answer for it
    with pytest.raises(ct.InvalidProgramError, match=r"order"):
        ct.einsum("q[] = P[y] * Q[y] * d(y; lebesgue)", P=A1, Q=B1, order=[])


def test_empty_order_rejected_after_default_compile():
    ct.einsum(LEB, A=A1, B=B1)
    with pytest.raises(ct.InvalidProgramError, match=r"order"):
        ct.einsum(LEB, A=A1, B=B1, order=[])


def test_order_permutation_checks_two_indices():
    m = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.ones((2, 3)))
    v = ct.Tensor(ct.Dense(ct.Element(0.0)), np.ones(3))
    with pytest.raises(ct.InvalidProgramError, match=r"order"):
        ct.einsum("C[i] = M[i, j] * v[j]", M=m, v=v, order=["i"])
    with pytest.raises(ct.InvalidProgramError, match=r"order"):
        ct.einsum("C[i] = M[i, j] * v[j]", M=m, v=v, order=["i", "i"])
    assert np.array_equal(ct.einsum("C[i] = M[i, j] * v[j]", M=m, v=v, order=["i", "j"]).to_numpy(),
                          [3.0, 3.0])


# --------------------------------------------------------------------------- integer einsums
@pytest.fixture(scope="module")
def mats():
    rng = np.random.default_rng(7)
    m = np.round(rng.normal(size=(4, 5)), 3)
    m[rng.random((4, 5)) < 0.4] = 0.0
    v = np.round(rng.normal(size=5), 3)
    dense = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), m)
    sparse = ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0), shape=5)), m)
    vt = ct.Tensor(ct.Dense(ct.Element(0.0)), v)
    return m, v, dense, sparse, vt


@pytest.mark.parametrize("which", ["dense", "sparse"])
def test_matvec(mats, which):
    m, v, dense, sparse, vt = mats
    c = ct.einsum("C[i] = M[i, j] * v[j]", M=dense if which == "dense" else sparse, v=vt)
    assert isinstance(c, ct.Tensor) and c.ndim == 1
    np.testing.assert_allclose(c.to_numpy(), m @ v, rtol=1e-12, atol=1e-12)


def test_matvec_explicit_counting(mats):
    m, v, dense, _, vt = mats
    c = ct.einsum("C[i] = M[i, j] * v[j] * d(j; counting)", M=dense, v=vt)
    np.testing.assert_allclose(c.to_numpy(), m @ v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("which", ["dense", "sparse"])
def test_sum_counting(mats, which):
    m, _, dense, sparse, _ = mats
    s = ct.einsum("s[] = M[i, j] * d(i, j; counting, counting)", M=dense if which == "dense" else sparse)
    assert s == pytest.approx(m.sum(), abs=1e-12)


def test_max_semiring(mats):
    m, v, dense, sparse, vt = mats
    assert ct.einsum("s[] = M[i, j] * v[j]", M=dense, v=vt, semiring="max") == pytest.approx((m * v).max())
    rows = ct.einsum("C[i] = M[i, j] * v[j]", M=sparse, v=vt, semiring="max").to_numpy()
    np.testing.assert_allclose(rows, (m * v).max(axis=1))


def test_max_semiring_sees_fill_of_sparse_input():
    # every stored value is negative; the implicit zeros of the sparse rows are the maxima
    m = np.array([[-1.0, 0.0, -2.0], [-4.0, -5.0, -6.0]])
    t = ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0), shape=3)), m)
    rows = ct.einsum("C[i] = M[i, j] * d(j; counting)", M=t, semiring="max").to_numpy()
    assert rows.tolist() == [0.0, -4.0]
    assert ct.einsum("s[] = M[i, j]", M=t, semiring="min") == -6.0


def test_integer_valued_output(mats):
    m = np.array([[1, 2], [3, 4]])
    t = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0))), m)
    s = ct.einsum("s[] = M[i, j]", M=t)
    assert s == 10 and isinstance(s, int)


# ------------------------------------------------------------------------- continuous einsums
def test_scalar_passed_by_name():
    a = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    assert ct.einsum("s[] = A[x] * c * d(x; lebesgue)", A=a, c=2.5) == pytest.approx(2.5 * 8.0)
    assert ct.einsum("s[] = A[x] * c * d(x; lebesgue)", A=a, c=-1.0) == pytest.approx(-8.0)


def test_counting_points_in_intervals():
    p = ct.points([[0.5], [2.0], [1.0], [3.0], [2.0]])
    a = ct.intervals([0.0, 2.5], [2.0, 3.0], closed="left")
    assert ct.einsum("s[] = P[x, id] * A[x] * d(x, id; counting, counting)", P=p, A=a) == 2
    a2 = ct.intervals([0.0, 2.5], [2.0, 3.0], closed="both")
    assert ct.einsum("s[] = P[x, id] * A[x] * d(x, id; counting, counting)", P=p, A=a2) == 5


def test_continuous_output_pieces_and_closedness():
    a = ct.intervals([0.0], [2.0], values=[1.5])                      # [0, 2)
    b = ct.intervals([1.0], [3.0], values=[2.0], closed="both")       # [1, 3]
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b)
    assert isinstance(c, ct.Tensor) and c.ndim == 1
    assert bounds(c) == [((((1.0, 0), (2.0, -1)),), 3.0)]             # [1, 2)
    assert c[1.0] == 3.0 and c[Limit(2.0, -1)] == 3.0 and c[2.0] == 0.0 and c[Limit(1.0, -1)] == 0.0


def test_continuous_output_open_ends():
    a = ct.intervals([0.0], [2.0], values=[1.0], closed="both")       # [0, 2]
    b = ct.intervals([1.0], [3.0], values=[1.0], closed="neither")    # (1, 3)
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b)
    assert bounds(c) == [((((1.0, 1), (2.0, 0)),), 1.0)]              # (1, 2]
    assert c[1.0] == 0.0 and c[Limit(1.0, 1)] == 1.0 and c[2.0] == 1.0


def test_continuous_output_readme_example():
    a = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    b = ct.intervals([1.0], [6.0], values=[2.0])
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b)
    assert bounds(c) == [((((1.0, 0), (2.0, -1)),), 6.0), ((((5.0, 0), (6.0, -1)),), 2.0)]
    assert (c[1.5], c[Limit(2.0, -1)], c[2.0]) == (6.0, 6.0, 0.0)


def test_continuous_output_pinpoint_intersection():
    a = ct.intervals([0.0], [1.0], values=[2.0], closed="both")       # [0, 1]
    b = ct.intervals([1.0], [2.0], values=[5.0], closed="both")       # [1, 2]
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b)
    assert bounds(c) == [((((1.0, 0), (1.0, 0)),), 10.0)]
    assert c[1.0] == 10.0 and c[Limit(1.0, 1)] == 0.0


def test_continuous_output_heterogeneous_closedness():
    a = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, 1.0], closed=["left", "both"])
    b = ct.intervals([-1.0], [10.0], values=[4.0])
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b)
    assert bounds(c) == [((((0.0, 0), (1.0, -1)),), 4.0), ((((2.0, 0), (3.0, 0)),), 4.0)]


def test_continuous_output_into_given_format():
    a = ct.intervals([0.0], [2.0], values=[1.5])
    b = ct.intervals([1.0], [3.0], values=[2.0], closed="both")
    out = ct.Tensor(ct.SparseRunList(ct.Element(0.0)))
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b, out=out)
    assert isinstance(c.format, ct.SparseRunList)
    assert bounds(c) == [((((1.0, 0), (2.0, -1)),), 3.0)]


def test_continuous_output_with_interval_set():
    s = ct.interval_set([0.0, 1.5, 4.0, 7.0], [2.0, 6.0, 4.5, 8.0])
    b = ct.intervals([1.0], [6.0], values=[2.0])
    c = ct.einsum("C[i, x] = S[i, x] * B[x]", S=s, B=b)
    assert c.ndim == 2
    assert bounds(c) == [
        ((0, ((1.0, 0), (2.0, -1))), 2.0),
        ((1, ((1.5, 0), (6.0, -1))), 2.0),
        ((2, ((4.0, 0), (4.5, -1))), 2.0),
    ]                                                                  # id 3 [7, 8) misses B
    assert c[1, Limit(6.0, -1)] == 2.0 and c[1, 6.0] == 0.0 and c[3, 7.5] == 0.0


def test_interval_set_lengths_by_id():
    s = ct.interval_set([0.0, 1.5, 4.0, 7.0], [2.0, 6.0, 4.5, 8.0])
    b = ct.intervals([1.0], [6.0], values=[2.0])
    c = ct.einsum("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=s, B=b)
    np.testing.assert_allclose(c.to_numpy(), [2.0 * 1.0, 2.0 * 4.5, 2.0 * 0.5, 0.0])


def test_continuous_output_sum_is_union_of_pieces():
    a = ct.intervals([0.0], [2.0], values=[1.5])                      # [0, 2)
    b = ct.intervals([1.0], [3.0], values=[2.0], closed="both")       # [1, 3]
    c = ct.einsum("C[x] = A[x] + B[x]", A=a, B=b)
    assert bounds(c) == [((((0.0, 0), (1.0, -1)),), 1.5), ((((1.0, 0), (2.0, -1)),), 3.5),
                         ((((2.0, 0), (3.0, 0)),), 2.0)]
    assert [c[x] for x in (Limit(0.0, -1), 0.0, 1.0, 2.0, 3.0, Limit(3.0, 1))] == [0.0, 1.5, 3.5, 2.0, 2.0, 0.0]


def test_boolean_continuous_output():
    c = ct.einsum("C[x] = A[x] * B[x]", A=ct.intervals([0.0], [2.0]), B=ct.intervals([1.0], [3.0]))
    assert c.fill is False
    assert bounds(c) == [((((1.0, 0), (2.0, -1)),), True)]


def test_out_given_as_level_and_wrong_ndim():
    a = ct.intervals([0.0], [2.0], values=[1.5])
    b = ct.intervals([1.0], [3.0], values=[2.0], closed="both")
    c = ct.einsum("C[x] = A[x] * B[x]", A=a, B=b, out=ct.SparseRunList(ct.Element(0.0)))
    assert bounds(c) == [((((1.0, 0), (2.0, -1)),), 3.0)]
    with pytest.raises(ct.InvalidProgramError, match=r"out="):
        ct.einsum("C[x] = A[x] * B[x]", A=a, B=b, out=ct.Tensor(ct.Dense(ct.SparseRunList(ct.Element(0.0)))))


def test_sparse_list_output(mats):
    m, _, dense, _, _ = mats
    c = ct.einsum("C[i] = M[i, j] * d(j; counting)", M=dense, out=ct.SparseList(ct.Element(0.0), shape=4))
    assert isinstance(c.format, ct.SparseList)
    np.testing.assert_allclose(c.to_numpy(), m.sum(axis=1), rtol=1e-12, atol=1e-12)


def test_boolean_measure_per_id():
    s = ct.interval_set([0.0, 3.5, 4.0, 3.75], [1.0, 4.0, 5.0, 6.0])
    b = ct.intervals([0.5], [3.75], values=[2.0], closed="both")
    c = ct.einsum("C[i] = S[i, x] * B[x] * d(x; boolean)", S=s, B=b)
    # id 3: [3.75, 6) ∩ [0.5, 3.75] is the pinpoint {3.75}: non-empty, so True
    assert c.to_numpy().tolist() == [True, True, False, True]


def test_call_errors():
    m = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.ones((2, 3)))
    v4 = ct.Tensor(ct.Dense(ct.Element(0.0)), np.ones(4))
    with pytest.raises(ct.FormatError, match=r"'j'"):
        ct.einsum("C[i] = M[i, j] * v[j]", M=m, v=v4)
    a = ct.intervals([0.0], [2.0], values=[1.5])
    k = ct.compile(LEB, A=a, B=a)
    with pytest.raises(ct.FormatError, match=r"no data"):
        k(A=ct.Tensor(a.format), B=a)
    with pytest.raises(TypeError):
        ct.einsum(LEB, A=a, B=[1.0, 2.0])


def test_kernel_reuse_integer_shapes_and_growing_continuous_output():
    rng = np.random.default_rng(3)

    def mk(m, v):
        return (ct.Tensor(ct.Dense(ct.SparseList(ct.Element(0.0), shape=m.shape[1])), m),
                ct.Tensor(ct.Dense(ct.Element(0.0)), v))
    m1, v1 = rng.normal(size=(2, 3)), rng.normal(size=3)
    m2, v2 = rng.normal(size=(6, 9)) * (rng.random((6, 9)) < 0.3), rng.normal(size=9)
    (M1, V1), (M2, V2) = mk(m1, v1), mk(m2, v2)
    k = ct.compile("C[i] = M[i, j] * v[j]", M=M1, v=V1)
    assert ct.compile("C[i] = M[i, j] * v[j]", M=M2, v=V2) is k
    np.testing.assert_allclose(k(M=M2, v=V2).to_numpy(), m2 @ v2, atol=1e-12)
    np.testing.assert_allclose(k(M=M1, v=V1).to_numpy(), m1 @ v1, atol=1e-12)

    a = ct.intervals([0.0], [2.0], values=[1.0])
    b = ct.intervals([1.0], [3.0], values=[2.0])
    kc = ct.compile("C[x] = A[x] * B[x]", A=a, B=b)
    a2 = ct.intervals(np.arange(0.0, 200.0, 2.0), np.arange(1.0, 201.0, 2.0), values=np.arange(1.0, 101.0))
    b2 = ct.intervals([0.5], [1000.0], values=[2.0])
    c = kc(A=a2, B=b2)                                   # 100 output runs: the buffers must grow
    assert len(c.pieces()) == 100
    assert c[0.25] == 0.0 and c[0.5] == 2.0 and c[Limit(1.0, -1)] == 2.0 and c[1.0] == 0.0
    for k_ in range(1, 100):
        assert c[2.0 * k_ + 0.5] == 2.0 * (k_ + 1) and c[2.0 * k_ + 1.5] == 0.0
