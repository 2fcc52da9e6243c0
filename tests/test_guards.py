"""The z3 guard prover (continuous paper §6.3, Fig. 19 with corrected names; `ctensor.analysis.guards`).

Unit tests build guards over symbolic Limits with the lowering's own constructors (`extents`) inside
a `Context`, so facts come from the same places as in a kernel: path conditions of `if`, let
definitions and `assume`.  Proved rewrites are applied; unprovable ones — the literal Fig. 19 (its
ABStart/ABEnd names swapped), an open endpoint making the ε-free length 0 on an empty or non-pinpoint
extent, NaN operands, facts about mutable cursors, z3 giving up — are not.  End to end: kernels
compiled with and without the prover agree with the reference interpreter, and the Fig. 19 guard
is gone from the generated code.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct
from ctensor.analysis import guard_smt, guards
from ctensor.extents import Extent, SymLimit, lim_eq, lim_le, lim_max, lim_min
from ctensor.ir import build as b
from ctensor.ir import nodes as ir
from ctensor.ir.types import F64, I8
from ctensor.lower.context import Context

from .helpers import close, oracle
from .test_differential import SETTINGS, interval_set, interval_tensor, pinpoint_tensor

NINF = b.f64(-math.inf)


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    guards.guard_cache.clear()
    monkeypatch.setenv("CTENSOR_GUARD_MEMO", "0")      # these tests watch z3 itself (`guards_memo`)
    yield


def ctx_with(*names):
    """A prover context and one f64 parameter per name."""
    ctx = Context(prove_guards=True)
    return ctx, [ir.Read(ctx.param(n, F64)) for n in names]


def lim(ctx, v, eps, finite=True):
    """A stored endpoint: a let-bound value with constant ε (homogeneous level), finite as stored."""
    out = SymLimit(ctx.let(b.add(v, b.f64(0.5)), "c"), b.i8(eps), finite)   # opaque: a loaded coordinate
    if finite:
        ctx.assume(b.lt(NINF, out.v))
    return out


def under(ctx, cond, guard):
    """prove(guard) inside `if cond`."""
    got = []
    ctx.if_(cond, lambda: got.append(ctx.prove(guard)))
    assert got, "the path condition itself was decided"
    return got[0]


# ---------------------------------------------------------------- Fig. 19, corrected and literal

def fig19(ctx, a0, a1, p, a_eps=(0, 0)):
    """A = [a0, a1] (ε per end), B = the pinpoint [p, p]; lo = max of starts, hi = min of ends."""
    A0, A1 = lim(ctx, a0, a_eps[0]), lim(ctx, a1, a_eps[1])
    P = lim(ctx, p, 0)
    ctx.assume(lim_le(A0, A1))                    # a stored interval is non-empty
    lo, hi = lim_max(A0, P), lim_min(A1, P)
    return Extent(SymLimit(ctx.let(lo.v, "lo"), ctx.let(lo.e, "lo_e")),
                  SymLimit(ctx.let(hi.v, "hi"), ctx.let(hi.e, "hi_e")), True)


@pytest.mark.parametrize("a_eps", [(0, 0), (1, -1), (0, -1), (1, 0)])
def test_fig19_corrected_length_test_is_removed(a_eps):
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ext = fig19(ctx, a0, a1, p, a_eps)
    # counting measure on the intersection: `if length == 0` (a finite pinpoint) under `if lo <= hi`
    assert b.is_const(under(ctx, ext.nonempty(), ext.finite_pinpoint()), True)
    # and the Lebesgue test on it is never true
    ctx2, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ext2 = fig19(ctx2, a0, a1, p, a_eps)
    assert b.is_const(under(ctx2, ext2.nonempty(), ext2.positive_length()), False)


def test_fig19_literal_names_are_not_a_proof():
    """Fig. 19 as printed: 'ABStart' = min(ends), 'ABEnd' = max(starts), guard ABEnd >= ABStart.
    That guard holds when the intervals are disjoint, so the length test must stay (digest §3.4)."""
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ext = fig19(ctx, a0, a1, p)
    ab_start, ab_end = ext.stop, ext.start          # the swapped names
    literal = lim_le(ab_start, ab_end)              # ABEnd >= ABStart
    out = under(ctx, literal, lim_eq(ext.start, ext.stop))
    assert not b.is_const(out)


def test_open_endpoint_zero_length_but_empty():
    """A = [a0, a1) meets the pinpoint p = a1: max(starts) = a1, min(ends) = a1 - ε.  The length with
    ε dropped is 0, yet the extent is empty: neither non-emptiness nor pinpoint-ness follows."""
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ext = fig19(ctx, a0, a1, p, a_eps=(0, -1))
    zero_length = b.eq(ext.start.v, ext.stop.v)     # drop_eps(stop - start) == 0
    for guard in (ext.nonempty(), ext.is_pinpoint(), ext.finite_pinpoint()):
        out = under(ctx, zero_length, guard)
        assert not b.is_const(out, True), guard
    # ... and [v - ε, v] has length 0 but is not a pinpoint either
    ctx, (v, w) = ctx_with("v", "w")
    x = lim(ctx, v, -1)
    y = lim(ctx, w, 0)
    e = Extent(x, y, True)
    assert not b.is_const(under(ctx, b.eq(x.v, y.v), e.is_pinpoint()), True)
    assert b.is_const(under(ctx, b.eq(x.v, y.v), e.nonempty()), True)   # but it is non-empty


# ---------------------------------------------------------------- faithfulness of the encoding

def test_nan_operands_block_proofs():
    ctx, (x, y) = ctx_with("x", "y")
    guard = b.le(b.minimum(x, y), x)                # false when x or y is NaN (codegen: x < y ? x : y)
    assert ctx.prove(guard) is guard
    ctx.assume(b.lt(NINF, x))                       # ordered comparisons: x, y are not NaN here
    ctx.assume(b.lt(NINF, y))
    assert b.is_const(ctx.prove(guard), True)


def test_infinities():
    # raw comparisons: the folding constructors already decide these for non-NaN operands
    inf = b.f64(math.inf)
    ctx, (x,) = ctx_with("x")
    assert not b.is_const(ctx.prove(ir.Cmp("le", x, inf)))          # x may be NaN
    ctx.assume(b.lt(NINF, x))
    assert b.is_const(ctx.prove(ir.Cmp("le", x, inf)), True)
    assert b.is_const(ctx.prove(ir.Cmp("lt", inf, x)), False)
    assert b.is_const(ctx.prove(ir.Cmp("lt", NINF, x)), True)
    assert not b.is_const(ctx.prove(b.lt(x, b.f64(1e308))))         # finite is not bounded


def test_eps_domain_and_float_arithmetic():
    ctx, (x,) = ctx_with("x")
    e = ctx.let(b.cast(I8, b.load(ir.Read(ctx.param("eps", ir.PtrType(I8))), 0)), "e")
    e = ctx.let(b.load(ir.Read(ctx.param("eps2", ir.PtrType(I8))), 0), "e2")
    assert b.is_const(ctx.prove(b.le(e, b.i8(1))), True)              # ε ∈ {-1, 0, 1}
    assert not b.is_const(ctx.prove(b.le(e, b.i8(0))))
    assert b.is_const(ctx.prove(b.le(b.minimum(b.add(e, b.i8(1)), b.i8(1)), b.i8(1))), True)
    # float sums round: (x + 1) - 1 == x is not a proof over the reals that holds for float64
    ctx.assume(b.lt(NINF, x))
    assert not b.is_const(ctx.prove(b.eq(b.sub(b.add(x, b.f64(1.0)), b.f64(1.0)), x)))


def test_facts_on_mutable_cursors_are_not_kept():
    ctx, (x,) = ctx_with("x")
    m = ctx.mut(F64, x, "m")
    c = b.lt(NINF, ir.Read(m))
    got = []
    ctx.if_(c, lambda: (ctx.assign(m, b.f64(-math.inf)), got.append(ctx.prove(c))))
    assert got[0] is c                              # m was reassigned inside: the guard stays
    # a let snapshot of the cursor is a value: facts about it hold.  max(x, snap) is
    # `x > snap ? x : snap`, above -inf even when x is NaN; max(snap, x) is NaN then
    snap = ctx.let(ir.Read(m), "snap")
    got = []
    ctx.if_(b.lt(NINF, snap), lambda: got.extend([ctx.prove(b.lt(NINF, b.maximum(x, snap))),
                                                  ctx.prove(b.lt(NINF, b.maximum(snap, x)))]))
    assert b.is_const(got[0], True) and not b.is_const(got[1])


def test_redundant_conjunct_is_dropped_and_cached():
    ctx, (x,) = ctx_with("x")
    xs = SymLimit(ctx.let(b.add(x, b.f64(0.0)), "xs"), b.i8(0))
    ext = Extent(SymLimit.const(ct.Limit(-math.inf, 1)), xs, True)
    g = ext.nonempty()             # ((-inf < xs) | (-inf == xs & 1 <= 0)) & (-inf < xs)
    out = ctx.prove(g)
    assert isinstance(out, ir.Cmp) and out.op == "lt"
    # the same guard over other names: an alpha-renamed cache hit, no z3
    ctx2, (y,) = ctx_with("y")
    ys = SymLimit(ctx2.let(b.add(y, b.f64(0.0)), "ys"), b.i8(0))
    out2 = ctx2.prove(Extent(SymLimit.const(ct.Limit(-math.inf, 1)), ys, True).nonempty())
    assert isinstance(out2, ir.Cmp) and ctx2.prover.stats["cache_hits"] == 1 and ctx2.prover.stats["z3_checks"] == 0


def test_unknown_and_budget_keep_the_guard(monkeypatch):
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ext = fig19(ctx, a0, a1, p)
    monkeypatch.setattr(guard_smt, "RLIMIT", 1)     # z3 gives up at once
    g = ext.finite_pinpoint()
    assert under(ctx, ext.nonempty(), g) is g
    assert ctx.prover.stats["z3_unknown"] >= 1
    monkeypatch.undo()
    guards.guard_cache.clear()
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ctx.prover.max_checks = 0
    ext = fig19(ctx, a0, a1, p)
    g = ext.finite_pinpoint()
    assert under(ctx, ext.nonempty(), g) is g and ctx.prover.stats["z3_checks"] == 0


def test_guard_around_nothing_costs_no_z3():
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    ext = fig19(ctx, a0, a1, p)
    ctx.if_(ext.nonempty(), lambda: ctx.if_(ext.finite_pinpoint(), lambda: None, prove=True), prove=True)
    assert ctx.prover.stats["z3_checks"] == 0
    assert not any(isinstance(st, ir.If) for st in ctx.statements())


def test_decided_guard_keeps_its_load_behind_a_branch():
    """`guard` if-converts a body of lets and accumulator updates (it runs speculatively).  When
    the prover removed an inner `if` using the guard's own condition, a load that `if` protected
    must not run when the condition is false: the body stays an `if`."""
    ctx, (a0, a1, p) = ctx_with("a0", "a1", "p")
    buf = ir.Read(ctx.param("buf", ir.PtrType(F64)))
    acc = ctx.mut(F64, b.f64(0.0), "acc")
    ext = fig19(ctx, a0, a1, p)

    def body():
        ctx.if_(ext.finite_pinpoint(), lambda: ctx.assign(acc, b.add(ir.Read(acc), b.load(buf, 0))), prove=True)
    ctx.guard(ext.nonempty(), body, prove=True)
    last = ctx.statements()[-1]
    assert isinstance(last, ir.If) and ctx.prover.stats["true"] == 1
    assert isinstance(last.then[-1], ir.Assign)       # the inner test is gone, the branch stays


# ---------------------------------------------------------------- kernels

def _conds(stmts):
    for s in stmts:
        if isinstance(s, ir.If):
            yield s.cond
            yield from _conds(s.then)
            yield from _conds(s.orelse)
        elif isinstance(s, (ir.While, ir.For)):
            yield from _conds(s.body)


def _pinpoint_tests(k) -> int:
    """If-conditions testing Limit equality of an extent's ends (`is_pinpoint`: ε == ε)."""
    def eps_eq(e):
        if isinstance(e, ir.Cmp) and e.op == "eq" and e.a.type is I8:
            return True
        return any(eps_eq(getattr(e, f)) for f in ("a", "b", "cond") if hasattr(e, f))
    return sum(eps_eq(c) for c in _conds(k.fn.body))


