"""Index expressions outside accesses in a sum: each is checked only where it is read.

Continuous paper §4.3, rule 2: an expression of loop indices outside tensor accesses must be
constant on every effectual partition.  In `C[x] = Q[x] * x + A[x]` with Q pinpoints, the term x is
read only where Q is stored (Q's fill 0 annihilates it elsewhere), so the program is valid although
A makes intervals effectual; ctensor refused it before (the check asked the whole right-hand side
to be pinpoints).  Now each index term is checked alone, with the accesses that drop it at their
fill as guards (`analysis.pattern.guards_term`).  Oracle: the reference interpreter (tests/oracle),
which accepts a cell where a factor annihilates the term and refuses one where the value varies.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct
from ctensor.analysis.validity import check

from .test_fuzz_multidim import REAL_LEVELS, compare, examples, nest, seeds

Q = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([2.0, 5.0])), np.array([0, 2]), np.array([1.0, 3.0])))
A = ct.intervals([0.0], [4.0], values=[1.0], closed="left")

ACCEPTED = [("C[x] = Q[x] * x + A[x]", None),
            ("C[x] = (x if Q[x] > 0 else A[x])", None),
            ("s[] = (Q[x] * x + A[x]) * d(x; lebesgue)", None),
            ("s[] = (Q[x] * x + A[x]) * d(x; counting)", None),
            ("s[] = max(Q[x] * (x - c) ** 2, A[x]) * d(x; lebesgue)", "max"),
            ("s[] = (Q[x] * x + A[x]) * d(x; boolean)", "min")]


@pytest.mark.parametrize("text,sr", ACCEPTED)
def test_a_term_masked_by_pinpoints_in_a_sum(text, sr):
    assert check(text, semiring=sr, Q=Q, A=A, c=1.5).valid
    compare(text, semiring=sr, Q=Q, A=A, c=1.5)


def test_the_known_values():
    got = ct.einsum("C[x] = Q[x] * x + A[x]", Q=Q, A=A).pieces()
    assert [v for _, v in got] == [1.0, 3.0, 1.0, 16.0, 1.0]          # 2*1 + 1 at x = 1, 5*3 + 1 at x = 3
    assert ct.einsum("s[] = (Q[x] * x + A[x]) * d(x; counting)", Q=Q, A=A) == 19.0


@pytest.mark.parametrize("text", ["C[x] = A[x] * x + Q[x]", "C[x] = Q[x] * x + A[x] * x",
                                  "s[] = (Q[x] + A[x]) * x * d(x; lebesgue)"])
def test_a_term_read_on_an_interval_is_still_refused(text):
    with pytest.raises(ct.InvalidProgramError, match="the expression x reads loop indices"):
        ct.einsum(text, Q=Q, A=A)


def test_points_in_two_dims_with_a_coordinate_term():
    """Out[id] sums P's x coordinate where P stores id, plus a dense term."""
    P = ct.points(np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]]))
    W = ct.intervals([0.0], [2.0], values=[1.0], closed="both")
    text = "Out[id] = (P[x, y, id] * x * y + P[x, y, id] * W[x]) * d(x, y; counting, counting)"
    got = compare(text, P=P, W=W).to_numpy()
    assert got.tolist() == [1 * 2 + 1, 3 * -1 + 0, 0.25 + 1]


@examples(8)
@given(seeds, st.sampled_from(["SLr", "SPr"]), st.sampled_from(REAL_LEVELS))
def test_random_tensors_against_the_oracle(seed, kq, ka):
    Qr = nest(seed, [kq, "E"])                                       # pinpoints
    Ar = nest(seed + 1, [ka, "E"])
    for text, sr in [("C[x] = Q[x] * x + A[x]", None), ("s[] = (Q[x] * x * x - A[x]) * d(x; lebesgue)", None),
                     ("s[] = (Q[x] * x + A[x]) * d(x; counting)", None),
                     ("s[] = min(Q[x] * x, A[x] + 1) * d(x; lebesgue)", "min")]:
        compare(text, semiring=sr, Q=Qr, A=Ar)
