"""SparsePoint levels lowered through the Pinpoint looplet, and SparsePoint(positions=True).

Oracle: the reference interpreter (tests/oracle) on the same tensors, and numpy for box search.
The Pinpoint pass has two paths: a body that annihilates on the fill (`&`, `*`) becomes one
coordinate test per fiber; any other body (`+`, `max`) lowers the fiber's Sequence form."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct

from .helpers import close, oracle
from .test_differential import interval_tensor

SETTINGS = settings()


def per_id(xs, vs):
    return ct.Tensor(ct.Dense(ct.SparsePoint(ct.Element(0.0, val=np.asarray(vs, float)),
                                             idx=np.asarray(xs, float)), len(xs)))


points_and_values = st.lists(st.tuples(st.integers(-6, 12), st.sampled_from([1.0, -2.0, 0.5])), min_size=1, max_size=6)


@SETTINGS
@given(points_and_values, interval_tensor(allow_inf=False))
def test_fill_not_annihilated_takes_the_sequence_form(pts, A):
    """T + A is not a no-op where T is fill: the pass must lower the phases around the pinpoint."""
    T = per_id([p[0] for p in pts], [p[1] for p in pts])
    W = ct.intervals([-3.0], [8.0], values=[1.0], closed="both")     # a finite window for lebesgue
    for text in ["C[i] = (T[i, x] + A[x]) * W[x] * d(x; lebesgue)",
                 "C[i] = (T[i, x] + A[x]) * W[x] * d(x; counting)",
                 "C[i] = (T[i, x] * A[x]) * d(x; counting)",
                 "C[i] = max(T[i, x], A[x]) * W[x] * d(x; lebesgue)"]:
        got = ct.einsum(text, T=T, A=A, W=W).to_numpy()
        ref = oracle(text, T=T, A=A, W=W)
        for i in range(len(pts)):
            assert close(got[i], ref.at(i)), (text, i, got[i], ref.at(i))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), min_size=1, max_size=25,
                unique_by=lambda p: p[0]),
       st.integers(0, 6), st.integers(0, 6), st.integers(0, 4), st.integers(0, 4))
def test_positions_level_equals_stored_ids(pts, x0, y0, w, h):
    """Points stored in id order: ids as positions (no idx array) give the same pieces and the
    same einsum results as ids stored explicitly."""
    c = np.array(sorted(pts), dtype=float)
    n = len(c)
    x = ct.SparseList(ct.SparsePoint(ct.SparsePoint(ct.Pattern(), idx=np.arange(n), shape=n + 2), idx=c[:, 1]),
                      ptr=[0, n], idx=c[:, 0], real=True)
    implicit = ct.SparseList(ct.SparsePoint(ct.SparsePoint(ct.Pattern(), shape=n + 2, positions=True),
                                            idx=c[:, 1]), ptr=[0, n], idx=c[:, 0], real=True)
    P, Q = ct.Tensor(x), ct.Tensor(implicit)
    assert list(P.pieces()) == list(Q.pieces())
    assert Q.nbytes < P.nbytes
    B = ct.box([x0, y0], [x0 + w, y0 + h])
    text = "Out[id] = (B[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"
    got = ct.einsum(text, B=B, P=Q).to_numpy()
    want = (c[:, 0] >= x0) & (c[:, 0] <= x0 + w) & (c[:, 1] >= y0) & (c[:, 1] <= y0 + h)
    assert np.array_equal(got[:n], want) and not got[n:].any()
    assert np.array_equal(got, ct.einsum(text, B=B, P=P).to_numpy())
    s = "s[] = P[x, y, id] * d(x, y, id; counting, counting, counting)"
    assert ct.einsum(s, P=Q) == n == oracle(s, P=Q).value


def test_positions_validation():
    with pytest.raises(ct.FormatError, match="shape >= 3"):
        ct.Tensor(ct.SparseList(ct.SparsePoint(ct.Pattern(), shape=2, positions=True),
                                ptr=[0, 3], idx=[0.0, 1.0, 2.0], real=True))
    with pytest.raises(ct.FormatError, match="integer axis"):
        ct.SparsePoint(ct.Pattern(), positions=True)
    with pytest.raises(ct.FormatError, match="integer axis"):
        ct.SparsePoint(ct.Pattern(), idx=[0], shape=3, positions=True)


def test_points_in_id_order_store_no_ids():
    """The spatial index stores its ids (ranks in the grid layout) as positions."""
    from ctensor.apps import spatial
    rng = np.random.default_rng(1)
    idx = spatial.index(rng.uniform(0, 100, (500, 2)))
    assert "positions=True" in repr(idx.tensor)


@pytest.mark.parametrize("d", [3, 6])
def test_box_query_in_d_dimensions_code_linear_in_d(d):
    """A d-dimensional box over pinpoints: the right ids (numpy), and code linear in d — the
    "whole fiber" second version of a pinpoint walk nests at most `WHOLE_SPLIT_NEST` deep (2^d
    copies of the innermost loop before: d = 8 took a minute to compile)."""
    rng = np.random.default_rng(d)
    X = np.round(rng.random((200, d)), 1)               # ties and points on the box's faces
    lo, hi = np.full(d, 0.2), np.full(d, 0.8)
    idx = ", ".join(f"x{k}" for k in range(d))
    text = f"Out[id] = (B[{idx}] & P[{idx}, id]) * d({idx}; " + ", ".join(["boolean"] * d) + ")"
    k = ct.compile(text, B=ct.box(lo, hi), P=ct.points(X))
    got = k(B=ct.box(lo, hi), P=ct.points(X)).to_numpy()
    assert np.array_equal(got, ((X >= lo) & (X <= hi)).all(1))
    if d == 6:   # 3 -> 6 dimensions: twice the levels, not 8x the code
        k3 = ct.compile(text.replace(", x3, x4, x5", "").replace(", boolean, boolean, boolean", ""),
                        B=ct.box(lo[:3], hi[:3]), P=ct.points(X[:, :3]))
        assert len(k.ir) < 3 * len(k3.ir)
