"""User-defined semirings (`ct.Semiring`) and the nested ∑_j ∨_x reduction (issue 31 item 1).

Continuous paper §3.2 (semirings and semiring-valued measures), §4.2 step 2 (a custom semiring:
the identity initialises the output, ⊕ combines the partitions' contributions), §7.2 (the
genomic Count, ∑_j ∨_x).  Each compiled ⊕ is checked against the oracle with the same semiring
written as Python functions (`tests.oracle.UserSemiring`, sharing nothing with the compiled
expression), against numpy, or against the built-in reduction it copies.
"""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor.apps import genomics as g

from .helpers import breakpoints_1d, close, oracle, probes
from .oracle import UserSemiring
from .test_differential import interval_set, interval_tensor

inf = math.inf


def _lse(a, b):
    if inf in (a, b):
        return inf
    if a == -inf:
        return b
    if b == -inf:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


# the compiled definitions, and the oracle's independent Python ones
MAX = ct.Semiring("max(a, b)", -inf, idempotent=True, annihilator=inf, name="max")
MIN = ct.Semiring("min(a, b)", inf, idempotent=True, annihilator=-inf, name="min")
# log-sum-exp: +inf annihilates (the formula alone is NaN at (inf, inf), as at (-inf, -inf))
LSE = ct.Semiring("max(a, b) + log(1 + exp(min(a, b) - max(a, b)))", -inf, annihilator=inf, repeat="a + log(w)",
                  name="lse")
LSE_NO_REPEAT = ct.Semiring("max(a, b) + log(1 + exp(min(a, b) - max(a, b)))", -inf, annihilator=inf, name="lse")
PLUS = ct.Semiring("a + b", 0, repeat="a * w", name="plus")
O_MAX = UserSemiring(max, -inf, idempotent=True)
O_MIN = UserSemiring(min, inf, idempotent=True)
O_LSE = UserSemiring(_lse, -inf, repeat=lambda a, w: a + math.log(w))
O_LSE_NO_REPEAT = UserSemiring(_lse, -inf)


def _matrix(draw, rows, cols, sparse):
    vals = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.5, -3.0, 7.0, inf, -inf]),
                                  min_size=rows * cols, max_size=rows * cols)), float).reshape(rows, cols)
    inner = ct.SparseList(ct.Element(0.0), shape=cols) if sparse else ct.Dense(ct.Element(0.0))
    return ct.Tensor(ct.Dense(inner), vals)


@st.composite
def matrices(draw):
    n, m, p = (draw(st.integers(1, 4)) for _ in range(3))
    return _matrix(draw, n, m, draw(st.booleans())), _matrix(draw, m, p, draw(st.booleans()))


@settings(max_examples=40)
@given(matrices())
def test_bottleneck_paths_integer(AB):
    """(max, min): the widest path through one intermediate node j."""
    A, B = AB
    text = "C[i, k] = min(A[i, j], B[j, k])"
    got = ct.einsum(text, semiring=MAX, A=A, B=B).to_numpy()
    want = np.max(np.minimum(A.to_numpy()[:, :, None], B.to_numpy()[None]), axis=1)
    assert np.array_equal(got, want)
    ref = oracle(text, O_MAX, A=A, B=B)
    assert all(got[i, k] == ref.at(i, k) for i in range(got.shape[0]) for k in range(got.shape[1]))
    assert np.array_equal(got, ct.einsum(text, semiring="max", A=A, B=B).to_numpy())


