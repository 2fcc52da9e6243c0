"""Affine access wrappers against the reference interpreter (paper Fig. 2 grammar; Finch's Offset,
Scale, Toeplitz and Permissive wrappers, digest §1.6; `ctensor.formats.affine`).

* Scale `A[a*x + b]`: literal and runtime coefficients of both signs (a negative one iterates the
  level backwards and flips the closedness of every endpoint), on interval, pinpoint and
  one-interval levels, every closedness kind, scalar and continuous outputs;
* Toeplitz `A[y + x]`, `A[x - y + c]`: valid where a pinpoint mask pins the outer index (paper
  §4.3, Fig. 6(c)), lowered as an Offset by the outer index's current value;
* Permissive integer modes `v[~(i + c)]`, `v[~(c - i)]`: missing outside the shape, `coalesce`;
* expressions of indices outside accesses: valid only on pinpoints.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct

from .helpers import breakpoints_1d, close, oracle, probes
from .test_differential import SETTINGS, check_scalar, interval_tensor, pinpoint_tensor

COEFS = [2.0, 0.5, -1.0, -2.0, -0.5, 3.0, -3.0, 1.0]
SHIFTS = [0.0, 1.0, -2.5, 0.25, 3.0]


@st.composite
def masks(draw):
    """A real pinpoint mask M[y] with values (SparseList over Element)."""
    ys = sorted(set(draw(st.lists(st.integers(-6, 12), max_size=5))))
    vals = [draw(st.sampled_from([1.0, 2.0, -0.5, 3.0])) for _ in ys]
    return ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array(vals)), np.array([0, len(ys)]),
                                   np.array(ys, dtype=float)))


@st.composite
def int_vectors(draw, sparse=False):
    n = draw(st.integers(1, 6))
    vals = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, -2.0, 0.5, 3.0]), min_size=n, max_size=n)))
    return ct.Tensor(ct.SparseList(ct.Element(0.0)) if sparse else ct.Dense(ct.Element(0.0)), vals)


def check_1d(text, **args):
    out = ct.einsum(text, **args)
    ref = oracle(text, **args)
    tensors = [v for v in args.values() if isinstance(v, ct.Tensor)]
    for p in probes(breakpoints_1d(*tensors, out) + [float(v) for v in ref.breakpoints(0)]):
        assert close(out[p], ref.at((p.value, p.eps))), (text, args, p, out[p], ref.at((p.value, p.eps)))


# ---------------------------------------------------------------------------------------- Scale
@SETTINGS
@given(interval_tensor(), interval_tensor(), st.sampled_from(COEFS), st.sampled_from(SHIFTS))
def test_scale_literal_and_runtime(A, B, a, c):
    """Runtime a (its sign decided by the kernel) and the same a written as a literal."""
    check_scalar("s[] = A[a*x + c] * B[x] * d(x; lebesgue)", A=A, B=B, a=a, c=c)
    check_scalar(f"s[] = A[{a!r}*x + c] * B[x] * d(x; lebesgue)", A=A, B=B, c=c)
    check_scalar("s[] = A[a*x - c] * B[x] * d(x; counting)", A=A, B=B, a=a, c=c)
    check_scalar("s[] = (A[c - a*x] * B[x] != 0) * d(x; boolean)", semiring="or", A=A, B=B, a=a, c=c)


@SETTINGS
@given(interval_tensor(), interval_tensor(), st.sampled_from(COEFS), st.sampled_from(COEFS))
def test_two_scaled_accesses(A, B, a, b):
    """Both sides scaled, in the same or opposite directions: two cursors, one frame."""
    check_scalar("s[] = A[a*x] * B[b*x + 1] * d(x; lebesgue)", A=A, B=B, a=a, b=b)
    check_scalar("s[] = min(A[a*x], B[b*x]) * d(x; lebesgue)", A=A, B=B, a=a, b=b)


@SETTINGS
@given(interval_tensor(allow_inf=False), st.sampled_from(COEFS), st.sampled_from(SHIFTS))
def test_scale_continuous_output_flips_closedness(A, a, c):
    """C[x] = A[a*x + c]: for a < 0 a run [s, e) of A becomes ((e - c)/a, (s - c)/a] of C."""
    check_1d("C[x] = A[a*x + c]", A=A, a=a, c=c)
    out = ct.einsum("C[x] = A[a*x + c]", A=A, a=a, c=c)
    for p in probes(breakpoints_1d(A, out)):
        assert close(out[p], A[ct.Limit(a * p.value + c, p.eps if a > 0 else -p.eps)])


@SETTINGS
@given(pinpoint_tensor(), interval_tensor(), st.sampled_from(COEFS), st.sampled_from(SHIFTS))
def test_scaled_pinpoints(P, A, a, c):
    """SparseList pinpoints walked backwards for a < 0 (spike walk and the stepper merge)."""
    check_scalar("s[] = P[a*x + c, i] * A[x] * d(x, i; counting, counting)", P=P, A=A, a=a, c=c)
    check_scalar("s[] = P[a*x + c, i] * A[x] * x * d(x, i; counting, counting)", P=P, A=A, a=a, c=c)


@SETTINGS
@given(st.integers(0, 4), st.data(), st.sampled_from(COEFS), st.sampled_from(SHIFTS),
       st.sampled_from(["left", "right", "both", "neither"]))
def test_scaled_one_interval_per_fiber(n, data, a, c, closed):
    """SparseInterval (one interval per id): the endpoints swap for a < 0."""
    starts = [float(data.draw(st.integers(-6, 10))) for _ in range(n)]
    ends = [s + data.draw(st.integers(1, 4)) for s in starts]
    S = ct.interval_set(starts, ends, closed=closed)
    B = data.draw(interval_tensor())
    text = "C[i] = S[i, a*x + c] * B[x] * d(x; lebesgue)"
    got = ct.einsum(text, S=S, B=B, a=a, c=c).to_numpy()
    ref = oracle(text, S=S, B=B, a=a, c=c)
    for i in range(n):
        assert close(got[i], ref.at(i)), (i, got[i], ref.at(i))


def test_zero_or_non_finite_coefficient_is_refused_at_run_time():
    A = ct.intervals([0.0], [1.0], values=[1.0])
    k = ct.compile("s[] = A[a*x + c] * d(x; lebesgue)", A=A, a=1.0, c=0.0)
    assert k(A=A, a=-2.0, c=0.0) == pytest.approx(0.5)
    for a, c in ((0.0, 0.0), (1.0, np.inf), (np.nan, 0.0)):
        with pytest.raises(ct.InvalidProgramError, match="zero coefficient"):
            k(A=A, a=a, c=c)


# ------------------------------------------------------------------------------------- Toeplitz
MASKED = "C[y] = M[y] * A[y + x] * B[x] * d(x; lebesgue)"


@SETTINGS
@given(masks(), interval_tensor(), interval_tensor(), st.sampled_from(SHIFTS))
def test_masked_convolution(M, A, B, c):
    """Fig. 6(c): valid because M's pinpoints pin y; lowered with y outer, A shifted by y."""
    check_1d(MASKED, M=M, A=A, B=B)
    check_1d("C[y] = M[y] * A[y + x + c] * B[x] * d(x; counting)", M=M, A=A, B=B, c=c)
    check_scalar("s[] = M[y] * A[x - y + c] * B[x] * d(y, x; counting, lebesgue)", M=M, A=A, B=B, c=c)
    check_scalar("s[] = M[y] * A[2*y - x] * B[x] * d(y, x; counting, lebesgue)", M=M, A=A, B=B)


