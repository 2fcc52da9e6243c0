"""UniformGrid tile levels and tile loops (`ctensor.lower.tile`): a gridded tensor gives the same
answers as the plain one, for every program shape the tile rewrite touches, checked against the
reference interpreter and numpy on small integer coordinates (ties, duplicates, points on cell
edges and on box edges)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct

from .helpers import close, oracle

SETTINGS = settings()

BOX = "Out[id] = (B[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"
COUNT = "s[] = B[x, y] * P[x, y, id] * d(x, y; counting, counting)"
RADIUS = ("Out[id] = (B[x, y] & P[x, y, id] & ((x - ox)**2 + (y - oy)**2 <= r**2)) "
          "* d(x, y; boolean, boolean)")
WEIGHTED = "s[] = A[x] * P[x, y, id] * d(x, y; counting, counting)"
BATCH = "Out[q, id] = (Q[q, x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"

coords_st = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=30)
grid_st = st.one_of(st.integers(1, 5), st.tuples(st.integers(1, 5)), st.tuples(st.integers(1, 5), st.integers(1, 5)))


def inside(c, lo, hi, closed):
    left = {"left": np.greater_equal, "both": np.greater_equal, "right": np.greater, "neither": np.greater}[closed]
    right = {"left": np.less, "both": np.less_equal, "right": np.less_equal, "neither": np.less}[closed]
    return left(c[:, 0], lo[0]) & right(c[:, 0], hi[0]) & left(c[:, 1], lo[1]) & right(c[:, 1], hi[1])


@SETTINGS
@given(coords_st, grid_st, st.integers(-1, 6), st.integers(-1, 6), st.integers(0, 5), st.integers(0, 5),
       st.sampled_from(["both", "left", "right", "neither"]))
def test_box_and_count_match_plain_points(pts, grid, x0, y0, w, h, closed):
    c = np.array(pts, float)
    G, P = ct.points(c, grid=grid), ct.points(c)
    if closed != "both":
        w, h = w + 1, h + 1
    lo, hi = [x0, y0], [x0 + w, y0 + h]
    B = ct.box(lo, hi, closed=closed)
    want = inside(c, lo, hi, closed)
    assert np.array_equal(ct.einsum(BOX, B=B, P=G).to_numpy(), want)
    assert np.array_equal(ct.einsum(BOX, B=B, P=P).to_numpy(), want)
    assert ct.einsum(COUNT, B=B, P=G) == int(want.sum())


@SETTINGS
@given(coords_st, grid_st, st.integers(0, 6), st.integers(0, 6), st.integers(0, 4))
def test_radius_reads_the_index_inside_tiles(pts, grid, ox, oy, r):
    """(x - ox)**2 is read at the inner loop, on pinpoints; points exactly on the circle count."""
    c = np.array(pts, float)
    B = ct.box([ox - r, oy - r], [ox + r, oy + r])
    got = ct.einsum(RADIUS, B=B, P=ct.points(c, grid=grid), ox=float(ox), oy=float(oy), r=float(r)).to_numpy()
    assert np.array_equal(got, (c[:, 0] - ox) ** 2 + (c[:, 1] - oy) ** 2 <= r * r)


@SETTINGS
@given(coords_st, grid_st, st.lists(st.tuples(st.integers(-1, 7), st.integers(0, 3), st.sampled_from([0.5, 2.0, -1.0])),
                                    max_size=3))
def test_weighted_count_matches_the_oracle(pts, grid, runs):
    """Another tensor read with x is read at the tile loop: its runs split the cells into pieces."""
    c = np.array(pts, float)
    starts, stop = [], -10.0
    for a, ln, v in sorted(runs):
        if a > stop:
            starts.append((float(a), float(a + ln + 1), v))
            stop = a + ln + 1
    A = ct.intervals([s for s, _, _ in starts], [e for _, e, _ in starts], values=[v for _, _, v in starts])
    G = ct.points(c, grid=grid)
    got = ct.einsum(WEIGHTED, A=A, P=G)
    assert close(got, oracle(WEIGHTED, A=A, P=G).value)
    assert close(got, ct.einsum(WEIGHTED, A=A, P=ct.points(c)))


@SETTINGS
@given(coords_st, grid_st, st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 6), st.integers(0, 4),
                                              st.integers(0, 4)), min_size=1, max_size=4))
def test_batched_boxes(pts, grid, boxes):
    c = np.array(pts, float)
    lo = np.array([(a, b) for a, b, _, _ in boxes], float)
    hi = lo + np.array([(w, h) for _, _, w, h in boxes], float)
    y = ct.SparseInterval(ct.Pattern(), lo[:, 1], hi[:, 1], "both")
    Q = ct.Tensor(ct.Dense(ct.SparseInterval(y, lo[:, 0], hi[:, 0], "both"), len(boxes)))
    out = ct.einsum(BATCH, Q=Q, P=ct.points(c, grid=grid))
    want = np.stack([inside(c, lo[k], hi[k], "both") for k in range(len(boxes))])
    assert np.array_equal(out.to_numpy(), want)


def test_grid_layout_and_pieces():
    c = np.array([[0.0, 0.0], [1.0, 3.0], [2.5, 1.0], [3.0, 3.0], [3.0, 0.5]])
    G = ct.points(c, grid=(2, 2))
    assert repr(G) == "Tensor(UniformGrid(UniformGrid(SparseList(SparsePoint(SparsePoint(Pattern()))))), ndim=3)"
    assert G.ndim == 3 and [lv.coord for lv in G.modes()] == ["real", "real", "int"]
    assert sorted(G.pieces()) == sorted(ct.points(c).pieces())
    for k, (x, y) in enumerate(c):
        assert G[x, y, k] and not G[x, y, (k + 1) % len(c)]
    assert not G[ct.Limit(3.0, -1), 3.0, 3] and not G[-1.0, 0.0, 0]


def test_the_inner_loop_spans_only_its_piece():
    """A counting collapse must not count points of the cell outside the tile piece in y."""
    c = np.array([[1.0, 1.0], [1.0, 5.0], [2.0, 2.0], [2.0, 9.0]])
    G = ct.points(c, grid=(1, 1))
    B = ct.box([0, 0], [3, 3])
    assert ct.einsum(COUNT, B=B, P=G) == 2


def test_grid_errors():
    c = np.array([[0.0, 0.0], [1.0, 1.0]])
    P = ct.points(c, grid=2)
    for bad in (0, -1, 1.5, (2, 2, 2), True):
        with pytest.raises(ct.FormatError, match="grid"):
            ct.points(c, grid=bad)
    with pytest.raises(ct.InvalidProgramError, match="output index"):
        ct.einsum("C[x] = P[x, y, id] * d(y, id; counting, counting)", P=P)
    with pytest.raises(ct.InvalidProgramError, match="consecutive"):
        ct.einsum("s[] = Q[x, z, j] * P[x, y, id] * d(x, z, y; counting, counting, counting)",
                  Q=ct.points(c), P=P, order=["x", "z", "j", "y", "id"])
    lvl = ct.SparseList(ct.Pattern(), np.array([0, 1, 2]), np.array([1, 0]), shape=2)
    with pytest.raises(ct.FormatError, match="stored in cell"):        # coordinate 0.75 filed in cell 0
        ct.Tensor(ct.UniformGrid(ct.SparseList(lvl, np.array([0, 2, 2]), np.array([0.25, 0.75])), np.array([0, 0.5, 1.0])))
    with pytest.raises(ct.FormatError, match="edges"):
        ct.Tensor(ct.UniformGrid(ct.SparseList(lvl, np.array([0, 2]), np.array([0.25, 0.75])), np.array([1.0, 1.0])))
    with pytest.raises(ct.FormatError, match="top"):
        ct.Tensor(ct.SparseList(ct.UniformGrid(lvl, np.array([0.0, 1.0])), np.array([0, 1]), np.array([0.5])))


def test_shifted_reads_with_grids():
    """Offsets on a grid tensor's binned modes shift its grid levels too (same frame)."""
    c = np.round(np.random.default_rng(2).uniform(0, 20, (100, 2)))
    A = ct.intervals([0.0, 7.0], [5.0, 12.0], values=[2.0, 3.0])
    for text in ("s[] = A[x + d] * P[x, y, id] * d(x, y; counting, counting)",
                 "s[] = A[x] * P[x + d, y - d, id] * d(x, y; counting, counting)"):
        want = oracle(text, A=A, P=ct.points(c), d=1.5).value
        for g in (3, (4, 2), (5,)):
            assert close(ct.einsum(text, A=A, P=ct.points(c, grid=g), d=1.5), want)