@settings(max_examples=15)
@given(interval_tensor(), interval_tensor(), st.sampled_from(["max", "min"]))
def test_bottleneck_real_index(A, B, which):
    """(max, min) and (min, max) over a real index: the best bottleneck along the line, a scalar and
    a continuous output, against the oracle and the built-in reduction."""
    sr, osr = (MAX, O_MAX) if which == "max" else (MIN, O_MIN)
    inner = "min" if which == "max" else "max"
    text = f"s[] = {inner}(A[x], B[x]) * d(x; lebesgue)"
    got = ct.einsum(text, semiring=sr, A=A, B=B)
    assert close(got, oracle(text, osr, A=A, B=B).value)
    assert close(got, ct.einsum(text, semiring=which, A=A, B=B))
    text = f"C[x] = {inner}(A[x], B[x])"
    C, ref = ct.einsum(text, semiring=sr, A=A, B=B), oracle(text, osr, A=A, B=B)
    assert C.fill == sr.zero
    for p in probes(breakpoints_1d(A, B, C)):
        assert close(C[p], ref.at((p.value, p.eps))), (text, p, C[p], ref.at((p.value, p.eps)))


def _vector(draw, sparse):
    n = draw(st.integers(1, 7))
    vals = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, -1.0, 2.0, 3.25, -inf]), min_size=n, max_size=n)))
    fmt = ct.SparseList(ct.Element(0.0), shape=n) if sparse else ct.Dense(ct.Element(0.0))
    return ct.Tensor(fmt, vals)


@settings(max_examples=40)
@given(st.data(), st.booleans())
def test_log_sum_exp_counting(data, sparse):
    """log ∑ exp over integer points: runs of the fill (a SparseList's gaps) by `repeat`
    (a + log n), or, without `repeat`, point by point; numpy and the oracle agree."""
    A = _vector(data.draw, sparse)
    text = "s[] = A[i] * d(i; counting)"
    v = A.to_numpy()
    with np.errstate(divide="ignore"):
        want = np.log(np.exp(v).sum())
    for sr, osr in ((LSE, O_LSE), (LSE_NO_REPEAT, O_LSE_NO_REPEAT)):
        got = ct.einsum(text, semiring=sr, A=A)
        assert close(got, want, 1e-12), (v, got, want)
        assert close(got, oracle(text, osr, A=A).value, 1e-12)


@settings(max_examples=40)
@given(interval_tensor(allow_inf=False), st.sampled_from(["lebesgue", "counting"]))
def test_log_sum_exp_real(A, measure):
    """log ∫ exp over a real index: a run of length w weighs a + log(w) (`repeat`); pinpoints
    under counting."""
    text = f"s[] = A[x] * d(x; {measure})"
    got = ct.einsum(text, semiring=LSE, A=A)
    assert close(got, oracle(text, O_LSE, A=A).value, 1e-12)


@settings(max_examples=40)
@given(interval_tensor(), interval_tensor())
def test_max_plus_lebesgue(A, B):
    """(max, +) on a real index: the largest A + B on a set of positive length."""
    text = "s[] = (A[x] + B[x]) * d(x; lebesgue)"
    got = ct.einsum(text, semiring=MAX, A=A, B=B)
    assert close(got, ct.einsum(text, semiring="max", A=A, B=B))
    assert close(got, oracle(text, O_MAX, A=A, B=B).value)


PROGRAMS_1D = ["s[] = A[x] * B[x] * d(x; lebesgue)", "s[] = (A[x] + B[x]) * d(x; counting)",
               "s[] = (A[x] > 0) * d(x; lebesgue)"]


@settings(max_examples=15)
@given(interval_tensor(allow_inf=False), interval_tensor(allow_inf=False), interval_set())
def test_user_plus_is_the_builtin(A, B, S):
    """A user copy of + (with repeat a * w, or enumerating points) gives the built-in's answers,
    on scalars, on a revisited continuous output merged by the runtime (`runtime.reduce_np`), and
    on integer indices."""
    for text in PROGRAMS_1D:
        assert close(ct.einsum(text, semiring=PLUS, A=A, B=B), ct.einsum(text, A=A, B=B)), text
    for sr in (PLUS, ct.Semiring("a + b", 0)):
        for text in ("C[x] = S[i, x] * d(i; counting)", "C[x] = S[i, x] * A[x] * d(i; counting)"):
            got, want = ct.einsum(text, semiring=sr, S=S, A=A), ct.einsum(text, S=S, A=A)
            assert list(got.pieces()) == list(want.pieces()), text
        text = "c[i] = S[i, x] * d(x; lebesgue)"
        if sr.repeat is not None:
            assert np.array_equal(ct.einsum(text, semiring=sr, S=S).to_numpy(), ct.einsum(text, S=S).to_numpy())