def _sparse_point(xs, vs):
    return ct.Tensor(ct.Dense(ct.SparsePoint(ct.Element(0.0, val=np.asarray(vs, float)), idx=np.asarray(xs, float)), len(xs)))


def test_fig19_guard_is_gone_from_the_kernel():
    """C[i] = T[i, x] * A[x] * d(x; counting): each id's pinpoint meets A's intervals; the counting
    collapse's `length == 0` test under the intersection's non-empty guard is proved and removed."""
    T = _sparse_point([1.0, 3.0, 7.0], [1.0, -2.0, 0.5])
    A = ct.intervals([0.0, 3.0], [3.0, 6.0], values=[2.0, 1.0], closed=["left", "both"])
    text = "C[i] = T[i, x] * A[x] * d(x; counting)"
    on = ct.compile(text, T=T, A=A, prove_guards=True)
    off = ct.compile(text, T=T, A=A, prove_guards=False)
    assert _pinpoint_tests(off) >= 1 and _pinpoint_tests(on) == 0
    assert on.guard_stats["true"] >= 1 and off.guard_stats is None
    assert np.array_equal(on(T=T, A=A).to_numpy(), off(T=T, A=A).to_numpy())
    assert np.array_equal(on(T=T, A=A).to_numpy(), [2.0, -2.0, 0.0])


