"""UniformGrid over interval levels (issue 31 item 2): `ct.intervals(..., grid=)` (a 1-D track
`G[x]` as UniformGrid(SparseRunList)) and `interval_index` (an interval set `S[x, id]` as
UniformGrid(SparseRunList(SparseList))), each interval listed in every cell it meets.

The gridded tensor denotes the same function as the un-gridded one: every einsum over it equals
the same einsum over the un-gridded tensor and the reference interpreter (`tests/oracle`), under
the lebesgue, counting and boolean measures and the +, or, min, max semirings.  The cell-edge cases
are explicit regressions: a run ending exactly at an edge (closed: it meets the next cell in one
point, which must not count under `counting`; open: not listed there), a point interval at an
edge, a run over many cells, runs outside the edges, and the memory cap.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ctensor as ct
from ctensor.formats import grid_intervals
from ctensor.formats.grid_intervals import interval_index

from .helpers import draw_runs, oracle
from .test_fuzz_multidim import compare, examples

CLOSED = ["left", "right", "both", "neither"]

TRACK = [("s[] = G[x] * d(x; lebesgue)", None), ("s[] = G[x] * d(x; lebesgue)", "max"),
         ("s[] = G[x] * B[x] * d(x; lebesgue)", None), ("s[] = G[x] * B[x] * d(x; lebesgue)", "min"),
         ("s[] = (G[x] + B[x]) * d(x; lebesgue)", None), ("s[] = G[x] * d(x; counting)", None),
         ("s[] = G[x] * B[x] * d(x; counting)", None), ("s[] = G[x] * (B[x] + 1) * d(x; counting)", None),
         ("s[] = ((G[x] != 0) & (B[x] != 0)) * d(x; boolean)", "or"),
         ("s[] = G[x] * B[x] * d(x; boolean)", "max"), ("s[] = G[x + 0.5] * B[x] * d(x; counting)", None),
         ("s[] = G[2 * x] * B[x] * d(x; lebesgue)", None)]
SETS = [("O[i] = S[x, i] * B[x] * d(x; lebesgue)", None), ("O[i] = (S[x, i] & (B[x] != 0)) * d(x; boolean)", "or"),
        ("O[i] = S[x, i] * d(x; counting)", None), ("O[i] = S[x, i] * B[x] * d(x; counting)", None),
        ("O[i] = S[x, i] * B[x] * d(x; lebesgue)", "max"), ("s[] = S[x, i] * d(x, i; lebesgue, counting)", None)]


REFUSALS = ("is not a factor of the product with fill 0",          # `lower.tile._check_counting`
            "cannot tell a pinpoint from a run clipped by the cell")   # `lower.tile._check_counting_intervals`


def same(text, semiring, gridded, flat, **others):
    """The einsum over the gridded tensor equals the reference interpreter (`compare`) and the same
    einsum over the un-gridded tensor; a refusal must be the documented counting one."""
    name = next(iter(gridded))
    try:
        got = compare(text, semiring=semiring, **gridded, **others)
    except ct.InvalidProgramError as e:
        assert "counting" in text and any(m in str(e) for m in REFUSALS), (text, semiring, e)
        return
    want = ct.einsum(text, semiring=semiring, **{name: flat}, **others)
    if isinstance(got, ct.Tensor):
        got, want = got.to_numpy(), want.to_numpy()
    assert np.allclose(got, want), (text, semiring, got, want)


@st.composite
def track(draw, allow_inf=True):
    """(start, end, values, closed) of a valid 1-D track on a small integer grid: runs touching,
    point intervals, heterogeneous closedness."""
    pts, hetero, closed, s, e, cl = draw_runs(draw, 8, allow_inf=allow_inf)
    if draw(st.booleans()) and pts and not hetero and closed == "both":
        p = draw(st.sampled_from([p for p in pts if np.isfinite(p)] or [0.0]))
        if all(not (a <= p <= b) for a, b in zip(s, e)):
            k = int(np.searchsorted(s, p))
            s, e = s[:k] + [p] + s[k:], e[:k] + [p] + e[k:]
    vals = np.array(draw(st.lists(st.integers(1, 4), min_size=len(s), max_size=len(s))), float)
    closed = cl if hetero else closed
    try:
        ct.intervals(s, e, vals, closed=closed)
    except ct.FormatError:
        assume(False)
    return np.array(s, float), np.array(e, float), vals, closed


def other(data):
    """B[x]: a random track with ±inf ends, always in the Limit-endpoint format (closedness given
    per interval), so that its kernels are shared across examples; or pinpoints (SparseList)."""
    if data.draw(st.booleans()):
        bs, be, bv, bc = data.draw(track())
        return ct.intervals(bs, be, bv, closed=[bc] * len(bs) if isinstance(bc, str) else bc)
    pts = np.array(sorted(data.draw(st.sets(st.sampled_from([v / 2 for v in range(-8, 20)]), max_size=4))))
    return pinpoints(pts, np.arange(1.0, len(pts) + 1))


def pinpoints(at, values):
    """B[x]: value k at the real pinpoint at[k] (SparseList over a real axis), fill 0."""
    return ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.asarray(values, float)), [0, len(at)],
                                   np.asarray(at, float), real=True))


@st.composite
def edges_for(draw, s, e):
    """A number of cells, or explicit edges covering [min(s), max(e)] with interior edges on the
    integer grid (so they meet the runs' endpoints) or between."""
    if draw(st.booleans()):
        return draw(st.integers(1, 6))
    lo = (min(s) if len(s) else 0.0) - draw(st.sampled_from([0.0, 0.5, 1.0]))
    hi = (max(e) if len(e) else 1.0) + draw(st.sampled_from([0.5, 1.0]))
    inner = draw(st.sets(st.sampled_from([v / 2 for v in range(-12, 25)]), max_size=6))
    return np.array(sorted({lo, hi} | {v for v in inner if lo < v < hi}))


@examples(30)
@given(st.data())
def test_a_gridded_track_equals_the_flat_one_and_the_oracle(data):
    s, e, v, closed = data.draw(track(allow_inf=False))
    grid = data.draw(edges_for(s, e))
    G = ct.intervals(s, e, v, closed=closed, grid=grid)
    flat = ct.intervals(s, e, v, closed=closed)
    B = other(data)
    assert sorted(G.pieces()) == sorted(flat.pieces())          # each run reported once
    for text, sr in TRACK:
        same(text, sr, {"G": G}, flat, B=B)


@st.composite
def interval_sets(draw):
    n = draw(st.integers(0, 5))
    s = np.array(draw(st.lists(st.integers(-2, 4), min_size=n, max_size=n)), float)
    closed = draw(st.sampled_from(CLOSED + ["mixed"]))
    cl = draw(st.lists(st.sampled_from(CLOSED), min_size=n, max_size=n)) if closed == "mixed" else closed
    point_ok = [c == "both" for c in (cl if closed == "mixed" else [closed] * n)]
    w = [draw(st.integers(0 if ok else 1, 3)) for ok in point_ok]
    return s, s + np.array(w, float), cl


@examples(15)
@given(st.data())
def test_a_gridded_interval_set_equals_the_flat_one_and_the_oracle(data):
    s, e, closed = data.draw(interval_sets())
    grid = data.draw(edges_for(s, e))
    S = interval_index(s, e, closed=closed, grid=grid)
    flat = interval_index(s, e, closed=closed, grid=None)
    B = other(data)
    assert sorted(S.pieces()) == sorted(flat.pieces())
    for text, sr in SETS:
        same(text, sr, {"S": S}, flat, B=B)


# ------------------------------------------------------------------ cell edges, explicitly
EDGES = np.array([0.0, 1.0, 2.0, 3.0])


def cells_of(t):
    """The (left, right) of the runs stored in each cell of a gridded 1-D tensor."""
    g = t.level
    r = g.child
    return [list(zip(r.left[r.ptr[c]:r.ptr[c + 1]].tolist(), r.right[r.ptr[c]:r.ptr[c + 1]].tolist()))
            for c in range(g.n)]


def test_a_closed_run_ending_at_an_edge_meets_the_next_cell_in_one_point_that_does_not_count():
    G = ct.intervals([0.5], [1.0], values=[2.0], closed="both", grid=EDGES)
    assert cells_of(G) == [[(0.5, 1.0)], [(0.5, 1.0)], []]
    assert G[1.0] == 2.0 and G[ct.Limit(1.0, 1)] == 0.0
    assert ct.einsum("s[] = G[x] * d(x; counting)", G=G) == 0
    assert ct.einsum("s[] = G[x] * d(x; lebesgue)", G=G) == 1.0
    # another tensor's piece starting at 1 (B's run, P's stored point) makes {1} a piece of the
    # partition: it counts; P's point at 0.5 inside the run counts too
    flat = ct.intervals([0.5], [1.0], values=[2.0], closed="both")
    B = ct.intervals([1.0], [3.0], values=[5.0], closed="both")
    P = pinpoints([0.5, 1.0, 2.0], [3.0, 4.0, 6.0])
    gap = ct.intervals([-1.0, 1.0], [1.0, 2.0], values=[1.0, 1.0], closed="neither")     # the fill point {1}
    for other, want in ((B, 10.0), (P, 2.0 * 3.0 + 2.0 * 4.0), (gap, 0.0)):
        text = "s[] = G[x] * B[x] * d(x; counting)"
        assert ct.einsum(text, G=G, B=other) == ct.einsum(text, G=flat, B=other) == oracle(text, G=G, B=other).value \
            == want
        for text, sr in (("s[] = G[x] * (B[x] + 1) * d(x; counting)", None),
                         ("s[] = G[x] * B[x] * d(x; boolean)", "max"), ("s[] = G[x] * B[x] * d(x; lebesgue)", None)):
            same(text, sr, {"G": G}, flat, B=other)


def test_the_fill_point_between_two_runs_of_another_tensor_at_an_edge_counts():
    """Found by the fuzz profile: G = [-3, 9) over 3 cells (edges -3, 1, 5, 9+), B's open runs
    (0, 1) and (1, 2) leave the point {1}, a cell edge, to B's fill: a piece of its own."""
    G = ct.intervals([-3.0], [9.0], values=[1.0], closed="left", grid=3)
    B = ct.intervals([0.0, 1.0], [1.0, 2.0], values=[1.0, 1.0], closed="neither")
    assert ct.einsum("s[] = G[x] * (B[x] + 1) * d(x; counting)", G=G, B=B) == 1.0
    assert oracle("s[] = G[x] * (B[x] + 1) * d(x; counting)", G=G, B=B).value == 1.0


def test_counting_beside_another_grid_tensor_is_refused():
    G = ct.intervals([0.0], [2.0], values=[2.0], closed="both", grid=EDGES)
    P = ct.points(np.array([[1.0], [2.5]]), grid=[3])
    text = "O[i] = G[x] * P[x, i] * d(x; counting)"
    with pytest.raises(ct.InvalidProgramError, match="cannot tell a pinpoint from a run clipped by the cell"):
        ct.einsum(text, G=G, P=P)
    same("O[i] = G[x] * P[x, i] * d(x; boolean)", "max", {"G": G}, ct.intervals([0.0], [2.0], values=[2.0],
                                                                               closed="both"), P=P)


def test_an_open_run_end_at_an_edge_is_not_listed_in_the_next_cell():
    G = ct.intervals([0.5, 1.0], [1.0, 2.0], values=[2.0, 3.0], closed="left", grid=EDGES)
    assert cells_of(G) == [[(0.5, 1.0)], [(1.0, 2.0)], []]
    same("s[] = G[x] * d(x; lebesgue)", None, {"G": G}, ct.intervals([0.5, 1.0], [1.0, 2.0], values=[2.0, 3.0]))
    assert ct.einsum("s[] = G[x] * d(x; counting)", G=G) == 0


@pytest.mark.parametrize("closed", CLOSED)
def test_touching_runs_at_an_edge_under_every_closedness(closed):
    ends = {"left": ("left", "left"), "right": ("right", "right"), "both": ("both", "neither"),
            "neither": ("neither", "both")}[closed]
    args = ([0.0, 1.0], [1.0, 2.5], [2.0, 3.0])
    G = ct.intervals(*args, closed=list(ends), grid=EDGES)
    flat = ct.intervals(*args, closed=list(ends))
    for text, sr in TRACK[:2] + TRACK[5:6]:
        same(text, sr, {"G": G}, flat)


def test_a_point_interval_at_an_edge_is_listed_once_and_counts_once():
    G = ct.intervals([1.0, 2.0], [1.0, 2.0], values=[4.0, 5.0], closed="both", grid=EDGES)
    assert cells_of(G) == [[], [(1.0, 1.0)], [(2.0, 2.0)]]
    assert ct.einsum("s[] = G[x] * d(x; counting)", G=G) == 9.0
    assert ct.einsum("s[] = G[x] * d(x; lebesgue)", G=G) == 0.0
    assert ct.einsum("s[] = G[x] * d(x; lebesgue)", semiring="max", G=G) == 0.0


def test_a_run_over_many_cells_is_listed_in_each_and_reported_once():
    G = ct.intervals([0.25], [99.75], values=[2.0], closed="both", grid=np.arange(101.0))
    assert G.level.child.ptr[-1] == 100 and len(G.pieces()) == 1
    assert ct.einsum("s[] = G[x] * d(x; lebesgue)", G=G) == 2.0 * 99.5
    assert ct.einsum("s[] = G[x] * d(x; counting)", G=G) == 0
    B = ct.intervals([10.0, 50.5], [10.0, 60.0], values=[3.0, 1.0], closed=["both", "left"])
    assert ct.einsum("s[] = G[x] * B[x] * d(x; counting)", G=G, B=B) == 6.0
    assert ct.einsum("s[] = G[x] * B[x] * d(x; lebesgue)", G=G, B=B) == 2.0 * 9.5


def test_a_shifted_read_of_a_gridded_track():
    args = ([0.0, 1.0, 2.0], [1.0, 1.5, 2.0], [2.0, 3.0, 4.0])
    G = ct.intervals(*args, closed=["both", "neither", "both"], grid=EDGES)
    flat = ct.intervals(*args, closed=["both", "neither", "both"])
    B = ct.intervals([-1.0, 0.5], [0.5, 3.0], values=[1.0, 2.0], closed="left")
    for text in ("s[] = G[x + 0.5] * B[x] * d(x; lebesgue)", "s[] = G[x + 1] * B[x] * d(x; counting)"):
        same(text, None, {"G": G}, flat, B=B)


def test_sparse_interval_under_a_grid():
    """One interval per cell (UniformGrid(SparseInterval)): a box listed in the cells it meets."""
    box = ct.SparseInterval(ct.Element(0.0, val=np.array([2.0, 2.0, 2.0])), [0.5, 0.5, 0.5], [2.0, 2.0, 2.0], "both")
    G = ct.Tensor(ct.UniformGrid(box, EDGES))
    flat = ct.intervals([0.5], [2.0], values=[2.0], closed="both")
    B = ct.intervals([1.0, 2.0], [1.0, 2.0], values=[3.0, 5.0], closed="both")
    for text, sr in TRACK:
        same(text, sr, {"G": G}, flat, B=B)


def test_a_2d_grid_over_two_run_list_levels():
    """A rectangle [0.5, 1.5]² listed in the 4 cells of a 2 x 2 grid (UniformGrid(UniformGrid(
    SparseRunList(SparseRunList)))): reported once, and every einsum as without the grid."""
    def runs(child, k):
        return ct.SparseRunList(child, np.arange(k + 1), np.full(k, 0.5), np.full(k, 1.5), "both")
    E = np.array([0.0, 1.0, 2.0])
    T = ct.Tensor(ct.UniformGrid(ct.UniformGrid(runs(runs(ct.Element(0.0, val=np.full(4, 2.0)), 4), 4), E), E))
    flat = ct.Tensor(runs(runs(ct.Element(0.0, val=np.array([2.0])), 1), 1))
    assert T.pieces() == flat.pieces()
    B = ct.box([0.0, 1.0], [1.0, 3.0])
    for text, sr in (("s[] = T[x, y] * B[x, y] * d(x, y; lebesgue, lebesgue)", None),
                     ("s[] = T[x, y] * B[x, y] * d(x, y; boolean, boolean)", "max"),
                     ("s[] = T[x, y] * d(x, y; counting, counting)", None)):
        same(text, sr, {"T": T}, flat, B=B)


def test_float32_endpoints_stay_float32_under_the_grid():
    G = ct.intervals(np.array([0.5, 2.0], np.float32), np.array([1.5, 3.0], np.float32), values=[2.0, 3.0], grid=3)
    assert G.level.child.left.dtype == np.float32
    assert ct.einsum("s[] = G[x] * d(x; lebesgue)", G=G) == 5.0


# ------------------------------------------------------------------ refusals
def test_a_grid_above_an_id_level_is_refused():
    """S[id, x] (ct.interval_set's order): a grid bins the first mode, here the integer id."""
    S = ct.interval_set([0.0, 1.0], [2.0, 3.0])
    with pytest.raises(ct.FormatError, match="must bin a real coordinate level .* not Dense"):
        ct.Tensor(ct.UniformGrid(S.level, EDGES))
    assert ct.interval_index is interval_index


def test_runs_outside_the_cells_are_refused():
    with pytest.raises(ct.FormatError, match=r"interval 0 \[-inf, 1.0\] is not inside the grid's cells"):
        ct.intervals([-np.inf], [1.0], grid=4)
    with pytest.raises(ct.FormatError, match=r"interval 1 \[2.0, 3.0\] is not inside"):
        ct.intervals([0.0, 2.0], [1.0, 3.0], closed="both", grid=EDGES)       # 3 is the open top edge
    ct.intervals([0.0, 2.0], [1.0, 3.0], closed="left", grid=EDGES)            # [2, 3) fits
    with pytest.raises(ct.FormatError, match="is not finite"):
        interval_index([0.0], [np.inf], grid=2)


def test_a_stored_interval_must_meet_its_cell():
    runs = ct.SparseRunList(ct.Pattern(), [0, 1, 1, 1], [1.0], [2.0], "left")      # [1, 2) in cell 0 = [0, 1)
    with pytest.raises(ct.FormatError, match=r"interval \[1.0, 2.0\] .*entry 0.* cell 0 .* does not meet it"):
        ct.Tensor(ct.UniformGrid(runs, EDGES))
    with pytest.raises(ct.FormatError, match=r"grid\[2\] = 1.0 is not greater than grid\[1\]"):
        ct.intervals([0.0], [1.0], grid=[0.0, 1.0, 1.0])
    with pytest.raises(ct.FormatError, match="grid = 0 is not a positive"):
        ct.intervals([0.0], [1.0], grid=0)


def test_a_grid_listing_too_many_entries_is_refused_before_allocating(monkeypatch):
    with pytest.raises(ct.FormatError, match="cells for 2 intervals"):
        ct.intervals([0.0, 2.0], [1.0, 1e12], grid=10**9)
    monkeypatch.setattr(grid_intervals, "MAX_ENTRIES", 1000)
    with pytest.raises(ct.FormatError, match=r"takes 2000 entries \(interval 0 meets 2000 cells\); at most 1000"):
        ct.intervals([0.0], [2000.0], grid=np.arange(2001.0))
    monkeypatch.setattr(grid_intervals, "MAX_ENTRIES_PER_INTERVAL", 1)
    with pytest.raises(ct.FormatError, match=r"80 overlapping intervals cover 3240 \(piece, id\) pairs; at most 1000"):
        interval_index(np.zeros(80), 1.0 + np.arange(80), grid=None)     # nested: piece j lies in 80 - j


def test_counting_where_the_grid_tensor_does_not_annihilate_is_refused():
    G = ct.intervals([0.0], [1.0], values=[2.0], closed="both", grid=EDGES)
    B = ct.intervals([2.0], [2.0], values=[3.0], closed="both")
    with pytest.raises(ct.InvalidProgramError, match="stored under UniformGrid levels and the counting measure"):
        ct.einsum("s[] = (G[x] + B[x]) * d(x; counting)", G=G, B=B)
    assert oracle("s[] = (G[x] + B[x]) * d(x; counting)", G=G, B=B).value == 3.0