@st.composite
def interval_sets(draw, n_max=5):
    n = draw(st.integers(0, n_max))
    rows = [(a, a + draw(st.integers(1, 6))) for a in draw(st.lists(st.integers(-6, 12), min_size=n, max_size=n))]
    closed = draw(st.sampled_from(["left", "both", "right"]))
    return ct.interval_set([float(a) for a, _ in rows], [float(b) for _, b in rows], closed=closed)


COUNT = "C[i] = (Q[i, x] & D[j, x]) * d(x, j; boolean, counting)"


@settings(max_examples=40)
@given(interval_sets(), interval_sets())
def test_nested_count_against_the_oracle(Q, D):
    """The paper's Count (∑_j ∨_x): for each query i, the number of intervals j meeting it."""
    got = ct.einsum(COUNT, Q=Q, D=D).to_numpy()
    ref = oracle(COUNT, Q=Q, D=D)
    assert got.dtype == np.int64
    assert [int(v) for v in got] == [ref.at(i) for i in range(len(got))]
    # under a user ⊕ too: ∑ of truth values by a user +, and max_j ∨_x (idempotent: ∨ and max agree)
    assert np.array_equal(ct.einsum(COUNT, semiring=PLUS, Q=Q, D=D).to_numpy(), got)
    anyhit = ct.einsum(COUNT, semiring="or", Q=Q, D=D).to_numpy()
    assert np.array_equal(anyhit, got > 0)


@settings(max_examples=30)
@given(interval_sets(4), interval_sets(4), interval_tensor())
def test_nested_forms_against_the_oracle(S, D, A):
    """∨ of a number's truth value; a continuous output revisited per outer id (merged by the
    runtime) with no entry where ∨ is false; a Lebesgue outer index (∫_y ∨_x)."""
    text = "C[i] = (S[i, x] * A[x] * D[j, x]) * d(x, j; boolean, counting)"
    got, ref = ct.einsum(text, S=S, A=A, D=D).to_numpy(), oracle(text, S=S, A=A, D=D)
    assert [int(v) for v in got] == [ref.at(i) for i in range(len(got))]
    text = "C[y] = (S[j, y] & D[k, x] & S[j, x]) * d(j, k, x; counting, counting, boolean)"
    C, ref = ct.einsum(text, S=S, D=D), oracle(text, S=S, D=D)
    assert all(v != 0 for _, v in C.pieces())
    for p in probes(breakpoints_1d(S, D, C)):
        assert C[p] == ref.at((p.value, p.eps)), (p, C[p], ref.at((p.value, p.eps)))
    Bx = ct.box([0.0, 1.0], [2.5, 4.0])
    text = "C[i] = (S[i, x] & Bx[y, x]) * d(x, y; boolean, lebesgue)"
    got, ref = ct.einsum(text, S=S, Bx=Bx).to_numpy(), oracle(text, S=S, Bx=Bx)
    assert all(close(got[i], ref.at(i)) for i in range(len(got)))


def _window(path, lo, hi):
    from ctensor.apps.bedio import read_intervals
    df = read_intervals(str(path), "data")
    df = df[(df.chrom == "chr1") & (df.start >= lo) & (df.end <= hi) & (df.end > df.start)]
    return df.reset_index(drop=True)


def test_nested_count_on_real_tracks():
    """The Count einsum on a 4 Mb window of the real chr1 tracks equals `genomics.count_overlaps`
    and bedtools (`bedtools intersect -c`)."""
    from .genomics_oracle import oracle as bedtools
    from .test_genomics import EXONS, GERP
    q, d = _window(GERP, 10_000_000, 14_000_000), _window(EXONS, 10_000_000, 14_000_000)
    assert len(q) > 500 and len(d) > 500
    Q = ct.interval_set(q.start.to_numpy(float), q.end.to_numpy(float))
    D = ct.interval_set(d.start.to_numpy(float), d.end.to_numpy(float))
    got = ct.einsum(COUNT, Q=Q, D=D).to_numpy()
    assert np.array_equal(got, g.count_overlaps(q, d)["count"].to_numpy())
    want = bedtools("count_overlaps", q, d)
    assert np.array_equal(got, want.sort_values("qid", kind="stable")["count"].to_numpy())
    assert got.sum() > 100


