"""Query operations whose data is a Dask frame, on a `distributed` cluster: the data is indexed on
the workers, one index per chromosome group, and each query partition is answered in one task on
the worker that read it, against every group's index — nothing is computed into, built in, or
broadcast from the client, and no query rows cross between workers.

Why: every query operation answers a query row from the data intervals on its chromosome alone,
so the data splits into groups of partitions that share no chromosome (the connected components
of "has a chromosome in common"; a frame partitioned by chromosome — e.g. read from one file per
chromosome — gives one group per partition, an unsorted frame one group of all partitions), and
each group is indexed by one task, in parallel, with the index tensors the operation reads (built
once, by answering an empty query, not again on each worker).  Each worker fetches each group's
index once per call (`dask_broadcast.ResidentSet`; worker to worker) when its first query
partition needs it.  Why not send the query pieces to the index instead (as before): 40 small
tasks per call, each piece and its answer crossing twice, cost 0.5 s of transfers on 2 workers
(count_overlaps, 2M x 2M) — more than copying the five indexes once — and an overlap's answers
(8 pairs per query) are far larger than the index.  A query partition is split by the group of
each row's chromosome (rows on chromosomes the data lacks go to the first group, whose index
answers "no data here" as any index does); the pieces' answers are put back in query row order
(a row-number column carried through the operation, which keeps extra query columns) — the rows,
values, dtypes and columns of the in-memory answer on `data.compute()`.  With `return_index`,
`index` is the global query row position and `index_` the global data row position (the group's
rows mapped back).  Row labels: the query's for operations that keep them (`KEEPS_LABELS`, as
their in-memory docstrings say), else a RangeIndex per partition.

Work done at call time (eagerly, on the workers): the data partitions are computed there and
kept until the group indexes are built; their chromosomes and lengths (a few bytes) come back to
the client to form the groups.  The index tasks start at once; the query stays lazy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .dask_broadcast import ResidentSet

ROW = "__ctensor_query_row"                  # the carried row number (a name no user column takes)
KEEPS_LABELS = frozenset({"count_overlaps", "any_overlap", "no_overlap", "coverage", "map", "signal_stats"})


def _chroms(part):
    """A data partition's chromosome names (as str) and its row count."""
    return sorted(map(str, pd.unique(part["chrom"]))) if len(part) else [], len(part)


