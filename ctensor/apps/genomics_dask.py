"""Genomic operations past one machine: `dask.dataframe` inputs, run partition by partition on a
Dask cluster (`distributed`, or any Dask scheduler), each partition by the same compiled kernels.

Query operations (every `ctensor.apps.genomics` function that takes `query, data`) split the work
by query rows: a query row's answer depends on it alone and on the data of its chromosome.  When
both are Dask frames under a `distributed` client, the data is indexed on the workers, one index
per group of partitions sharing chromosomes, and each query partition is joined group by group
there (`genomics_dask_groups`: nothing is built in or broadcast from the client; a frame
partitioned by chromosome is indexed in parallel).  Otherwise the data index is built once
(`GenomeIndex`, from the data computed into memory if it is a Dask frame) and broadcast to the
workers (under a `distributed` client: sent to each worker once and kept there, reused by later
calls given the same `GenomeIndex` object — pass `g.index(data)` to query one data set many
times; without one, as a task of the graph; `dask_broadcast`); its kernels come from the on-disk
kernel cache there, or are compiled on first use; every partition of the query runs the
in-memory function against it.  The result is a Dask DataFrame with one partition
per query partition, in the query's order; `.compute()` gives the in-memory answer's rows in the
same order (row labels as each partition's in-memory answer gives them; `return_index` positions
are global row positions of the query).

Data-only operations (`merge`, `depth`) of a Dask frame run per chromosome: the intervals are
shuffled so that each chromosome lies in one partition, each partition is answered in memory, and
the runs come partition by partition (sorted within each; `.compute().sort_values(["chrom",
"start"])` gives the in-memory order).  `cluster`, `complement` and `jaccard` number or measure
across chromosomes: they compute a Dask input into memory first.

dask and distributed are optional (the `dask` extra); nothing here imports them unless a Dask
object is passed.
"""
from __future__ import annotations

import functools

import numpy as np

from .dask_broadcast import broadcast, is_dask_frame as is_dask, resolve


def _partition(part, fn, idx, args, kw, offsets, partition_info=None):
    out = fn(part, resolve(idx), *args, **kw)
    if offsets is not None and len(out):
        k = partition_info["number"] if partition_info else 0
        out["index"] = out["index"] + offsets[k]
    return out


def _distributed() -> bool:
    """Is a `distributed` client the current scheduler?"""
    try:
        from distributed import get_client
        get_client()
    except (ImportError, ValueError):
        return False
    return True


def queries(build_index: bool = True):
    """Decorator of a query operation `fn(query, data, *args, **kw)`: Dask inputs take the
    partitioned path of the module docstring; others call `fn` as it is.  `build_index`: `data`
    becomes a `GenomeIndex` built once (False for operations whose second argument is not a data
    set to index, e.g. a signal track)."""
    def wrap(fn):
        @functools.wraps(fn)
        def op(query, data, *args, **kw):
            if not (is_dask(query) or is_dask(data)):
                return fn(query, data, *args, **kw)
            if is_dask(data) and is_dask(query) and build_index and _distributed():
                from .genome_index import GenomeIndex
                from .genomics_dask_groups import joined
                meta = fn(query._meta, GenomeIndex(data._meta, ops=()), *args, **kw)
                return joined(fn, query, data, args, kw, meta)
            if is_dask(data):
                data = data.compute()
            if build_index:
                from .genome_index import GenomeIndex
                data = data if isinstance(data, GenomeIndex) else GenomeIndex(data, ops=())
            if not is_dask(query):
                return fn(query, data, *args, **kw)
            import dask
            meta = fn(query._meta, data, *args, **kw)
            offsets = None
            if kw.get("return_index"):
                lengths = query.map_partitions(len).compute()
                offsets = np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64))])
            shared = broadcast(data) if build_index else dask.delayed(data, pure=True)
            return query.map_partitions(_partition, fn, shared, args, kw, offsets, meta=meta,
                                        align_dataframes=False)
        return op
    return wrap


def per_chromosome(fn):
    """Decorator of a data-only operation `fn(intervals)` (module docstring)."""
    @functools.wraps(fn)
    def op(intervals, *args, **kw):
        if not is_dask(intervals):
            return fn(intervals, *args, **kw)
        meta = fn(intervals._meta, *args, **kw)
        by_chrom = intervals.shuffle("chrom")
        return by_chrom.map_partitions(lambda part: fn(part.reset_index(drop=True), *args, **kw), meta=meta)
    return op


def in_memory(fn):
    """Decorator of an operation across chromosomes: Dask inputs are computed first."""
    @functools.wraps(fn)
    def op(*args, **kw):
        args = tuple(a.compute() if is_dask(a) else a for a in args)
        kw = {k: (v.compute() if is_dask(v) else v) for k, v in kw.items()}
        return fn(*args, **kw)
    return op


__all__ = ["in_memory", "is_dask", "per_chromosome", "queries"]
