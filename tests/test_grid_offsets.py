"""Offsets into grid-binned modes (`ctensor.driver.grid_offsets`): `P[x + r, y + s, j]` with P under
a UniformGrid compiles as `P[a, b, j]` with r = a - x (it was refused before), equal to brute
force; programs without such a read are left as written."""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct
from ctensor.driver.grid_offsets import rewrite

RNG = np.random.default_rng(5)


def test_radius_count_through_offsets():
    """Out[i] = #{j : |p_j - q_i| <= R}, the neighbourhood written as query + offset (paper Fig. 26)."""
    P, Q = RNG.uniform(0, 10, (400, 2)), RNG.uniform(-1, 11, (30, 2))
    P[0] = Q[0] + [1.5, 0.0]                  # exactly at the radius
    text = ("Out[i] = Q[x, y, i] * P[x + r, y + s, j] * B[r, s] * (r*r + s*s <= R2)"
            " * d(x, y, r, s, j; counting, counting, counting, counting, counting)")
    args = dict(Q=ct.points(Q), P=ct.points(P, grid=(6, 5)), B=ct.box([-1.5, -1.5], [1.5, 1.5]), R2=2.25)
    got = ct.einsum(text, **args).to_numpy()
    want = (((P[None] - Q[:, None]) ** 2).sum(2) <= 2.25).sum(1)
    assert got.tolist() == want.tolist() and want[0] >= 1
    new, renamed = rewrite(text, args)
    assert renamed == {"r": "r_at", "s": "s_at"}
    assert "P[r_at, s_at, j]" in new and "B[r_at - x, s_at - y]" in new


def test_offset_inside_other_expressions_and_a_weight():
    """The offset also feeds a weight and a shifted read: Σ_j max(0, 1 - |r|) G[r + 0.5] over neighbours."""
    P, Q = RNG.uniform(0, 4, (120, 1)), RNG.uniform(0, 4, (15, 1))
    G = ct.intervals([-2.0, 0.5], [0.5, 3.0], values=[2.0, 3.0], closed="left")
    text = "Out[i] = Q[x, i] * P[x + r, j] * B[r] * max(0, 1 - abs(r)) * G[r + h] * d(x, r, j; counting, counting, counting)"
    args = dict(Q=ct.points(Q), P=ct.points(P, grid=8), B=ct.box([-1.0], [1.0]), G=G, h=0.5)
    got = ct.einsum(text, **args).to_numpy()
    r = P[None, :, 0] - Q[:, None, 0]
    g = np.where(r + 0.5 < 0.5, 2.0, 3.0)
    want = (np.maximum(0, 1 - np.abs(r)) * (np.abs(r) <= 1.0) * g).sum(1)
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("grid", [None, 4])
def test_left_as_written(grid):
    P = ct.points(RNG.uniform(0, 1, (10, 1)), grid=grid)
    text = "Out[i] = Q[x, i] * P[x + r, j] * B[r] * d(x, r, j; counting, counting, counting)"
    args = dict(Q=ct.points(RNG.uniform(0, 1, (3, 1))), P=P, B=ct.box([-0.1], [0.1]))
    assert (rewrite(text, args) is None) == (grid is None)
    # an offset that is an output index is not a summed offset: nothing to rewrite
    assert rewrite("Out[r] = P[x + r, j] * d(x, j; counting, counting)", dict(P=P)) is None
