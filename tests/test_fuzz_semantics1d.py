"""Fuzz tests of 1-D continuous programs (focus: semantics1d) against the reference interpreter.

Random `ct.intervals` tensors (every closedness kind, per-interval closedness lists, boolean
tensors, non-zero fills, ±inf endpoints, zero-length [a, a] pieces, touching pieces, empty
tensors, float32 and integer value arrays, ulp-adjacent / huge / tiny / negative coordinates)
combined by random expressions of the operators of DESIGN §6 (`+ - * / **`, `& |`, comparisons,
`min`, `max`, `sqrt`, literals, a scalar passed by name) under every measure and semiring, with
0-d and continuous outputs; kernel reuse with other data, and the kernel cache.

Hand-picked cases pin the bugs the fuzzing found (see the docstring of each test).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor.limits import Limit

from .helpers import CLOSED, breakpoints_1d, close, draw_runs, oracle, probes

# compiling (and the oracle) is the cost of every example: a share of the profile's examples


def share(k):
    return settings(max_examples=max(8, settings().max_examples // k))


# ------------------------------------------------------------------------------------ strategies
@st.composite
def tensors1d(draw, fills=(0.0,), allow_inf=True, kinds=("float", "float32", "int", "bool"), coord=float):
    """A random `ct.intervals` tensor on a small integer grid (so pieces touch, share endpoints and
    degenerate to pinpoints), its coordinates mapped through `coord` (monotone)."""
    pts, hetero, closed, starts, ends, cl = draw_runs(draw, 8, allow_inf, coord)
    finite = [p for p in pts if math.isfinite(p)]
    if finite and draw(st.booleans()):                 # a zero-length piece [p, p]
        p = draw(st.sampled_from(finite))
        if all(not (s <= p <= e) for s, e in zip(starts, ends)):
            starts.append(p)
            ends.append(p)
            cl.append("both")
            order = np.argsort(starts, kind="stable")
            starts, ends, cl = ([a[i] for i in order] for a in (starts, ends, cl))
            hetero = hetero or closed != "both"
    kind = draw(st.sampled_from(kinds))
    if kind == "bool":
        vals, fill = None, False
    else:
        vals = [draw(st.sampled_from([1.0, 2.0, -1.5, 0.5, 3.0, 0.0, -2.0])) for _ in starts]
        fill = draw(st.sampled_from(fills))
        if kind == "float32":
            vals = np.array(vals, np.float32)
        elif kind == "int":
            vals = np.array([int(v) for v in vals], np.int64)
            fill = int(fill) if float(fill).is_integer() else fill
    try:
        return ct.intervals(starts, ends, values=vals, closed=cl if hetero else closed, fill=fill)
    except ct.FormatError:
        assume(False)


LEAVES = st.sampled_from(["A[x]", "B[x]", "A[x]", "B[x]", "1", "2.0", "0.5", "-1.0", "c", "True", "0"])


def _extend(sub):
    binop = st.sampled_from(["+", "-", "*", "&", "|", "<", "<=", ">", ">=", "==", "!="])
    return st.one_of(
        st.tuples(binop, sub, sub).map(lambda t: f"({t[1]} {t[0]} {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        sub.map(lambda a: f"sqrt(abs({a}))"),      # no NaN: IEEE NaN rules are not the point here
        sub.map(lambda a: f"(-{a})"),
        sub.map(lambda a: f"({a} ** 2)"),
        sub.map(lambda a: f"({a} / 4)"),
    )


EXPRS = st.recursive(LEAVES, _extend, max_leaves=4).filter(lambda e: "A[x]" in e)


def _args(e, A, B, c):
    args = {"A": A}
    if "B[x]" in e:
        args["B"] = B
    if "c" in e.replace("sqrt", "").replace("abs", ""):
        args["c"] = c
    return args


def check_scalar(text, semiring=None, **args):
    got = ct.einsum(text, semiring=semiring, **args)
    want = oracle(text, semiring=semiring, **args).value
    assert close(got, want), (text, semiring, got, want)


def check_1d(text, semiring=None, **args):
    out = ct.einsum(text, semiring=semiring, **args)
    ref = oracle(text, semiring=semiring, **args)
    tensors = [v for v in args.values() if isinstance(v, ct.Tensor)]
    bs = sorted(set(breakpoints_1d(*tensors, out) + [v for v in ref.breakpoints(0) if math.isfinite(v)]))
    for p in probes(bs):
        assert close(out[p], ref.at((p.value, p.eps))), (text, semiring, p, out[p], ref.at((p.value, p.eps)))
    return out


# ------------------------------------------------------------------ random programs vs the oracle
@share(2)
@given(tensors1d(fills=(0.0, 1.0, -1.0, 0.5)), tensors1d(fills=(0.0, 2.0)), EXPRS,
       st.sampled_from([("lebesgue", "+"), ("lebesgue", None), ("lebesgue", "max"), ("lebesgue", "min"),
                        ("boolean", "or"), ("boolean", "min"), ("boolean", "max"), ("boolean", None)]),
       st.sampled_from([2.0, -1.0, 0.5, 3]))
def test_random_expression_scalar(A, B, e, ms, c):
    """0-d outputs of random expressions under the Lebesgue and Boolean measures (the counting
    measure: next test)."""
    m, semiring = ms
    check_scalar(f"s[] = ({e}) * d(x; {m})", semiring=semiring, **_args(e, A, B, c))


@share(2)
@given(tensors1d(fills=(0.0, 1.0, -1.0, 0.5)), tensors1d(fills=(0.0, 2.0)), EXPRS,
       st.sampled_from([None, "+", "max", "min"]), st.sampled_from([2.0, -1.0, 0.5, 3]))
def test_random_expression_scalar_counting(A, B, e, semiring, c):
    """The counting measure weighs the pinpoints of the partition that every access cuts, also an
    access an annihilator or a folded branch removes from the value (`lower.simplify.CUT`)."""
    check_scalar(f"s[] = ({e}) * d(x; counting)", semiring=semiring, **_args(e, A, B, c))


@share(7)
@given(tensors1d(fills=(0.0, 1.0, -1.0), allow_inf=False), tensors1d(fills=(0.0, 2.0), allow_inf=False), EXPRS,
       st.sampled_from([None, "+", "min", "max"]), st.sampled_from([2.0, -1.0, 3]))
def test_random_expression_continuous_output(A, B, e, semiring, c):
    """C[x] = expr: probed at every breakpoint ± ε, then fed back as an input (the output is a
    heterogeneous run list, canonical: sorted, disjoint, non-empty pieces)."""
    args = _args(e, A, B, c)
    out = check_1d(f"C[x] = {e}", semiring=semiring, **args)
    prev = None
    for ((lo, hi),), _ in out.pieces():
        assert lo <= hi and (prev is None or prev < lo), out.pieces()
        prev = hi
    check_1d("D[x] = C[x] * A[x] + C[x]", C=out, A=A)


MAPS = {
    "ulp": lambda k: 1.0 + k * float(np.spacing(1.0)),      # consecutive doubles around 1
    "denormal": lambda k: k * 5e-324,
    "huge": lambda k: k * 1e307,
    "negative": lambda k: -1e15 + k * 0.125,
    "beyond 2**53": lambda k: 2.0 ** 53 + 2 * k,
}


@share(8)
@given(st.sampled_from(sorted(MAPS)), st.data())
def test_extreme_coordinates(name, data):
    """Limits are exact (value, ε) pairs: adjacent doubles, denormals, 1e308-scale and 2**53-scale
    coordinates behave like small integers."""
    f = MAPS[name]
    A = data.draw(tensors1d(fills=(0.0, 1.0), coord=f))
    B = data.draw(tensors1d(fills=(0.0,), coord=f))
    for text, semiring in [("s[] = A[x] * B[x] * d(x; lebesgue)", None), ("s[] = (A[x] + B[x]) * d(x; counting)", None),
                           ("s[] = A[x] * B[x] * d(x; counting)", None), ("s[] = (A[x] != B[x]) * d(x; boolean)", "or"),
                           ("s[] = min(A[x], B[x]) * d(x; boolean)", "min")]:
        check_scalar(text, semiring=semiring, A=A, B=B)
    out = ct.einsum("C[x] = A[x] + B[x]", A=A, B=B)
    ref = oracle("C[x] = A[x] + B[x]", A=A, B=B)
    for v in breakpoints_1d(A, B, out):
        for eps in (-1, 0, 1):
            assert close(out[Limit(v, eps)], ref.at((v, eps))), (name, v, eps)


# ------------------------------------------------------------------- logical operators (fixed)
def _int(vals):
    return np.array(vals, np.int64)


LOGIC_CASES = [
    # (text, tensors): & | and `and` are logical (the paper's &&), not bitwise on ints
    ("s[] = (A[x] & B[x]) * d(x; lebesgue)", dict(A=ct.intervals([0.0], [2.0], values=_int([1])),
                                                  B=ct.intervals([0.0], [2.0], values=_int([2])))),
    ("s[] = (A[x] and B[x]) * d(x; lebesgue)", dict(A=ct.intervals([0.0], [2.0], values=_int([1])),
                                                    B=ct.intervals([0.0], [2.0], values=_int([2])))),
    ("s[] = (E[x] & F[x]) * d(x; lebesgue)", dict(E=ct.intervals([0.0], [2.0]), F=ct.intervals([0.0], [2.0], values=[0.5]))),
    ("s[] = (F[x] | F[x]) * d(x; lebesgue)", dict(F=ct.intervals([0.0], [2.0], values=[0.5]))),
    ("s[] = (F[x] & 1.0) * d(x; lebesgue)", dict(F=ct.intervals([0.0], [2.0], values=[0.5]))),
    ("s[] = (F[x] | 0) * d(x; lebesgue)", dict(F=ct.intervals([0.0], [2.0], values=[2.0]))),
    ("C[x] = F[x] | F[x]", dict(F=ct.intervals([0.0], [2.0], values=[0.5]))),
    ("s[] = ((F[x] & c) + F[x]) * d(x; lebesgue)", dict(F=ct.intervals([0.0], [2.0], values=[0.5]), c=0.5)),
    ("s[] = sqrt(F[x] | F[x]) * d(x; lebesgue)", dict(F=ct.intervals([0.0], [2.0], values=[0.5]))),
    ("s[] = (F[x] | F[x]) * d(x; counting)", dict(F=ct.intervals([0.0], [0.0], values=[0.5], closed="both"))),
    ("s[] = (F[x] & G[x]) * d(x; boolean)", dict(F=ct.intervals([0.0], [2.0], values=[np.inf], fill=np.inf),
                                                 G=ct.intervals([1.0], [3.0], values=[-0.5]))),
]


@pytest.mark.parametrize("text, args", LOGIC_CASES, ids=[c[0] for c in LOGIC_CASES])
def test_logical_operators_on_numbers(text, args):
    """`&`/`|` of a non-bool operand were bitwise on int64 casts (1 & 2 == 0, 0.5 -> 0) or an
    IRError (`operands of add have different types f64 and i64`, `cannot convert float NaN to
    integer`); the simplifier also dropped `x & 1.0` to x."""
    semiring = "or" if "boolean" in text else None
    if text.startswith("C"):
        check_1d(text, **args)
    else:
        check_scalar(text, semiring=semiring, **args)


BOOL_CASES = [
    "s[] = ((F[x] > 0) < (G[x] > 1)) * d(x; counting)",
    "s[] = ((F[x] > 0) >= (G[x] > 1)) * d(x; lebesgue)",
    "s[] = (E[x] <= (F[x] > 1)) * d(x; lebesgue)",
    "s[] = min(E[x], F[x] > 0) * d(x; lebesgue)",
    "s[] = max(E[x] & (G[x] > 1), F[x] > 0) * d(x; lebesgue)",
    "s[] = max((F[x] > 0) > (G[x] > 1), (G[x] >= 3) < E[x]) * d(x; boolean)",
    "C[x] = min(E[x], G[x] > 1)",
    "C[x] = max(E[x], F[x] > 0) <= E[x]",
]


@pytest.mark.parametrize("text", BOOL_CASES)
def test_order_and_min_max_of_booleans(text):
    """Ordered comparisons of two booleans (`le is not defined on i1`) and min/max of booleans
    (`max needs numeric operands, not i1`) were IRErrors."""
    args = dict(E=ct.intervals([0.0], [2.0]), F=ct.intervals([0.0, 3.0], [2.0, 3.0], values=[0.5, 2.0], closed="both"),
                G=ct.intervals([1.0], [3.0], values=[2.0]))
    args = {k: v for k, v in args.items() if f"{k}[x]" in text}
    if text.startswith("C"):
        check_1d(text, **args)
    else:
        check_scalar(text, semiring="max" if "boolean" in text else None, **args)


# ------------------------------------------------------------- measure-zero pieces (fixed)
def test_lebesgue_ignores_infinite_value_on_a_pinpoint():
    """A zero-length piece [a, a] has Lebesgue measure 0: its value adds nothing, even inf or NaN
    (the weighted sum computed 0 * inf = nan)."""
    P = ct.intervals([0.0, 1.0], [0.0, 2.0], values=[math.inf, 1.0], closed=["both", "left"])
    Q = ct.intervals([0.0], [0.0], values=[-1.0], closed="both")
    assert ct.einsum("s[] = P[x] * d(x; lebesgue)", P=P) == 1.0
    assert ct.einsum("s[] = sqrt(Q[x]) * d(x; lebesgue)", Q=Q) == 0.0
    assert ct.einsum("s[] = P[x] * d(x; counting)", P=P) == math.inf
    check_scalar("s[] = (P[x] * Q[x] + P[x]) * d(x; lebesgue)", P=P, Q=Q)


# --------------------------------------------------------- counting sums of terms (fixed)
def test_counting_sum_of_integer_terms():
    """An integer counting sum was split into one loop per term (loop fission), but the counting
    measure on a real index is not additive over terms: A's value at the pinpoint 7, which only
    B cuts, was dropped (int values: -1; the same data as floats: 0)."""
    A = ct.intervals([6.0], [7.0], closed="both")
    for vals in ([-1], [-1.0]):
        B = ct.intervals([7.0], [7.0], values=vals, closed="both")
        assert ct.einsum("s[] = (A[x] + B[x]) * d(x; counting)", A=A, B=B) == 0
    P = ct.intervals([0.0], [10.0])
    Q = ct.intervals([5.0], [5.0], closed="both")
    assert ct.einsum("s[] = (P[x] + Q[x]) * d(x; counting)", P=P, Q=Q) == 2


@share(6)
@given(tensors1d(fills=(0, 1, 2)), tensors1d(fills=(0, 1)), tensors1d(fills=(0,)),
       st.sampled_from(["A[x] + B[x]", "A[x] - B[x]", "A[x] + B[x] - C[x]", "2 * A[x] - B[x]",
                        "(A[x] > 0) + (B[x] > 0)", "-A[x] + C[x]", "A[x] - (B[x] != 0)"]))
def test_counting_sums_match_oracle(A, B, C, e):
    """Sums of accesses (no annihilator drops an access) under the counting measure, all kinds."""
    args = {k: v for k, v in dict(A=A, B=B, C=C).items() if f"{k}[x]" in e}
    check_scalar(f"s[] = ({e}) * d(x; counting)", **args)
    check_scalar(f"s[] = ({e}) * d(x; counting)", semiring="max", **args)


def test_fission_kept_for_the_genomics_count():
    """The pinned form `A*S - B*E` (S, E pinpoints) still splits into two counting searches."""
    A = ct.interval_set([0.0, 2.0], [5.0, 9.0])
    B = ct.interval_set([0.0, 1.0], [3.0, 4.0])
    S, E = ct.points(np.array([[1.0], [4.0], [6.0]])), ct.points(np.array([[2.0], [3.0], [7.0]]))
    text = "C[i] = (A[i, x] * S[x, j] - B[i, x] * E[x, j]) * d(x, j; counting, counting)"
    k = ct.compile(text, A=A, B=B, S=S, E=E)
    assert "S_count" in k.ir and "E_count" in k.ir
    assert list(k(A=A, B=B, S=S, E=E).to_numpy()) == [1, 0]


# ----------------------------------------------------------------- kernels and caches (fixed)
def _random_intervals(rng, n, inf=False, closed="left"):
    pts = np.sort(rng.choice(np.arange(-10_000, 10_000), 2 * n, replace=False)).astype(float)
    s, e = pts[0::2], pts[1::2]
    if inf and n:
        s[0], e[-1] = -np.inf, np.inf
    return ct.intervals(s, e, values=rng.integers(-3, 4, n).astype(float), closed=closed)


def test_kernel_reused_on_other_sizes():
    rng = np.random.default_rng(7)
    text = "s[] = A[x] * B[x] * d(x; lebesgue)"
    k = ct.compile(text, A=_random_intervals(rng, 2), B=_random_intervals(rng, 3))
    kc = ct.compile("C[x] = A[x] - B[x]", A=_random_intervals(rng, 2), B=_random_intervals(rng, 3))
    for n1, n2, inf in [(0, 0, False), (0, 5, False), (60, 1, False), (1, 60, True), (40, 50, True)]:
        A, B = _random_intervals(rng, n1, inf), _random_intervals(rng, n2, inf)
        assert close(k(A=A, B=B), oracle(text, A=A, B=B).value)
        C, ref = kc(A=A, B=B), oracle("C[x] = A[x] - B[x]", A=A, B=B)
        for v in breakpoints_1d(A, B):
            for eps in (-1, 0, 1):
                assert close(C[Limit(v, eps)], ref.at((v, eps)))


def test_scalar_kind_on_kernel_reuse():
    """A kernel compiled for an int scalar read a float one's bits as an integer (3.7e19), and one
    compiled for a float scalar read an int's bits as a double (1.2e-322)."""
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    k = ct.compile("s[] = A[x] * c * d(x; lebesgue)", A=A, c=2)
    assert k(A=A, c=3) == 24.0 and k(A=A, c=True) == 8.0
    with pytest.raises(TypeError, match="'c'"):
        k(A=A, c=1.5)
    kf = ct.compile("s[] = A[x] * c * d(x; lebesgue)", A=A, c=2.0)
    assert kf(A=A, c=3) == 24.0 and kf(A=A, c=True) == 8.0 and kf(A=A, c=np.float32(0.5)) == 4.0
    ks = ct.compile("s[] = A[x + c] * d(x; lebesgue)", A=A, c=2)
    with pytest.raises(TypeError, match="'c'"):
        ks(A=A, c=0.5)
    assert ct.einsum("s[] = A[x] * c * d(x; lebesgue)", A=A, c=1.5) == 12.0     # einsum recompiles