@SETTINGS
@given(masks(), pinpoint_tensor(), interval_tensor())
def test_toeplitz_over_pinpoints(M, P, A):
    """A point-cloud correlation: P read at y + x, both indices pinned."""
    check_scalar("s[] = M[y] * P[y + x, i] * A[x] * d(y, x, i; counting, counting, counting)", M=M, P=P, A=A)


def test_toeplitz_order_puts_the_pinned_index_outside():
    M = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0])), np.array([0, 1]), np.array([1.0])))
    A = ct.intervals([0.0], [2.0], values=[1.0])
    B = ct.intervals([0.0], [4.0], values=[1.0])
    k = ct.compile("s[] = A[x + y] * B[x] * M[y] * d(x, y; lebesgue, counting)", A=A, B=B, M=M)
    assert k.plan.order == ["y", "x"]
    assert k(A=A, B=B, M=M) == pytest.approx(1.0)        # x in [-1, 1) ∩ [0, 4)


def test_toeplitz_outer_index_on_an_interval_is_refused():
    """order= may put the interval index outside; its value is then needed on an interval."""
    M = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0])), np.array([0, 1]), np.array([1.0])))
    A = ct.intervals([0.0], [2.0], values=[1.0])
    B = ct.intervals([0.0], [4.0], values=[1.0])
    with pytest.raises(ct.InvalidProgramError, match="value of index 'x' is used on an interval"):
        ct.einsum("s[] = A[x + y] * B[x] * M[y] * d(x, y; lebesgue, counting)", order=["x", "y"], A=A, B=B, M=M)


