"""Genomic operations past one machine: `dask.dataframe` inputs, run partition by partition on a
Dask cluster (`distributed`, or any Dask scheduler), each partition by the same compiled kernels.

Query operations (every `ctensor.apps.genomics` function that takes `query, data`) split the work
by query rows: a query row's answer depends on it alone and on the data of its chromosome.  Every
query partition runs the in-memory function, in one task, against an index of the whole data;
where that index comes from:
- a `GenomeIndex` (`g.index(data)`, to query one data set many times): under a `distributed`
  client sent to each worker once and kept there, reused by later calls given the same object
  (`dask_broadcast.broadcast`); without one, as a task of the graph;
- data as a Dask frame, with a Dask query, under a `distributed` client: the data partitions are
  computed on the workers at call time, each validated and laid out where it was read (coded and
  put in start order, with the ranks only for operations that map data ranks to rows:
  `genome_pieces.lay`), and each worker joins one index of the pieces for itself when its first
  query partition needs it, fetching the pieces it lacks (`dask_broadcast.PerWorker`,
  `genome_pieces.join`: linear when the partitions hold apart chromosomes or sorted ranges, a
  merge of sorted runs otherwise).  The data rows themselves cross to a worker only when an
  operation reads them (overlap's data columns, say; not count's).  Nothing is computed into or
  built in the client, and the sort is done once, not on every worker (2M intervals, 5
  partitions: each worker joined in ~25 ms what took it ~100 ms to sort).  Why not one index per
  chromosome group, built once and copied (tried): copying a built index costs a worker about
  what building it does (the index holds ~5x the bytes of the rows), and every group is one
  more call of the operation per query partition (count on 2M x 2M in one process, CPU under
  load ~7: one index 149 ms + 8 partitions 256 ms, five 94 + 438); sending the query pieces to
  the indexes instead cost 0.5 s of transfers on 2 workers;
- otherwise (in-memory data, or no `distributed` client) the index is built once in the client
  (from the data computed into memory if it is a Dask frame) and broadcast as above.
Kernels come from the on-disk kernel cache on each worker, or are compiled on first use.  The
result is a Dask DataFrame with one partition per query partition, in the query's order;
`.compute()` gives the in-memory answer's rows in the same order (row labels as each partition's
in-memory answer gives them; `return_index` positions are global row positions of the query and
of the data).

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

from .dask_broadcast import PerWorker, broadcast, fetch_many, is_dask_frame as is_dask, resolve


def _partition(part, fn, idx, args, kw, offsets, *ready, partition_info=None):
    out = fn(part, resolve(idx), *args, **kw)
    if offsets is not None and len(out):
        k = partition_info["number"] if partition_info else 0
        out["index"] = out["index"] + offsets[k]
    return out


# operations that read no data row (only the sorted starts and ends): their pieces are laid out
# without the ranks, and the data rows never cross to another worker
_VALUE_OPS = frozenset({"count_overlaps", "any_overlap", "no_overlap", "coverage", "subtract"})


def _data_frame_index(frame_keys, *pieces):
    """The index of a Dask frame's partitions, their rows as `frame.compute()` orders them
    (`index_` positions are global data rows): joined from the partitions' pieces
    (`genome_pieces.join`), its rows fetched on first use; or, when a partition failed
    validation, built from all the rows (so the error names the row by its position among all)."""
    from .genome_index import GenomeIndex
    from .genome_pieces import Rejected, concat_rows, join
    idx = join(pieces, frame_source=lambda: concat_rows(fetch_many(frame_keys)))
    if idx is not None:
        return idx
    return GenomeIndex(concat_rows([f.rows if isinstance(f, Rejected) else f for f in fetch_many(frame_keys)]), ops=())


def _made(part):
    return True


def _index_on_workers(data, ranks: bool):
    """Data as a Dask frame under a `distributed` client: its partitions computed on the workers
    now, each validated and laid out where it was read (`genome_pieces.check`, `lay`: its start
    order made there, once, with the ranks or without as `ranks` says), kept on the workers
    while the result lives; and a `PerWorker` handle of their index, which each worker joins
    once from the pieces (fetching those it lacks; the rows only if an operation reads them),
    with small stand-ins of the pieces for the query tasks to depend on (with the pieces
    themselves as dependencies the scheduler would run every query task where most data bytes
    are, not where its query part was read)."""
    import dask
    from distributed import get_client
    from .genome_pieces import check, lay
    client = get_client()
    frames = [client.submit(check, p, pure=False) for p in client.compute(list(data.to_delayed()))]
    pieces = [client.submit(lay, f, ranks, pure=False) for f in frames]
    ready = [dask.delayed(client.submit(_made, p, pure=False)) for p in pieces]
    make = functools.partial(_data_frame_index, [f.key for f in frames])
    return PerWorker.of(make, pieces, keep=frames), ready


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
            ready = ()
            if is_dask(data) and is_dask(query) and build_index and _distributed():
                from .genome_index import GenomeIndex
                meta_data = GenomeIndex(data._meta, ops=())
                data, ready = _index_on_workers(data, ranks=fn.__name__ not in _VALUE_OPS)
            elif is_dask(data):
                data = data.compute()
            if build_index and not ready:
                from .genome_index import GenomeIndex
                data = data if isinstance(data, GenomeIndex) else GenomeIndex(data, ops=())
                meta_data = data
            if not is_dask(query):
                return fn(query, data, *args, **kw)
            import dask
            meta = fn(query._meta, meta_data if build_index else data, *args, **kw)
            offsets = None
            if kw.get("return_index"):
                lengths = query.map_partitions(len).compute()
                offsets = np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64))])
            shared = data if ready else broadcast(data) if build_index else dask.delayed(data, pure=True)
            return query.map_partitions(_partition, fn, shared, args, kw, offsets, *ready, meta=meta,
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
