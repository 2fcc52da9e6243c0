"""Genomic intervals as continuous tensors, and the einsums that answer bedtools' questions.

Source: the continuous tensor paper §7.2 (genomic interval queries as continuous einsums).  Every
operation here is one or two einsums compiled by ctensor; numpy only lays coordinates out and maps
positions back to rows.

Coordinates.  BED intervals are 0-based and half-open, `[start, end)`.  bedtools 2.30 widens a
zero-length interval `[p, p)` to `[p - 1, p + 1)` for every overlap test (and prints the original
coordinates back); we do the same, so a zero-length interval overlaps what bedtools says it does.
Chromosome k of the indexed data is laid on one real line at offset `k * 2**41` (coordinates are
below 2**40, so a widened interval never reaches the next chromosome and every sum stays exact in
float64).  Query intervals on chromosomes absent from the data go to an empty region after the last
one.  At most `MAX_CHROMS` chromosomes can be indexed.

Index formats (built once per data set, `GenomeIndex`; build time in `build_seconds`):
- `S[x, j]`  the interval starts as pinpoints, j = rank of the interval in start order: SparseList
  over the distinct starts -> integer SparseInterval (the tiled range of ranks starting there, one
  shared offsets array) -> Pattern, 16 bytes per interval.  A counting reduction over x in an
  extent collapses to a difference of two offsets after two finger searches
  (`ctensor.looplets.count`);
- `E[x, j]`  the interval ends as pinpoints, same format;
- `D[j, x]`  the intervals in start order, one interval per j (Dense -> SparseInterval -> Pattern);
- `Depth[x]` the depth track: how many intervals cover x (SparseRunList -> Element(int)), the
  format of `bedtools genomecov -bg`; built by sorting the endpoints.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .. import (
    Dense,
    Element,
    Pattern,
    SparseList,
    SparseInterval,
    SparseRunList,
    Tensor,
)
from .. import compile as ct_compile
from ..errors import FormatError
from .bedio import read_intervals

SPAN = float(2**41)
# expected candidates per query above which overlap/intersect use the rank plan (measured on the
# synthetic sets: per candidate the window plan costs ~2x the rank plan, whose two rank searches
# cost about as much as 8 candidates)
RANK_PLAN_AT = 8.0
MAX_CHROMS = 2**53 // 2**41 - 2

# The einsums, by operation.  Index names: i query, j data (start order), x the genome axis,
# s the data start coordinate.
EINSUMS = {
    # #(data starts < query end) - #(data ends <= query start): A[i] = (-inf, qe), B[i] = (-inf, qs]
    "count": "C[i] = (A[i, x] * S[x, j] - B[i, x] * E[x, j]) * d(x, j; counting, counting)",
    # rank of a coordinate among the data starts: #(starts in A[i] = (-inf, t)) or (-inf, t]
    "rank": "N[i] = A[i, x] * S[x, j] * d(x, j; counting, counting)",
    # pairs, two plans for one answer (`GenomeIndex.pair_plan`).  "window": data starting in the
    # query's window W[i] = [qs - maxlen, qe) whose interval meets the query's, in one pass;
    # "ranks": the same candidates as a range of ranks R[i, j] = [rank(qs - maxlen), rank(qe))
    # from two "rank" calls, then a dense loop over the range (faster when windows are crowded)
    "overlap": "O[i, j] = W[i, s] * S[s, j] * Q[i, x] * D[j, x] * d(s, x; boolean, boolean)",
    "overlap_ranks": "O[i, j] = R[i, j] * Q[i, x] * D[j, x] * d(x; boolean)",
    # the overlapping pieces themselves, per pair (same two plans)
    "intersect": "I[i, j, x] = W[i, s] * S[s, j] * Q[i, x] * D[j, x] * d(s; boolean)",
    "intersect_ranks": "I[i, j, x] = R[i, j] * Q[i, x] * D[j, x]",
    # bases of the query covered by at least one data interval (Lebesgue measure)
    "covered": "B[i] = Q[i, x] * (Depth[x] > 0) * d(x; lebesgue)",
    # the union of the data as a run-length list
    "merge": "M[x] = Depth[x] > 0",
    # the parts of each query interval no data interval covers
    "subtract": "R[i, x] = Q[i, x] * (Depth[x] == 0)",
    # closest, (min,+) and (max,+): the first data start in A[i] = [qe, chromosome end) and the
    # last data end in B[i] = [chromosome start, qs]; each collapses to one finger search per query
    # (`ctensor.looplets.extremum`).  The tied nearest intervals are then the "overlap" pairs of
    # the query widened by its distance.
    "closest_next": "R[i] = (x if (A[i, x] & S[x, j]) else inf) * d(x, j; boolean, counting)",
    "closest_prev": "L[i] = (x if (B[i, x] & E[x, j]) else -inf) * d(x, j; boolean, counting)",
}
SEMIRING = {"closest_next": "min", "closest_prev": "max"}


# the index tensors each operation reads
PARTS = {"count": ("S", "E"), "overlap": ("S", "D"), "intersect": ("S", "D"),
         "coverage": ("S", "E", "Depth"), "subtract": ("Depth",), "merge": ("Depth", "S", "E"),
         "closest": ("S", "E", "D")}


def widen(start: np.ndarray, end: np.ndarray):
    """bedtools' zero-length rule: [p, p) takes part in overlaps as [p-1, p+1)."""
    zero = start == end
    if not zero.any():
        return start, end, zero
    return np.where(zero, start - 1, start), np.where(zero, end + 1, end), zero


