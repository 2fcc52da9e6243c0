"""Real coordinates stored in single precision (issue 31): SparseList / SparsePoint pinpoints and
SparseRunList / SparseInterval endpoints given as float32 stay float32 (handed over with `owned=True`: no copy at
all; otherwise ct.Tensor's defensive copy keeps the width), the kernel
reads them widened to float64 (exact), and the answers equal those of the same coordinates in
float64 (which the oracle checks).  The width is part of the format key: a kernel compiled for
one width never reads buffers of the other."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct

from .test_fuzz_multidim import REAL_LEVELS, compare, examples, nest, seeds


def _as32(t: ct.Tensor) -> ct.Tensor:
    """The same tensor with its real coordinates in float32 (the test data are small integers
    and halves: exact in float32)."""
    def walk(lvl):
        if lvl is None or getattr(lvl, "is_leaf", False) or not hasattr(lvl, "child"):
            return
        for attr in ("idx", "left", "right"):
            a = getattr(lvl, attr, None)
            if a is not None and a.dtype == np.float64:
                setattr(lvl, attr, a.astype(np.float32))
        walk(lvl.child)
    lvl = copy.deepcopy(t.level)
    walk(lvl)
    return ct.Tensor(lvl)


def test_float32_endpoints_are_kept_without_a_copy_and_keyed():
    s, e = np.array([0.0, 2.0], np.float32), np.array([1.0, 3.0], np.float32)
    owned = ct.Tensor(ct.SparseRunList(ct.Element(0.0, val=np.array([1.0, 2.0])), [0, 2], s, e), owned=True)
    assert owned.level.left is s and owned.level.right is e      # handed over: no copy, no widening
    A = ct.intervals(s, e, values=np.array([1.0, 2.0]))             # a copy (the caller may write), float32
    assert A.level.left.dtype == A.level.right.dtype == np.float32
    assert A.level.format_key()[-1] == "float32"
    A64 = ct.intervals(s.astype(np.float64), e.astype(np.float64), values=np.array([1.0, 2.0]))
    assert A64.level.format_key()[-1] != "float32"
    B = ct.intervals(np.array([0.5]), np.array([4.0]))
    k32 = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    assert k32(A=A, B=B) == ct.einsum("s[] = A[x] * B[x] * d(x; lebesgue)", A=A64, B=B) == 2.5
    assert not k32.accepts({"A": A64, "B": B})
    assert [f.dtype for f in k32.abi.fields if f.tensor == "A" and f.attr in ("left", "right")] == ["float32"] * 2


def test_mixed_widths_are_stored_in_float64():
    A = ct.intervals(np.array([0.0], np.float32), np.array([1.0]))
    assert A.level.left.dtype == A.level.right.dtype == np.float64


def test_float32_points_and_a_grid():
    rng = np.random.default_rng(0)
    c32 = rng.random((500, 2)).astype(np.float32)
    box = ct.box([0.2, 0.3], [0.5, 0.9])
    text = "Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"
    want = (c32[:, 0] >= 0.2) & (c32[:, 0] <= 0.5) & (c32[:, 1] >= 0.3) & (c32[:, 1] <= 0.9)
    for grid in (None, 8):
        P = ct.points(c32, grid=grid)
        assert ct.einsum(text, Box=box, P=P).to_numpy().tolist() == want.tolist()


@examples(8)
@given(seeds, st.sampled_from(REAL_LEVELS), st.sampled_from(REAL_LEVELS), st.sampled_from(["E", "P"]))
def test_float32_nests_equal_float64_and_the_oracle(seed, ka, kb, leaf):
    A = nest(seed, [ka, "D", leaf])
    B = nest(seed + 1, [kb, "E"])
    A32, B32 = _as32(A), _as32(B)
    for text in ["s[] = A[x, i] * B[x] * d(x, i; lebesgue, counting)", "O[i] = A[x, i] * B[x] * d(x; counting)",
                 "C[x] = B[x] * 2", "s[] = A[x + c, i] * B[x] * d(x, i; lebesgue, counting)",
                 "s[] = A[c - x, i] * B[x] * d(x, i; lebesgue, counting)"]:
        got = compare(text, A=A32, B=B32, c=0.5)
        ref = ct.einsum(text, A=A, B=B, c=0.5)
        if isinstance(ref, ct.Tensor):
            assert got.pieces() == ref.pieces()
        else:
            assert got == pytest.approx(ref)
