"""The counting collapse, loop fission, Pattern outputs, run-length canonical outputs and the
in-kernel output order check, each against the reference interpreter or numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ctensor as ct

from .helpers import breakpoints_1d, oracle, probes
from .test_differential import SETTINGS, interval_set

COUNT = "C[i] = Q[i, x] * S[x, j] * d(x, j; counting, counting)"


@st.composite
def pinpoints(draw):
    xs = draw(st.lists(st.integers(-8, 14), max_size=12))
    return ct.points(np.asarray(xs, float).reshape(-1, 1))


@SETTINGS
@given(interval_set(), pinpoints())
def test_count_collapse_matches_oracle(Q, S):
    k = ct.compile(COUNT, Q=Q, S=S)
    assert "S_count" in k.ir                         # collapsed: a position difference
    got = k(Q=Q, S=S).to_numpy()
    ref = oracle(COUNT, Q=Q, S=S)
    assert [int(g) for g in got] == [ref.at(i) for i in range(len(got))]


@SETTINGS
@given(interval_set(), st.integers(-3, 3), st.lists(st.integers(-8, 14), max_size=12), st.integers(-4, 4))
def test_fission_of_counting_difference(A, shift, xs, dx):
    # B and E are shifted copies of A and S, so their id modes have the same shapes
    lvl = A.level.child
    B = ct.interval_set(np.asarray(lvl.left) + shift, np.asarray(lvl.right) + shift, closed=lvl.closed)
    pts = np.asarray(xs, float).reshape(-1, 1)
    S, E = ct.points(pts), ct.points(pts + dx)
    n = A.levels()[0].shape
    text = "C[i] = (A[i, x] * S[x, j] - B[i, x] * E[x, j]) * d(x, j; counting, counting)"
    got = ct.einsum(text, A=A, B=B, S=S, E=E).to_numpy()
    ref = oracle(text, A=A, B=B, S=S, E=E)
    assert [int(g) for g in got] == [ref.at(i) for i in range(n)]


def test_count_collapse_equals_binary_search_on_sorted_and_shuffled_queries():
    rng = np.random.default_rng(3)
    ds = np.sort(rng.integers(0, 10_000, 3000)).astype(float)
    qs = np.sort(rng.integers(0, 10_000, 2000)).astype(float)
    qe = qs + rng.integers(1, 300, len(qs))
    S = ct.points(ds[:, None])
    want = np.searchsorted(ds, qe, "left") - np.searchsorted(ds, qs, "left")
    for perm in (np.arange(len(qs)), rng.permutation(len(qs))):   # finger near and far
        Q = ct.interval_set(qs[perm], qe[perm])
        assert np.array_equal(ct.einsum(COUNT, Q=Q, S=S).to_numpy(), want[perm])


def test_pattern_output_and_run_length_merge():
    A = ct.intervals([0.0, 2.0, 4.0, 8.0], [2.0, 4.0, 6.0, 9.0], values=[1, 2, 1, 0])
    M = ct.einsum("M[x] = A[x] > 0", A=A, out=ct.SparseRunList(ct.Pattern()))
    assert list(M.level.left) == [0.0] and list(M.level.right) == [6.0]   # three runs merged
    E = ct.einsum("M[x] = A[x] > 0", A=A, out=ct.SparseRunList(ct.Element(False)))
    ref = oracle("M[x] = A[x] > 0", A=A)
    for p in probes(breakpoints_1d(A)):
        assert bool(M[p]) == bool(E[p]) == bool(ref.at((p.value, p.eps)))


def test_output_closedness_is_honoured():
    """out=SparseRunList(closed=c) stores the result in closedness c, or raises FormatError when a
    piece has other endpoints; left at the default it takes the result's own closedness."""
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    pins = ct.intervals([1.0, 3.0], [1.0, 3.0], values=[2.0, 2.0], closed="both")
    runs = ct.intervals([1.0], [6.0], values=[2.0])
    mk = lambda B, o: ct.einsum("C[x] = A[x] * B[x]", A=A, B=B, out=ct.SparseRunList(ct.Element(0.0), **o))
    assert mk(pins, {}).level.closed == "both" and mk(runs, {}).level.closed == "left"
    assert mk(pins, {"closed": "both"}).pieces() == [(((ct.Limit(1.0), ct.Limit(1.0)),), 6.0)]
    het = mk(runs, {"closed": None})
    assert het.level.closed is None and list(het.level.left_eps) == [0, 0]
    assert het.pieces() == mk(runs, {}).pieces()
    with pytest.raises(ct.FormatError, match=r"closed='left'.*interval 0 is \[1.0, 1.0\]"):
        mk(pins, {"closed": "left"})
    with pytest.raises(ct.FormatError, match=r"closed='both'.*interval 0 is \[1.0, 2.0\)"):
        mk(runs, {"closed": "both"})
    # ±inf are not points: their ε does not stop a closed='both' result being stored homogeneous
    wide = ct.intervals([-np.inf, 3.0], [0.0, np.inf], values=[3.0, 1.0], closed="both")
    C = ct.einsum("C[x] = A[x] * 2", A=wide)
    assert C.level.closed == "both" and list(C.level.right) == [0.0, np.inf]
    assert C[0.0] == 6.0 and C[3.0] == 2.0 and C[1e308] == 2.0 and C[ct.Limit(0.0, 1)] == 0.0