# ----------------------------------------------------------------------------------- Permissive
@SETTINGS
@given(int_vectors(), int_vectors(sparse=True), st.integers(-3, 7), st.sampled_from([0.0, 7.0]))
def test_permissive_integer_modes(w, v, c, default):
    """Missing outside v's shape: dropped from the sum, or replaced by coalesce's default."""
    n = w.levels()[0].shape
    for V in (v, ct.Tensor(ct.Dense(ct.Element(0.0)), v.to_numpy())):
        args = dict(v=V, w=w, c=c)
        check_scalar("s[] = v[~(i + c)] * w[i]", **args)
        check_scalar("s[] = v[~(c - i)] + w[i]", **args)
        for text in (f"C[i] = coalesce(v[~(i + c)], {default!r}) * w[i]",
                     f"C[i] = coalesce(v[~(c - i)], v[~(i - c)], {default!r}) + w[i]"):
            got = ct.einsum(text, **args).to_numpy()
            ref = oracle(text, **args)
            assert all(close(got[i], ref.at(i)) for i in range(n)), (text, got, [ref.at(i) for i in range(n)])


# (semiring, expression, annihilator of the expression's operator, output fill)
ANNIHILATING = [("min", "min(v[~(i + c)], w[i])", -math.inf), ("max", "max(w[i], v[~(c - i)])", math.inf),
                ("min", "v[~(i + c)] * w[i]", 0.0), ("max", "coalesce(min(v[~(i + c)], w[i]), 5.0) * 2", -math.inf),
                ("min", "min(v[~(i + c)], w[i]) * 2 + 1", -math.inf),
                ("min", "min(v[~(i + c)], w[i], u[~(c - i)])", -math.inf),
                ("max", "w[i] if min(v[~(i + c)], u[i]) < 0 else 1.0", -math.inf)]


@SETTINGS
@given(st.sampled_from(ANNIHILATING), st.integers(-3, 3), st.data())
def test_missing_against_an_annihilator_held_as_data(case, c, data):
    """A missing permissive read meets its operator's annihilator: the annihilator wins whether it
    is a fill (folded at compile time) or a stored value (known at run time: `simplify.MAYBE`);
    a cell left missing is dropped.  Dense and sparse w must agree with the oracle."""
    semiring, expr, z = case
    pick = st.sampled_from([z, z, 1.0, -2.0, 0.5])
    vals = {t: np.array(data.draw(st.lists(pick, min_size=4, max_size=4))) for t in "vwu"}
    fill = z if data.draw(st.booleans()) else 0.0
    for fmt in (lambda: ct.Dense(ct.Element(fill)), lambda: ct.SparseList(ct.Element(fill), shape=4),
                lambda: ct.SparseByteMap(ct.Element(fill), 4)):
        args = {t: ct.Tensor(fmt(), a) for t, a in vals.items()}
        text = f"C[i] = {expr}"
        got = ct.einsum(text, semiring=semiring, c=c, **args).to_numpy()
        ref = oracle(text, semiring=semiring, c=c, **args)
        assert all(close(got[i], ref.at(i)) for i in range(4)), (text, fill, got, [ref.at(i) for i in range(4)])
        s = f"s[] = ({expr}) * d(i; counting)"
        assert close(ct.einsum(s, semiring=semiring, c=c, **args), oracle(s, semiring=semiring, c=c, **args).value)


