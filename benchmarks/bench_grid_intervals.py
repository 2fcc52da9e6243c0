"""The genomics grid as a format: UniformGrid over an interval level against the app's grid layout.

    pytest benchmarks/bench_grid_intervals.py --benchmark-min-rounds=5 -p no:xdist

Issue 31 item 2 asks whether `ctensor.apps.genome_layout`'s grid index (`G[c, j]`: pinpoints at
the left edges of the non-empty cells, each listing the ids meeting it; counted and joined by the
`grid_*` einsums with a reference-cell test) should become `UniformGrid(SparseRunList(SparseList(
Pattern())))` = `formats.grid_intervals.interval_index(start, end, grid=edges)`, queried by

    O[i, j] = (Q[i, x] & S[x, j]) * d(x; boolean)     (semiring or; out Dense(SparseList))

with the same cell width (the app's `choose_cell`).  It is switched only if as fast.  Peers, one
process, grouped per (operation, data set): `app_grid` (genomics.index(d, layout="grid")),
`uniform_grid` (the einsum above; a count is the row lengths of the join).  Every result is checked
against the app's counts outside the timing.
"""
from __future__ import annotations

from functools import cache

import genomics_peers as g
import numpy as np
import pytest

DATASETS = ("L100", "L1000", "gerp_exons")
OPS = ("count", "join")


@cache
def _setup(ds):
    import ctensor as ct
    from ctensor.apps import genomics
    from ctensor.formats.grid_intervals import interval_index
    q, d = g.dataset(ds)
    idx = {op: genomics.index(d, ops=(op,), layout="grid") for op in ("count", "overlap")}
    ref = idx["count"].count_overlaps(q.start, q.end)
    w = idx["count"].cell
    s, e = d.start.to_numpy(np.float64), d.end.to_numpy(np.float64)
    n = max(int(np.ceil((e.max() - s.min()) / w)), 1)
    S = interval_index(s, e, closed="left", grid=s.min() + w * np.arange(n + 1, dtype=np.float64))
    Q = ct.Tensor(ct.Dense(ct.SparseInterval(ct.Pattern(), q.start.astype(np.float64), q.end.astype(np.float64),
                                             "left"), len(q.start)))
    out = ct.Tensor(ct.Dense(ct.SparseList(ct.Pattern(), real=False)))
    k = ct.compile("O[i, j] = (Q[i, x] & S[x, j]) * d(x; boolean)", semiring="or", out=out, Q=Q, S=S)
    return q, idx, ref, k, Q, S


def _uniform_grid(k, Q, S):
    O = k(Q=Q, S=S)
    return np.diff(O.level.child.ptr)


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("peer", ("app_grid", "uniform_grid"))
def test_grid_layouts(benchmark, peer, op, ds):
    q, idx, ref, k, Q, S = _setup(ds)
    benchmark.group = f"{op}:{ds}"
    benchmark.extra_info.update(op=op, peer=peer, dataset=ds, cell=idx["count"].cell)
    if peer == "uniform_grid":
        got = benchmark(_uniform_grid, k, Q, S)                # the join; its row lengths are the counts
    elif op == "count":
        got = benchmark(idx["count"].count_overlaps, q.start, q.end)
    else:
        qi, _ = benchmark(idx["overlap"].overlap, q.start, q.end)
        got = np.bincount(qi, minlength=len(q.start))
    assert np.array_equal(np.asarray(got, np.int64), np.asarray(ref, np.int64))