def test_pattern_output_pairs_match_numpy():
    rng = np.random.default_rng(5)
    qs = np.sort(rng.integers(0, 1000, 200)).astype(float)
    ds = np.sort(rng.integers(0, 1000, 300)).astype(float)
    qe, de = qs + 20, ds + 20
    T = dict(W=ct.interval_set(qs - 20, qe), S=ct.points(ds[:, None]), Q=ct.interval_set(qs, qe),
             D=ct.interval_set(ds, de))
    O = ct.einsum("O[i, j] = W[i, s] * S[s, j] * Q[i, x] * D[j, x] * d(s, x; boolean, boolean)",
                  out=ct.Dense(ct.SparseList(ct.Pattern(), shape=300)), **T)
    lvl = O.level.child
    got = {(i, int(j)) for i in range(200) for j in lvl.idx[lvl.ptr[i]:lvl.ptr[i + 1]]}
    want = {(i, j) for i in range(200) for j in range(300) if ds[j] < qe[i] and qs[i] < de[j]}
    assert got == want


def test_revisited_sparse_outputs_are_merged_not_wrong():
    # the ids of points sorted by x are not increasing, and O's j fiber is revisited for every s:
    # the call runs the merging sibling kernel (tests/test_merged_output.py)
    P = ct.points(np.array([[3.0], [1.0], [2.0]]))
    Q = ct.interval_set([0.0], [10.0])
    got = ct.einsum("O[i, j] = Q[i, s] * P[s, j] * d(s; boolean)", Q=Q, P=P,
                    out=ct.Dense(ct.SparseList(ct.Pattern(), shape=3)))
    assert got.to_numpy().tolist() == [[True, True, True]]
    # one fiber (the order check keeps the last id in a register), integer and real coordinates
    got = ct.einsum("O[j] = P[s, j] * d(s; boolean)", P=P, out=ct.SparseList(ct.Pattern(), shape=3))
    assert got.level.idx.tolist() == [0, 1, 2]
    R = ct.points(np.array([[0.0, 3.0], [1.0, 1.0]]))
    got = ct.einsum("O[y] = R[x, y, j] * d(x, j; boolean, boolean)", R=R, out=ct.SparseList(ct.Pattern()))
    assert got.level.idx.tolist() == [1.0, 3.0]
    got = ct.einsum("O[j] = P[s, j] * d(s; boolean)", P=ct.points(np.array([[1.0], [2.0], [3.0]])),
                    out=ct.SparseList(ct.Pattern(), shape=3))
    assert got.to_numpy().tolist() == [True, True, True]


# ------------------------------------------------------------------ integer SparseInterval
@st.composite
def id_ranges(draw, n_ids):
    """Dense(SparseInterval) over an integer axis of n_ids ids: one range [lo, hi) per row,
    empty ranges included."""
    rows = draw(st.integers(0, 5))
    lo = [draw(st.integers(0, n_ids)) for _ in range(rows)]
    hi = [draw(st.integers(a, n_ids)) for a in lo]
    lvl = ct.SparseInterval(ct.Pattern(), np.array(lo, np.int64), np.array(hi, np.int64), "left", shape=n_ids)
    return ct.Tensor(ct.Dense(lvl, rows))


