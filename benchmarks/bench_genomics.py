"""Genomic interval operations (bedtools semantics) against the usual Python peers.

    pytest benchmarks/bench_genomics.py -k "not ctensor" --benchmark-min-rounds=3 \
        --benchmark-json=genomics.json
    python benchmarks/genomics_report.py genomics.json

Operations (see genomics_peers.py): count (intersect -c), join (intersect -wa -wb), coverage.
Data sets: the paper's synthetic protocol (1e5 + 1e5 intervals of length L uniform on 1e8 bp,
L = 100 .. 100000) and two real hg19 chr1 pairs (GERP vs RefSeq exons, pybedtools' SNPs vs exons).

One benchmark per (operation, peer, data set), grouped per (operation, data set). The timed
function is the QUERY only: each peer's index (sorted arrays, NCLS, PyRanges, temp BED file,...)
is built beforehand; `*_e2e` tests time build + query for the numba reference and NCLS.
Every result is checked against the numba reference outside the timing (joins by an order-free
per-query fingerprint). The ctensor column is at the end of this file.
"""
from __future__ import annotations

from functools import cache

import genomics_peers as g
import numpy as np
import pytest

OPS = ("count", "join", "coverage")
DATASETS = g.DATASETS
E2E_PEERS = ("numba", "ncls")

# Peers that take seconds on the big sets: 3 rounds of 1 iteration there (benchmark.pedantic).
SLOW = {"bioframe", "pyranges", "pyranges_join", "pybedtools"}
BIG = {"L10000", "L100000", "snps_exons"}
# One round > 20 s (measured on the 2-core dev machine): skipped.
SKIP = {
    ("coverage", "pybedtools", "L100000"):
        "bedtools coverage takes ~450 s for one round at L=100000 (~2e7 overlapping pairs)",
}


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    g.warmup()  # numba JIT outside every timing


@cache
def _reference(op, ds):
    """numba reference result; for join only its per-query fingerprint (20M pairs at L=1e5)."""
    q, d = g.dataset(ds)
    build, query = g.PEERS[op]["numba"]
    out = query(build(d), q)
    return g.pair_fingerprint(*out, len(q.start)) if op == "join" else out


def _agree(op, out, ds):
    q, _ = g.dataset(ds)
    ref = _reference(op, ds)
    if op == "join":
        fp = g.pair_fingerprint(*out, len(q.start))
        return all(np.array_equal(a, b) for a, b in zip(fp, ref))
    return g.same(op, out, ref)


def _time(benchmark, op, peer, ds, fn, args, mode):
    benchmark.group = f"{op}:{ds}"
    benchmark.extra_info.update(op=op, peer=peer, dataset=ds, mode=mode)
    if peer in SLOW and ds in BIG:
        out = benchmark.pedantic(fn, args, rounds=3, iterations=1)
    else:
        out = benchmark(fn, *args)
    assert _agree(op, out, ds), f"{peer} disagrees with the numba reference on {op}:{ds}"


def _run(benchmark, op, peer, ds, e2e=False):
    if (op, peer, ds) in SKIP:
        pytest.skip(SKIP[op, peer, ds])
    q, d = g.dataset(ds)
    build, query = g.PEERS[op][peer]
    if e2e:
        _time(benchmark, op, peer, ds, lambda d, q: query(build(d), q), (d, q), "e2e")
    else:
        _time(benchmark, op, peer, ds, query, (build(d), q), "query")


# ------------------------------------------------------------------ peers, query only
@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("peer", list(g.PEERS["count"]))
def test_count(benchmark, peer, ds):
    _run(benchmark, "count", peer, ds)


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("peer", list(g.PEERS["join"]))
def test_join(benchmark, peer, ds):
    _run(benchmark, "join", peer, ds)


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("peer", list(g.PEERS["coverage"]))
def test_coverage(benchmark, peer, ds):
    _run(benchmark, "coverage", peer, ds)


