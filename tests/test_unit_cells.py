"""UnitCells: a real level of unit cells [i - 0.5, i + 0.5) with O(1) locate, dense or through an
index of compact rows (issue 29 item 3) — read by generic einsums and checked against the
reference interpreter (tests/oracle) and a numpy trilinear reference."""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct

from .helpers import oracle
from .test_mixed_index import trilinear


def cells_1d(vals, indexed, rows_dtype=np.int32):
    vals = np.asarray(vals, float)
    if not indexed:
        return ct.Tensor(ct.UnitCells(ct.Element(0.0, val=vals), len(vals)), name="A")
    nz = np.flatnonzero(vals)
    rows = np.full(len(vals), -1, rows_dtype)
    rows[nz] = np.arange(len(nz))
    return ct.Tensor(ct.UnitCells(ct.Element(0.0, val=vals[nz]), len(vals), rows=rows), name="A")


def grid_3d(V, indexed=True):
    """Grid[x, y, z, c]: UnitCells^3 (the innermost through an int32 index of occupied voxels), then
    the channels as a Dense level."""
    X, Y, Z, C = V.shape
    occ = (V != 0).any(-1)
    if indexed:
        rows = np.full(X * Y * Z, -1, np.int32)
        rows[occ.reshape(-1)] = np.arange(occ.sum())
        leaf = ct.Dense(ct.Element(0.0, val=V[occ].reshape(-1)), C)
        return ct.Tensor(ct.UnitCells(ct.UnitCells(ct.UnitCells(leaf, Z, rows=rows), Y), X), name="Grid")
    leaf = ct.Dense(ct.Element(0.0, val=V.reshape(-1)), C)
    return ct.Tensor(ct.UnitCells(ct.UnitCells(ct.UnitCells(leaf, Z), Y), X), name="Grid")


@pytest.mark.parametrize("indexed", [False, True])
@pytest.mark.parametrize("text,scalars", [
    ("s[] = A[x] * B[x] * d(x; lebesgue)", {}),
    ("O[y] = P[y] * A[y + x] * B[x] * d(x; lebesgue)", {}),
    ("s[] = A[c + 2*x] * B[x] * d(x; lebesgue)", {"c": 0.3}),
    ("O[x] = A[x] + B[x]", {}),
    ("s[] = A[x] * P[x] * d(x; counting)", {}),
])
def test_generic_einsums_match_oracle(text, scalars, indexed):
    A = cells_1d([0.5, 0.0, 2.0, -1.0, 0.0, 3.0], indexed)
    B = ct.intervals([-1.0, 0.7, 2.5, 4.5], [0.2, 2.5, 3.0, 9.0], values=[1.0, 2.0, -0.5, 1.5])
    P = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.ones(5)), [0, 5], [-0.5, 0.5, 1.49, 2.5, 5.4999]), name="P")
    got = ct.einsum(text, A=A, B=B, P=P, **scalars)
    ref = oracle(text, A=A, B=B, P=P, **scalars)
    if text.startswith("s[]"):
        assert got == pytest.approx(ref.value, abs=1e-12)
        return
    for x in sorted(set(np.linspace(-2.0, 8.0, 81)) | {-0.5, 0.5, 1.49, 2.5, 5.4999}):
        assert got[float(x)] == pytest.approx(ref.at(float(x)), abs=1e-12), x


def test_python_side_eval_and_pieces():
    A = cells_1d([0.5, 0.0, 2.0], True)
    assert [A[x] for x in (-0.6, -0.5, 0.49, 0.5, 1.2, 1.5, 2.49, 2.5)] == [0, 0.5, 0.5, 0, 0, 2.0, 2.0, 0]
    assert A[ct.Limit(0.5, -1)] == 0.5 and A[ct.Limit(-0.5, -1)] == 0
    assert [(c[0][0].value, v) for c, v in A.pieces()] == [(-0.5, 0.5), (1.5, 2.0)]


def test_bad_rows_are_refused():
    with pytest.raises(ct.FormatError, match=r"rows\[1\] = -2"):
        ct.Tensor(ct.UnitCells(ct.Element(0.0, val=np.ones(1)), 3, rows=np.array([0, -2, -1])))
    with pytest.raises(ct.FormatError, match="expected 3 entries"):
        ct.Tensor(ct.UnitCells(ct.Element(0.0, val=np.ones(1)), 3, rows=np.array([0, -1])))
    with pytest.raises(ct.FormatError, match="int32 or int64"):
        ct.UnitCells(ct.Element(0.0), 3, rows=np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ct.FormatError):      # a row past the values
        ct.Tensor(ct.UnitCells(ct.Element(0.0, val=np.ones(1)), 3, rows=np.array([0, 1, -1])))