def test_user_semiring_errors():
    A = ct.intervals([0.0, 2.0], [1.0, 4.0], values=[1.0, 3.0])
    with pytest.raises(TypeError, match="add="):
        ct.Semiring(max, 0.0)
    with pytest.raises(ct.InvalidProgramError, match="add="):
        ct.Semiring("max(a, ", 0.0)
    with pytest.raises(ct.InvalidProgramError, match="add=.*names 'c'"):
        ct.Semiring("a + c", 0.0)
    with pytest.raises(ct.InvalidProgramError, match="reads a tensor"):
        ct.Semiring("a + A[b]", 0.0)
    with pytest.raises(ct.InvalidProgramError, match="repeat=.*names 'b'"):
        ct.Semiring("a + b", 0.0, repeat="a * b")
    with pytest.raises(TypeError, match="zero="):
        ct.Semiring("a + b", "0")
    with pytest.raises(ct.InvalidProgramError, match="zero= is NaN"):
        ct.Semiring("a + b", math.nan)
    with pytest.raises(TypeError, match="idempotent="):
        ct.Semiring("max(a, b)", -inf, idempotent="yes")
    with pytest.raises(TypeError, match="semiring="):
        ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, semiring=max)
    with pytest.raises(ct.InvalidProgramError, match="unknown semiring"):
        ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, semiring="lse")
    # a non-idempotent ⊕ without repeat cannot weigh a length
    with pytest.raises(ct.InvalidProgramError, match="not idempotent and declares no repeat="):
        ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, semiring=LSE_NO_REPEAT)
    with pytest.raises(ct.InvalidProgramError, match="not idempotent and declares no repeat="):
        ct.einsum("s[] = A[x] * d(x; m)", A=A, semiring=LSE_NO_REPEAT, m=ct.Measure("hi - lo"))
    # a Pattern output holds true values only
    with pytest.raises(ct.InvalidProgramError):
        ct.einsum("C[x] = A[x]", A=A, semiring=MAX, out=ct.SparseRunList(ct.Pattern()))


def test_nested_count_errors():
    Q = ct.interval_set([0.0, 5.0], [10.0, 6.0])
    D = ct.interval_set([1.0, 5.5], [3.0, 7.0])
    with pytest.raises(ct.InvalidProgramError, match="storage order"):
        ct.einsum(COUNT, Q=Q, D=D, order=["i", "x", "j"])
    # an order the tensors allow, but with the counted j inside the boolean x
    V = ct.Tensor(ct.Dense(ct.Element(False)), np.array([True, False, True]))
    text = "C[i] = (Q[i, x] & V[j]) * d(x, j; boolean, counting)"
    with pytest.raises(ct.InvalidProgramError, match=r"order=\['i', 'x', 'j'\]: .*innermost loops"):
        ct.einsum(text, Q=Q, V=V, order=["i", "x", "j"])
    assert ct.einsum(text, Q=Q, V=V).to_numpy().tolist() == [2, 2]
    assert ct.einsum(text, Q=Q, V=V, order=["i", "j", "x"]).to_numpy().tolist() == [2, 2]
    # a real counting index outside the ∨ is not lowered
    P = ct.points(np.array([[1.0], [5.5]]))
    with pytest.raises(ct.InvalidProgramError, match="counting measure on the real index 'y' outside the ∨"):
        ct.einsum("s[] = (P[y, k] & D[j, x]) * d(y, k, j, x; counting, counting, counting, boolean)", P=P, D=D)
    # the boolean index x must be inside j, but P stores x outside its ids j
    P = ct.points(np.array([[1.0], [5.5]]))
    with pytest.raises(ct.InvalidProgramError, match="innermost loops, but no loop order"):
        ct.einsum("C[i] = (Q[i, x] & P[x, j]) * d(x, j; boolean, counting)", Q=Q, P=P)