def test_cache_tells_negative_zero_fill_from_zero():
    """The kernel cache keyed fills by ==, so a fill of -0.0 reused the kernel compiled for 0.0
    (whose folded 1/fill is +inf): the answer depended on the call order."""
    P = ct.intervals([0.0], [1.0], values=[1.0], fill=0.0)
    N = ct.intervals([0.0], [1.0], values=[1.0], fill=-0.0)
    text = "s[] = (1 / X[x] < 0) * d(x; boolean)"
    for X in (P, N, P, N):
        assert ct.einsum(text, X=X) == oracle(text, X=X).value


def test_nan_fill_kernel_reuse():
    """A NaN fill made every tensor's format key unequal to itself: `k(A=A2)` raised 'kernel was
    compiled for X, got X' and every einsum call recompiled."""
    A = ct.intervals([0.0], [1.0], values=[1.0], fill=math.nan)
    A2 = ct.intervals([0.0], [2.0], values=[1.0], fill=math.nan)
    B = ct.intervals([0.0], [3.0], values=[2.0])
    k = ct.compile("s[] = (A[x] == A[x]) * B[x] * d(x; lebesgue)", A=A, B=B)
    assert k(A=A2, B=B) == 4.0
    assert ct.compile("s[] = (A[x] == A[x]) * B[x] * d(x; lebesgue)", A=A2, B=B) is k


