"""`bedtools closest` over a `GenomeIndex`: the nearest data intervals of each query, by two
extremum einsums and one overlap einsum (`genome_einsums.EINSUMS`: closest_prev, closest_next,
overlap / overlap_ranks; for one tie, ties='first' the rank einsum over the running maximum of the
ends, 'last' map_max).  Queries come in any order: the searches run in start order, the tie pairs
come out by row.  Source: the continuous tensor paper §7.2; the distance as bedtools 2.30 counts
it."""
from __future__ import annotations

import numpy as np

from .. import Dense, Pattern, SparseInterval, SparseList, Tensor
from .genome_layout import SPAN, decode, interval_tensor, rows, sorted_points, values
from .genome_sets import map_values
from .radix_order import visit_order


def nearest(index, gs, ge, ties):
    """(query row, data row, distance) of the queries [gs, ge) on the genome axis (widened), as
    `GenomeIndex.closest` returns them; `ties` checked by the caller.  Queries in any order: the
    searches run in start order (`_visit`), the tie pairs come out in row order (`_tie_pairs`),
    so a caller need not sort the queries nor move millions of pairs back to their rows."""
    perm = _visit(gs)
    if perm is None:
        dist = _distance(index, gs, ge)
    else:
        dist = np.empty(len(gs))
        dist[perm] = _distance(index, gs[perm], ge[perm])
    finite = np.isfinite(dist)
    has = np.flatnonzero(finite)
    # every data interval within `dist` of the query overlaps the query widened by it, and none
    # is nearer: the ties are exactly those pairs (no copies when every query has data)
    every = len(has) == len(gs)
    d, lo, hi = (dist, gs, ge) if every else (dist[has], gs[has], ge[has])
    lo, hi = lo - d, hi + d
    if ties != "all" and not len(index._zero_at):
        # the first (last) tie is the least (greatest) j among the pairs (see below), per row: run
        # in start order and put back
        one = _first_tie if ties == "first" else _last_tie
        sub = _within(perm, has, len(gs))
        if sub is None:
            j = one(index, lo, hi)
        else:
            j = np.empty(len(lo), np.int64)
            j[sub] = one(index, lo[sub], hi[sub])
        return with_missing(has, index._data_rows(j), d.astype(np.int64), finite)
    ptr, j = _tie_pairs(index, lo, hi, _within(perm, has, len(gs)))
    if ties == "all":
        # each query's rows and its distance repeated over its pairs (two repeats of per-query
        # arrays: a gather of the float distances by pair and a cast cost 2-3x more at 15M pairs)
        cnt = np.diff(ptr)
        qi = np.repeat(has, cnt)
        return with_missing(qi, index._data_rows(j), np.repeat(d.astype(np.int64), cnt), finite)
    qi = has[rows(ptr)]
    if len(qi):
        # first/last by the data's own start, as bedtools sorts it, equal starts in j's order.  The
        # pairs come by query, then j (start order): already in that order unless the data has a
        # zero-length interval (its widened start is one below its own: [68, 68) starts at 67
        # with [67, 73)); only then sort (a lexsort of every pair: ~150 ms of 240 at L = 1e4)
        if len(index._zero_at):
            order = np.lexsort((j, index.frame["start"].to_numpy()[index._data_rows(j)], qi))
            qi, j = qi[order], j[order]
        first = np.r_[True, qi[1:] != qi[:-1]] if ties == "first" else np.r_[qi[1:] != qi[:-1], True]
        qi, j = qi[first], j[first]
    return with_missing(qi, index._data_rows(j), dist[qi].astype(np.int64), finite)


# fewer queries than this run in the order given (the index stays in cache); at most one in
# SORTED_ENOUGH steps back: the searches already move forward (a batch sorted up to buckets)
VISIT_AT = 1024
SORTED_ENOUGH = 16


def _visit(gs):
    """A permutation running the queries in start order (up to buckets of about one row:
    `radix_order.visit_order`, counting passes), or None when they are few or already about in
    that order (descents in at most 1/SORTED_ENOUGH of the steps)."""
    if len(gs) < VISIT_AT or np.count_nonzero(gs[1:] < gs[:-1]) * SORTED_ENOUGH <= len(gs):
        return None
    return visit_order(gs)


def _first_tie(index, lo, hi):
    """The least rank j of a data interval meeting each widened query [lo, hi) (each meets one):
    #(j with M[j] <= lo), M the running maximum of the ends in start order, by the rank einsum
    over M's pinpoints (`_reach`).  Every j before the first tie j* starts before hi (starts are
    sorted, j* starts before hi), so it ends at or before lo; End[j*] > lo: M first passes lo at j*.
    One finger search per query where the extremum einsum (map_min) tested every candidate in
    [lo - maxlen, hi)."""
    A = interval_tensor(index._ninf(len(lo)), lo, "both")
    N = index._run("rank_both", "rank", A=A, S=_reach(index))
    return np.asarray(N.level.child.val, np.int64)


