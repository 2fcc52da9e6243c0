"""`closest` (bedtools closest -d) against bioframe, pyranges and a numba reference.

    pytest benchmarks/bench_closest.py --benchmark-min-rounds=3 --benchmark-json=closest.json
    python benchmarks/genomics_report.py closest.json

Same data sets as bench_genomics.py (genomics_peers.DATASETS).  Timed: the query only, each index
built beforehand.  The numba reference answers the per-query nearest distance in bedtools'
convention (0 if overlapping, else gap + 1) with two binary searches; ctensor's distances must
equal it exactly.  bioframe.closest and pyranges.nearest report one nearest interval (k=1) in their
own conventions (book-ended intervals are 0 apart for both, ties broken arbitrarily), so they are
timed and only checked for one row per query; ctensor also returns every tie (bedtools -t all).
"""
from __future__ import annotations

from functools import cache

import genomics_peers as g
import numpy as np
import pytest
from numba import njit

DATASETS = g.DATASETS
SLOW = {"bioframe", "pyranges"}


@njit(cache=False)
def _nearest(ss, es, qs, qe):   # ss sorted starts, es sorted ends (zero-length widened)
    out = np.empty(qs.shape[0], np.float64)
    for i in range(qs.shape[0]):
        a, b = qs[i], qe[i]
        n_start = np.searchsorted(ss, b, "left")      # starts < b
        n_end = np.searchsorted(es, a, "right")       # ends <= a
        if n_start - n_end > 0:
            out[i] = 0.0
            continue
        best = np.inf
        if n_start < ss.shape[0]:
            best = ss[n_start] - b + 1.0
        if n_end > 0:
            best = min(best, a - es[n_end - 1] + 1.0)
        out[i] = best
    return out


def _widened(df):
    w = g.widen_zero_length(df)
    return w.start.to_numpy(np.float64), w.end.to_numpy(np.float64)


def numba_build(d):
    s, e = _widened(d)
    return np.sort(s), np.sort(e)


def numba_closest(idx, q):
    qs, qe = _widened(q.df)
    return _nearest(idx[0], idx[1], qs, qe)


def bioframe_closest(d, q):
    import bioframe as bf
    return bf.closest(q.df[g.BED], d[g.BED], return_input=False, return_index=True)


def pyranges_closest(idx, q):
    return g._pr(q.df, "qi").nearest(idx).df


PEERS = {"numba": (numba_build, numba_closest),
         "bioframe": (lambda d: d[g.BED].reset_index(drop=True), bioframe_closest),
         "pyranges": (g.pyranges_build, pyranges_closest)}


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    q, d = g.dataset("L100")
    numba_closest(numba_build(d.iloc[:10]), q)


@cache
def _reference(ds):
    q, d = g.dataset(ds)
    return numba_closest(numba_build(d), q)


def _time(benchmark, peer, ds, fn, args):
    benchmark.group = f"closest:{ds}"
    benchmark.extra_info.update(op="closest", peer=peer, dataset=ds, mode="query")
    if peer in SLOW and ds in ("L100000", "snps_exons"):
        return benchmark.pedantic(fn, args, rounds=3, iterations=1)
    return benchmark(fn, *args)


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("peer", list(PEERS))
def test_closest(benchmark, peer, ds):
    q, d = g.dataset(ds)
    build, query = PEERS[peer]
    out = _time(benchmark, peer, ds, query, (build(d), q))
    if peer == "numba":
        return
    assert len(out) >= len(q.start) * 0.99, f"{peer}: about one row per query expected"


@pytest.mark.parametrize("ds", DATASETS)
def test_ctensor(benchmark, ds):
    from ctensor.apps import genomics
    q, d = g.dataset(ds)
    idx = genomics.index(d, ops=("closest",))

    def run(idx, q):
        return idx.closest(q.start, q.end)
    rows, _, dist = run(idx, q)        # first call outside the timing (kernel compilation)
    first = np.r_[True, rows[1:] != rows[:-1]]
    assert np.array_equal(dist[first].astype(float), _reference(ds)), "ctensor disagrees with the reference"
    _time(benchmark, "ctensor", ds, run, (idx, q))