class GenomeIndex:
    """Index of a set of genomic intervals (the `data`, bedtools' -b), built once, queried many times.

    Parameters
    ----------
    data : DataFrame (chrom, start, end, ...), BED/BED.gz path or (chrom, start, end) arrays —
        anything `ctensor.apps.bedio.read_intervals` accepts.  0-based half-open integer coordinates.

    ops : operations to prepare for (keys of `PARTS`); default all.  Tensors another operation
        needs are built on its first use.

    Attributes: `frame` (the validated DataFrame), `chroms` (names, index order), `build_seconds`
    (layout plus every index tensor built so far), `nbytes` (bytes of the index tensors built),
    `kernels` (einsum name -> compiled Kernel, after use).

    Raises FormatError on malformed input or more than `MAX_CHROMS` chromosomes.
    """

    def __init__(self, data, name: str = "data", ops=None):
        t0 = time.perf_counter()
        df = read_intervals(data, name)
        self.frame = df
        codes, chroms = pd.factorize(df["chrom"], sort=True)
        if len(chroms) > MAX_CHROMS:
            raise FormatError(f"{name}: {len(chroms)} chromosomes; at most {MAX_CHROMS} can be indexed")
        self.chroms = [str(c) for c in chroms]
        s, e, zero = widen(df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64))
        gs = codes * SPAN + s
        ge = codes * SPAN + e
        self._zero_at = np.unique(gs[zero] + 1)            # genome positions of zero-length intervals
        # intervals per base over the chromosomes' occupied extents (the pair plan's cost model)
        ext = pd.DataFrame({"c": codes, "s": gs, "e": ge}).groupby("c").agg(s=("s", "min"), e=("e", "max"))
        self.density = len(gs) / max(float((ext["e"] - ext["s"]).sum()), 1.0)
        self.pair_plan = "auto"         # or 'window' / 'ranks' (see EINSUMS; tests pin each)
        order = np.argsort(gs, kind="stable")               # rank j -> data row
        self.order = None if (order == np.arange(len(order))).all() else order
        if self.order is not None:
            gs, ge = gs[order], ge[order]
        self.maxlen = float((ge - gs).max()) if len(gs) else 1.0
        self._gs, self._ge = gs, ge
        self.n = len(gs)
        self.kernels = {}
        self._parts = {}
        self._ninf_cache = np.empty(0)
        self.build_seconds = time.perf_counter() - t0
        for op in (PARTS if ops is None else ops):
            for part in PARTS[op]:
                self._part(part)

    def _part(self, name):
        """Build an index tensor on first use (its time is added to build_seconds)."""
        t = self._parts.get(name)
        if t is None:
            t0 = time.perf_counter()
            t = self._parts[name] = _BUILD[name](self._gs, self._ge)
            self.build_seconds += time.perf_counter() - t0
        return t

    S = property(lambda self: self._part("S"))
    E = property(lambda self: self._part("E"))
    D = property(lambda self: self._part("D"))
    Depth = property(lambda self: self._part("Depth"))

    @property
    def nbytes(self) -> int:
        return sum(_tensor_bytes(t) for t in self._parts.values())

    # ------------------------------------------------------------------ query layout
    def genome(self, chrom, start, end):
        """Map query intervals to the genome axis: (widened start, widened end, zero mask), floats.
        Raises FormatError naming the first query row with a negative start or end < start (the
        DataFrame functions of `ctensor.apps.genomics` check far more, through `read_intervals`)."""
        start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
        if start.shape != end.shape:
            raise FormatError(f"query: {start.shape[0]} starts but {end.shape[0]} ends")
        if start.size and (start.min() < 0 or (end < start).any()):
            k = int(np.flatnonzero((start < 0) | (end < start))[0])
            raise FormatError(f"query row {k}: interval [{start[k]}, {end[k]}) has a negative start or ends before it starts")
        s, e, zero = widen(start, end)
        if chrom is None:
            if len(self.chroms) > 1:
                raise TypeError("chrom: the index holds several chromosomes; pass the query's chrom")
            return s.astype(np.float64), e.astype(np.float64), zero
        # absent from the data: an empty region after the last chromosome
        codes = pd.Index(self.chroms).get_indexer(np.asarray(chrom, dtype=object)).astype(np.int64)
        codes[codes < 0] = len(self.chroms)
        base = codes * SPAN
        return base + s, base + e, zero

    def _run(self, key, op=None, out=None, **tensors):
        """Call the kernel `key` (compiled from EINSUMS[op or key] on first use)."""
        k = self.kernels.get(key)
        if k is None or not k.accepts(tensors):
            # ct.compile's cache is keyed by format: e.g. an empty query list has other format facts
            k = self.kernels[key] = ct_compile(EINSUMS[op or key], out=out, semiring=SEMIRING.get(op or key),
                                               **tensors)
        return k(**tensors)

    # ------------------------------------------------------------------ operations
    def count_overlaps(self, start, end, chrom=None) -> np.ndarray:
        """Number of data intervals overlapping each query (`bedtools intersect -c`), int64 (n,)."""
        return self._count(*self.genome(chrom, start, end)[:2])

    def _ninf(self, n):
        """A read-only array of n -inf (the starts of prefix intervals), reused across calls."""
        if self._ninf_cache.shape[0] < n:
            self._ninf_cache = np.full(n, -np.inf)
            self._ninf_cache.flags.writeable = False
        return self._ninf_cache[:n]

    def _count(self, gs, ge):
        ninf = self._ninf(len(gs))
        before_end = _intervals(ninf, ge, "left")          # x < qe
        upto_start = _intervals(ninf, gs, "both")          # x <= qs
        C = self._run("count", A=before_end, S=self.S, B=upto_start, E=self.E)
        return np.asarray(C.level.child.val, np.int64)

    def _rank(self, t, closed):
        """#(data starts in (-inf, t)) (closed='left') or (-inf, t] ('both'), per entry of t."""
        A = _intervals(self._ninf(len(t)), t, closed)
        N = self._run("rank_" + closed, "rank", A=A, S=self.S)
        return np.asarray(N.level.child.val, np.int64)

    def _pair_plan(self, gs, ge):
        """'window' or 'ranks' (see EINSUMS): the rank plan costs two rank searches per query
        and saves the per-candidate stepping of the window plan, so it wins once the expected
        number of candidates per query (data density x window length) passes RANK_PLAN_AT."""
        if self.pair_plan != "auto":
            return self.pair_plan
        window = (float(ge.sum()) - float(gs.sum())) / len(gs) + self.maxlen if len(gs) else 0.0
        return "ranks" if self.density * window >= RANK_PLAN_AT else "window"

    def _pair_tensors(self, gs, ge, plan):
        """Q the queries, D the data in rank order, and the candidates: W[i] = (qs - maxlen, qe)
        on the start axis of S, or R[i, j] = the ranks whose start lies in that window."""
        Q = _intervals(gs, ge, "left")
        if plan == "window":
            return dict(W=_intervals(gs - self.maxlen, ge, "left"), S=self.S, Q=Q, D=self.D)
        lo, hi = self._rank(gs - self.maxlen, "both"), self._rank(ge, "left")
        R = Tensor(Dense(SparseInterval(Pattern(), lo, hi, "left", shape=self.n), len(gs)),
                   name="R", validate=False)
        return dict(R=R, Q=Q, D=self.D)

    def _pairs(self, op, gs, ge, out):
        plan = self._pair_plan(gs, ge)
        key = op if plan == "window" else op + "_ranks"
        return self._run(key, out=out, **self._pair_tensors(gs, ge, plan))

    def _data_rows(self, j):
        """Data rows of ranks j (no copy when the data came sorted by start)."""
        return j if self.order is None else self.order[j]

    def overlap(self, start, end, chrom=None):
        """All overlapping (query row, data row) pairs (`bedtools intersect -wa -wb`), two int64
        arrays, ordered by query row, then data start."""
        gs, ge, _ = self.genome(chrom, start, end)
        out = Dense(SparseList(Pattern(), shape=max(self.n, 1)))
        O = self._pairs("overlap", gs, ge, out)
        lvl = O.level.child
        ptr, j = np.asarray(lvl.ptr), np.asarray(lvl.idx)
        return _rows(ptr), self._data_rows(j)

    def intersect(self, start, end, chrom=None):
        """Overlapping pieces per pair (`bedtools intersect`): (query row, data row, piece start,
        piece end) on the chromosome's own coordinates, int64 arrays, ordered as `overlap`."""
        gs, ge, _ = self.genome(chrom, start, end)
        out = Dense(SparseList(SparseRunList(Pattern()), shape=max(self.n, 1)))
        I = self._pairs("intersect", gs, ge, out)
        lj = I.level.child
        lx = lj.child
        ptr_i, j = np.asarray(lj.ptr), np.asarray(lj.idx)
        ptr_x = np.asarray(lx.ptr)
        assert (np.diff(ptr_x) == 1).all()                  # one piece per overlapping pair
        qi = _rows(ptr_i)
        _, ps, pe = _decode(np.asarray(lx.left), np.asarray(lx.right))
        return qi, self._data_rows(j), ps, pe

    def closest(self, start, end, chrom=None, ties: str = "all"):
        """The nearest data intervals of each query on its chromosome (`bedtools closest -d`, and
        `-t all|first|last` for `ties`): (query row, data row, distance), int64 arrays ordered by
        query row, then data start; a query with no data on its chromosome has one entry with
        data row -1 and distance -1, as bedtools prints it.

        Distance as bedtools 2.30 counts it on half-open coordinates (zero-length intervals
        widened): 0 for overlapping intervals, `b.start - a.end + 1` for b after a (so 1 for
        book-ended), `a.start - b.end + 1` for b before a.  Only the nearest intervals are
        reported, every tie of them unless `ties` says otherwise."""
        if ties not in ("all", "first", "last"):
            raise ValueError(f"ties: expected 'all', 'first' or 'last', got {ties!r}")
        gs, ge, _ = self.genome(chrom, start, end)
        # the chromosome of each query, as a window of the genome axis holding all of its data
        base = np.floor((gs + ge) / (2 * SPAN)) * SPAN
        lo, hi = base - SPAN / 2, base + SPAN / 2
        after = self._run("closest_next", A=_intervals(ge, hi, "left"), S=self.S)
        before = self._run("closest_prev", B=_intervals(lo, gs, "both"), E=self.E)
        nxt, prv = after.level.child.val, before.level.child.val
        with np.errstate(invalid="ignore"):
            dist = np.minimum(nxt - ge + 1, gs - prv + 1)          # +inf where neither side has data
        dist[self._count(gs, ge) > 0] = 0
        finite = np.isfinite(dist)
        has = np.flatnonzero(finite)
        # every data interval within `dist` of the query overlaps the query widened by it, and none
        # is nearer: the ties are exactly those pairs
        d = dist[has]
        out = Dense(SparseList(Pattern(), shape=max(self.n, 1)))
        O = self._pairs("overlap", gs[has] - d, ge[has] + d, out)
        lvl = O.level.child
        qi, j = has[_rows(np.asarray(lvl.ptr))], np.asarray(lvl.idx)
        if ties != "all" and len(qi):
            first = np.r_[True, qi[1:] != qi[:-1]] if ties == "first" else np.r_[qi[1:] != qi[:-1], True]
            qi, j = qi[first], j[first]
        data, dist_out = self._data_rows(j), dist[qi].astype(np.int64)
        none = np.flatnonzero(~finite)
        if not len(none):
            return qi, data, dist_out
        # queries without data on their chromosome: one row each (-1, -1), merged in query order
        rows = np.concatenate([qi, none])
        order = np.argsort(rows, kind="stable")
        minus = np.full(len(none), -1, np.int64)
        return rows[order], np.concatenate([data, minus])[order], np.concatenate([dist_out, minus])[order]

    def covered(self, start, end, chrom=None) -> np.ndarray:
        """Bases of each (widened) query interval covered by at least one data interval, int64."""
        return self._covered(*self.genome(chrom, start, end)[:2])

    def _covered(self, gs, ge):
        B = self._run("covered", Q=_intervals(gs, ge, "left"), Depth=self.Depth)
        return np.rint(np.asarray(B.level.child.val)).astype(np.int64)

    def coverage(self, start, end, chrom=None) -> dict:
        """`bedtools coverage`: per query, count of overlapping data intervals, bases covered,
        query length (zero-length queries count as 2, as bedtools widens them), covered fraction."""
        gs, ge, _ = self.genome(chrom, start, end)
        count, covered = self._count(gs, ge), self._covered(gs, ge)
        length = (ge - gs).astype(np.int64)           # widened lengths; exact in float64
        return {"count": count, "covered": covered, "length": length, "fraction": covered / length}

    def subtract(self, start, end, chrom=None):
        """Pieces of each query interval not covered by any data interval (`bedtools subtract`):
        (query row, piece start, piece end), int64 arrays; a zero-length query that is not wholly
        covered keeps its original coordinates, as bedtools prints it."""
        gs, ge, zero = self.genome(chrom, start, end)
        out = Dense(SparseRunList(Pattern()))
        R = self._run("subtract", out=out, Q=_intervals(gs, ge, "left"), Depth=self.Depth)
        lx = R.level.child
        qi = _rows(np.asarray(lx.ptr))
        left, right = np.asarray(lx.left), np.asarray(lx.right)
        _, ps, pe = _decode(left, right)
        z = zero[qi]
        if z.any():                       # one row per surviving zero-length query, as given
            first = np.ones(len(qi), bool)
            first[1:] = qi[1:] != qi[:-1]
            drop = z & ~first
            st, en = np.asarray(start, np.int64), np.asarray(end, np.int64)
            ps = np.where(z, st[qi], ps)
            pe = np.where(z, en[qi], pe)
            qi, ps, pe = qi[~drop], ps[~drop], pe[~drop]
        return qi, ps, pe

    def merge(self):
        """The union of the data (`bedtools merge`): (chrom names, start, end) of maximal runs;
        touching intervals merge.  A run made of one zero-length interval prints as that interval."""
        M = self._run("merge", out=SparseRunList(Pattern()), Depth=self.Depth)
        left, right = np.asarray(M.level.left), np.asarray(M.level.right)
        code, s, e = _decode(left, right)
        # a run [p-1, p+1) over a zero-length interval at p is that interval alone iff exactly one
        # interval meets it
        cand = np.flatnonzero((e - s == 2) & np.isin(left + 1, self._zero_at))
        if cand.size:
            names = np.asarray(self.chroms, dtype=object)[code[cand]]
            n = self.count_overlaps(s[cand] + 1, s[cand] + 1, names if len(self.chroms) > 1 else None)
            lone = cand[n == 1]
            s[lone] += 1
            e[lone] -= 1
        return np.asarray(self.chroms, dtype=object)[code], s, e