def _last_tie(index, lo, hi):
    """The greatest rank j of a data interval meeting each widened query [lo, hi): the extremum
    einsum map_max of the value j over the overlap candidates (no search finds the last j < rank(hi)
    with End[j] > lo: the ends are not in order)."""
    jv = np.arange(index.n, dtype=np.float64)
    return map_values(index, lo, hi, jv, "max").astype(np.int64)


def _reach(index):
    """The running maximum of the data's ends in start order as sorted pinpoints (ids j), built
    once per index under its lock (`GenomeIndex` is queried from many threads)."""
    t = index.__dict__.get("_reach_points")
    if t is None:
        with index._lock:
            t = index.__dict__.get("_reach_points")
            if t is None:
                t = sorted_points(np.maximum.accumulate(index._ge))
                index._reach_points = t
    return t


def _within(perm, has, n):
    """The visiting order `perm` of n rows restricted to the rows `has` (ascending), as positions
    in `has`; None for None.  (Widening each query by its distance keeps about that order.)"""
    if perm is None or len(has) == n:
        return perm
    pos = np.full(n, -1, np.int64)
    pos[has] = np.arange(len(has))
    sub = pos[perm]
    return sub[sub >= 0]


def _distance(index, gs, ge):
    """The distance (float64, +inf where the query's chromosome has no data) of each query to its
    nearest data interval, by the two extremum searches (best in start order)."""
    # The union of the data is disjoint runs [a_k, b_k).  p = b_k, the last run end <= qs
    # (-inf if none on the query's chromosome); the run after it is the first to end after
    # qs, and it starts at c = the first data start >= p (no data starts in a gap between
    # runs; +inf if none).  So the query overlaps the data iff c < qe; otherwise the nearest
    # data ends at p (nothing ends in (p, qs]) or starts at c (nothing starts in [qe, c)).
    # the query's chromosome k, and a window of the axis holding all of its data and no other
    # chromosome's: [k*SPAN - 2, k*SPAN + 2**40] (chromosome k - 1's data may end at
    # (k - 1)*SPAN + 2**40, a widened zero-length interval at MAX_COORD)
    base = decode(gs, ge)[0] * SPAN
    lo, hi = base - 2.0, base + SPAN / 2
    p = index._run("closest_prev", B=interval_tensor(lo, gs, "both"), UE=index.UE).level.child.val
    c = index._run("closest_next", A=interval_tensor(np.maximum(p, lo), hi, "left"), S=index.S).level.child.val
    dist = np.minimum(c - ge + 1, gs - p + 1)
    dist[c < ge] = 0
    return dist


def _tie_pairs(index, lo, hi, perm):
    """(ptr, j) of the overlap einsum's pairs of the widened queries [lo, hi): the ranks j of the
    data intervals meeting query i are j[ptr[i]:ptr[i + 1]], in start order.  Queries visited in
    the order `perm` (None: as given): the candidates' rank ranges are searched in that order
    (`GenomeIndex._rank`) and put back, then the rank-plan einsum (`overlap_ranks`) tests each
    query's candidates in row order: no search depends on the row order, and the pairs come out
    by row."""
    out = Dense(SparseList(Pattern(), real=False))
    if perm is None:
        O = index._pairs("overlap", lo, hi, out, grid=False)
    else:
        first, past = np.empty(len(lo), np.int64), np.empty(len(lo), np.int64)
        first[perm] = index._rank(lo[perm] - index.maxlen, "both")
        past[perm] = index._rank(hi[perm], "left")
        R = Tensor(Dense(SparseInterval(Pattern(), first, past, "left", shape=index.n), len(lo)),
                   name="R", validate=False)
        O = index._run("overlap_ranks", out=out, R=R, QS=values(lo, "QS"), End=index.End)
    lvl = O.level.child
    return np.asarray(lvl.ptr), np.asarray(lvl.idx)


def with_missing(qi, data, dist, finite):
    """(query row, data row, distance) with one row (-1, -1) for each query without data on its
    chromosome (`finite` False), merged in query order."""
    none = np.flatnonzero(~finite)
    if not len(none):
        return qi, data, dist
    # both lists are in query order and share no row: insert the missing rows at their places
    at = np.searchsorted(qi, none)
    return np.insert(qi, at, none), np.insert(data, at, -1), np.insert(dist, at, -1)


def _side_distances(index, gs, ge, K, sorted_ends):
    """(nq, 2K) distances of each query's K nearest data intervals after it (by start: the first
    K starting at or after qe) and before it (by end: the last K ending at or before qs), +inf
    where a side has fewer on the query's chromosome; and whether each side ran out (fewer than K
    there).  The positions come from the rank einsum (`GenomeIndex._rank`, and its twin over the
    ends)."""
    n = index.n
    code = np.floor(gs / SPAN + 0.5)
    after = index._rank(ge, "left")                                   # first start >= qe
    before = np.asarray(index._run("rank_ends", "rank", A=interval_tensor(index._ninf(len(gs)), gs, "both"),
                                   S=index.E).level.child.val, np.int64)  # ends <= qs
    steps = np.arange(K)
    pa, pb = after[:, None] + steps, before[:, None] - 1 - steps
    sa = index._gs[np.minimum(pa, n - 1)]
    eb = sorted_ends[np.maximum(pb, 0)]
    ok_a = (pa < n) & (np.floor(sa / SPAN + 0.5) == code[:, None])
    ok_b = (pb >= 0) & (np.floor(eb / SPAN + 0.5) == code[:, None])
    da = np.where(ok_a, sa - ge[:, None] + 1, np.inf)
    db = np.where(ok_b, gs[:, None] - eb + 1, np.inf)
    return np.concatenate([da, db], axis=1), ~ok_a[:, -1], ~ok_b[:, -1], da[:, -1], db[:, -1]