@SETTINGS
@given(coords_st, grid_st, st.sampled_from(["P[x, y - d, id]", "P[x - d, y, id]", "P[x, 2*y, id]", "P[0.1*x + d, y, id]",
                                            "P[x + d, 3*y - d, id]"]),
       st.sampled_from([1.0, 0.5, 3.0, 1e6, -7.25]))
def test_affine_reads_of_a_grid_keep_the_points_at_the_top_edge(pts, grid, acc, d):
    """Through x = (u - b)/a the image of the top edge (one ulp above the last point) rounded onto
    the last point's image, and the points at the top of an axis were lost (fl(nextup(1) + 1) = 2).
    A box over everything finds every point, as without a grid."""
    c = np.array(pts, float)
    text = f"Out[id] = (B[x, y] & {acc}) * d(x, y; boolean, boolean)"
    B = ct.box([-1e9, -1e9], [1e9, 1e9])
    plain = ct.einsum(text, B=B, P=ct.points(c), d=d).to_numpy()
    assert plain.all()
    assert np.array_equal(ct.einsum(text, B=B, P=ct.points(c, grid=grid), d=d).to_numpy(), plain)


def test_whole_cells_on_cell_edges():
    """A piece that is a whole cell is walked without coordinate tests (`lower.tile.lower_piece`):
    boxes whose sides lie exactly on cell edges, on points at every edge, for a program that is a
    no-op on the fill (walked), one counted by positions and one that is not (the fallback)."""
    g = np.arange(9.0)
    c = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)      # edges at 0, 2, 4, 6, 8
    G, P = ct.points(c, grid=(4, 4)), ct.points(c)
    A = ct.intervals([1.0, 4.0], [3.0, 6.0], values=[2.0, -1.0], closed="both")
    k = ct.compile(BOX, B=ct.box([0, 0], [1, 1]), P=G)
    assert "_cell_lo" in k.ir                        # the run-time test for a whole cell
    for x0, x1, y0, y1 in [(0, 8, 0, 8), (2, 4, 2, 6), (2, 3.5, 4, 4), (1, 7, 0, 2), (4, 4, 4, 4),
                           (-1, 9, 2, 4), (0, 2, 6, 8), (6, 8, 0, 8)]:
        B = ct.box([x0, y0], [x1, y1])
        want = inside(c, [x0, y0], [x1, y1], "both")
        assert np.array_equal(k(B=B, P=G).to_numpy(), want)
        assert ct.einsum(COUNT, B=B, P=G) == int(want.sum())
        text = "s[] = B[x, y] * A[x] * P[x, y, id] * d(x, y; counting, counting)"
        assert close(ct.einsum(text, A=A, B=B, P=G), ct.einsum(text, A=A, B=B, P=P))
        got = ct.einsum(RADIUS, B=B, P=G, ox=4.0, oy=4.0, r=2.0).to_numpy()
        assert np.array_equal(got, want & ((c[:, 0] - 4) ** 2 + (c[:, 1] - 4) ** 2 <= 4))


def test_two_grids_of_different_cells():
    """Two gridded tensors in one einsum: a piece can be a whole cell of one grid and not of the
    other, whose looplets then cut the extent (the first one's cover is dropped)."""
    rng = np.random.default_rng(1)
    a, c = rng.integers(0, 6, (40, 2)).astype(float), rng.integers(0, 6, (30, 2)).astype(float)
    text = "s[] = B[x, y] * P[x, y, i] * Q[x, y, j] * d(x, y, i, j; counting, counting, counting, counting)"
    for lo, hi in [([0, 0], [5, 5]), ([1, 2], [4, 4]), ([2, 2], [2, 2])]:
        B = ct.box(lo, hi)
        pa, pc = a[inside(a, lo, hi, "both")], c[inside(c, lo, hi, "both")]
        want = int((pa[:, None, :] == pc[None, :, :]).all(-1).sum())       # pairs of equal points
        for g1, g2 in [((2, 2), (3, 3)), ((3, 3), (3, 3)), ((1, 1), (5, 2)), (None, (2, 2))]:
            assert ct.einsum(text, B=B, P=ct.points(a, grid=g1), Q=ct.points(c, grid=g2)) == want