# ------------------------------------------------------------------------ constructors (fixed)
def test_merge_needs_sorted_input():
    """merge=True without sort=True silently dropped the intervals out of start order (the
    unsorted error even suggests `merge=True` to canonicalise)."""
    with pytest.raises(ct.FormatError, match=r"start\[1\].*sort=True"):
        ct.intervals([2.0, 0.0], [3.0, 1.5], merge=True)
    with pytest.raises(ct.FormatError, match=r"start\[1\]"):
        ct.intervals([0.0, 0.0], [1.0, 2.0], closed=["neither", "left"], merge=True)
    t = ct.intervals([2.0, 0.0], [3.0, 1.5], merge=True, sort=True)
    assert [(float(a), float(b)) for a, b in zip(t.level.left, t.level.right)] == [(0.0, 1.5), (2.0, 3.0)]


def test_values_stored_exactly():
    """uint64 values past int64 wrapped to negative numbers, and an int Element truncated floats."""
    with pytest.raises(ct.FormatError, match=r"\[0\]"):
        ct.intervals([0.0], [1.0], values=np.array([2 ** 63], np.uint64))
    with pytest.raises(ct.FormatError, match=r"\[1\]"):
        ct.Element(0, val=np.array([1.0, 1.5]))
    t = ct.intervals([0.0, 2.0], [1.0, 3.0], values=np.array([7, 2 ** 40], np.uint64))
    assert [v for _, v in t.pieces()] == [7, 2 ** 40]
    assert ct.intervals([0.0], [1.0], values=np.array([0.25], np.float32)).pieces()[0][1] == 0.25


