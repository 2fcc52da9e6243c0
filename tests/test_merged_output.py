"""Sparse outputs revisited by a loop outside their last index: the passes are merged with ⊕
(`ctensor.runtime.merge_output`).  Oracle: the reference interpreter; brute force for ids."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor.runtime.merge_output import merge_points, merge_runs

from .helpers import CLOSED, breakpoints_1d, close, oracle, probes
from .test_differential import interval_tensor, pinpoint_tensor

SETTINGS = settings()


@st.composite
def overlapping_set(draw, max_n=6):
    """S[i, x]: one interval per id on a small integer grid, overlaps and shared endpoints included,
    one closedness for all (interval_set's convention) or one per interval."""
    n = draw(st.integers(0, max_n))
    starts, ends = [], []
    for _ in range(n):
        a = draw(st.integers(-6, 10))
        b = draw(st.integers(a, 12))
        starts.append(float(a))
        ends.append(float(b))
    closed = draw(st.sampled_from(CLOSED))
    if any(a == b for a, b in zip(starts, ends)):
        closed = "both"                      # a zero-length interval is a pinpoint [a, a]
    return ct.interval_set(starts, ends, closed=closed)


def check_1d(text, semiring=None, **tensors):
    out = ct.einsum(text, semiring=semiring, **tensors)
    ref = oracle(text, semiring=semiring, **tensors)
    for p in probes(breakpoints_1d(*tensors.values(), out)):
        want = ref.at((p.value, p.eps))
        assert close(out[p], want), (text, semiring, p, out[p], want)
    return out


def canonical(out):
    """Runs sorted and disjoint, touching runs of one value coalesced (the one-pass writer's form)."""
    lvl = out.level
    le, re = lvl.eps_arrays()
    for k in range(1, len(lvl.left)):
        assert (lvl.right[k - 1], re[k - 1]) < (lvl.left[k], le[k])
        touch = lvl.right[k - 1] == lvl.left[k] and re[k - 1] + 1 == le[k]
        if touch and isinstance(lvl.child, ct.Element):
            assert lvl.child.val[k - 1] != lvl.child.val[k]


@SETTINGS
@given(overlapping_set())
def test_coverage_depth(S):
    out = check_1d("C[x] = S[i, x] * d(i; counting)", S=S)
    canonical(out)


@SETTINGS
@given(overlapping_set(), interval_tensor(allow_inf=False))
def test_weighted_sums_over_ids(S, A):
    canonical(check_1d("C[x] = S[i, x] * A[x] * d(i; counting)", S=S, A=A))


@SETTINGS
@given(overlapping_set(), interval_tensor(allow_inf=False), st.sampled_from(["max", "min"]))
def test_extrema_over_ids(S, A, semiring):
    """Brute force over the ids: the oracle's min/max also range over `OTHER`, the ids no piece uses,
    which a Dense id axis does not have."""
    out = ct.einsum("C[x] = S[i, x] * A[x] * d(i; counting)", semiring=semiring, S=S, A=A)
    canonical(out)
    pick, fill = (max, -np.inf) if semiring == "max" else (min, np.inf)
    for p in probes(breakpoints_1d(S, A)):
        vals = [float(S[i, p]) * A[p] for i in range(S.levels()[0].shape)]
        assert close(out[p], pick(vals) if vals else fill), (semiring, p, out[p], vals)


@SETTINGS
@given(overlapping_set())
def test_union_of_intervals(S):
    out = check_1d("C[x] = S[i, x] * d(i; boolean)", S=S)
    assert isinstance(out.level.child, (ct.Pattern, ct.Element))
    canonical(out)


@SETTINGS
@given(pinpoint_tensor(), interval_tensor(allow_inf=False))
def test_sum_of_shifted_copies(M, A):
    check_1d("C[x] = M[y, k] * A[x - y] * d(y, k; counting, counting)", M=M, A=A)


@SETTINGS
@given(pinpoint_tensor(), pinpoint_tensor())
def test_sum_of_shifted_pinpoints(M, P):
    """Into runs (the default) and into pinpoints (SparseList over x): entries at one coordinate
    are added."""
    text = "C[x] = M[y, k] * P[x - y, j] * d(y, j, k; counting, counting, counting)"
    runs = check_1d(text, M=M, P=P)
    points = ct.einsum(text, M=M, P=P, out=ct.SparseList(ct.Element(0)))
    for p in probes(breakpoints_1d(M, P, runs)):
        assert points[p] == runs[p], p
    assert list(points.level.idx) == sorted(set(points.level.idx))


def test_float_sums_do_not_cancel_through_a_running_total():
    # a running total of +/- deltas loses the 3s under 1e20 (2e20 - 1e20 + 3 - 1e20 + 3 = 3); the
    # merge adds the values covering each segment
    S = ct.interval_set([0.0, 1.0], [10.0, 3.0])
    A = ct.intervals([0.0, 2.0, 5.0], [2.0, 5.0, 10.0], values=[1e20, 3.0, 1.0])
    out = check_1d("C[x] = S[i, x] * A[x] * d(i; counting)", S=S, A=A)
    assert [out[ct.Limit(v)] for v in (0.5, 1.5, 2.5, 4.0, 5.5)] == [1e20, 2e20, 6.0, 3.0, 1.0]


def test_ids_output_written_out_of_order_is_merged():
    P = ct.points(np.array([[3.0], [1.0], [2.0], [1.0]]))
    got = ct.einsum("O[j] = P[s, j] * d(s; boolean)", P=P, out=ct.SparseList(ct.Pattern(), shape=4))
    assert got.to_numpy().tolist() == [True] * 4
    assert got.level.idx.tolist() == [0, 1, 2, 3]
    # the same id from several passes is ⊕-reduced: S[i, j] summed over i into O[j]
    rng = np.random.default_rng(3)
    pts = rng.integers(0, 4, (30, 1)).astype(float)
    P = ct.points(pts)
    W = ct.intervals([0.0, 2.0], [2.0, 4.0], values=[2.0, 5.0], closed="left")
    got = ct.einsum("O[j] = W[s] * P[s, j] * d(s; counting)", W=W, P=P, out=ct.SparseList(ct.Element(0.0), shape=30))
    want = np.where(pts[:, 0] < 2, 2.0, 5.0)
    assert np.array_equal(got.to_numpy(), want)


def test_two_dimensional_output_revisited_per_row():
    S = ct.interval_set([0.0, 1.0, 4.0], [3.0, 5.0, 6.0])      # S[i, x]
    T = ct.interval_set([0.0, 2.0], [10.0, 4.5])               # T[j, x]
    out = ct.einsum("C[j, x] = T[j, x] * S[i, x] * d(i; counting)", S=S, T=T)
    ref = oracle("C[j, x] = T[j, x] * S[i, x] * d(i; counting)", S=S, T=T)
    for j in range(2):
        for p in probes([0.0, 1.0, 2.0, 3.0, 4.0, 4.5, 5.0, 6.0, 10.0]):
            assert close(out[j, p], ref.at(j, (p.value, p.eps))), (j, p)


def test_revisits_outside_an_output_index_are_refused_with_the_order_to_use():
    S = ct.interval_set([0.0, 1.0], [3.0, 5.0])
    T = ct.interval_set([0.0, 2.0], [10.0, 4.5])
    with pytest.raises(ct.InvalidProgramError, match="order="):
        ct.einsum("C[j, x] = T[j, x] * S[i, x] * d(i; counting)", S=S, T=T, order=("i", "j", "x"))


def test_packed_call_reports_the_revisit_and_the_kernel_merges():
    S = ct.interval_set([0.0, 1.0], [3.0, 5.0])
    k = ct.compile("C[x] = S[i, x] * d(i; counting)", S=S)
    call = k.pack(S=S)
    with pytest.raises(ct.InvalidProgramError, match="call the Kernel"):
        call.finish(k.ctypes_function(call.address))
    assert k(S=S)[ct.Limit(2.0)] == 2


def test_no_revisit_compiles_no_sibling():
    S = ct.interval_set([0.0, 3.0], [2.0, 5.0])          # disjoint, in order: one pass suffices
    k = ct.compile("Once[x] = S[i, x] * d(i; counting)", S=S)      # (a text no other test compiles)
    out = k(S=S)
    assert "merged" not in k._siblings and out[ct.Limit(1.0)] == 1


def test_a_large_revisiting_kernel_is_compiled_merged_at_once(monkeypatch):
    """Above `pipeline.MERGE_FIRST_AT` IR statements a kernel whose output a loop revisits is
    lowered merged from the start (no checked kernel that stops, no sibling compile: a fuzzed
    program took 6.5 s twice); the threshold is lowered here to make a small program large.  A
    kernel that does not revisit its output stays checked."""
    from ctensor.driver import pipeline
    monkeypatch.setattr(pipeline, "MERGE_FIRST_AT", 0)
    S = ct.interval_set([0.0, 1.0, 4.0], [3.0, 5.0, 6.0])
    text = "FirstMerged[x] = S[i, x] * d(i; counting)"            # (a text no other test compiles)
    k = ct.compile(text, S=S)
    assert k.merge_output and not k.mergeable
    out = k(S=S)
    assert not k._siblings
    for p in probes(breakpoints_1d(S, out)):
        assert out[p] == oracle(text, S=S).at((p.value, p.eps)), p
    assert not ct.compile("NotRevisited[i] = S[i, x] * d(x; lebesgue)", S=S).merge_output


# ------------------------------------------------------------------ the merge itself
def _eval_runs(ptr, L, Le, R, Re, val, op, pts, disjoint=False):
    f = {"+": lambda a, b: a + b, "max": max, "min": min}[op]
    rows = []
    for fib in range(len(ptr) - 1):
        row = []
        for p in pts:
            acc = None
            for k in range(ptr[fib], ptr[fib + 1]):
                if (L[k], Le[k]) <= p <= (R[k], Re[k]):
                    assert not (disjoint and acc is not None)
                    acc = val[k] if acc is None else f(acc, val[k])
            row.append(acc)
        rows.append(row)
    return rows


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from(["+", "max", "min"]))
def test_merge_runs_against_brute_force(data, op):
    npos = data.draw(st.integers(1, 3))
    runs = data.draw(st.lists(st.tuples(st.integers(0, npos - 1), st.integers(0, 6), st.integers(0, 2),
                                         st.integers(0, 1), st.integers(-1, 0), st.integers(-2, 2)), max_size=8))
    runs = sorted((f, a, a + w, le, re, v) for f, a, w, le, re, v in runs if w > 0 or le <= re)
    fib = np.array([r[0] for r in runs], np.int64)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(fib, minlength=npos))]).astype(np.int64)
    L, R = (np.array([r[k] for r in runs], float) for k in (1, 2))
    Le, Re = (np.array([r[k] for r in runs], np.int8) for k in (3, 4))
    val = np.array([r[5] for r in runs], np.int64)
    out = merge_runs(ptr, L, Le, R, Re, val, op)
    pts = [(x / 2, e) for x in range(-2, 20) for e in (-1, 0, 1)]
    assert _eval_runs(ptr, L, Le, R, Re, val, op, pts) == _eval_runs(*out, op, pts, disjoint=True)