def _kth_distance(index, gs, ge, k, ties, sorted_ends):
    """The distance within which each query's answer lies: the k-th smallest distance counted with
    multiplicity (ties='all': bedtools reports every interval up to it) or the k-th smallest
    distinct distance ('first'/'last': one interval per distance); the largest there is when the
    chromosome has fewer; +inf when it has no data.  Candidates: the overlapping intervals
    (distance 0, counted by the count einsum) and the K nearest on each side; K starts at k
    (enough for 'all') and doubles for the queries whose sides could still hide a distinct
    distance."""
    counts = index._count(gs, ge)
    zero = counts > 0
    out = np.full(len(gs), np.inf)
    todo, K = np.arange(len(gs)), max(k, 1)
    while len(todo):
        d, end_a, end_b, last_a, last_b = _side_distances(index, gs[todo], ge[todo], K, sorted_ends)
        d.sort(axis=1)
        z = zero[todo]
        fin = np.isfinite(d)
        if ties == "all":
            need = k - counts[todo]
            nfin = fin.sum(axis=1)
            pick = d[np.arange(len(todo)), np.clip(np.minimum(need, nfin) - 1, 0, d.shape[1] - 1)]
            out[todo] = np.where(need <= 0, 0.0, np.where(nfin > 0, pick, np.where(z, 0.0, np.inf)))
            return out
        new = np.ones_like(fin)
        new[:, 1:] = d[:, 1:] != d[:, :-1]
        new &= fin
        rank = np.cumsum(new, axis=1) + z[:, None]          # distance 0 is the first when z
        hit = (rank >= k) & new
        rows_ = np.arange(len(todo))
        got = np.where(hit.any(axis=1), d[rows_, hit.argmax(axis=1)], np.inf)
        got = np.where(z & (k <= 1), 0.0, got)
        # fewer distinct distances than k on the chromosome: all of them
        largest = np.where(fin.any(axis=1), np.where(fin, d, -np.inf).max(axis=1), np.where(z, 0.0, np.inf))
        got = np.where(np.isinf(got) & end_a & end_b, largest, got)
        # complete unless a side that did not run out may hide a smaller distinct distance
        sure = (end_a | (last_a >= got)) & (end_b | (last_b >= got))
        out[todo[sure]] = got[sure]
        todo, K = todo[~sure], 2 * K
    return out


def k_nearest(index, gs, ge, k, ties):
    """(query row, data row, distance) of each query's k nearest data intervals, as `bedtools
    closest -d -k k -t ties` reports them: ties='all', every interval within the k-th smallest
    distance (counted with multiplicity); 'first'/'last', the first/last interval (data start
    order) of each of the k smallest distinct distances.  Ordered by query row, distance, data
    start; a query with no data on its chromosome gets one entry (-1, -1).  The intervals within
    the distance are the overlap einsum's pairs of the widened query (as `nearest`)."""
    sorted_ends = np.sort(index._ge, kind="stable")       # nearly sorted: timsort (genome_layout.BUILD["E"])
    dist = _kth_distance(index, gs, ge, k, ties, sorted_ends)
    finite = np.isfinite(dist)
    has = np.flatnonzero(finite)
    dk = dist[has]
    O = index._pairs("overlap", gs[has] - dk, ge[has] + dk, Dense(SparseList(Pattern(), real=False)), grid=False)
    lvl = O.level.child
    qi, j = has[rows(np.asarray(lvl.ptr))], np.asarray(lvl.idx)
    ds, de = index._gs[j], index._ge[j]
    same = np.floor(ds / SPAN + 0.5) == np.floor(gs[qi] / SPAN + 0.5)     # the query's chromosome only
    qi, j, ds, de = qi[same], j[same], ds[same], de[same]
    d = np.where(ds >= ge[qi], ds - ge[qi] + 1, np.where(de <= gs[qi], gs[qi] - de + 1, 0))
    if ties == "all":
        order = np.lexsort((j, d, qi))
    else:       # by the data's own start within a distance, as bedtools sorts it (`nearest`)
        order = np.lexsort((j, index.frame["start"].to_numpy()[index._data_rows(j)], d, qi))
    qi, j, d = qi[order], j[order], d[order]
    if ties != "all" and len(qi):
        grp = np.r_[True, (qi[1:] != qi[:-1]) | (d[1:] != d[:-1])]
        keep = grp if ties == "first" else np.r_[grp[1:], True]
        qi, j, d = qi[keep], j[keep], d[keep]
    return with_missing(qi, index._data_rows(j), d.astype(np.int64), finite)