# ------------------------------------------------------------------ zero-length and touching pieces
@pytest.mark.parametrize("semiring, measure", [("+", "lebesgue"), ("+", "counting"), ("min", "boolean"),
                                               ("max", "boolean"), ("min", "counting"), ("max", "lebesgue")])
def test_pinpoints_between_touching_pieces(semiring, measure):
    """[0, 1) · 1, {1} · 5, (1, 2] · 2 and the same data as one tensor of three closedness kinds."""
    A = ct.intervals([0.0, 1.0, 1.0], [1.0, 1.0, 2.0], values=[1.0, 5.0, 2.0], closed=["left", "both", "right"], fill=-1.0)
    B = ct.intervals([1.0], [1.0], values=[3.0], closed="both", fill=0.5)
    for text in [f"s[] = A[x] * d(x; {measure})", f"s[] = (A[x] * B[x]) * d(x; {measure})",
                 f"s[] = min(A[x], B[x]) * d(x; {measure})"]:
        check_scalar(text, semiring=semiring, A=A, B=B) if "B[x]" in text else check_scalar(text, semiring=semiring, A=A)


# ------------------------------------------------------- counting pinpoints cut by a dropped access
@pytest.mark.parametrize("text, args", [
    ("s[] = (A[x] * B[x] + C[x]) * d(x; counting)", "ABC"),        # B's fill annihilates A
    ("s[] = (A[x] * 0 + C[x]) * d(x; counting)", "AC"),             # a literal does
    ("s[] = ((A[x] | True) * C[x]) * d(x; counting)", "AC"),        # or's annihilator
    ("s[] = ((C[x] if (1 < 0) else A[x]) + C[x]) * d(x; counting)", "AC"),   # a folded branch
    ("s[] = (coalesce(C[x], A[x]) + C[x]) * d(x; counting)", "AC"),  # a settled coalesce
])
def test_counting_pinpoint_cut_by_a_dropped_access(text, args):
    """Before: the simplifier dropped A with its annihilated product, so its pinpoint at 12 no
    longer cut C's run and nothing was counted (0 instead of the oracle's C(12), once)."""
    T = dict(A=ct.intervals([12.0], [12.0], values=[0.5], closed="both"),     # a pinpoint at 12
             B=ct.intervals([], [], values=[]),                               # empty: 0 everywhere
             C=ct.intervals([10.0], [20.0], values=[1.0]))
    T = {k: T[k] for k in args}
    want = oracle(text, **T).value
    assert want != 0
    check_scalar(text, **T)
    check_scalar(text, semiring="max", **T)