@SETTINGS
@given(st.data())
def test_integer_interval_level_matches_oracle(data):
    n = data.draw(st.integers(1, 6))
    R = data.draw(id_ranges(n))
    V = ct.Tensor(ct.Dense(ct.Element(0.0, val=np.asarray(data.draw(
        st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float)), n))
    text = "C[i] = R[i, j] * V[j] * d(j; counting)"
    got = ct.einsum(text, R=R, V=V).to_numpy()
    ref = oracle(text, R=R, V=V)
    assert [float(g) for g in got] == [ref.at(i) for i in range(len(got))]


@SETTINGS
@given(st.data())
def test_candidate_ranges_join_matches_oracle(data):
    """The genomics rank plan: pairs (i, j) with j in row i's range whose intervals meet."""
    D = data.draw(interval_set())
    n = D.levels()[0].shape
    assume(n > 0)
    R = data.draw(id_ranges(n))
    rows = R.levels()[0].shape
    starts = data.draw(st.lists(st.integers(-6, 12), min_size=rows, max_size=rows))
    Q = ct.interval_set([float(a) for a in starts], [a + 2.0 for a in starts])
    text = "O[i, j] = R[i, j] * Q[i, x] * D[j, x] * d(x; boolean)"
    out = ct.Dense(ct.SparseList(ct.Pattern(), shape=n))
    got = ct.einsum(text, R=R, Q=Q, D=D, out=out)
    ref = oracle(text, R=R, Q=Q, D=D)
    for i in range(rows):
        for j in range(n):
            assert bool(got[i, j]) == bool(ref.at(i, j)), (i, j)


def test_integer_interval_validation():
    lvl = ct.SparseInterval(ct.Pattern(), np.array([0, 3]), np.array([2, 1]), "left", shape=4)
    with pytest.raises(ct.FormatError, match="interval 1 is reversed"):
        ct.Tensor(ct.Dense(lvl, 2))
    lvl = ct.SparseInterval(ct.Pattern(), np.array([0, 3]), np.array([2, 6]), "left", shape=4)
    with pytest.raises(ct.FormatError, match=r"interval 1 = \[3, 5\] is outside \[0, 3\]"):
        ct.Tensor(ct.Dense(lvl, 2))


# ------------------------------------------------------------------ prefix intervals (-inf, t)
@SETTINGS
@given(st.lists(st.integers(-8, 14), max_size=6), pinpoints(), st.sampled_from(["left", "both"]),
       st.booleans())
def test_prefix_intervals_count_matches_oracle(ends, S, closed, mixed):
    """All starts -inf: the start is a compile-time constant and its search disappears; one
    finite start among them takes the general path.  Both against the oracle."""
    starts = [-np.inf] * len(ends)
    if mixed and ends:
        starts[0] = ends[0] - 3.0
    A = ct.interval_set(starts, [float(e) for e in ends], closed=closed)
    k = ct.compile(COUNT.replace("Q[", "A["), A=A, S=S)
    got = k(A=A, S=S).to_numpy()
    ref = oracle(COUNT.replace("Q[", "A["), A=A, S=S)
    assert [int(g) for g in got] == [ref.at(i) for i in range(len(got))]
    if ends and not mixed:
        assert "S_lo" not in k.ir                    # no search for the start


@SETTINGS
@given(interval_set(), st.lists(st.integers(-8, 14), max_size=12), st.booleans())
def test_count_collapse_through_tiled_id_ranges(Q, xs, tile):
    """S[x, j] as SparseList -> integer SparseInterval of the ids at each coordinate (the genome
    index layout): tiled ranges collapse to a difference of offsets; untiled ones (a gap) must
    not, and both agree with the oracle."""
    x = np.sort(np.asarray(xs, float))
    first = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if len(x) else np.zeros(0, np.int64)
    cum = np.append(first, len(x)).astype(np.int64)
    left, right = cum[:-1], cum[1:]
    if not tile and len(left):
        left, right = left + 1, right + 1                  # ids shifted by one: not tiled from 0
    ids = ct.SparseInterval(ct.Pattern(), left, right, "left", shape=len(x) + 1)
    S = ct.Tensor(ct.SparseList(ids, np.array([0, len(first)]), x[first]))
    assume(Q.levels()[0].shape > 0)
    k = ct.compile(COUNT, Q=Q, S=S)
    assert ("S_count" in k.ir) == (tile and len(x) > 0)
    got = k(Q=Q, S=S).to_numpy()
    ref = oracle(COUNT, Q=Q, S=S)
    assert [int(g) for g in got] == [ref.at(i) for i in range(len(got))]


def test_out_fill_must_be_the_reductions_identity():
    """An out= leaf with another fill was ⊕-added into every stored value (5 + 6 = 11 over A's runs)
    but not into the rest of the axis (5): neither "fill elsewhere" nor "fill ⊕ everything"."""
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    for semiring, fill, want in [(None, 5.0, "Element(0.0)"), ("min", 0.0, "Element(inf)"), ("max", 0.0, "Element(-inf)")]:
        with pytest.raises(ct.InvalidProgramError, match=re.escape(want)):
            ct.einsum("C[x] = A[x] * 2", A=A, semiring=semiring, out=ct.SparseRunList(ct.Element(fill)))
    C = ct.einsum("C[x] = A[x] * 2", A=A, semiring="min", out=ct.SparseRunList(ct.Element(np.inf)))
    assert C[1.0] == 6.0 and C[3.0] == 0.0      # A's fill 0, times 2