def test_points_counting_drops_the_finite_test():
    """s = Σ P[x, i] A[x] (counting): the spike's pinpoint is a stored coordinate, so its `> -inf`
    test goes; the guard count drops and the answer does not change."""
    P = ct.points(np.array([[1.0], [2.0], [5.0]]))
    A = ct.intervals([0.0, 4.0], [3.0, 6.0], values=[2.0, 1.0])
    text = "s[] = P[x, i] * A[x] * d(x, i; counting, counting)"
    on = ct.compile(text, P=P, A=A, prove_guards=True)
    off = ct.compile(text, P=P, A=A, prove_guards=False)
    assert len(list(_conds(on.fn.body))) < len(list(_conds(off.fn.body)))
    assert on(P=P, A=A) == off(P=P, A=A) == 5.0


def test_switch(monkeypatch):
    A = ct.intervals([0.0], [1.0], values=[2.0])
    monkeypatch.setenv("CTENSOR_PROVE_GUARDS", "0")
    k = ct.compile("s[] = A[x] * A[x] * d(x; counting)", A=A)
    assert k.guard_stats is None and not k.prove_guards
    assert ct.compile("s[] = A[x] * A[x] * d(x; counting)", A=A, prove_guards=True).guard_stats is not None
    monkeypatch.setenv("CTENSOR_PROVE_GUARDS", "1")
    assert ct.compile("s[] = A[x] * A[x] * d(x; counting)", A=A).prove_guards


