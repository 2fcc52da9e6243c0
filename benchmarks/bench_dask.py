"""Genomics on Dask (issue 28 item 4): `count_overlaps` and `overlap` of the scale tier — N query
and N data intervals over 5 chromosomes, unsorted, lengths uniform in [1, 1000] — in memory
(one thread) and as Dask DataFrames on a `distributed.LocalCluster` of 1 and of 2 single-threaded
worker processes, in the same run.  The Dask timings include building and broadcasting the data
index (it is built once per call from the in-memory data), splitting the query into partitions
(the query is read by the workers from 8 parquet files) and gathering the result (`.compute()`),
as a user calls it; the `prebuilt_index` variants pass
`g.index(data)` built once (scattered to the workers by the first call, then reused).

    python -m pytest benchmarks/bench_dask.py --benchmark-json=dask.json     # N = 2e6 by default
    CTENSOR_DASK_N=500000 python -m pytest benchmarks/bench_dask.py ...
    python benchmarks/dask_report.py dask.json

Every Dask answer is checked against the in-memory one before timing.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import ctensor.apps.genomics as g

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

N = int(os.environ.get("CTENSOR_DASK_N", 2_000_000))
CHROMS = [f"chr{k}" for k in range(1, 6)]


def scale_tier(seed):
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 200_000_000, N)
    return pd.DataFrame({"chrom": rng.choice(np.asarray(CHROMS, dtype=object), N), "start": start,
                         "end": start + rng.integers(1, 1001, N)})


@pytest.fixture(scope="module")
def data():
    return scale_tier(1), scale_tier(2)


@pytest.fixture(scope="module")
def query_files(data, tmp_path_factory):
    """The query as 8 parquet files, read by the workers themselves (`dd.read_parquet`): on a
    cluster the data lives in storage, not in the client's memory."""
    path = tmp_path_factory.mktemp("queries")
    q = data[0]
    for k, part in enumerate(np.array_split(np.arange(len(q)), 8)):
        q.iloc[part].to_parquet(path / f"part{k}.parquet")
    return str(path)


# Dask's nanny starts each worker with MALLOC_TRIM_THRESHOLD_=65536, and setting any glibc malloc
# variable turns off glibc's dynamic mmap threshold: every array over 128 KiB is then a fresh mmap
# whose pages fault in on first touch, which doubled the time of a 250k-query partition in a worker
# (58 vs 30 ms).  CTENSOR_DASK_MMAP=1 gives the workers MALLOC_MMAP_THRESHOLD_=1 GiB, as a user can
# (dask config `distributed.nanny.pre-spawn-environ`); the default is Dask's own setting.
MMAP = os.environ.get("CTENSOR_DASK_MMAP") == "1"


@pytest.fixture(scope="module", params=[1, 2], ids=["1worker", "2workers"])
def client(request):
    import dask
    env = {"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": str(2**30)} if MMAP else {}
    with dask.config.set(env), distributed.LocalCluster(n_workers=request.param, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def _run(op, q, d):
    return getattr(g, op)(q, d)


@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
def test_in_memory(benchmark, op, data):
    benchmark.group = f"{op} N={N:.0e}"
    q, d = data
    benchmark.pedantic(_run, args=(op, q, d), rounds=3, iterations=1)


@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
def test_in_memory_prebuilt_index(benchmark, op, data):
    benchmark.group = f"{op} N={N:.0e}"
    q, d = data
    idx = g.index(d)
    benchmark.pedantic(_run, args=(op, q, idx), rounds=3, iterations=1)


@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
def test_dask_prebuilt_index(benchmark, op, data, client, query_files):
    """The data indexed once in the client (`g.index`), scattered to the workers by the first call
    and reused: each timed call reads the query partitions on the workers and gathers the answers."""
    benchmark.group = f"{op} N={N:.0e}"
    q, d = data
    idx = g.index(d)
    qd = dd.read_parquet(query_files)
    pd.testing.assert_frame_equal(_run(op, qd, idx).compute().reset_index(drop=True),
                                  _run(op, q, idx).reset_index(drop=True))
    benchmark.pedantic(lambda: _run(op, qd, idx).compute(), rounds=3, iterations=1)


@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
def test_dask(benchmark, op, data, client, query_files):
    benchmark.group = f"{op} N={N:.0e}"
    q, d = data
    qd = dd.read_parquet(query_files)
    got = _run(op, qd, d).compute()
    want = _run(op, q, d)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    benchmark.pedantic(lambda: _run(op, qd, d).compute(), rounds=3, iterations=1)