def test_merge_points_reduces_equal_coordinates_per_fiber():
    ptr, idx, val = merge_points(np.array([0, 3, 5]), np.array([3, 1, 3, 2, 2]), np.array([1.0, 2, 3, 4, 5]), "+")
    assert ptr.tolist() == [0, 2, 3] and idx.tolist() == [1, 3, 2] and val.tolist() == [2.0, 4.0, 9.0]


def test_revisited_two_level_continuous_output_is_not_called_invalid():
    """C[x, y] = S[i, x] * T[i, y] * d(i; counting) with overlapping rows is valid (the oracle
    evaluates it), but passes of a two-level continuous output are not merged: the error says
    the output format cannot hold them, not that the program is invalid."""
    S = ct.interval_set([0.0, 1.0], [2.0, 3.0])
    T = ct.interval_set([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ct.InvalidProgramError, match=r"cannot be computed into this output format \(the program "
                                                      r"itself may be valid\).*not supported: only the last"):
        ct.einsum("C[x, y] = S[i, x] * T[i, y] * d(i; counting)", S=S, T=T)


@st.composite
def sorted_overlapping_set(draw, max_n=7):
    """`overlapping_set`'s intervals in start order: the passes of an idempotent ⊕ arrive in order,
    so the kernel folds overlapping runs into the previous one (`SparseRunList._fold`)."""
    n = draw(st.integers(0, max_n))
    pairs = sorted((a, draw(st.integers(a, 12))) for a in (draw(st.integers(-6, 10)) for _ in range(n)))
    closed = draw(st.sampled_from(CLOSED))
    if any(a == b for a, b in pairs):
        closed = "both"
    return ct.interval_set([float(a) for a, _ in pairs], [float(b) for _, b in pairs], closed=closed)


@SETTINGS
@given(sorted_overlapping_set())
def test_union_of_intervals_in_start_order_is_folded_in_one_pass(S):
    """The union of intervals given in start order (`merge`'s index): one pass of the checked kernel,
    overlapping and touching runs folded as written, no merged sibling; equal to the oracle."""
    k = ct.compile("Folded[x] = S[i, x] * d(i; boolean)", S=S)
    out = k(S=S)
    ref = oracle("Folded[x] = S[i, x] * d(i; boolean)", S=S)
    for p in probes(breakpoints_1d(S, out)):
        assert close(out[p], ref.at((p.value, p.eps))), p
    canonical(out)
    assert "merged" not in k._siblings


def test_fold_of_equal_values_under_max_and_merge_of_unequal_ones():
    """max over ids: overlapping runs in start order with equal values fold in the kernel; an
    overlap with another value still goes through the runtime's merge, with the same answer as the
    oracle either way."""
    S = ct.interval_set([0.0, 1.0, 2.0, 8.0], [4.0, 3.0, 6.0, 9.0])
    for vals in ([2.0, 2.0, 2.0], [2.0, 5.0, 1.0]):
        A = ct.intervals([0.0, 2.5, 7.0], [2.5, 7.0, 10.0], values=vals)
        text = "FoldMax[x] = S[i, x] * A[x] * d(i; counting)"
        k = ct.compile(text, S=S, A=A, semiring="max")
        out = k(S=S, A=A)
        canonical(out)
        for p in probes(breakpoints_1d(S, A)):
            want = max(float(S[i, p]) * A[p] for i in range(4))
            assert close(out[p], want), (vals, p, out[p], want)
    assert "merged" in k._siblings            # 5.0 on [2.5, 6] under run [1, 3] of value 2.0


def test_fold_per_fiber_of_a_two_dimensional_output():
    """C[j, x]: each row's passes fold into that row's runs only (never into the previous row's)."""
    S = ct.interval_set([0.0, 1.0, 4.0, 4.0], [3.0, 5.0, 6.0, 4.5])
    T = ct.interval_set([0.0, 2.0, 5.5], [10.0, 4.5, 5.7])
    text = "FoldRows[j, x] = T[j, x] * S[i, x] * d(i; boolean)"
    out = ct.einsum(text, S=S, T=T)
    ref = oracle(text, S=S, T=T)
    for j in range(3):
        for p in probes([0.0, 1.0, 2.0, 3.0, 4.0, 4.5, 5.0, 5.5, 5.7, 6.0, 10.0]):
            assert close(out[j, p], ref.at(j, (p.value, p.eps))), (j, p)


def test_fold_across_a_closed_end_keeps_the_later_open_end():
    """(-1, 0] then [0, 3) (a reversed read, then a shifted one, in one pass): the fold's new stop is
    the later run's open end 3⁻.  Both parts of the stop must be computed before either is stored
    (its ε once came out of a comparison that reloaded the stored, already overwritten, value)."""
    T4, T5 = ct.intervals([0.0], [1.0]), ct.intervals([-3.0], [0.0])
    out = check_1d("FoldOpen[x] = T4[-x] | T5[x - 3]", T4=T4, T5=T5)
    assert out.pieces() == [(((ct.Limit(-1.0, 1), ct.Limit(3.0, -1)),), True)]
