"""More of bedtools' operations on DataFrames: map, cluster, complement, jaccard, window, slop, and
the bigWig "stats" question (`signal_stats`).  Re-exported by `ctensor.apps.genomics`, whose
docstring gives the shared conventions: BED coordinates (0-based, half-open `[start, end)`),
bedtools 2.30's zero-length rule (`[p, p)` takes part in overlaps as `[p-1, p+1)`), several
chromosomes, `ctensor.FormatError` for bad input.

Source: the continuous tensor paper §7.2.  Every join, union and integral here is an einsum
compiled by ctensor (`genome_einsums.EINSUMS`, run by `genome_sets`); `slop` alone is a
per-row shift of coordinates (no tensor algebra in it) and is written with numpy.

| function | bedtools / UCSC | returns |
|---|---|---|
| `map(query, data, column, ops)` | `map -c column -o ops` | query + `<column>_<op>` per op |
| `signal_stats(query, signal)` | `bigWigAverageOverBed` | query + `size, covered, sum, mean0, mean` |
| `cluster(intervals, distance)` | `cluster -d distance` | intervals + `cluster` |
| `complement(intervals, genome)` | `complement -g` | `chrom, start, end` |
| `jaccard(a, b)` | `jaccard` | one row: `intersection, union, jaccard, n_intersections` |
| `window(query, data, w, left, right)` | `window -w / -l -r` | as `overlap` |
| `slop(intervals, genome, both, left, right)` | `slop -b / -l -r` | intervals, moved |
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..errors import FormatError
from .bedio import read_intervals
from .genome_index import GenomeIndex
from .genome_layout import SPAN, decode, widen
from .frame_kinds import polars_in_out
from .genomics_dask import in_memory, queries
from .genome_sets import cluster_ids, integral, map_values, shared_bases, signal_track, support, union_runs
from .workers import check_workers, split_rows

MAP_OPS = ("sum", "count", "mean", "min", "max")


def read_rows(source, name: str) -> pd.DataFrame:
    """`read_intervals(source, name)` with a DataFrame source's row labels kept (rows come back in
    the source's order, so the caller's labels stay valid)."""
    df = read_intervals(source, name)
    if isinstance(source, pd.DataFrame) and len(df) == len(source):
        df.index = source.index
    return df


def _index(data, name):
    return data if isinstance(data, GenomeIndex) else GenomeIndex(data, name=name, ops=())


def _query(query, idx, workers):
    check_workers(workers)
    q = read_rows(query, "query")
    return q, idx.genome(q["chrom"], q["start"].to_numpy(), q["end"].to_numpy())


def _numeric(frame: pd.DataFrame, column, name) -> np.ndarray:
    """The float64 values of `frame[column]`; FormatError naming the first row that is not a
    finite number (a missing column: FormatError too; a BED file's extra fields are strings)."""
    if column not in frame.columns:
        raise FormatError(f"{name}: no column {column!r} (columns: {list(frame.columns)})")
    v = pd.to_numeric(frame[column], errors="coerce").to_numpy(np.float64, na_value=np.nan)
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"{name}: column {column!r} row {k}: {frame[column].iloc[k]!r} is not a finite number")
    return v


@polars_in_out
@queries()
def map(query, data, column, ops="sum", workers: int = 1) -> pd.DataFrame:    # noqa: A001 (bedtools' name)
    """`bedtools map -a query -b data -c column -o ops`: for each query row, an aggregate of
    `data[column]` over the data intervals overlapping it (overlap as in `overlap`).

    ops: one of 'sum', 'count', 'mean', 'min', 'max', or a list of them; each adds a column
    `<column>_<op>`: float64 (NaN where no data interval overlaps, bedtools' "."), `count` int64
    (0 there).  `data` may be a prebuilt `GenomeIndex`.  Query rows keep their order and index.
    Einsums `map_sum`, `map_min`, `map_max` (pairs weighted by V[j], under +, min, max) and `count`.
    Raises FormatError for a missing or non-numeric column (first bad row named), an unknown op,
    or a query column named like an added one; TypeError / ValueError for a bad `workers`."""
    names = [ops] if isinstance(ops, str) else list(ops)
    bad = [op for op in names if op not in MAP_OPS]
    if bad or not names:
        raise FormatError(f"ops: expected some of {MAP_OPS}, got {ops!r}")
    idx = _index(data, "data")
    v = _numeric(idx.frame, column, "data")
    v = v if idx.order is None else v[idx.order]            # data in start order, as j counts
    q, (gs, ge, _) = _query(query, idx, workers)
    added = [f"{column}_{op}" for op in names]
    taken = [c for c in added if c in q.columns]
    if taken:
        raise FormatError(f"query: column {taken[0]!r} is a column map adds; rename it")

    def chunk(s, e):
        n = idx._count(s, e)
        got = {"count": n}
        if {"sum", "mean"} & set(names):
            got["sum"] = map_values(idx, s, e, v, "sum")
        for op in ("min", "max"):
            if op in names:
                got[op] = map_values(idx, s, e, v, op)
        return tuple(got.get(op, n) for op in ("count", "sum", "min", "max"))

    n, total, lo, hi = split_rows(chunk, workers, (gs, ge), order_by=gs)
    none = n == 0
    cols = {"count": n, "sum": np.where(none, np.nan, total), "min": np.where(none, np.nan, lo),
            "max": np.where(none, np.nan, hi), "mean": np.where(none, np.nan, total / np.maximum(n, 1))}
    return q.assign(**{f"{column}_{op}": cols[op] for op in names})


