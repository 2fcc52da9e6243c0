"""`ctensor.apps.genomics` on `dask.dataframe` inputs and `ctensor.apps.spatial` batches on
`dask.array` inputs, run on a `distributed.LocalCluster` of 2 worker processes: every computed
answer equals the in-memory one on the same data (the index pickled to the workers, its kernels
loaded there)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ctensor
from ctensor.apps import genomics as g
from ctensor.apps import spatial as sp

from .genomics_oracle import synthetic

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


def _dropped_everywhere(client, token, tries=100):
    """Has every worker dropped its copy of the handle `token`'s object?  (The drop is sent
    without waiting: polled for up to ~10 s.)"""
    import time
    from ctensor.apps import dask_broadcast
    for _ in range(tries):
        held = client.run(lambda: token in dask_broadcast._RESIDENT)
        if not any(held.values()):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def client():
    import dask
    # no log of the scheduler's messages (in this process): it would keep graph arguments alive
    with dask.config.set({"distributed.admin.low-level-log-length": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def frames():
    q = synthetic(6000, (0, 2000), seed=21, chroms=("chr1", "chr2", "chr3"), size=3_000_000)
    d = synthetic(5000, (1, 3000), seed=22, chroms=("chr1", "chr2", "chrX"), size=3_000_000)
    d = d.assign(score=np.arange(len(d)) % 17)
    return q, d


def same(got, want):
    got = got.compute() if hasattr(got, "compute") else got
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=True)


@pytest.mark.parametrize("op, kw", [("count_overlaps", {}), ("overlap", {"return_index": True}), ("any_overlap", {}),
                                    ("no_overlap", {}), ("coverage", {}), ("intersect", {}), ("subtract", {}),
                                    ("closest", {"return_index": True}), ("closest", {"k": 3, "ties": "first"}),
                                    ("window", {"w": 500})])
def test_query_operations_equal_in_memory(client, frames, op, kw):
    q, d = frames
    fn = getattr(g, op)
    want = fn(q, d, **kw)
    qd = dd.from_pandas(q, npartitions=3)
    same(fn(qd, d, **kw), want)                                     # dask queries, in-memory data
    same(fn(qd, dd.from_pandas(d, npartitions=2), **kw), want)      # both dask
    same(fn(q, dd.from_pandas(d, npartitions=2), **kw), want)       # dask data only: in memory


@pytest.fixture(scope="module")
def by_chromosome(frames):
    """The data as a Dask frame partitioned by chromosome, as read from one file per chromosome
    group: two chromosomes in one partition, an empty partition, a chromosome (chr5) in the data
    only; the query keeps chr3, which the data lacks.  Returns the frame and its in-memory rows."""
    import dask
    _, d = frames
    extra = d[d["chrom"] == "chr2"].iloc[:40].assign(chrom="chr5")
    parts = [d[d["chrom"].isin(["chr1", "chrX"])], d.iloc[:0], d[d["chrom"] == "chr2"], extra]
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=d.iloc[:0], verify_meta=False)
    return ddf, pd.concat(parts)


@pytest.mark.parametrize("op, kw", [("count_overlaps", {}), ("overlap", {"return_index": True}), ("any_overlap", {}),
                                    ("no_overlap", {}), ("coverage", {}), ("intersect", {}), ("subtract", {}),
                                    ("closest", {"return_index": True}), ("closest", {"k": 3, "ties": "first"}),
                                    ("window", {"w": 500})])
def test_data_partitioned_by_chromosome(client, frames, by_chromosome, op, kw):
    """Both Dask: the data's index built on each worker from the data partitions
    (`genomics_dask`); equal to the in-memory answer on the data's rows, with the query's row
    labels where the in-memory operation keeps them; global `index`/`index_` positions."""
    q, _ = frames
    ddf, d = by_chromosome
    fn = getattr(g, op)
    want = fn(q, d, **kw)
    got = fn(dd.from_pandas(q, npartitions=3), ddf, **kw).compute()
    same(got, want)
    if op in {"count_overlaps", "any_overlap", "no_overlap", "coverage"}:     # these keep the query's labels
        pd.testing.assert_index_equal(got.index, want.index)
    # an unsorted Dask frame: its partitions share chromosomes, so they form one group
    same(fn(dd.from_pandas(q, npartitions=2), dd.from_pandas(d.sample(frac=1, random_state=3), npartitions=3, sort=False), **kw),
         fn(q, d.sample(frac=1, random_state=3), **kw))


def test_data_index_built_once_per_worker(client, frames, by_chromosome):
    """Both Dask: the query tasks spread over both workers (they depend on small stand-ins of the
    data partitions, not on the partitions); each worker builds the data's index once per call
    (`dask_broadcast.PerWorker`), of every data row, and drops it when the result collection is
    collected; the answer equals the in-memory one."""
    import gc
    from ctensor.apps import dask_broadcast
    from ctensor.apps.genome_index import GenomeIndex
    q, _ = frames
    ddf, d = by_chromosome
    qd = dd.from_pandas(q, npartitions=6)

    def made():
        return client.run(lambda: {t: type(dask_broadcast._RESIDENT[t]).__name__ + f" {dask_broadcast._RESIDENT[t].n}"
                                   for t in dask_broadcast._MADE if t in dask_broadcast._RESIDENT})
    before = {t for v in made().values() for t in v}
    lazy = g.count_overlaps(qd, ddf)
    with distributed.get_task_stream(client) as ts:
        got = lazy.compute()
    same(got, g.count_overlaps(q, d))
    ran = {t["worker"] for t in ts.data if "_partition" in str(t["key"])}
    assert len(ran) == 2
    new = [{t: v for t, v in held.items() if t not in before} for held in made().values()]
    assert len({t for v in new for t in v}) == 1                          # one index per worker, of this call
    assert all(list(v.values()) == [f"{GenomeIndex.__name__} {len(d)}"] for v in new)
    token = next(t for v in new for t in v)
    del lazy, ts
    gc.collect()
    assert _dropped_everywhere(client, token)                               # gone with the result collection


def test_bad_data_partition_names_the_row_among_all(client, frames):
    """Both Dask: a data partition that fails validation is reported as the in-memory call
    reports the rows concatenated (the row's position among all of them), not by its position
    in the partition."""
    q, d = frames
    bad = d.copy()
    bad.loc[len(d) - 3, "end"] = bad.loc[len(d) - 3, "start"] - 1
    with pytest.raises(ctensor.FormatError, match=f"data: row {len(d) - 3}: end"):
        g.count_overlaps(dd.from_pandas(q, npartitions=2), dd.from_pandas(bad, npartitions=3, sort=False)).compute()
    with pytest.raises(ctensor.FormatError, match=f"data: row {len(d) - 3}: end"):
        g.count_overlaps(q, bad)


def test_per_worker_object_made_once_and_dropped_with_its_handle(client):
    """A `PerWorker` object is made once in each worker from the cluster's objects and dropped on
    every worker when the client's handle is collected."""
    import gc
    from ctensor.apps import dask_broadcast
    futures = [client.submit(np.arange, 5), client.submit(np.ones, 5)]
    handle = dask_broadcast.PerWorker.of(np.add, futures)
    workers = list(client.scheduler_info()["workers"])
    got = client.gather([client.submit(lambda h: [h.get().tolist(), h.get() is h.get()], handle, workers=[w], pure=False)
                         for w in workers])
    assert got == [[[1.0, 2.0, 3.0, 4.0, 5.0], True]] * 2
    assert all(client.run(lambda: handle.token in dask_broadcast._RESIDENT).values())
    token = handle.token
    del handle, futures
    gc.collect()
    assert _dropped_everywhere(client, token)


def test_per_worker_object_of_objects_not_computed_yet(client):
    """A handle read by tasks that hold every worker thread of the cluster before its object
    can be computed (the object waits for a gate task; the readers are submitted meanwhile and
    outrank it): the waiting readers give their threads back (`fetch_many` secedes), so the
    object gets computed, instead of a deadlock."""
    import time
    from ctensor.apps import dask_broadcast

    gate = client.submit(time.sleep, 0.5, pure=False)
    futures = [client.submit(lambda _, v: np.full(3, v), gate, 2.0, priority=-10, pure=False)]
    handle = dask_broadcast.PerWorker.of(lambda a: a * 2, futures)
    workers = list(client.scheduler_info()["workers"])
    readers = [client.submit(lambda h: h.get().tolist(), handle, workers=[w], priority=10, pure=False)
               for w in workers]
    distributed.wait(readers, timeout=60)           # a deadlock fails here instead of hanging the suite
    assert client.gather(readers) == [[4.0, 4.0, 4.0]] * 2


def test_map_and_signal_stats(client, frames):
    q, d = frames
    qd = dd.from_pandas(q, npartitions=4)
    same(g.map(qd, d, "score", ["sum", "mean", "max"]), g.map(q, d, "score", ["sum", "mean", "max"]))
    track = g.merge(d).assign(value=1.5)
    same(g.signal_stats(qd, track), g.signal_stats(q, track))
    ddf = dd.from_pandas(d, npartitions=3)
    same(g.map(qd, ddf, "score", ["sum", "min"]), g.map(q, d, "score", ["sum", "min"]))


def test_data_only_operations(client, frames):
    _, d = frames
    ddf = dd.from_pandas(d, npartitions=3)
    key = ["chrom", "start"]
    same(g.merge(ddf).compute().sort_values(key), g.merge(d))
    same(g.depth(ddf).compute().sort_values(key), g.depth(d))
    same(g.cluster(ddf), g.cluster(d))
    same(g.jaccard(ddf, dd.from_pandas(d.iloc[::2], npartitions=2)), g.jaccard(d, d.iloc[::2]))
    sizes = {"chr1": 3_010_000, "chr2": 3_010_000, "chrX": 3_010_000}
    same(g.complement(ddf, sizes), g.complement(d, sizes))


def test_prebuilt_index_is_scattered_once(client, frames):
    from ctensor.apps import dask_broadcast
    q, d = frames
    idx = g.index(d)
    qd = dd.from_pandas(q, npartitions=3)
    first = g.count_overlaps(qd, idx).compute()
    fut = dask_broadcast._SCATTERED[idx][client.id]
    second = g.overlap(qd, idx).compute()
    assert dask_broadcast._SCATTERED[idx][client.id] is fut           # reused, not sent again
    same(first, g.count_overlaps(q, idx))
    same(second, g.overlap(q, idx))


def test_broadcast_index_stays_on_every_worker(client, frames):
    """distributed's Active Memory Manager keeps one replica of a scattered key; each worker keeps
    its own copy of a broadcast index by token, so a later call sends it nowhere, and the copies
    go when the client's index is garbage collected."""
    import gc
    from ctensor.apps import dask_broadcast
    q, d = frames
    idx = g.index(d)
    qd = dd.from_pandas(q, npartitions=4)
    same(g.count_overlaps(qd, idx), g.count_overlaps(q, idx))
    handle = dask_broadcast._SCATTERED[idx][client.id]
    lengths = client.run(lambda: len(dask_broadcast.resolve(handle).frame))     # fetched where not yet held
    assert list(lengths.values()) == [len(d)] * 2
    client.amm.run_once()                                                    # drop the extra replicas now
    assert all(client.run(lambda: handle.token in dask_broadcast._RESIDENT).values())
    same(g.overlap(qd, idx, return_index=True), g.overlap(q, idx, return_index=True))
    assert dask_broadcast._SCATTERED[idx][client.id] is handle
    token = handle.token
    del idx, handle
    gc.collect()
    assert _dropped_everywhere(client, token)


def test_spatial_batches_on_dask_arrays(client):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(5)
    xy = rng.uniform(0, 1000, (20_000, 2))
    idx = sp.index(xy)
    lo = rng.uniform(0, 990, (3000, 2))
    hi = lo + rng.uniform(0, 10, (3000, 2))
    centers, r = rng.uniform(0, 1000, (3000, 2)), rng.uniform(0, 8, 3000)
    got = sp.box_query(idx, da.from_array(lo, chunks=700), da.from_array(hi, chunks=500))
    np.testing.assert_array_equal(got.compute(), sp.box_query(idx, lo, hi))
    got = sp.radius_query(idx, da.from_array(centers, chunks=(800, 2)), 5.0)
    np.testing.assert_array_equal(got.compute(), sp.radius_query(idx, centers, 5.0))
    got = sp.radius_query(idx, da.from_array(centers, chunks=(800, 2)), da.from_array(r, chunks=1000))
    np.testing.assert_array_equal(got.compute(), sp.radius_query(idx, centers, r))
    bad = lo.copy()
    bad[2500] = np.nan
    with pytest.raises(ctensor.FormatError, match="from row 2000.*500"):      # row 500 of the block at 2000
        sp.box_query(idx, da.from_array(bad, chunks=(1000, 2)), hi).compute()