def _groups(chroms):
    """Partitions sharing a chromosome, joined (union-find): lists of partition numbers, each sorted,
    ordered by their first partition."""
    parent = list(range(len(chroms)))

    def root(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k
    owner = {}
    for k, names in enumerate(chroms):
        for name in names:
            if name in owner:
                a, b = root(owner[name]), root(k)
                parent[max(a, b)] = min(a, b)
            else:
                owner[name] = k
    out = {}
    for k in range(len(chroms)):
        out.setdefault(root(k), []).append(k)
    return [out[r] for r in sorted(out)]


def _pack(groups, lengths, bins):
    """The groups merged into at most `bins` (the cluster's threads), by rows, largest first into
    the emptiest bin: as many indexes as can be built at once, and each query row split as few
    ways as that allows (every piece is one more call of the operation)."""
    if len(groups) <= bins:
        return groups
    load, out = [0] * bins, [[] for _ in range(bins)]
    for grp in sorted(groups, key=lambda grp: -int(sum(lengths[k] for k in grp))):
        b = min(range(bins), key=load.__getitem__)
        out[b] += grp
        load[b] += int(sum(lengths[k] for k in grp))
    return sorted((sorted(grp) for grp in out if grp), key=lambda grp: grp[0])


def _index(offsets, fn, query_meta, args, kw, *parts):
    """One group's index, with the tensors `fn` reads, and the global data row position of each of
    its rows.  The tensors are built here, by answering an empty query, so that each is built once
    per call and copied to the other workers, not built again on each worker that receives it."""
    from .genome_index import GenomeIndex
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    pos = np.concatenate([np.arange(o, o + len(p), dtype=np.int64) for o, p in zip(offsets, parts)])
    idx = GenomeIndex(frame, ops=())
    fn(query_meta, idx, *args, **kw)
    return idx, pos


def _join(piece, built, fn, args, kw):
    """One piece against its group's index; `index_` (with return_index) mapped to global data rows."""
    idx, pos = built
    out = fn(piece, idx, *args, **kw)
    if kw.get("return_index") and "index_" in out.columns and len(out):
        j = out["index_"]
        missing = j.isna().to_numpy()
        local = j.to_numpy(np.int64, na_value=-1)
        known = local >= 0                         # -1: a query with no data on its chromosome (closest)
        glob = np.where(known, pos[np.where(known, local, 0)], local)
        out["index_"] = pd.Series(glob, index=out.index).astype(j.dtype).mask(missing)
    return out


def _assemble(keeps, offset, labels, outs):
    """The pieces' answers in query row order (stable: a row's own answer rows keep their order)."""
    full = [o for o in outs if len(o)]
    out = (pd.concat(full) if len(full) > 1 else full[0]) if full else outs[0]
    rows = out[ROW].to_numpy()
    order = np.argsort(rows, kind="stable")
    out, rows = out.iloc[order], rows[order]
    if "index" in out.columns and ROW in out.columns and out["index"].dtype.kind == "i":
        out = out.assign(index=rows + offset)
    out = out.drop(columns=ROW)
    out.index = labels[rows] if keeps else pd.RangeIndex(len(out))
    return out


def _ready(built):
    """A small stand-in of a built group index: the answer tasks wait on it, not on the index."""
    return True


def _answer(part, route, keeps, offset, fn, args, kw, indexes, *ready):
    """One query partition against the group indexes (`indexes`, a `ResidentSet`: each fetched to
    this worker once per call): each group's rows against its index, the answers put back in the
    partition's row order.  A row on a chromosome the data lacks goes to group 0, whose index
    answers it as any index answers such a row."""
    codes, names = pd.factorize(part["chrom"])
    table = np.asarray([route.get(str(n), 0) for n in names] + [0], np.int64)   # code -1 -> the 0 at the end
    group = table[codes]
    present = np.unique(group) if len(part) else np.zeros(1, np.int64)
    if len(present) == 1:                      # one group (e.g. a query partitioned by chromosome): no split
        out = _join(part, indexes.get(int(present[0])), fn, args, kw)
        if offset and "index" in out.columns and out["index"].dtype.kind == "i":
            out["index"] = out["index"] + offset
        if not keeps:
            out.index = pd.RangeIndex(len(out))
        return out
    tagged = part.assign(**{ROW: np.arange(len(part), dtype=np.int64)})
    outs = [_join(tagged[group == k], built, fn, args, kw) for k, built in zip(present, indexes.get_all(present))]
    return _assemble(keeps, offset, part.index, outs)


def joined(fn, query, data, args, kw, meta):
    """`fn(query, data, *args, **kw)` for a Dask query and Dask data (module docstring): a Dask
    DataFrame, one partition per query partition, in the query's order."""
    import dask
    import dask.dataframe as dd
    from distributed import get_client
    client = get_client()
    parts = client.compute(list(data.to_delayed()))
    info = client.gather(client.map(_chroms, parts))
    lengths = np.asarray([n for _, n in info], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    threads = sum(client.nthreads().values()) or 1
    groups = _pack(_groups([c for c, _ in info]), lengths, threads)
    built = [client.submit(_index, [int(starts[k]) for k in grp], fn, query._meta, args, kw,
                           *[parts[k] for k in grp], pure=False) for grp in groups]
    del parts
    # the answer tasks depend on a small stand-in of each index (so the scheduler places each where
    # its query part was read, spreading them evenly) and fetch the indexes themselves, once per
    # worker; with the indexes as dependencies every task would go where the most index bytes are
    ready = [client.submit(_ready, b, pure=False) for b in built]
    indexes = ResidentSet.of(built)
    route = {name: g for g, grp in enumerate(groups) for k in grp for name in info[k][0]}
    offsets = None
    if kw.get("return_index"):
        qlen = query.map_partitions(len).compute()
        offsets = np.concatenate([[0], np.cumsum(np.asarray(qlen, np.int64))])
    keeps = fn.__name__ in KEEPS_LABELS
    answer = dask.delayed(_answer, pure=True)
    out = [answer(part, route, keeps, int(offsets[i]) if offsets is not None else 0, fn, args, kw, indexes, *ready)
           for i, part in enumerate(query.to_delayed())]
    return dd.from_delayed(out, meta=meta, verify_meta=False)


__all__ = ["KEEPS_LABELS", "joined"]