# ---------------------------------------------------------------- differential: both settings vs the oracle

def _both(text, semiring=None, **tensors):
    want = oracle(text, semiring=semiring, **tensors)
    for flag in (True, False):
        yield flag, ct.einsum(text, semiring=semiring, prove_guards=flag, **tensors), want


def _check_scalar(text, semiring=None, **tensors):
    for flag, got, want in _both(text, semiring, **tensors):
        assert close(got, want.value), (text, flag, got, want.value)


@SETTINGS
@given(pinpoint_tensor(), interval_tensor())
def test_pinpoints_times_intervals(P, A):
    _check_scalar("s[] = P[x, i] * A[x] * d(x, i; counting, counting)", P=P, A=A)
    _check_scalar("s[] = P[x, i] * A[x] * d(x, i; lebesgue, counting)", P=P, A=A)
    _check_scalar("s[] = (P[x, i] * A[x] != 0) * d(x, i; boolean, boolean)", P=P, A=A)


@SETTINGS
@given(interval_tensor(), interval_tensor())
def test_interval_pairs(A, B):
    _check_scalar("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    _check_scalar("s[] = A[x] * B[x] * d(x; counting)", A=A, B=B)
    _check_scalar("s[] = (A[x] + B[x]) * d(x; boolean)", semiring="min", A=A, B=B)


@SETTINGS
@given(st.lists(st.tuples(st.integers(-6, 12), st.sampled_from([1.0, -2.0, 0.5])), max_size=6),
       interval_tensor())
def test_sparse_point_per_id(pts, A):
    """The Fig. 19 kernel: per id a pinpoint, intersected with A's intervals, counting measure."""
    T = _sparse_point([p[0] for p in pts], [p[1] for p in pts])
    text = "C[i] = T[i, x] * A[x] * d(x; counting)"
    ref = oracle(text, T=T, A=A)
    for flag in (True, False):
        got = ct.einsum(text, T=T, A=A, prove_guards=flag).to_numpy()
        for i in range(len(pts)):
            assert close(got[i], ref.at(i)), (flag, i, got[i], ref.at(i))


@SETTINGS
@given(interval_set(), interval_tensor())
def test_interval_set_rows(S, B):
    text = "C[i] = S[i, x] * B[x] * d(x; lebesgue)"
    ref = oracle(text, S=S, B=B)
    for flag in (True, False):
        got = ct.einsum(text, S=S, B=B, prove_guards=flag).to_numpy()
        for i in range(len(got)):
            assert close(got[i], ref.at(i)), (flag, i)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=30),
       st.integers(0, 9), st.integers(0, 9), st.integers(0, 4), st.integers(0, 4),
       st.sampled_from(["left", "right", "both", "neither"]))
def test_box_search(pts, x0, y0, w, h, closed):
    coords = np.array(pts, dtype=float).reshape(-1, 2)
    P = ct.points(coords)
    B = ct.box([x0, y0], [x0 + w + 1, y0 + h + 1], closed=closed)
    text = "Out[id] = (B[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"
    ref = oracle(text, B=B, P=P)
    for flag in (True, False):
        got = ct.einsum(text, B=B, P=P, prove_guards=flag).to_numpy()
        assert [bool(got[i]) for i in range(len(got))] == [bool(ref.at(i)) for i in range(len(got))], flag