def test_counting_cut_is_free_where_the_whole_term_vanishes():
    """Where nothing survives the annihilation the assignment is still a no-op, so the genomics count
    keeps its two counting searches and a product of sparse tensors its sparse walk."""
    A = ct.interval_set([0.0, 2.0], [5.0, 9.0])
    S = ct.points(np.array([[1.0], [4.0], [6.0]]))
    k = ct.compile("C[i] = A[i, x] * S[x, j] * d(x, j; counting, counting)", A=A, S=S)
    assert "S_count" in k.ir and list(k(A=A, S=S).to_numpy()) == [2, 2]


# ------------------------------------------------------------------------- open problems (xfail)


def test_bool_element_output_under_sum():
    A = ct.intervals([0.0], [2.0], values=[3.0])
    with pytest.raises(ct.InvalidProgramError):
        ct.einsum("C[x] = A[x] * 2", A=A, out=ct.SparseRunList(ct.Element(False)))


def test_out_of_wrong_type_is_rejected():
    A = ct.intervals([0.0], [2.0], values=[3.0])
    with pytest.raises(TypeError):
        ct.einsum("C[x] = A[x]", A=A, out="dense")


def test_repeated_access_code_size():
    """Every occurrence of an access is its own cursor: merged in one loop the code grew ~3.5x per
    occurrence (6 occurrences: 1.2M characters of IR, ~9 s to compile); a Lebesgue sum is now
    split into one loop per term."""
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    one = ct.compile("s[] = A[x] * d(x; lebesgue)", A=A)
    three = ct.compile("s[] = (A[x] * 1 + A[x] * 2 + A[x] * 3) * d(x; lebesgue)", A=A)
    assert three(A=A) == 48.0
    assert len(three.ir) < 8 * len(one.ir)


