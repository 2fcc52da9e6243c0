"""Masked (min,+)/(max,+) values (`a if c else inf`) and the extremum collapse of a pinpoint stepper,
against the reference interpreter."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctensor as ct

from .helpers import oracle
from .test_differential import SETTINGS, interval_set

VALUES = ["x", "x + 3", "-x", "2 * x - 1", "x * x"]     # the last is not monotone: no collapse


def nearest(semiring: str, value: str) -> str:
    ident = "inf" if semiring == "min" else "-inf"
    return f"R[i] = (({value}) if (Q[i, x] & S[x, j]) else {ident}) * d(x, j; boolean, counting)"


@st.composite
def tiled_points(draw):
    """S[x, j]: distinct coordinates -> integer id ranges (some empty) -> Pattern, as the genome
    index stores its sorted starts; the ranges tile 0..n-1."""
    xs = sorted(set(draw(st.lists(st.integers(-8, 14), max_size=8))))
    sizes = draw(st.lists(st.integers(0, 2), min_size=len(xs), max_size=len(xs)))
    cum = np.cumsum([0] + sizes).astype(np.int64)
    ids = ct.SparseInterval(ct.Pattern(), cum[:-1], cum[1:], "left", shape=max(int(cum[-1]), 1))
    return ct.Tensor(ct.SparseList(ids, np.array([0, len(xs)]), np.asarray(xs, float)))


def _check(text, semiring, Q, S):
    k = ct.compile(text, semiring=semiring, Q=Q, S=S)
    got = k(Q=Q, S=S).to_numpy()
    ref = oracle(text, semiring=semiring, Q=Q, S=S)
    assert [float(g) for g in got] == [ref.at(i) for i in range(len(got))], (text, got)
    return k


@SETTINGS
@given(interval_set(), st.lists(st.integers(-8, 14), max_size=10), st.sampled_from(["min", "max"]),
       st.sampled_from(VALUES))
def test_extremum_collapse_matches_oracle(Q, xs, semiring, value):
    S = ct.points(np.asarray(xs, float).reshape(-1, 1))
    k = _check(nearest(semiring, value), semiring, Q, S)
    assert ("S_extremum" in k.ir) == (value != "x * x")


@SETTINGS
@given(interval_set(), tiled_points(), st.sampled_from(["min", "max"]), st.sampled_from(VALUES[:4]))
def test_extremum_skips_coordinates_without_ids(Q, S, semiring, value):
    k = _check(nearest(semiring, value), semiring, Q, S)
    assert ("S_extremum" in k.ir) == S.level.child.tiled       # no id stored at all: not tiled


def test_rays_find_the_nearest_point_on_each_side():
    """The closest step of genomics: the first point at or after each query end, the last at or
    before each query start (open and closed rays)."""
    rng = np.random.default_rng(5)
    pts = np.unique(rng.integers(0, 1000, 300)).astype(float)
    q = rng.integers(-50, 1050, 500).astype(float)
    S = ct.points(pts[:, None])
    right = ct.interval_set(q, np.full(len(q), np.inf))                       # [q, inf)
    left = ct.interval_set(np.full(len(q), -np.inf), q, closed="right")       # (-inf, q]
    nxt = ct.einsum(nearest("min", "x"), semiring="min", Q=right, S=S).to_numpy()
    prv = ct.einsum(nearest("max", "x"), semiring="max", Q=left, S=S).to_numpy()
    k = np.searchsorted(pts, q, "left")
    want_next = np.where(k < len(pts), pts[np.minimum(k, len(pts) - 1)], np.inf)
    k = np.searchsorted(pts, q, "right") - 1
    want_prev = np.where(k >= 0, pts[np.maximum(k, 0)], -np.inf)
    assert np.array_equal(nxt, want_next) and np.array_equal(prv, want_prev)


@pytest.mark.parametrize("text", [
    "R[] = (x if A[x] else inf) * d(x; boolean)",
    "R[] = (A[x] if A[x] > 1 else 0) * d(x; lebesgue)",
])
def test_ifelse_over_runs_matches_oracle(text):
    A = ct.intervals([0.0, 2.0, 5.0], [1.0, 2.0, 7.0], values=[3.0, 0.5, 2.0], closed="both")
    semiring = "min" if "inf" in text else None
    if "x if" in text:    # the value of x on an interval of positive length: invalid (paper §4.3)
        with pytest.raises(ct.InvalidProgramError):
            ct.einsum(text, semiring=semiring, A=A)
        return
    got = ct.einsum(text, semiring=semiring, A=A)
    assert math.isclose(got, oracle(text, semiring=semiring, A=A).value)
