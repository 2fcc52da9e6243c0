"""The counting measure over an index binned by a UniformGrid (`ct.points(..., grid=)`).

A grid cuts the axis into cells at edges that are no change of value, so a tile piece can be a
point only because a cell edge meets another tensor's bound; and where the grid tensor is its fill,
the other tensors' pinpoints count.  The tile loops lower the programs where the grid tensor is a
factor with fill 0 under + or or (only its own points count): those equal the reference
interpreter, with grids of 1-3 cells over random points and random 1-D tensors of every level
kind.  The others are refused (found by the differential fuzzer: `(A[x] * P[x, i] + 1) * d(x;
counting)` dropped A's pinpoint outside the grid's cells)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct

from .helpers import oracle
from .test_fuzz_multidim import REAL_LEVELS, compare, examples, nest, seeds

ANNIHILATING = [("O[i] = P[x, i] * (A[x] + 1) * d(x; counting)", None),
                ("s[] = P[x, i] * A[x] * d(x, i; counting, counting)", None),
                ("O[i] = P[x, i] * (2 - A[x]) * d(x; counting)", None),
                ("O[i] = (P[x, i] & (A[x] > 0)) * d(x; counting)", "or")]


@examples(10)
@given(seeds, st.sampled_from(REAL_LEVELS), st.integers(1, 3))
def test_grid_points_under_counting_against_the_oracle(seed, kind, cells):
    rng = np.random.default_rng(seed)
    pts = rng.integers(-3, 5, size=(rng.integers(1, 6), 1)).astype(float) + (rng.random() < 0.3) * 0.5
    P = ct.points(pts, grid=cells)
    A = nest(seed, [kind, "E"])
    for text, sr in ANNIHILATING:
        compare(text, semiring=sr, A=A, P=P)


def test_another_tensors_point_at_a_grid_point_counts_for_every_id():
    """A's pinpoint at 0.5, where P stores id 0: the point is isolated by A for every id."""
    A = ct.intervals([0.5], [0.5], values=[3.0], closed="both")
    P = ct.points(np.array([[0.5], [2.0]]), grid=2)
    text = "O[i] = P[x, i] * (A[x] + 1) * d(x; counting)"
    assert ct.einsum(text, A=A, P=P).to_numpy().tolist() == [oracle(text, A=A, P=P).at(i) for i in range(2)] \
        == [4.0, 1.0]


@pytest.mark.parametrize("text, semiring", [("s[] = (A[x] * P[x, i] + 1) * d(x; counting)", None),
                                            ("O[i] = (1 - P[x, i]) * A[x] * d(x; counting)", None),
                                            ("O[i] = P[x, i] * (A[x] + 1) * d(x; counting)", "max")])
def test_a_grid_tensor_whose_fill_counts_is_refused(text, semiring):
    A = ct.intervals([-1.0], [-1.0], values=[3.0], closed="both")
    P = ct.points(np.array([[0.5]]), grid=1)
    with pytest.raises(ct.InvalidProgramError, match="stored under UniformGrid levels and the counting measure"):
        ct.einsum(text, semiring=semiring, A=A, P=P)
    flat = ct.points(np.array([[0.5]]))                     # without the grid: lowered, and right
    compare(text, semiring=semiring, A=A, P=flat)