@polars_in_out
@queries(build_index=False)
def signal_stats(query, signal, column=None, workers: int = 1) -> pd.DataFrame:
    """The bigWig "stats" question over a bedGraph track, as UCSC `bigWigAverageOverBed` answers it:
    query rows plus `size` (bases, end - start), `covered` (bases inside the track's intervals),
    `sum` (∫ signal over the query: each track value times the bases it covers there),
    `mean0` = sum / size and `mean` = sum / covered (float64; NaN where the denominator is 0).

    signal: a bedGraph as anything `read_intervals` accepts (`chrom, start, end` + the value column
    `column`, default the fourth column); its intervals must be disjoint on each chromosome;
    zero-length records cover no base and are dropped.  Exact on the query's half-open bases
    (no zero-length widening: a zero-length query has size 0).  Einsum `integral`:
    `T[i] = Q[i, x] * Sig[x] * d(x; lebesgue)` (the track a SparseRunList of values), and the same
    over the track's support for `covered`.  Raises FormatError (overlapping track intervals, the
    first named; a non-numeric value, its row named; a query column named like an added one)."""
    sig = read_intervals(signal, "signal")
    if column is None:
        if sig.shape[1] < 4:
            raise FormatError("signal: a bedGraph needs a value column after chrom, start, end")
        column = sig.columns[3]
    v = _numeric(sig, column, "signal")
    keep = (sig["end"] > sig["start"]).to_numpy()
    sig, v = sig[keep], v[keep]
    idx = GenomeIndex(sig[["chrom", "start", "end"]], name="signal", ops=())
    order = np.arange(len(v)) if idx.order is None else idx.order
    track = signal_track(idx._gs, idx._ge, v[order])
    q, (gs, ge, zero) = _query(query, idx, workers)
    added = ("size", "covered", "sum", "mean0", "mean")
    taken = [c for c in added if c in q.columns]
    if taken:
        raise FormatError(f"query: column {taken[0]!r} is a column signal_stats adds; rename it")
    st, en = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
    total, covered = split_rows(lambda s, e: (integral(track, s, e), support(track, s, e)), workers, (gs, ge),
                                order_by=gs)
    total, covered = np.where(zero, 0.0, total), np.where(zero, 0, covered)     # widened only to run
    size = en - st
    with np.errstate(invalid="ignore", divide="ignore"):
        return q.assign(size=size, covered=covered, sum=total,
                        mean0=np.where(size > 0, total / size, np.nan),
                        mean=np.where(covered > 0, total / covered, np.nan))


