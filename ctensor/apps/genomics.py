"""bedtools' interval operations on DataFrames, each computed by ctensor einsums.

Source: the continuous tensor paper §7.2.  Inputs are anything `read_intervals` accepts — a
bioframe-style DataFrame (`chrom, start, end`, extra columns kept), a BED/BED.gz path, or arrays —
with BED coordinates: 0-based, half-open `[start, end)`, integers.  Overlap means
`a.start < b.end and b.start < a.end`; zero-length intervals follow bedtools 2.30 (widened to
`[p-1, p+1)` for overlap tests, printed as given).  Several chromosomes are supported.

`data` may also be a prebuilt `GenomeIndex` (`index(data)`), so one index serves many queries; the
compiled kernels are cached by format and reused across calls (`GenomeIndex.kernels[op].ir` shows
the generated code).  The einsums are in `EINSUMS`.  `index(data, layout="grid")` builds the paper's
uniform grid instead of the default sorted layout (see `index`); answers are the same.

| function | bedtools | returns |
|---|---|---|
| `count_overlaps(query, data)` | `intersect -c` | query + `count` |
| `overlap(query, data)` | `intersect -wa -wb` | query columns + data columns suffixed `_` |
| `any_overlap` / `no_overlap` | `intersect -u` / `-v` | rows of query |
| `coverage(query, data)` | `coverage` | query + `count, covered, length, fraction` |
| `intersect(query, data)` | `intersect` | query rows with start/end of each overlapping piece |
| `merge(intervals)` | `merge` | `chrom, start, end` |
| `depth(intervals)` | `genomecov -bg` | `chrom, start, end, depth` |
| `subtract(a, b)` | `subtract` | rows of a with start/end of each remaining piece |
| `closest(query, data)` | `closest -d` (`-t all`) | query columns + nearest data columns `_` + `distance` |
| `map(query, data, column, ops)` | `map -c column -o ops` | query + `<column>_<op>` per op |
| `signal_stats(query, signal)` | `bigWigAverageOverBed` | query + `size, covered, sum, mean0, mean` |
| `cluster(intervals, distance)` | `cluster -d distance` | intervals + `cluster` |
| `complement(intervals, genome)` | `complement -g genome` | `chrom, start, end` |
| `jaccard(a, b)` | `jaccard` | `intersection, union, jaccard, n_intersections` |
| `window(query, data, w)` | `window -w` (`-l`, `-r`) | as `overlap` |
| `slop(intervals, genome, both)` | `slop -b` (`-l`, `-r`) | intervals, stretched |

The operations of the second part of the table are in `ctensor.apps.genomics_ops` (their details).

Rows come in query order; pairs of one query in data start order.  Errors: `ctensor.FormatError`
(bad input: see `read_intervals`), `TypeError` (a source of the wrong kind).

Threads.  Every operation that takes queries (all but `merge` and `depth`) accepts `workers=`
(default 1; -1 for every core): the query rows are split into that many contiguous chunks (of at
least `workers.MIN_CHUNK` rows each), each chunk runs the compiled kernels on a thread of a
`concurrent.futures.ThreadPoolExecutor` (the native code runs without the GIL), and the chunks'
answers are concatenated in query order; the output frame's rows are gathered column by column
on the same threads (`frame_take.take_rows`); reading the query stays on the calling thread.

Dask.  Every function accepts a `dask.dataframe` for its intervals (`ctensor.apps.genomics_dask`):
query operations run per query partition against one index of the data broadcast to the workers,
`merge` and `depth` per chromosome, `cluster`, `complement` and `jaccard` on the input computed
into memory; the result is a Dask DataFrame whose `.compute()` equals the in-memory answer.  The result is identical to `workers=1`: the same rows, order,
values, dtypes and columns.  A bad `workers` raises TypeError (not an int) or ValueError
(0 or below -1).  The functions, and one `GenomeIndex`, may also be called from many threads at once.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import FormatError
from . import genome_cover
from .bedio import read_intervals
from .genome_index import EINSUMS, GenomeIndex
from .frame_kinds import polars_in_out
from .genomics_dask import per_chromosome, queries
from .frame_take import take_rows
from .genome_closest_frame import closest_frame
from .genomics_ops import cluster, complement, jaccard, map, read_rows, signal_stats, slop, window   # noqa: A004
from .workers import check_workers

__all__ = [
    "EINSUMS",
    "GenomeIndex",
    "any_overlap",
    "closest",
    "cluster",
    "complement",
    "count_overlaps",
    "coverage",
    "depth",
    "index",
    "intersect",
    "jaccard",
    "map",
    "merge",
    "no_overlap",
    "overlap",
    "read_intervals",
    "signal_stats",
    "slop",
    "subtract",
    "window",
]


def index(data, ops=None, layout=None, cell=None) -> GenomeIndex:
    """Build the index of `data` once (see `GenomeIndex`; `ops` limits the tensors built up front);
    pass it as `data` to the operations.  A `GenomeIndex` is returned as it is (ValueError if it
    has another `layout` or `cell` than one asked for).

    layout='sorted' (default): the data starts and ends as sorted pinpoints S[x, j], E[x, j];
    count_overlaps searches them, overlap/intersect scan the starts in a window before the query.

    layout='grid': the paper's uniform grid (§7.2, Fig. 23).  The genome axis is cut into cells
    of `cell` bases (default: chosen from the data, `genome_layout.choose_cell`: the narrowest
    width from the mean interval length up whose index stays within 2x the interval arrays);
    G[c, j] lists for each non-empty cell, stored as a pinpoint at its left edge c, the intervals
    j meeting it.  count_overlaps, any_overlap, no_overlap, overlap, intersect and the count of
    coverage filter the pairs through the grid, then test them exactly, with W[i] =
    [floor_cell(qs), qe) the edges of the query's cells and a reference-cell condition (a pair
    is reported in the first cell both meet, the one whose edge is at most max(qs, ds)):

        C[i]       = W[i, c] * G[c, j] * (DS[j] < QE[i]) * (End[j] > QS[i]) * ((QS[i] >= c) | (DS[j] >= c)) * d(c, j; counting, counting)
        O[i, j]    = W[i, c] * G[c, j] * (DS[j] < QE[i]) * (End[j] > QS[i]) * ((QS[i] >= c) | (DS[j] >= c)) * d(c; boolean)
        I[i, j, x] = W[i, c] * G[c, j] * ((QS[i] >= c) | (DS[j] >= c)) * Q[i, x] * D[j, x] * d(c; boolean)

    (DS, End the data starts and ends in start order, QS, QE the query's, Q and D the intervals).
    The covered bases of coverage, subtract, merge and closest use the sorted layout's tensors."""
    if isinstance(data, GenomeIndex):
        if layout is not None and layout != data.layout:
            raise ValueError(f"layout: the index was built with layout={data.layout!r}, not {layout!r}")
        if cell is not None and cell != data.cell:
            raise ValueError(f"cell: the index was built with cell={data.cell!r}, not {cell!r}")
        return data
    return GenomeIndex(data, ops=ops, layout=layout or "sorted", cell=cell)


def _args(query, data, op, workers):
    check_workers(workers)
    q = read_rows(query, "query")
    idx = index(data, ops=(op,))
    # the chrom column as it is (query_axis factorizes it; a copy to objects costs more than that)
    return q, idx, (q["start"].to_numpy(), q["end"].to_numpy(), q["chrom"])


def _with_columns(q, cols) -> pd.DataFrame:
    """`q.assign(**cols)` (a column of q of one of those names replaced in place, the others
    appended in order) built as one DataFrame of q's columns and the new arrays, no copies:
    0.14 ms where assign took 2.2 ms for 100k rows and 4 new columns (pandas 3.1).  A frame with
    repeated column names goes through assign."""
    if not q.columns.is_unique:
        return q.assign(**cols)
    data = {c: q[c] for c in q.columns}
    data.update(cols)
    return pd.DataFrame(data, index=q.index, copy=False)


def _free(q, names, op):
    """Columns an operation adds beside the query's must not be query columns (FormatError)."""
    taken = [c for c in names if c in q.columns]
    if taken:
        raise FormatError(f"query: column {taken[0]!r} is a column {op} adds to its output; rename it")


@polars_in_out
@queries()
def count_overlaps(query, data, workers: int = 1) -> pd.DataFrame:
    """Query rows (original index) with a `count` column (int64, replacing a query column of that
    name, as `DataFrame.assign`): data intervals overlapping each (`bedtools intersect -c`).
    `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, a = _args(query, data, "count", workers)
    return q.assign(count=idx.count_overlaps(*a, workers=workers))


@polars_in_out
@queries()
def any_overlap(query, data, workers: int = 1) -> pd.DataFrame:
    """Query rows overlapping at least one data interval (`bedtools intersect -u`), original index.
    `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, a = _args(query, data, "count", workers)
    return q[idx.count_overlaps(*a, workers=workers) > 0]


@polars_in_out
@queries()
def no_overlap(query, data, workers: int = 1) -> pd.DataFrame:
    """Query rows overlapping no data interval (`bedtools intersect -v`), original index.
    `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, a = _args(query, data, "count", workers)
    return q[idx.count_overlaps(*a, workers=workers) == 0]


@polars_in_out
@queries()
def overlap(query, data, return_index: bool = False, workers: int = 1) -> pd.DataFrame:
    """Every overlapping pair (`bedtools intersect -wa -wb`): query columns, then data columns with
    suffix `_` (bioframe's convention).  With `return_index`, columns `index` and `index_` give the
    row positions of the pair in the query and data.  FormatError if a query column is named like a
    suffixed data column (or `index`, `index_` with `return_index`).  `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, a = _args(query, data, "overlap", workers)
    _free(q, [f"{c}_" for c in idx.frame.columns] + (["index", "index_"] if return_index else []), "overlap")
    qi, j = idx.overlap(*a, workers=workers, ranks=True)
    left = take_rows(q, qi, workers)
    # a pair lies on one chromosome: the data's chrom column is the query's, shared (no second
    # gather of millions of strings) when both frames hold it in the same dtype; the other data
    # columns are read by rank (runs of neighbours per query, `RankedColumns`)
    same = {"chrom": left["chrom"].array} if q["chrom"].dtype == idx.frame["chrom"].dtype else None
    right = idx.ranked.take(j, workers, taken=same).add_suffix("_")
    out = pd.concat([left, right], axis=1)             # no copy: each column is its own block
    if return_index:
        out.insert(0, "index_", idx._data_rows(j))
        out.insert(0, "index", qi)
    return out


@polars_in_out
@queries()
def closest(query, data, ties: str = "all", return_index: bool = False, workers: int = 1, k: int = 1) -> pd.DataFrame:
    """The nearest data intervals of each query row (`bedtools closest -d -t <ties>`): query columns,
    then data columns suffixed `_`, then `distance` (0 when they overlap, `b.start - a.end + 1` for b
    downstream, `a.start - b.end + 1` upstream: book-ended intervals are 1 apart, as bedtools counts).
    Every tied nearest interval gets a row (`ties='first'`/`'last'`: only the first/last in data
    start order, equal starts in the index's order; bedtools sorts with an unstable sort, so
    when tied intervals also share their start it may pick another of them — about 3% of queries on
    the synthetic sets; `ties='all'` always equals bedtools).  A query with no data on its
    chromosome gets one row whose data columns and distance are missing (`<NA>`; bedtools prints
    `. -1 -1` and -1).  Integer data columns become the nullable dtype of their width and sign
    (`Int64`, `UInt64`, `Int32`, …); `distance` is `Int64`.  With `return_index`, columns `index`
    and `index_` give the row positions of the query and of the data interval (-1 when there is
    none).  FormatError if a
    query column is named like a column closest adds (`distance`, suffixed data columns, `index`,
    `index_` with `return_index`).  `k` (`bedtools closest -k`): the k nearest data intervals of each
    query, in distance order — with ties='all' every interval within the k-th smallest distance
    (counted with multiplicity, so a query may get more than k rows), with 'first'/'last' one
    interval for each of the k smallest distinct distances; all there are on a chromosome with
    fewer.  ValueError for a `k` that is not a positive integer.
    `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, a = _args(query, data, "closest", workers)
    _free(q, [f"{c}_" for c in idx.frame.columns] + ["distance"] + (["index", "index_"] if return_index else []),
          "closest")
    qi, dj, dist = idx.closest(*a, ties=ties, workers=workers, k=k)
    return closest_frame(q, idx.frame, qi, dj, dist, return_index, workers)


@polars_in_out
@queries()
def intersect(query, data, workers: int = 1) -> pd.DataFrame:
    """The overlapping piece of every overlapping pair (`bedtools intersect`): query rows with start
    and end replaced by the piece; a zero-length query keeps its own coordinates, as bedtools prints.
    `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, a = _args(query, data, "intersect", workers)
    qi, _, ps, pe = idx.intersect(*a, workers=workers)
    out = take_rows(q, qi, workers)
    zero = (out["start"] == out["end"]).to_numpy()
    out["start"] = np.where(zero, out["start"].to_numpy(), ps)
    out["end"] = np.where(zero, out["end"].to_numpy(), pe)
    return out


@polars_in_out
@queries()
def coverage(query, data, workers: int = 1) -> pd.DataFrame:
    """`bedtools coverage -a query -b data`: query rows plus `count` (overlapping data intervals),
    `covered` (bases covered by their union), `length` (zero-length queries count 2, as bedtools
    widens them) and `fraction` = covered / length (float64); query columns of those names are
    replaced, as `DataFrame.assign`.  Original index.  `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, (start, end, chrom) = _args(query, data, "coverage", workers)
    gs, ge, _ = idx.genome(chrom, start, end, workers, checked=True)      # q: validated by read_rows
    return _with_columns(q, genome_cover.coverage(idx, gs, ge, workers))


@polars_in_out
@queries()
def subtract(a, b, workers: int = 1) -> pd.DataFrame:
    """`bedtools subtract -a a -b b`: the pieces of each row of `a` that no interval of `b` covers,
    as rows of `a` with new start/end, in `a`'s order; rows wholly covered disappear.
    `workers`: threads the queries are split over (`ctensor.apps.workers`; see the module docstring)."""
    q, idx, args = _args(a, b, "subtract", workers)
    qi, ps, pe = idx.subtract(*args, workers=workers)
    out = take_rows(q, qi, workers)
    out["start"] = ps
    out["end"] = pe
    return out


@polars_in_out
@per_chromosome
def merge(intervals) -> pd.DataFrame:
    """`bedtools merge`: the union of the intervals as maximal `chrom, start, end` runs (touching and
    overlapping intervals merge), sorted by chromosome name then start."""
    chrom, s, e = index(intervals, ops=("merge",)).merge(frame=True)
    return pd.DataFrame({"chrom": chrom, "start": s, "end": e})


@polars_in_out
@per_chromosome
def depth(intervals) -> pd.DataFrame:
    """`bedtools genomecov -bg`: the depth of coverage as maximal runs `[start, end)` of constant
    non-zero depth (how many intervals cover each base, int64), sorted by chromosome name then
    start.  A zero-length interval `[p, p)` counts over `[p - 1, p + 1)`, as bedtools 2.30's does
    (runs are clipped at 0).  Computed by the einsum `EINSUMS["depth"]`,
    `Depth[x] = D[j, x] * d(j; counting)`: one pass over x per interval j, the overlapping passes
    added by the runtime's merge of a revisited output (`ctensor.runtime.merge_output`)."""
    chrom, s, e, d = index(intervals, ops=("depth",)).depth()
    return pd.DataFrame({"chrom": chrom, "start": s, "end": e, "depth": d})