def test_kernel_cache_keys_on_the_definition():
    """Equal definitions share a kernel, whatever their spacing or name; different ones (another
    zero type, another law) never do."""
    A = ct.intervals([0.0, 2.0], [1.0, 4.0], values=[1.0, 3.0])
    text = "s[] = A[x] * d(x; lebesgue)"
    k1 = ct.compile(text, A=A, semiring=ct.Semiring("max(a,b)", -inf, idempotent=True, name="one"))
    k2 = ct.compile(text, A=A, semiring=ct.Semiring("max( a , b )", -inf, idempotent=True, name="two"))
    assert k1 is k2
    k3 = ct.compile(text, A=A, semiring=ct.Semiring("a + b", 0.0, repeat="a * w"))
    k4 = ct.compile(text, A=A, semiring=ct.Semiring("a + b", 0.0, repeat="a * w * 2"))
    assert k3 is not k4 and k3(A=A) == 7.0 and k4(A=A) == 14.0
    assert ct.Semiring("a + b", 0) != ct.Semiring("a + b", 0.0) != ct.Semiring("a + b", False)
    # a fresh in-memory cache still gets each definition's own kernel from the disk cache
    ct.kernel_cache().clear()
    assert ct.einsum(text, A=A, semiring=ct.Semiring("a + b", 0.0, repeat="a * w * 2")) == 14.0
    assert ct.einsum(text, A=A, semiring=ct.Semiring("a + b", 0.0, repeat="a * w")) == 7.0


