"""Query operations whose data is a Dask frame, on a `distributed` cluster: the data is indexed on
the workers, one index per chromosome group, and each query partition is joined group by group
where the group's index lives — nothing is computed into, built in, or broadcast from the client.

Why: every query operation answers a query row from the data intervals on its chromosome alone,
so the data splits into groups of partitions that share no chromosome (the connected components
of "has a chromosome in common"; a frame partitioned by chromosome — e.g. read from one file per
chromosome — gives one group per partition, an unsorted frame one group of all partitions), and
each group is indexed by one task, in parallel.  A query partition is split by the group of each
row's chromosome (rows on chromosomes the data lacks go to the first group, whose index answers
"no data here" as any index does); each piece runs the in-memory operation against its group's
index on the worker holding it (the index is a dependency of the task: the scheduler moves the
smaller piece, not the index); the pieces' answers are put back in query row order (a row-number
column carried through the operation, which keeps extra query columns) — the rows, values, dtypes
and columns of the in-memory answer on `data.compute()`.  With `return_index`, `index` is the
global query row position and `index_` the global data row position (the group's rows mapped
back).  Row labels: the query's for operations that keep them (`KEEPS_LABELS`, as their in-memory
docstrings say), else a RangeIndex per partition.

Work done at call time (eagerly, on the workers): the data partitions are computed there and
kept until the group indexes are built; their chromosomes and lengths (a few bytes) come back to
the client to form the groups.  The index tasks start at once; the query stays lazy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

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


def _index(offsets, *parts):
    """One group's index and the global data row position of each of its rows."""
    from .genome_index import GenomeIndex
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    pos = np.concatenate([np.arange(o, o + len(p), dtype=np.int64) for o, p in zip(offsets, parts)])
    return GenomeIndex(frame, ops=()), pos


def _split(part, route, ngroups):
    """The partition's rows as one piece per group, each with its row numbers in ROW (a missing
    chromosome goes to group 0, where the operation raises its FormatError)."""
    codes, names = pd.factorize(part["chrom"])
    group = np.asarray([route.get(str(n), 0) for n in names] + [0], np.int64)[codes]   # code -1 -> the 0 at the end
    part = part.assign(**{ROW: np.arange(len(part), dtype=np.int64)})
    return tuple(part[group == k] for k in range(ngroups))


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


def _assemble(keeps, offset, labels, *outs):
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


def _labels(part):
    return part.index


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
    groups = _groups([c for c, _ in info])
    built = [client.submit(_index, [int(starts[k]) for k in grp], *[parts[k] for k in grp], pure=False)
             for grp in groups]
    route = pd.Series({name: g for g, grp in enumerate(groups) for k in grp for name in info[k][0]}, dtype=np.int64)
    offsets = None
    if kw.get("return_index"):
        qlen = query.map_partitions(len).compute()
        offsets = np.concatenate([[0], np.cumsum(np.asarray(qlen, np.int64))])
    keeps = fn.__name__ in KEEPS_LABELS
    run, split, assemble = dask.delayed(_join, pure=True), dask.delayed(_split, nout=len(groups), pure=True), \
        dask.delayed(_assemble, pure=True)
    out = []
    for i, part in enumerate(query.to_delayed()):
        pieces = split(part, route, len(groups))
        answers = [run(pieces[k], built[k], fn, args, kw) for k in range(len(groups))]
        labels = dask.delayed(_labels, pure=True)(part)
        out.append(assemble(keeps, int(offsets[i]) if offsets is not None else 0, labels, *answers))
    return dd.from_delayed(out, meta=meta, verify_meta=False)


__all__ = ["KEEPS_LABELS", "joined"]