# ------------------------------------------------------------ end to end: build + query
@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("peer", E2E_PEERS)
@pytest.mark.parametrize("op", OPS)
def test_e2e(benchmark, op, peer, ds):
    _run(benchmark, op, peer, ds, e2e=True)


# =====================================================================================
# ctensor column (switch-on point). Skipped while ctensor.apps.genomics cannot be imported;
# deselect with -k "not ctensor". API used (implemented in ctensor/apps/genomics.py):
#   idx = genomics.index(data_df)                       index build (untimed here)
#   idx.count_overlaps(qs, qe) -> int64 array           count
#   idx.overlap(qs, qe) -> (qi, dj) int64 arrays         join
#   idx.coverage(qs, qe) -> {'count','covered','length','fraction'}
#   genomics.count_overlaps(query_df, data_df) -> DataFrame with a 'count' column (e2e)
# Layouts: peer "ctensor" is the default sorted layout, "ctensor_grid" the paper's uniform grid
# (genomics.index(d, layout="grid"), cell width chosen from the data).  Mode "build" times the
# index alone (genomics.index(d, ops=(the operation's,)), kernels compiled before), so the report
# shows query and index build time separately.
# =====================================================================================
CTENSOR_QUERY = {
    "count": lambda idx, q: idx.count_overlaps(q.start, q.end),
    "join": lambda idx, q: idx.overlap(q.start, q.end),
    "coverage": lambda idx, q: idx.coverage(q.start, q.end),
}


CTENSOR_OPS = {"count": "count", "join": "overlap", "coverage": "coverage"}   # bench op -> index ops
LAYOUT_PEER = {"sorted": "ctensor", "grid": "ctensor_grid"}


def _ctensor_genomics():
    return pytest.importorskip("ctensor.apps.genomics")


def _ctensor_index(genomics, op, d, layout):
    return genomics.index(d, ops=(CTENSOR_OPS[op],), layout=layout)


def _ctensor_query(benchmark, op, ds, layout):
    genomics = _ctensor_genomics()
    q, d = g.dataset(ds)
    idx = _ctensor_index(genomics, op, d, layout)
    CTENSOR_QUERY[op](idx, q)  # first call outside the timing (kernel compilation)
    benchmark.extra_info.update(cell=idx.cell, index_bytes=idx.nbytes, interval_bytes=16 * len(d))
    _time(benchmark, op, LAYOUT_PEER[layout], ds, CTENSOR_QUERY[op], (idx, q), "query")


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("op", OPS)
def test_ctensor(benchmark, op, ds):
    _ctensor_query(benchmark, op, ds, "sorted")


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("op", OPS)
def test_ctensor_grid(benchmark, op, ds):
    _ctensor_query(benchmark, op, ds, "grid")


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("layout", list(LAYOUT_PEER))
@pytest.mark.parametrize("op", OPS)
def test_ctensor_build(benchmark, op, layout, ds):
    """Index build alone (layout + the operation's index tensors, `GenomeIndex.build_seconds`
    measured from outside), for the report's build columns."""
    genomics = _ctensor_genomics()
    _, d = g.dataset(ds)
    _ctensor_index(genomics, op, d, layout)          # warm caches (pandas, numpy) once
    benchmark.group = f"{op}:{ds}"
    benchmark.extra_info.update(op=op, peer=LAYOUT_PEER[layout], dataset=ds, mode="build")
    benchmark(_ctensor_index, genomics, op, d, layout)


@pytest.mark.parametrize("ds", DATASETS)
def test_ctensor_count_e2e(benchmark, ds):
    genomics = _ctensor_genomics()
    q, d = g.dataset(ds)

    def run(qdf, d):
        return genomics.count_overlaps(qdf, d)["count"].to_numpy()

    run(q.df, d)  # compile outside the timing
    _time(benchmark, "count", "ctensor", ds, run, (q.df, d), "e2e")