def test_threads_share_no_state():
    """Kernels of several semirings called from several threads at once give their answers."""
    A = ct.intervals([0.0, 2.0, 5.0], [1.0, 4.0, 6.0], values=[1.0, 3.0, -2.0])
    L = ct.intervals([0.0, 2.0, 5.0], [1.0, 4.0, 6.0], values=[1.0, 3.0, -2.0], fill=-inf)
    text = "s[] = A[x] * d(x; lebesgue)"
    cases = [(MAX, A, 3.0), (MIN, A, -2.0), (PLUS, A, 5.0),
             (LSE, L, math.log(math.e + 2 * math.exp(3) + math.exp(-2)))]
    errors = []

    def run(sr, A, want):
        for _ in range(20):
            got = ct.einsum(text, A=A, semiring=sr)
            if not close(got, want, 1e-12):
                errors.append((sr, got, want))
    threads = [threading.Thread(target=run, args=c) for c in cases * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_times_semiring_and_runtime_powers():
    """(×, with a ** w as repeat): `**` with a runtime exponent is llvm.pow in float."""
    times = ct.Semiring("a * b", 1.0, annihilator=0.0, repeat="a ** w", name="times")
    o_times = UserSemiring(lambda a, b: a * b, 1.0, repeat=lambda a, w: a ** w)
    w = ct.Tensor(ct.SparseList(ct.Element(1.0), shape=6), np.array([2.0, 1, 1, 3.0, 1, 0.5]))
    assert ct.einsum("s[] = w[i] * d(i; counting)", w=w, semiring=times) == 3.0
    v = ct.Tensor(ct.SparseList(ct.Element(0.0), shape=5), np.array([2.0, 0, 0, 3.0, 0]))
    assert ct.einsum("s[] = v[i] * d(i; counting)", v=v, semiring=times) == 0.0     # the fill annihilates
    I = ct.intervals([0.0, 2.0], [1.0, 4.0], values=[2.0, 3.0], fill=1.0)
    text = "s[] = I[x] * d(x; lebesgue)"
    assert ct.einsum(text, I=I, semiring=times) == 2.0 * 3.0 ** 2 == oracle(text, o_times, I=I).value
    A = ct.intervals([0.0, 2.0], [1.0, 4.0], values=[2.0, 3.0], fill=1.0)
    B = ct.intervals([0.0], [4.0], values=[0.5])
    got = ct.einsum("s[] = A[x] ** B[x] * d(x; lebesgue)", A=A, B=B)
    assert close(got, 2 ** 0.5 + 1.0 + 2 * 3 ** 0.5 + inf)     # 1 ** 0 = 1 on the unbounded gaps
    got = ct.einsum("s[] = (A[x] ** B[x]) * B[x] * d(x; lebesgue)", A=A, B=B)
    assert close(got, 0.5 * (2 ** 0.5 + 1.0 + 2 * 3 ** 0.5))
    assert close(got, oracle("s[] = (A[x] ** B[x]) * B[x] * d(x; lebesgue)", A=A, B=B).value)
    # a refusal that names a user ⊕ (a message once joined the reductions as str: TypeError)
    T0 = ct.intervals([], [])
    with pytest.raises(ct.InvalidProgramError, match="under reduction times"):
        ct.einsum("O[y] = (T0[x + y] + 1) * d(x; counting)", T0=T0, semiring=times)


COPIES = {"+": ct.Semiring("a + b", 0.0, repeat="a * w"), "min": ct.Semiring("min(a, b)", inf, idempotent=True),
          "max": ct.Semiring("max(a, b)", -inf, idempotent=True), "or": ct.Semiring("a | b", False, idempotent=True)}
PROGRAMS = ["s[] = A[x] * B[x] * d(x; lebesgue)", "C[x] = A[x] + B[x] + A[x] * B[x] + (A[x] > B[x])",
            "C[i] = S[i, x] * A[x] * d(x; lebesgue)", "C[x] = S[i, x] * B[x] * d(i; counting)"]
# boolean expressions (a user `a | b` with identity False is a monoid on truth values only)
BOOL_PROGRAMS = ["s[] = (S[i, x] & (A[x] > 0)) * d(i, x; counting, boolean)", "C[x] = (A[x] > 0) | (B[x] < 0)",
                 "C[x] = (S[i, x] & (B[x] != 0)) * d(i; counting)"]


@settings(max_examples=5)
@given(interval_tensor(), interval_tensor(), interval_set(), st.sampled_from(sorted(COPIES)))
def test_user_copies_of_the_builtins(A, B, S, name):
    """A user semiring declaring a built-in's ⊕ and laws gives the built-in's answers, through
    every lowering path these programs take (scalar and continuous outputs, merged revisits, long
    ⊕-chains, measures, the nested ∨)."""
    for text in (BOOL_PROGRAMS if name == "or" else PROGRAMS + BOOL_PROGRAMS):
        try:
            want = ct.einsum(text, semiring=name, A=A, B=B, S=S)
        except ct.InvalidProgramError:
            with pytest.raises(ct.InvalidProgramError):
                ct.einsum(text, semiring=COPIES[name], A=A, B=B, S=S)
            continue
        got = ct.einsum(text, semiring=COPIES[name], A=A, B=B, S=S)
        if isinstance(want, ct.Tensor):
            assert [(c, float(v)) for c, v in got.pieces()] == [(c, float(v)) for c, v in want.pieces()], (text, name)
        else:
            assert close(got, want), (text, name, got, want)


@settings(max_examples=25)
@given(interval_tensor(allow_inf=False))
def test_exp_and_log_in_expressions(A):
    """exp and log (llvm.exp / llvm.log; folded on literals: log(0) = -inf, log(-1) = NaN)."""
    for text in ("s[] = (exp(A[x]) - 1) * d(x; lebesgue)", "s[] = log(abs(A[x]) + 1) * d(x; lebesgue)",
                 "s[] = (A[x] + log(1) + exp(0) - 1) * d(x; lebesgue)"):
        got = ct.einsum(text, A=A)
        assert close(got, oracle(text, A=A).value, 1e-12), text
    assert ct.einsum("s[] = (A[x] + log(0)) * d(x; counting)", semiring="max", A=A) in (-inf, float("-inf"))