def _intervals(start, end, closed) -> Tensor:
    """interval_set(start, end, closed) without re-validation: callers pass coordinates `genome`
    produced (checked, widened, so start < end), starts all finite or all -inf (prefixes), so the
    format facts are read off the first start instead of a pass over the array."""
    lvl = SparseInterval(Pattern(), start, end, closed)
    prefix = len(start) > 0 and start[0] == -np.inf
    lvl.__dict__.update(finite=not prefix, unbounded=prefix)      # the cached_property values
    return Tensor(Dense(lvl, len(lvl.left)), name="interval_set", validate=False)


def _rows(ptr) -> np.ndarray:
    """Row (query) number of every entry of a Dense -> sparse output, from the sparse level's ptr.
    Rows of about one entry: +1 at every row start, accumulated (np.repeat pays per row); longer
    rows: np.repeat (the accumulation pays per entry, 2-4x more past ~3 entries per row)."""
    m, n = int(ptr[-1]), len(ptr) - 1
    if m > 3 * n:
        return np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    return np.cumsum(np.bincount(ptr[1:-1], minlength=m)[:m])


def _decode(left, right):
    """Genome-axis intervals -> (chromosome code, start, end).  The midpoint decides the
    chromosome: a widened interval at 0 starts at -1, below its chromosome's offset."""
    code = np.floor((left + right) / (2 * SPAN)).astype(np.int64)
    base = code * SPAN
    return code, (left - base).astype(np.int64), (right - base).astype(np.int64)


