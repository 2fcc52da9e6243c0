"""`bedtools closest` over a `GenomeIndex`: the nearest data intervals of each query, by two
extremum einsums and one overlap einsum (`genome_einsums.EINSUMS`: closest_prev, closest_next,
overlap).  Source: the continuous tensor paper §7.2; the distance as bedtools 2.30 counts it."""
from __future__ import annotations

import numpy as np

from .. import Dense, Pattern, SparseList
from .genome_layout import SPAN, decode, interval_tensor, rows


def nearest(index, gs, ge, ties):
    """(query row, data row, distance) of the queries [gs, ge) on the genome axis (widened), as
    `GenomeIndex.closest` returns them; `ties` checked by the caller."""
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
    dist = np.minimum(c - ge + 1, gs - p + 1)            # +inf where the chromosome has no data
    dist[c < ge] = 0
    finite = np.isfinite(dist)
    has = np.flatnonzero(finite)
    # every data interval within `dist` of the query overlaps the query widened by it, and none
    # is nearer: the ties are exactly those pairs
    d = dist[has]
    out = Dense(SparseList(Pattern(), real=False))
    O = index._pairs("overlap", gs[has] - d, ge[has] + d, out, grid=False)
    lvl = O.level.child
    qi, j = has[rows(np.asarray(lvl.ptr))], np.asarray(lvl.idx)
    if ties != "all" and len(qi):
        # first/last by the data's own start, as bedtools sorts it (j is in widened start order,
        # where a zero-length [68, 68) starts at 67 with [67, 73)); equal starts in j's order
        order = np.lexsort((j, index.frame["start"].to_numpy()[index._data_rows(j)], qi))
        qi, j = qi[order], j[order]
        first = np.r_[True, qi[1:] != qi[:-1]] if ties == "first" else np.r_[qi[1:] != qi[:-1], True]
        qi, j = qi[first], j[first]
    data, dist_out = index._data_rows(j), dist[qi].astype(np.int64)
    none = np.flatnonzero(~finite)
    if not len(none):
        return qi, data, dist_out
    # queries without data on their chromosome: one row each (-1, -1), merged in query order
    qrows = np.concatenate([qi, none])
    order = np.argsort(qrows, kind="stable")
    minus = np.full(len(none), -1, np.int64)
    return qrows[order], np.concatenate([data, minus])[order], np.concatenate([dist_out, minus])[order]