def test_permissive_reads_missing_not_the_fill():
    v = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1.0, 2.0]))
    w = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([10.0, 20.0]))
    assert ct.einsum("s[] = v[~(i + 1)] + w[i]", v=v, w=w) == 12.0      # i = 1 is dropped
    assert ct.einsum("C[i] = coalesce(v[~(i + 1)], 5) + w[i]", v=v, w=w).to_numpy().tolist() == [12.0, 25.0]


def test_permissive_real_mode_is_the_plain_access():
    A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, 2.0])
    assert ct.einsum("s[] = A[~(x + 1)] * d(x; lebesgue)", A=A) == ct.einsum("s[] = A[x + 1] * d(x; lebesgue)", A=A)


@pytest.mark.parametrize("text, match", [
    ("s[] = v[i + 1] * w[i]", "outside its shape"),
    ("s[] = v[~(i + 0.5)] * w[i]", "must be an integer"),
    ("s[] = v[~(2*i)] * w[i]", r"coefficient of integer index 'i' in 2\*i must be 1 or -1"),
    ("s[] = v[~(a*i)] * w[i]", "coefficient of integer index 'i' in a\\*i"),
    ("C[i] = v[~(i + 1)]", "read only through ~"),
])
def test_integer_forms_not_lowered(text, match):
    v = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1.0, 2.0]))
    w = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([10.0, 20.0]))
    with pytest.raises(ct.InvalidProgramError, match=match):
        ct.compile(text, v=v, w=w, a=1)


def test_negative_scale_on_a_grid_binned_mode_is_refused():
    P = ct.points(np.array([[0.0, 1.0], [2.0, 3.0]]), grid=(2, 2))
    B = ct.box([0.0, 0.0], [3.0, 3.0])
    with pytest.raises(ct.InvalidProgramError, match="binned by a UniformGrid"):
        ct.compile("Out[id] = (B[x, y] & P[-x, y, id]) * d(x, y; boolean, boolean)", B=B, P=P)
    out = ct.einsum("Out[id] = (B[x, y] & P[2*x, y, id]) * d(x, y; boolean, boolean)", B=B, P=P)
    assert out.to_numpy().tolist() == [True, True]


# --------------------------------------------------------------- index expressions outside accesses
@SETTINGS
@given(masks(), interval_tensor(), interval_tensor())
def test_index_expressions_on_pinpoints(M, A, B):
    check_1d("C[y] = M[y] * A[y + x] * B[x] * (y * y + 1) * d(x; lebesgue)", M=M, A=A, B=B)


@pytest.mark.parametrize("text", [
    "C[y] = M[y] * A[y + x] * B[x] * x * d(x; lebesgue)",          # x varies on B's intervals
    "s[] = A[2*x + c] * (x - c)**2 * d(x; lebesgue)",
    "C[y] = M[y] * A[y + x] * (x <= y) * d(x; lebesgue)",
])
def test_index_expressions_on_intervals_are_rejected(text):
    M = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0])), np.array([0, 1]), np.array([1.0])))
    A = ct.intervals([0.0], [2.0], values=[1.0])
    with pytest.raises(ct.InvalidProgramError, match="outside any tensor access"):
        ct.compile(text, M=M, A=A, B=A, c=1.0)


@SETTINGS
@given(int_vectors(), int_vectors(sparse=True), st.booleans())
def test_integer_toeplitz_convolution(v, w, sparse_v):
    """C[i] = Σ_j v[i - j] w[j]: the integer index sum is permissive (v is read outside its shape
    at the ends), the outer index i is integer, so pinned; numpy.convolve is the reference."""
    vv, ww = v.to_numpy(), w.to_numpy()
    if sparse_v:
        v = ct.Tensor(ct.SparseList(ct.Element(0.0)), vv)
    u = ct.Tensor(ct.Dense(ct.Element(0.0)), np.ones(len(vv) + len(ww) - 1))
    text = "C[i] = u[i] * coalesce(v[~(i - j)], 0) * w[j]"
    got = ct.einsum(text, u=u, v=v, w=w).to_numpy()
    assert np.allclose(got, np.convolve(vv, ww))
    ref = oracle(text, u=u, v=v, w=w)
    assert all(close(got[i], ref.at(i)) for i in range(len(got)))