def test_sum_of_many_tracks_compiles_linearly_and_matches_the_oracle():
    rng = np.random.default_rng(7)
    ts = {}
    for j in range(6):
        e = np.sort(rng.choice(np.arange(0.0, 60.0), 8, replace=False))
        ts[f"T{j}"] = ct.intervals(e[::2], e[1::2], values=rng.uniform(-2, 2, 4), closed=CLOSED[j % 4])
    text = "s[] = (" + " + ".join(f"T{j}[x]" for j in range(6)) + " - T0[x] * T1[x]) * d(x; lebesgue)"
    k = ct.compile(text, **ts)
    assert k.split_sums and len(k.llvm_ir) < 200_000          # merged in one loop: millions of characters
    assert close(k(**ts), oracle(text, **ts).value)


@pytest.mark.parametrize("b, row0, total", [(-1.0, 0.0, 10.0), (1.0, math.inf, math.inf),
                                             (-2.0, -math.inf, -math.inf)])
def test_split_sum_with_terms_cancelling_on_an_unbounded_run(b, row0, total):
    """Split, 1 + -1 over (-inf, 0) would be inf - inf = NaN; the pointwise sum is 0 there (the
    kernel recomputes a non-finite split result pointwise)."""
    A = ct.intervals([-math.inf], [0.0], values=[1.0])
    B = ct.intervals([-math.inf, 1.0], [0.0, 3.0], values=[b, 5.0])
    text = "s[] = (A[x] + B[x]) * d(x; lebesgue)"
    assert oracle(text, A=A, B=B).value == total
    k = ct.compile(text, A=A, B=B)
    assert k.split_sums and k(A=A, B=B) == total and "pointwise" in k._siblings    # recomputed
    S = ct.interval_set([-math.inf, 1.0], [0.0, 2.0])          # a Dense output: rows (-inf, 0), [1, 2)
    text = "C[i] = (S[i, x] * A[x] + S[i, x] * B[x]) * d(x; lebesgue)"
    assert [oracle(text, S=S, A=A, B=B).at(i) for i in (0, 1)] == [row0, 5.0]
    assert ct.einsum(text, S=S, A=A, B=B).to_numpy().tolist() == [row0, 5.0]