@polars_in_out
@in_memory
def cluster(intervals, distance: int = 0) -> pd.DataFrame:
    """`bedtools cluster -d distance`: the rows of `intervals` (order and index kept) with a
    `cluster` column (int64, from 1): intervals that overlap, touch, or lie at most `distance`
    bases apart (start of one minus end of the other) share a cluster, transitively; clusters
    are numbered by chromosome name, then position (bedtools' numbering of sorted input).
    Zero-length intervals count as `[p-1, p+1)`.  Einsums `depth` and `merge` (the runs of the
    union of the intervals stretched by `distance`), then `rank` (the cluster of an interval is
    the number of runs starting at or before it).  Raises FormatError (bad input, a `distance`
    that is not a non-negative integer, a column named `cluster`)."""
    if isinstance(distance, bool) or not isinstance(distance, (int, np.integer)) or distance < 0:
        raise FormatError(f"distance: expected a non-negative integer, got {distance!r}")
    df = read_rows(intervals, "intervals")
    if "cluster" in df.columns:
        raise FormatError("intervals: column 'cluster' is the column cluster adds; rename it")
    codes, _ = pd.factorize(df["chrom"], sort=True)
    s, e, _ = widen(df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64))
    gs, ge = codes * SPAN + s, codes * SPAN + e
    return df.assign(cluster=cluster_ids(gs, ge, float(distance)))


def _genome(genome) -> pd.Series:
    """Chromosome sizes (int64 Series indexed by name, in the given order) from a dict, a Series,
    a DataFrame (`chrom`, `length` or its first two columns) or a bedtools genome file path."""
    if isinstance(genome, (str, os.PathLike)):
        genome = pd.read_csv(genome, sep="\t", header=None, usecols=[0, 1], comment="#", dtype={0: str})
    if isinstance(genome, pd.DataFrame):
        cols = ["chrom", "length"] if {"chrom", "length"} <= set(genome.columns) else list(genome.columns[:2])
        genome = pd.Series(genome[cols[1]].to_numpy(), index=genome[cols[0]].astype(str))
    elif isinstance(genome, dict):
        genome = pd.Series(genome)
    elif not isinstance(genome, pd.Series):
        raise TypeError(f"genome: expected a dict, Series, DataFrame or genome file path, got {type(genome).__name__}")
    sizes = pd.to_numeric(genome, errors="coerce")
    bad = np.flatnonzero(~(np.isfinite(sizes.to_numpy(np.float64, na_value=np.nan)) & (sizes.to_numpy() >= 0)
                           & (sizes.to_numpy(np.float64, na_value=np.nan) % 1 == 0)))
    if bad.size:
        k = int(bad[0])
        raise FormatError(f"genome: chromosome {genome.index[k]!r} has size {genome.iloc[k]!r}, "
                          "not a non-negative integer")
    if genome.index.duplicated().any():
        raise FormatError(f"genome: chromosome {genome.index[genome.index.duplicated()][0]!r} is listed twice")
    return sizes.astype(np.int64)


def _on_genome(df: pd.DataFrame, sizes: pd.Series, name: str):
    """FormatError naming the first row on a chromosome absent from the genome or ending past it."""
    size = df["chrom"].map(sizes)
    bad = np.flatnonzero(size.isna().to_numpy() | (df["end"].to_numpy() > size.fillna(-1).to_numpy()))
    if bad.size:
        k = int(bad[0])
        why = "is not in the genome" if pd.isna(size.iloc[k]) else f"is {sizes[df['chrom'].iloc[k]]} bases long"
        raise FormatError(f"{name} row {k}: interval ends at {df['end'].iloc[k]} but chromosome "
                          f"{df['chrom'].iloc[k]!r} {why}")


@polars_in_out
@in_memory
def complement(intervals, genome) -> pd.DataFrame:
    """`bedtools complement -i intervals -g genome`: the bases of each chromosome of `genome` that no
    interval covers, as `chrom, start, end` runs, chromosomes in the genome's order, then by start;
    a chromosome without intervals is one run (zero-length intervals cover `[p-1, p+1)`).
    genome: dict / Series of sizes, DataFrame (`chrom, length`), or a bedtools genome file.  Einsum
    `subtract` (`R[i, x] = Q[i, x] * (Depth[x] == 0)`, the chromosomes as queries).  Raises
    FormatError for an interval on a chromosome the genome lacks or ending past its size."""
    sizes = _genome(genome)
    df = read_intervals(intervals, "intervals")
    _on_genome(df, sizes, "intervals")
    whole = sizes[sizes > 0]
    names = np.asarray(whole.index, dtype=object)
    if not len(df):
        return pd.DataFrame({"chrom": names, "start": np.zeros(len(names), np.int64), "end": whole.to_numpy()})
    idx = GenomeIndex(df, name="intervals", ops=("subtract",))
    qi, ps, pe = idx.subtract(np.zeros(len(names), np.int64), whole.to_numpy(), names)
    ps = np.maximum(ps, 0)
    keep = pe > ps
    return pd.DataFrame({"chrom": names[qi[keep]], "start": ps[keep], "end": pe[keep]})


