"""The index of a set of genomic intervals, answering bedtools' questions with einsums.

Source: the continuous tensor paper §7.2 (genomic interval queries as continuous einsums).  Every
operation here is one or two einsums compiled by ctensor (`genome_einsums.EINSUMS`); numpy only
lays coordinates out and maps positions back to rows.

Coordinates.  BED intervals are 0-based and half-open, `[start, end)`.  bedtools 2.30 widens a
zero-length interval `[p, p)` to `[p - 1, p + 1)` for every overlap test (and prints the original
coordinates back); we do the same, so a zero-length interval overlaps what bedtools says it does.
Chromosome k of the indexed data is laid on one real line at offset `k * 2**41`; query intervals on
chromosomes absent from the data go to an empty region after the last one.  At most `MAX_CHROMS`
chromosomes can be indexed.  The index tensors (`S`, `E`, `D`, `End`, `UE`, `Depth`, `U`; `G`,
`DS`), their formats and sizes are described in `ctensor.apps.genome_layout`; each operation builds the ones it
reads (`PARTS`, `GRID_PARTS`) once per data set, and the intervals' start order itself only as far
as those read it (`genome_axis`: count and merge sort the values, no row order).  Chromosome
names are coded from the Arrow buffers where they are short (`genome_names`).

Layouts.  `layout="sorted"` (the default) answers counts by searching the sorted starts and ends
and pairs by a window of the sorted starts.  `layout="grid"` is the paper's uniform grid (§7.2,
Fig. 23): `G[c, j]` lists, per cell of width `cell`, the intervals meeting it, and counts, pairs
and pieces run the two steps of Fig. 23 in one einsum each: the filter (the query's cells, W[i, c],
times the grid) and the exact test, plus the reference-cell condition that reports a pair found in
several cells once (the `grid_*` einsums).  Under the grid, coverage counts with the grid and
measures the covered bases on the union's runs; subtract, merge and closest (whose tie step needs
the sorted starts anyway) use the sorted layout's tensors.

Threads.  A `GenomeIndex` may be queried from many threads at once: its index tensors are
read-only once built (built once, under a lock), kernels are compiled under
`workers.COMPILE_LOCK`, and every call packs its own argument block and output buffers.  The
operations that take queries accept `workers=` (`ctensor.apps.workers`): the queries are split into
that many contiguous chunks, run on a thread pool, and the results concatenated in query order,
identical to `workers=1`.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .. import Dense, Pattern, SparseInterval, SparseList, SparseRunList, Tensor
from ..errors import FormatError
from .bedio import read_intervals
from .genome_einsums import EINSUMS, GRID_PARTS, LAYOUTS, PARTS, SEMIRING
from .genome_layout import (
    BUILD,
    VALUE_PARTS,
    GRID_MAX_CELL,
    MAX_CHROMS,
    cell_floor,
    choose_cell,
    decode,
    check_grid_memory,
    grid_tensor,
    interval_tensor,
    rows,
    union_ends,
    unique_bytes,
    values,
    widen,
    zero_positions,
)
from .genome_closest import k_nearest, nearest
from .genome_axis import IntervalAxis
from .genome_names import key_table, sorted_codes
from .genome_pieces import rows_of
from .genome_query import query_axis
from .genome_tracks import TrackOps
from .workers import check_workers, compiled, split_rows

# expected candidates per query above which overlap/intersect use the rank plan (measured on the
# synthetic sets: per candidate the window plan costs ~2x the rank plan, whose two rank searches
# cost about as much as 8 candidates)
RANK_PLAN_AT = 8.0
# expected candidates per query from which the pair joins run the queries in the caller's order:
# each query's pairs then cost far more than its two searches, and putting millions of pairs back
# in row order (`workers.in_order`) cost more than the visit order saved (100k unsorted queries,
# L = 1e5, ~200 pairs each: 0.31 -> 0.17 s CPU for the pairs; at L = 1e4, ~20 pairs, about even)
VISIT_ORDER_UNTIL = 64.0
# read-only -inf starts of prefix intervals, grown on demand (`GenomeIndex._ninf`)
_NINF = np.empty(0)


class GenomeIndex(IntervalAxis, TrackOps):
    """Index of a set of genomic intervals (the `data`, bedtools' -b), built once, queried many times.

    Parameters
    ----------
    data : DataFrame (chrom, start, end, ...), BED/BED.gz path or (chrom, start, end) arrays —
        anything `ctensor.apps.bedio.read_intervals` accepts.  0-based half-open integer coordinates.

    ops : operations to prepare for (keys of `PARTS`); default all.  Tensors another operation
        needs are built on its first use.

    layout : 'sorted' (default) or 'grid' (the paper's uniform grid; see the module docstring).

    cell : grid cell width in bases (an integer >= 1), only with layout='grid'.  Default: chosen
        from the data by `genome_layout.choose_cell` (the narrowest width from the mean interval
        length up, in steps of 2**(1/4), whose grid keeps the count/pair index within 2x the
        interval arrays).  A width given here is used as is, whatever memory it takes.

    Attributes: `frame` (the validated DataFrame), `chroms` (names, index order), `layout`, `cell`
    (None for 'sorted'), `build_seconds` (layout plus every index tensor built so far), `nbytes`
    (bytes of the index tensors built, each buffer counted once: tensors share the arrays they have
    in common, see `genome_layout`), `kernels` (einsum name -> compiled Kernel, after use).

    Raises FormatError on malformed input or more than `MAX_CHROMS` chromosomes, ValueError on an
    unknown layout or a bad cell width.
    """

    def __init__(self, data, name: str = "data", ops=None, layout: str = "sorted", cell=None):
        if layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {LAYOUTS}, got {layout!r}")
        if cell is not None:
            if layout != "grid":
                raise ValueError("cell: a cell width is only for layout='grid'")
            if isinstance(cell, bool) or not isinstance(cell, (int, np.integer)) or not 1 <= cell <= GRID_MAX_CELL:
                raise ValueError(f"cell: expected an integer width in [1, 2**41], got {cell!r}")
        if ops is not None:
            try:
                ops = (ops,) if isinstance(ops, str) else tuple(ops)
            except TypeError:
                raise TypeError(f"ops: expected operation names (keys of PARTS), got {ops!r}") from None
            bad = [op for op in ops if op not in PARTS]
            if bad:
                raise ValueError(f"ops: {bad[0]!r} is not an operation; expected some of {tuple(PARTS)}")
        t0 = time.perf_counter()
        df = read_intervals(data, name)
        self._lay(df, *sorted_codes(df["chrom"].array), name, layout)
        # the grid's width: the grid and the start/end values within 2x the interval arrays
        self.cell = None if layout != "grid" else int(cell) if cell is not None else \
            choose_cell(self._gs, self._ge, 16 * self.n)
        if cell is not None:
            check_grid_memory(self._gs, self._ge, self.cell)
        self.build_seconds = time.perf_counter() - t0
        for op in (self.parts if ops is None else ops):
            for part in self.parts[op]:
                self._part(part)

    def _lay(self, df, codes, chroms, name, layout="sorted"):
        """The attributes every layout reads, of the validated rows `df` on chromosomes `codes`
        (int64 row codes into the names `chroms`, sorted by str); no index tensor built."""
        s, e, zero = widen(df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64))
        zero_at = zero_positions(codes, s, zero)
        # the intervals in row order; the start-ordered layouts are made from them on first use,
        # only those an operation reads (`_ranked_axis`, `_sorted_values`)
        self._setup(chroms, len(s), zero_at, name, layout, _frame=df, _rows=(codes, s, e))

    def _setup(self, chroms, n, zero_at, name, layout="sorted", **laid):
        """The attributes of an index of `n` intervals on chromosomes `chroms` (sorted by str)
        with zero-length intervals at `zero_at`, and `laid` (`_frame`, `_rows`, `_axis`,
        `_values`, `_maxlen`: what is made already, or `_frame_source`, the frame's maker)."""
        if len(chroms) > MAX_CHROMS:
            raise FormatError(f"{name}: {len(chroms)} chromosomes; at most {MAX_CHROMS} can be indexed")
        self.build_seconds = 0.0
        self.chroms = [str(c) for c in chroms]
        self._zero_at = zero_at
        self.__dict__.update(laid)
        self.pair_plan = "auto"         # or 'window' / 'ranks' (see EINSUMS; tests pin each)
        self.n = n
        self.kernels = {}
        self._parts = {}
        self._lock = threading.RLock()          # lazy index tensors: built once, whatever the threads
        self.layout = layout
        self.parts = GRID_PARTS if layout == "grid" else PARTS
        self.cell = None

    # the validated rows (made by `_frame_source` on first use when the index was joined from
    # pieces without them: `genome_pieces.join`), and their codes, widened starts and ends
    frame = property(lambda self: self._lazy("_frame", lambda: self._frame_source()))
    _rows_in = property(lambda self: self._lazy("_rows", lambda: rows_of(self.frame, self.chroms)))

    def _part(self, name):
        """Build an index tensor on first use (its time is added to build_seconds)."""
        t = self._parts.get(name)
        if t is not None:
            return t
        with self._lock:
            t = self._parts.get(name)
            if t is None:
                D = None                                                        # built (and timed) first
                if name in ("Depth", "U"):
                    D = self._intervals()
                elif name == "UE" and "U" not in self._parts:       # a D not kept either (16 bytes a row)
                    D = self._intervals(keep=False)
                t0 = time.perf_counter()
                if name == "G":
                    t = grid_tensor(self._gs, self._ge, self.cell)
                elif name == "Depth":
                    t = self._run("depth", D=D)
                elif name == "U":
                    t = self._run("union", out=SparseRunList(Pattern()), D=D)
                elif name == "UE":
                    # the right ends of the union einsum's runs: U's own when built, else of a union
                    # not kept (closest reads only its ends: the index keeps 8 bytes a run, not 16)
                    U = self._parts.get("U")
                    ends = (U if U is not None else self._run("union", out=SparseRunList(Pattern()), D=D)).level.right
                    if len(ends) == self.n and "_axis" in self.__dict__:
                        ends = self._ge     # every interval a run of its own: End's buffer holds these ends
                    t = union_ends(ends)
                else:
                    t = BUILD[name](*(self._sorted_values() if name in VALUE_PARTS else (self._gs, self._ge)))
                self._parts[name] = t
                self.build_seconds += time.perf_counter() - t0
        return t

    # the longest (widened) interval: the pair plans' window reach, on first use
    maxlen = property(lambda self: self._lazy("_maxlen", lambda: float((self._rows_in[2] - self._rows_in[1]).max())
                                              if self.n else 1.0))
    S = property(lambda self: self._part("S"))
    E = property(lambda self: self._part("E"))
    D = property(lambda self: self._part("D"))
    End = property(lambda self: self._part("End"))
    UE = property(lambda self: self._part("UE"))
    Depth = property(lambda self: self._part("Depth"))
    U = property(lambda self: self._part("U"))
    G = property(lambda self: self._part("G"))
    DS = property(lambda self: self._part("DS"))

    def __getstate__(self):
        # compiled kernels belong to this process: recompiled (from the disk cache) on first use
        state = {**self.__dict__, "kernels": {}}
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state, _lock=threading.RLock())

    @property
    def nbytes(self) -> int:
        """Bytes of the index tensors built so far, each buffer counted once."""
        return unique_bytes(self._parts.values())

    # ------------------------------------------------------------------ query layout
    def genome(self, chrom, start, end, workers: int = 1, checked: bool = False):
        """Map query intervals to the genome axis: (widened start, widened end, zero mask), floats.
        `start`, `end`: 1-D integers (or integral floats) in [0, MAX_COORD]; `chrom`: one name per
        query, or one str for all of them.  Raises FormatError naming the first query row with a
        coordinate that is fractional or out of range, or end < start, or a chrom of another
        length; TypeError for non-numeric coordinates (the DataFrame functions of
        `ctensor.apps.genomics` check far more, through `read_intervals`).  `workers`: threads
        the chromosome coding of a large batch runs on (`genome_query.query_axis`).  `checked`:
        start and end are int64 columns of a frame `read_intervals` validated (not re-checked)."""
        table = self._lazy("_names", lambda: (key_table(self.chroms),))[0]
        return query_axis(self.chroms, chrom, start, end, check_workers(workers), table, checked)

    def _run(self, key, op=None, out=None, **tensors):
        """Call the kernel `key` (compiled from EINSUMS[op or key] on first use)."""
        # ct.compile's cache is keyed by format: e.g. an empty query list has other format facts
        k = compiled(self.kernels, key, EINSUMS[op or key], tensors, out=out, semiring=SEMIRING.get(op or key))
        return k(**tensors)

    # ------------------------------------------------------------------ operations
    def count_overlaps(self, start, end, chrom=None, workers: int = 1) -> np.ndarray:
        """Number of data intervals overlapping each query (`bedtools intersect -c`), int64 (n,).
        `workers`: threads the queries are split over (contiguous chunks, same result)."""
        check_workers(workers)
        gs, ge, _ = self.genome(chrom, start, end, workers)
        return split_rows(self._count, workers, (gs, ge), order_by=gs)

    def _ninf(self, n):
        """A read-only array of n -inf (the starts of prefix intervals), shared by every index,
        call and thread (read into a local: another thread may replace the global meanwhile), so
        an index built per call does not fill a fresh one (100k queries: 800 KB a call)."""
        global _NINF
        ninf = _NINF
        if ninf.shape[0] < n:
            ninf = np.full(n, -np.inf)
            ninf.flags.writeable = False
            _NINF = ninf
        return ninf[:n]

    def _count(self, gs, ge):
        if self.layout == "grid":
            C = self._run("grid_count", **self._grid_tensors(gs, ge, "count"))
            return np.asarray(C.level.child.val, np.int64)
        ninf = self._ninf(len(gs))
        before_end = interval_tensor(ninf, ge, "left")          # x < qe
        upto_start = interval_tensor(ninf, gs, "both")          # x <= qs
        C = self._run("count", A=before_end, S=self.S, B=upto_start, E=self.E)
        return np.asarray(C.level.child.val, np.int64)

    def _rank(self, t, closed):
        """#(data starts in (-inf, t)) (closed='left') or (-inf, t] ('both'), per entry of t."""
        A = interval_tensor(self._ninf(len(t)), t, closed)
        N = self._run("rank_" + closed, "rank", A=A, S=self.S)
        return np.asarray(N.level.child.val, np.int64)

    def _pair_plan(self, gs, ge, grid=True):
        """'grid' under layout='grid' (unless `grid` is False), else 'window' or 'ranks' (see
        EINSUMS): the rank plan costs two rank searches per query and saves the per-candidate
        stepping of the window plan, so it wins once the expected number of candidates per query
        (data density x window length) passes RANK_PLAN_AT."""
        if grid and self.layout == "grid":
            return "grid"
        if self.pair_plan != "auto":
            return self.pair_plan
        return "ranks" if self._candidates(gs, ge) >= RANK_PLAN_AT else "window"

    def _candidates(self, gs, ge) -> float:
        """Expected data intervals starting in a query's window [qs - maxlen, qe): the data
        density times the mean window length."""
        window = (float(ge.sum()) - float(gs.sum())) / len(gs) + self.maxlen if len(gs) else 0.0
        return self.density * window

    def _visit(self, gs, ge):
        """`split_rows`' order_by for a pair join: the query starts, or None (the caller's order)
        when the queries' pairs outweigh their searches (VISIT_ORDER_UNTIL)."""
        return gs if self._candidates(gs, ge) < VISIT_ORDER_UNTIL else None

    def _pair_tensors(self, gs, ge, plan, op):
        """The candidates, W[i] = [qs - maxlen, qe) on the start axis of S (window plan) or
        R[i, j] = the ranks whose start lies in it (ranks plan), and the test of each candidate:
        for "intersect" the query Q[i] = [qs, qe) against the interval D[j]; for "overlap" (a
        candidate starts before qe, so it meets the query iff it ends after qs) the end End[j]
        against the query start QS[i]."""
        if op == "intersect":
            test = {"Q": interval_tensor(gs, ge, "left"), "D": self.D}
        else:
            test = {"QS": values(gs, "QS"), "End": self.End}
        if plan == "window":
            return dict(W=interval_tensor(gs - self.maxlen, ge, "left"), S=self.S, **test)
        lo, hi = self._rank(gs - self.maxlen, "both"), self._rank(ge, "left")
        R = Tensor(Dense(SparseInterval(Pattern(), lo, hi, "left", shape=self.n), len(gs)),
                   name="R", validate=False)
        return dict(R=R, **test)

    def _grid_tensors(self, gs, ge, op):
        """The grid einsums' tensors: the query's cells W[i] = [floor_w(qs), qe) (edges c of the
        cells it meets), the grid, the starts DS; the exact test of "count"/"overlap" on the
        values QS, QE, End, of "intersect" on the intervals Q[i] = [qs, qe) and D[j]."""
        t = {"W": interval_tensor(cell_floor(gs, self.cell), ge, "left"), "G": self.G, "DS": self.DS,
             "QS": values(gs, "QS")}
        if op == "intersect":
            return {**t, "Q": interval_tensor(gs, ge, "left"), "D": self.D}
        return {**t, "QE": values(ge, "QE"), "End": self.End}

    def _pairs(self, op, gs, ge, out, grid=True, plan=None):
        """Run the pair einsum of `op` by `plan` (default: `_pair_plan` of these queries; a batch
        split over workers passes the whole batch's, so every chunk runs the same einsums)."""
        plan = plan or self._pair_plan(gs, ge, grid)
        if plan == "grid":
            return self._run("grid_" + op, out=out, **self._grid_tensors(gs, ge, op))
        key = op if plan == "window" else op + "_ranks"
        return self._run(key, out=out, **self._pair_tensors(gs, ge, plan, op))

    def _data_rows(self, j):
        """Data rows of ranks j (no copy when the data came sorted by start)."""
        return j if self.order is None else self.order[j]

    def overlap(self, start, end, chrom=None, workers: int = 1, ranks: bool = False):
        """All overlapping (query row, data row) pairs (`bedtools intersect -wa -wb`), two int64
        arrays, ordered by query row, then data start.  `ranks`: the data's ranks in start order
        instead of its rows (`ranked` holds the data columns in that order).  `workers`: threads
        the queries are split over (contiguous chunks, same result)."""
        check_workers(workers)
        gs, ge, _ = self.genome(chrom, start, end, workers)
        plan = self._pair_plan(gs, ge)
        qi, j = split_rows(lambda s, e: self._overlap(s, e, plan), workers, (gs, ge), rows=(0,),
                           order_by=self._visit(gs, ge))
        return qi, j if ranks else self._data_rows(j)

    def _overlap(self, gs, ge, plan):
        out = Dense(SparseList(Pattern(), real=False))
        O = self._pairs("overlap", gs, ge, out, plan=plan)
        lvl = O.level.child
        ptr, j = np.asarray(lvl.ptr), np.asarray(lvl.idx)
        return rows(ptr), j

    def intersect(self, start, end, chrom=None, workers: int = 1):
        """Overlapping pieces per pair (`bedtools intersect`): (query row, data row, piece start,
        piece end) on the chromosome's own coordinates, int64 arrays, ordered as `overlap`.
        `workers`: threads the queries are split over (contiguous chunks, same result)."""
        check_workers(workers)
        gs, ge, _ = self.genome(chrom, start, end, workers)
        plan = self._pair_plan(gs, ge)
        return split_rows(lambda s, e: self._intersect(s, e, plan), workers, (gs, ge), rows=(0,),
                          order_by=self._visit(gs, ge))

    def _intersect(self, gs, ge, plan):
        out = Dense(SparseList(SparseRunList(Pattern()), real=False))
        I = self._pairs("intersect", gs, ge, out, plan=plan)
        lj = I.level.child
        lx = lj.child
        ptr_i, j = np.asarray(lj.ptr), np.asarray(lj.idx)
        ptr_x = np.asarray(lx.ptr)
        assert (np.diff(ptr_x) == 1).all()                  # one piece per overlapping pair
        qi = rows(ptr_i)
        _, ps, pe = decode(np.asarray(lx.left), np.asarray(lx.right))
        return qi, self._data_rows(j), ps, pe

    def closest(self, start, end, chrom=None, ties: str = "all", workers: int = 1, k: int = 1):
        """The nearest data intervals of each query on its chromosome (`bedtools closest -d`, and
        `-t all|first|last` for `ties`): (query row, data row, distance), int64 arrays ordered by
        query row, then data start; a query with no data on its chromosome has one entry with
        data row -1 and distance -1, as bedtools prints it.

        Distance as bedtools 2.30 counts it on half-open coordinates (zero-length intervals
        widened): 0 for overlapping intervals, `b.start - a.end + 1` for b after a (so 1 for
        book-ended), `a.start - b.end + 1` for b before a.  Only the nearest intervals are
        reported, every tie of them unless `ties` says otherwise.  `k` > 1: the k nearest
        (`genome_closest.k_nearest`: bedtools' `-k`), ordered by query row, distance, data start.
        `workers`: threads the queries are split over (contiguous chunks, same result)."""
        if ties not in ("all", "first", "last"):
            raise ValueError(f"ties: expected 'all', 'first' or 'last', got {ties!r}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k: expected a positive integer, got {k!r}")
        check_workers(workers)
        gs, ge, _ = self.genome(chrom, start, end, workers)
        # k == 1: `nearest` runs its searches in start order itself and its pairs come out by row
        return split_rows(lambda s, e: self._closest(s, e, ties, k), workers, (gs, ge), rows=(0,),
                          order_by=gs if k > 1 else None)

    def _closest(self, gs, ge, ties, k=1):
        return nearest(self, gs, ge, ties) if k == 1 else k_nearest(self, gs, ge, k, ties)