@pytest.mark.parametrize("text, c", [("C[x] = (A[x] + c) == (A[x] + c)", math.nan), ("C[x] = (A[x] + c) != (A[x] + c)", math.nan),
                                     ("C[x] = (A[x] / c) != (A[x] / c)", 0.0), ("C[x] = (A[x] + c) <= (A[x] + c)", math.nan)])
def test_value_compared_with_itself_is_ieee(text, c):
    """Over the fill both sides are the same IR expression (0.0 + c): a NaN there must not compare
    equal to itself (the fold `e == e` -> true is for coordinates only); the stored region and the
    fill region agree, as the oracle and numpy do."""
    A = ct.intervals([0.0], [1.0], values=[1.0])
    C, ref = ct.einsum(text, A=A, c=c), oracle(text, A=A, c=c)
    for x in (-5.0, 0.5, 7.0):
        a = np.float64(1.0 if 0 <= x < 1 else 0.0)
        with np.errstate(all="ignore"):
            e = a + c if "+" in text else a / c
        want = {"==": e == e, "!=": e != e, "<=": e <= e}[text.split(") ")[1][:2].strip()]
        assert bool(C[x]) == bool(want) == bool(ref.at((x, 0))), x
    s = ct.einsum("s[] = ((A[x] + c) == (A[x] + c)) * d(x; lebesgue)", A=A, c=math.nan)
    assert s == 0.0