def _depth_track(gs: np.ndarray, ge: np.ndarray) -> Tensor:
    """Depth of coverage as runs [c_k, c_{k+1}) of constant positive depth (bedtools genomecov -bg):
    endpoint events sorted, summed per coordinate, accumulated."""
    coords = np.concatenate([gs, ge])
    delta = np.concatenate([np.ones(len(gs), np.int64), -np.ones(len(ge), np.int64)])
    u, inv = np.unique(coords, return_inverse=True)
    d = np.zeros(len(u), np.int64)
    np.add.at(d, inv, delta)
    keep = d != 0                                  # a coordinate where as many end as start changes nothing
    u, d = u[keep], d[keep]
    depth = np.cumsum(d)
    run = depth[:-1] > 0
    left, right, val = u[:-1][run], u[1:][run], depth[:-1][run]
    lvl = SparseRunList(Element(0, val=val, dtype=np.int64), np.array([0, len(left)], np.int64), left, right, "left")
    return Tensor(lvl, name="Depth")


def _sorted_points(x: np.ndarray) -> Tensor:
    """P[x, j] over sorted coordinates x (j = position in x): SparseList over the distinct
    coordinates, each owning a tiled range of ids (integer SparseInterval, one shared array of
    offsets) -> Pattern.  16 bytes per distinct coordinate, where `points` stores an id array too."""
    n = len(x)
    first = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if n else np.zeros(0, np.int64)
    cum = np.append(first, n).astype(np.int64)           # ids of coordinate k: cum[k] .. cum[k+1]-1
    ids = SparseInterval(Pattern(), cum[:-1], cum[1:], "left", shape=n)
    return Tensor(SparseList(ids, np.array([0, len(first)], np.int64), x[first]), name="points", validate=False)


_BUILD = {  # index tensor name -> build(sorted starts, ends on the genome axis)
    "S": lambda gs, ge: _sorted_points(gs),
    "E": lambda gs, ge: _sorted_points(np.sort(ge)),
    "D": lambda gs, ge: _intervals(gs, ge, "left"),
    "Depth": _depth_track,
}


def _tensor_bytes(t: Tensor) -> int:
    """Bytes of the tensor's arrays, each buffer counted once (views of one array share it)."""
    seen, total = set(), 0
    for a in t.level.arrays():
        if isinstance(a, np.ndarray):
            base = a.base if a.base is not None else a
            if id(base) not in seen:
                seen.add(id(base))
                total += base.nbytes
    return total