BATCH = ("Out[m, c] = P[m, u, v, w] * Grid[u + x, v + y, w + z, c] * Box[x, y, z]"
         " * d(u, v, w; counting, counting, counting) * d(x, y, z; lebesgue, lebesgue, lebesgue)")


def point_tensor(pts):
    """P[m, u, v, w]: point m at (u, v, w) — Dense over ids, one pinpoint per level below."""
    lv = ct.SparsePoint(ct.SparsePoint(ct.SparsePoint(ct.Pattern(), pts[:, 2]), pts[:, 1]), pts[:, 0])
    return ct.Tensor(ct.Dense(lv, len(pts)), name="P")


@pytest.mark.parametrize("indexed", [False, True])
def test_batched_trilinear_is_one_einsum(indexed):
    """Many points in one kernel: equal to numpy trilinear interpolation on centres, faces, edges,
    corners, outside and far outside the grid."""
    rng = np.random.default_rng(5)
    X, Y, Z, C = 6, 5, 7, 3
    V = np.where(rng.random((X, Y, Z, 1)) < 0.4, rng.uniform(-1, 1, (X, Y, Z, C)), 0.0)
    pts = rng.uniform(-1.5, 7.5, (300, 3))
    pts[:60] = np.round(pts[:60])                      # voxel centres
    pts[60:120] = np.round(pts[60:120] * 2) / 2        # faces, edges, corners of the cells
    pts[120:125] = [[-0.5, 0, 0], [X - 0.5, 1, 1], [1e6, 2, 2], [-1e300, 1, 1], [2, 2, Z - 1]]
    Box = ct.box([-0.5] * 3, [0.5] * 3, closed="left")
    out = ct.einsum(BATCH, P=point_tensor(pts), Grid=grid_3d(V, indexed), Box=Box).to_numpy()
    want = np.stack([trilinear(V[..., c], pts) for c in range(C)], 1)
    np.testing.assert_allclose(out, want, atol=1e-12)


def test_float32_values_are_read_widened():
    """Element(dtype=float32): half the memory; kernels read the values widened to float64, so the
    result equals the float64 computation on the same (float32) numbers."""
    rng = np.random.default_rng(6)
    V = np.where(rng.random((4, 4, 4, 1)) < 0.5, rng.uniform(-1, 1, (4, 4, 4, 2)), 0.0).astype(np.float32)
    occ = (V != 0).any(-1)
    rows = np.full(64, -1, np.int32)
    rows[occ.reshape(-1)] = np.arange(occ.sum())
    leaf = ct.Dense(ct.Element(0.0, val=V[occ].reshape(-1), dtype=np.float32), 2)
    G = ct.Tensor(ct.UnitCells(ct.UnitCells(ct.UnitCells(leaf, 4, rows=rows), 4), 4), name="Grid")
    assert "dtype=float32" in G.format.format_str() and G.levels()[-1].val.dtype == np.float32
    pts = rng.uniform(-1, 4.5, (50, 3))
    Box = ct.box([-0.5] * 3, [0.5] * 3, closed="left")
    out = ct.einsum(BATCH, P=point_tensor(pts), Grid=G, Box=Box).to_numpy()
    assert out.dtype == np.float64
    want = np.stack([trilinear(V[..., c].astype(np.float64), pts) for c in range(2)], 1)
    np.testing.assert_allclose(out, want, atol=1e-12)
    with pytest.raises(ct.FormatError, match=r"val\[1\] = 0.1 is not a float32 number"):
        ct.Element(0.0, val=[0.5, 0.1], dtype=np.float32)
    # a float32 output leaf: each sum computed in float64, its result rounded to float32
    out32 = ct.einsum(BATCH, P=point_tensor(pts), Grid=G, Box=Box,
                      out=ct.Dense(ct.Dense(ct.Element(0.0, dtype=np.float32))))
    assert out32.levels()[-1].val.dtype == np.float32
    np.testing.assert_allclose(out32.to_numpy(), want, rtol=1e-6, atol=1e-7)
    s = ct.einsum("O[i] = A[i] * A[i]", A=ct.Tensor(ct.Dense(ct.Element(0.0), 3), np.array([0.1, 2.0, 3.0])),
                  out=ct.Dense(ct.Element(0.0, dtype=np.float32)))
    assert s.to_numpy().tolist() == np.float32([0.1 * 0.1, 4.0, 9.0]).tolist()


def test_negative_coefficient_is_refused_clearly():
    """A reversed read (a negative coefficient on the lowered index) is not implemented for
    UnitCells: a clear error, not a wrong answer."""
    A = cells_1d([0.5, 0.0, 2.0], True)
    B = ct.intervals([-1.0], [1.0], values=[1.0])
    with pytest.raises(ct.InvalidProgramError, match="UnitCells cannot be read with a negative index coefficient"):
        ct.einsum("s[] = A[2 - x] * B[x] * d(x; lebesgue)", A=A, B=B)