@pytest.mark.parametrize("text", ["C[x] = max(A[x] + c, 1)", "C[x] = min(A[x] + c, 1)",
                                  "C[x] = min(1, A[x] + c)", "C[x] = max(A[x], B[x] - A[x] + c)"])
@pytest.mark.parametrize("c", [math.nan, 0.5])
def test_min_max_of_values_propagate_nan(text, c):
    """min/max of values propagate a NaN operand in either position, as np.minimum/np.maximum and
    the oracle do (the coordinate select `a < b ? a : b` kept b when a was NaN)."""
    A = ct.intervals([0.0], [1.0], values=[1.0])
    B = ct.intervals([0.5], [2.0], values=[3.0])
    C, ref = ct.einsum(text, A=A, B=B, c=c), oracle(text, A=A, B=B, c=c)
    for x in (-5.0, 0.25, 0.75, 1.5, 7.0):
        a, bb = np.float64(1.0 if 0 <= x < 1 else 0.0), np.float64(3.0 if 0.5 <= x < 2 else 0.0)
        f = {"max(A[x] + c, 1)": lambda: np.maximum(a + c, 1), "min(A[x] + c, 1)": lambda: np.minimum(a + c, 1),
             "min(1, A[x] + c)": lambda: np.minimum(1, a + c),
             "max(A[x], B[x] - A[x] + c)": lambda: np.maximum(a, bb - a + c)}[text[7:]]
        want, got, o = float(f()), C[x], ref.at((x, 0))
        assert (math.isnan(want) and math.isnan(got) and math.isnan(o)) or want == got == o, (x, want, got, o)


@pytest.mark.parametrize("semiring", ["min", "max"])
def test_min_max_reductions_propagate_nan(semiring):
    """A NaN value (inf - inf) met by a min/max reduction is the result, as np.min/np.max give."""
    A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[math.inf, 1.0])
    B = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[math.inf, 4.0])
    for text in ("s[] = (A[x] - B[x]) * d(x; boolean)", "s[] = (B[x] - A[x]) * d(x; boolean)"):
        got, o = ct.einsum(text, A=A, B=B, semiring=semiring), oracle(text, semiring, A=A, B=B).value
        assert math.isnan(got) and math.isnan(o), (text, got, o)
    S = ct.interval_set([0.0, 2.0], [3.0, 3.0])       # id 0 meets the NaN run, id 1 does not
    C = ct.einsum("C[i] = (S[i, x] * (A[x] - B[x])) * d(x; boolean)", S=S, A=A, B=B, semiring=semiring).to_numpy()
    # id 1 sees A - B = 1 - 4 on [2, 3) and S's fill 0 elsewhere
    assert math.isnan(C[0]) and C[1] == (-3.0 if semiring == "min" else 0.0), C