@polars_in_out
@in_memory
def jaccard(a, b) -> pd.DataFrame:
    """`bedtools jaccard -a a -b b`: one row of `intersection` (bases in both unions), `union`
    (bases in either), `jaccard` = intersection / union (float64; NaN for two empty sets) and
    `n_intersections` (pairs of overlapping runs of the two unions).  Each set is merged first
    (touching intervals join; zero-length ones count as `[p-1, p+1)`).  Einsums `depth`, `merge`,
    `shared` (`J[] = MA[x] * MB[x] * d(x; lebesgue)`) and `count`."""
    dfa, dfb = read_intervals(a, "a"), read_intervals(b, "b")
    chroms = sorted(set(dfa["chrom"]) | set(dfb["chrom"]))
    runs = []
    for df in (dfa, dfb):
        codes = pd.Index(chroms).get_indexer(df["chrom"]).astype(np.int64)
        s, e, _ = widen(df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64))
        runs.append(union_runs(codes * SPAN + s, codes * SPAN + e))
    (al, ar), (bl, br) = runs
    inter = shared_bases(al, ar, bl, br)
    union = int(round(float((ar - al).sum() + (br - bl).sum()))) - inter
    n = 0
    if len(al) and len(bl):
        names = np.asarray(chroms, dtype=object)
        (ca, sa, ea), (cb, sb, eb) = decode(al, ar), decode(bl, br)
        idx = GenomeIndex((names[ca], np.maximum(sa, 0), ea), name="a", ops=("count",))
        n = int(idx.count_overlaps(np.maximum(sb, 0), eb, names[cb]).sum())
    return pd.DataFrame({"intersection": [inter], "union": [union],
                         "jaccard": [inter / union if union else np.nan], "n_intersections": [n]})


@polars_in_out
@queries()
def window(query, data, w: int = 1000, left=None, right=None, workers: int = 1) -> pd.DataFrame:
    """`bedtools window -a query -b data -w w` (or `-l left -r right`): every pair of a query row
    and a data interval overlapping the query stretched by `left` bases before it (clipped at 0)
    and `right` after (both default to `w`; a zero-length query is first widened to `[p-1, p+1)`, as
    bedtools does); columns as `overlap` (query columns, then data columns
    suffixed `_`), query rows in order, each one's pairs in data start order.  Einsum `overlap`
    on the stretched queries.  Raises FormatError for a negative or non-integer width."""
    from .frame_take import take_rows
    from .genomics import overlap
    left, right = (w if left is None else left), (w if right is None else right)
    for nm, x in (("w", w), ("left", left), ("right", right)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
            raise FormatError(f"{nm}: expected a non-negative integer, got {x!r}")
    q = read_rows(query, "query")
    # bedtools widens a zero-length query to [p-1, p+1) before stretching it
    s, e, _ = widen(q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64))
    wide = q[["chrom", "start", "end"]].assign(start=np.maximum(s - left, 0), end=e + right)
    got = overlap(wide, data, return_index=True, workers=workers)
    qi = got.pop("index").to_numpy()
    got = got.drop(columns=["index_", "chrom", "start", "end"])
    return pd.concat([take_rows(q, qi, workers), got], axis=1)


@polars_in_out
@in_memory
def slop(intervals, genome, both=None, left: int = 0, right: int = 0) -> pd.DataFrame:
    """`bedtools slop -b both` (or `-l left -r right`): each interval stretched by `left` bases
    before and `right` after, clipped to `[0, chromosome size]`; other columns, order and index
    kept.  A shift of coordinates per row (numpy, no einsum).  Raises FormatError for a negative or
    non-integer width, or an interval off the genome."""
    if both is not None:
        left = right = both
    for nm, x in (("both", both if both is not None else 0), ("left", left), ("right", right)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
            raise FormatError(f"{nm}: expected a non-negative integer, got {x!r}")
    sizes = _genome(genome)
    df = read_rows(intervals, "intervals")
    _on_genome(df, sizes, "intervals")
    size = df["chrom"].map(sizes).to_numpy(np.int64)
    return df.assign(start=np.maximum(df["start"].to_numpy() - left, 0),
                     end=np.minimum(df["end"].to_numpy() + right, size))


__all__ = ["MAP_OPS", "cluster", "complement", "jaccard", "map", "signal_stats", "slop", "window"]
