"""Genomics on Dask (issue 28 item 4): `count_overlaps` and `overlap` of the scale tier — N query
and N data intervals over 5 chromosomes, unsorted, lengths uniform in [1, 1000] — in memory (one
thread) and as Dask DataFrames on `distributed.LocalCluster`s of 1 and of 2 single-threaded worker
processes, both clusters up at once and the calls interleaved round by round (the machine is
shared: compare the minimum over rounds, taken in the same minutes).

What is timed, per round, as a user calls it:
- `in memory`: `op(q, d)` on pandas frames already in memory (`d` a DataFrame: the index is built
  in the call; `prebuilt index`: `d = g.index(data)` built once before).
- `dask, k workers`: `op(dd.read_parquet(qdir), d).compute()` — the query is read by the workers
  from 8 parquet files; `d` is the data as a Dask frame read by the workers from 5 parquet files
  (one per chromosome; the call computes its partitions on the workers and each worker builds one
  index of them for itself, `genomics_dask`), or the prebuilt index (sent to each worker by the
  first call and kept there, `dask_broadcast`).  The time covers building the graph, the workers'
  reads, index builds and joins, and gathering the result frame into the client (`.compute()`:
  dask concatenates the partitions on one worker and sends the frame to the client).
- `dask, k workers, rows only`: the same call reduced on the workers, `len(op(...))` — what the
  cluster computes without gathering the result frame into the client (the serial part).

Each round also records the CPU seconds of the client process and of every worker, so the table
shows where the time went.  pytest-benchmark's own statistics are those of the 2-worker call;
`dask_report.py` prints the table from every implementation's rounds (`extra_info`).

    OPENBLAS_NUM_THREADS=1 CTENSOR_DASK_MMAP=1 CTENSOR_DASK_DIRECT=1 python -m pytest -q benchmarks/bench_dask.py -p no:xdist \
        -p no:cacheprovider --benchmark-json=dask.json && python benchmarks/dask_report.py dask.json
    CTENSOR_DASK_N=500000 CTENSOR_DASK_ROUNDS=7 ...      # N = 2e6 and 5 rounds by default

Every Dask answer is checked against the in-memory one before timing.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pytest

import ctensor.apps.genomics as g

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

N = int(os.environ.get("CTENSOR_DASK_N", 2_000_000))
ROUNDS = int(os.environ.get("CTENSOR_DASK_ROUNDS", 5))
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
def files(data, tmp_path_factory):
    """The query as 8 parquet files and the data as one file per chromosome, read by the workers
    themselves (`dd.read_parquet`): on a cluster the data lives in storage, not in the client."""
    q, d = data
    qdir, ddir = tmp_path_factory.mktemp("queries"), tmp_path_factory.mktemp("data")
    for k, part in enumerate(np.array_split(np.arange(len(q)), 8)):
        q.iloc[part].to_parquet(qdir / f"part{k}.parquet")
    for k, chrom in enumerate(CHROMS):
        d[d["chrom"] == chrom].to_parquet(ddir / f"part{k}.parquet")
    # the in-memory data in the files' row order, so both calls index the same rows in one order
    return str(qdir), str(ddir), pd.read_parquet(ddir)


# Dask's nanny starts each worker with MALLOC_TRIM_THRESHOLD_=65536, and setting any glibc malloc
# variable turns off glibc's dynamic mmap threshold: every array over 128 KiB is then a fresh mmap
# whose pages fault in on first touch, which doubled the time of a 250k-query partition in a worker
# (58 vs 30 ms).  CTENSOR_DASK_MMAP=1 gives the workers MALLOC_MMAP_THRESHOLD_=1 GiB, as a user can
# (dask config `distributed.nanny.pre-spawn-environ`); the default is Dask's own setting.
MMAP = os.environ.get("CTENSOR_DASK_MMAP") == "1"
# distributed's scheduler talks pickle protocol 4 (its handshake override), and a client gathers
# through the scheduler unless told to fetch from the workers directly: a pandas frame (pickled,
# unlike a numpy array) then crosses in-band, copied and scanned on the way — 0.24-0.27 s for the
# 72 MB count result of the scale tier against 0.04-0.05 s direct.  CTENSOR_DASK_DIRECT=1 sets the
# dask config `distributed.client.direct-to-workers` (a user's choice when the client can reach
# the workers, as on one machine); the default is Dask's own (through the scheduler).
DIRECT = os.environ.get("CTENSOR_DASK_DIRECT") == "1"


@pytest.fixture(scope="module")
def clients():
    import dask
    env = {"distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": str(2**30)} if MMAP else {}
    env.update({"distributed.client.direct-to-workers": True} if DIRECT else {})
    # a LocalCluster's scheduler runs in this process and logs its last 1000 messages to the
    # workers, graph arguments included: they would keep a call's data partitions alive (through
    # the index handle, dask_broadcast.PerWorker), and the next call, whose read tasks have the
    # same keys, would skip reading the data.  No log: every timed call reads its data.
    env["distributed.admin.low-level-log-length"] = 0
    out = {}
    with dask.config.set(env):
        for n in (1, 2):
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                               dashboard_address=None)
            out[n] = (cluster, distributed.Client(cluster, set_as_default=False))
    yield {n: c for n, (_, c) in out.items()}
    for cluster, c in out.values():
        c.close()
        cluster.close()


def _cpu():
    return time.process_time()


def _timed(record, name, client, call):
    """Run `call()` (under `client` if given); append wall and CPU seconds to `record[name]`."""
    w0 = client.run(_cpu) if client else {}
    c0, t0 = time.process_time(), time.perf_counter()
    if client:
        with client.as_current():
            call()
    else:
        call()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    w1 = client.run(_cpu) if client else {}
    record.setdefault(name, []).append({"wall": wall, "client_cpu": cpu,
                                        "worker_cpu": sorted(w1[k] - w0[k] for k in w0)})


@pytest.mark.parametrize("kind", ["dask frame", "prebuilt index"])
@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
def test_dask(benchmark, op, kind, data, files, clients):
    q, _ = data
    qdir, ddir, d = files
    fn = getattr(g, op)
    idx = g.index(d) if kind == "prebuilt index" else None
    local = idx if idx is not None else d

    def remote():
        return idx if idx is not None else dd.read_parquet(ddir)

    want = fn(q, local).reset_index(drop=True)
    for c in clients.values():
        with c.as_current():
            got = fn(dd.read_parquet(qdir), remote()).compute()
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want)
    del got, want
    record = {}
    two = clients[2]          # the benchmark's own time (target) includes the CPU probes: the table uses `record`

    def others():
        _timed(record, "in memory", None, lambda: fn(q, local))
        for n, c in clients.items():
            _timed(record, f"dask, {n} worker{'s' if n > 1 else ''}, rows only", c,
                   lambda: len(fn(dd.read_parquet(qdir), remote())))
        _timed(record, "dask, 1 worker", clients[1], lambda: fn(dd.read_parquet(qdir), remote()).compute())

    def target():
        _timed(record, "dask, 2 workers", two, lambda: fn(dd.read_parquet(qdir), remote()).compute())

    benchmark.group = f"{op} N={N:.0e}, data as {kind}"
    benchmark.pedantic(target, setup=others, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(record=record, load=os.getloadavg(), mmap=MMAP, direct=DIRECT)
