"""One `GenomeIndex` of intervals laid out in pieces apart: each piece (e.g. one partition of a
Dask frame, where it was read) validated, its chromosome names coded and its rows put in start
order (`lay`), the pieces then joined (`join`) by a merge of their start orders.

Source: the continuous tensor paper §7.2 (the index tensors are laid out over the start order of
the intervals: the ranked axis, `radix_order.ranked_axis`); the join is the merge step of a
distributed sort.  Why: under Dask every worker needs the index of all the data, and sorting all
of it on every worker was the part of a call that did not shrink with more workers (2M intervals:
~100 ms of CPU on each worker before its first query partition).  Laid out apart, each piece is
sorted once, on one worker; a worker then joins the pieces in linear time when their chromosomes
(or start ranges) do not interleave — data partitioned by chromosome or by sorted ranges — and
by a merge of the pieces' sorted runs (numpy's stable sort, timsort) when they do.

The joined index equals `GenomeIndex(pd.concat(frames, ignore_index=True))`: rows numbered in
the pieces' order, chromosome codes by sorted name, equal starts in row order (the stable start
order), so every operation answers the same, row positions (`index_`) included.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import FormatError
from .bedio import read_intervals
from .genome_layout import MAX_CHROMS, SPAN, widen, zero_positions
from .genome_names import sorted_codes
from .radix_order import ranked_axis, start_sorted


class Rejected:
    """Rows that failed validation (`check`), kept as given: the index of all rows reports them."""

    __slots__ = ("rows",)

    def __init__(self, rows):
        self.rows = rows


class Piece:
    """The layout of one piece's rows, made where they live (`lay`), without the rows: `n` rows
    on the chromosomes `chroms` (sorted by str, coded 0..k-1 in the piece), `ranks` (whether
    `start` is its ranked axis (order or None, genome-axis starts, ends by rank) or its sorted
    values (starts ascending, their ends; `radix_order.start_sorted`)), `zero_at` (genome
    positions of its zero-length intervals), `maxlen` (its longest widened interval)."""

    __slots__ = ("n", "chroms", "ranks", "start", "zero_at", "maxlen")

    def __init__(self, n, chroms, ranks, start, zero_at, maxlen):
        self.n, self.chroms, self.ranks, self.start, self.zero_at, self.maxlen = n, chroms, ranks, start, zero_at, maxlen


def check(part, name: str = "data"):
    """`part` validated by `read_intervals` (a new frame), or `Rejected(part)`."""
    try:
        return read_intervals(part, name)
    except FormatError:
        return Rejected(part)


def lay(frame, ranks: bool = True):
    """The `Piece` of a validated frame (None for a `Rejected` one): its ranked axis when `ranks`
    (for operations that map data ranks to rows), else its sorted values, cheaper to make and to
    send (count, coverage, subtract read no data row)."""
    if isinstance(frame, Rejected):
        return None
    codes, chroms = sorted_codes(frame["chrom"].array)
    s, e, zero = widen(frame["start"].to_numpy(np.int64), frame["end"].to_numpy(np.int64))
    zero_at = zero_positions(codes, s, zero)
    maxlen = float((e - s).max()) if len(s) else 0.0
    start = ranked_axis(codes, s, e) if ranks else (start_sorted(codes, s, e) or ranked_axis(codes, s, e)[1:])
    return Piece(len(s), [str(c) for c in chroms], ranks, start, zero_at, maxlen)


def concat_rows(frames):
    """The frames' rows in order as one frame (RangeIndex); empty frames have no say in dtypes."""
    frames = [f for f in frames if len(f)] or list(frames[:1])
    return frames[0].reset_index(drop=True) if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def rows_of(frame, chroms):
    """(codes into `chroms`, widened starts, widened ends) of a validated frame's rows (int64, row
    order): `GenomeIndex._rows_in` of an index joined without them."""
    codes, names = sorted_codes(frame["chrom"].array)
    if len(names):
        at = {c: k for k, c in enumerate(chroms)}
        codes = np.array([at[str(c)] for c in names], np.int64)[codes]
    return (codes, *widen(frame["start"].to_numpy(np.int64), frame["end"].to_numpy(np.int64))[:2])


def _shift(remap):
    """Genome-axis shift of each of a piece's chromosomes onto the joined axis (None: none moves)."""
    delta = (remap - np.arange(len(remap))) * SPAN
    return delta if delta.any() else None


def _recoded(gs, ge, delta):
    """A piece's starts and ends (start order) on the joined axis: each chromosome's block of the
    start order shifted by `delta` (new arrays)."""
    # chromosome k's widened starts lie in [k*SPAN - 1, k*SPAN + 2**40]: blocks split at (k - 1/2) * SPAN
    bounds = np.searchsorted(gs, (np.arange(1, len(delta)) - 0.5) * SPAN)
    shift = np.repeat(delta.astype(np.float64), np.diff(np.concatenate([[0], bounds, [len(gs)]])))
    return gs + shift, ge + shift


def join(pieces, frames=None, frame_source=None, name: str = "data"):
    """One `GenomeIndex` (layout 'sorted') of the pieces' rows in the order of `pieces`, its ranked
    axis (or sorted values, as the pieces were laid) made by merging theirs; the rows are
    `frames` (the pieces' validated frames, in order) or made on first use by `frame_source()`.
    None when a piece was rejected or the chromosomes are more than `MAX_CHROMS`: build the index
    of all rows instead, which raises the error naming the row."""
    from .genome_index import GenomeIndex
    pieces = list(pieces)
    if not pieces or any(p is None for p in pieces):
        return None
    names = sorted({c for p in pieces for c in p.chroms})
    if len(names) > MAX_CHROMS:
        return None
    ranks = all(p.ranks for p in pieces)
    at = {c: k for k, c in enumerate(names)}
    offsets = np.cumsum([0] + [p.n for p in pieces])
    runs, zeros = [], []          # runs: (first start, piece number, starts, ends, order) of the non-empty pieces
    for k, p in enumerate(pieces):
        order, gs, ge = p.start if p.ranks else (None, *p.start)
        delta = _shift(np.array([at[c] for c in p.chroms], np.int64))
        if len(p.zero_at):
            zeros.append(p.zero_at if delta is None else
                         p.zero_at + delta[np.floor_divide(p.zero_at + SPAN / 2, SPAN).astype(np.int64)])
        if len(gs):
            gs, ge = (gs, ge) if delta is None else _recoded(gs, ge, delta)
            runs.append((gs[0], k, gs, ge, order if ranks else None))
    runs.sort(key=lambda run: (run[0], run[1]))
    # linear when each run starts after the last start of the one before (equal: rows in order)
    apart = all(a[2][-1] < b[0] or (a[2][-1] == b[0] and a[1] < b[1]) for a, b in zip(runs, runs[1:]))
    if not apart:
        runs.sort(key=lambda run: run[1])             # rows in order, then a stable merge by start
    gs = np.concatenate([run[2] for run in runs]) if runs else np.empty(0)
    ge = np.concatenate([run[3] for run in runs]) if runs else np.empty(0)
    order = None
    if ranks and ([run[1] for run in runs] != list(range(len(runs))) or any(run[4] is not None for run in runs)):
        order = np.concatenate([np.arange(offsets[k], offsets[k + 1]) if o is None else o + offsets[k]
                                for _, k, _, _, o in runs])
    if not apart:
        perm = np.argsort(gs, kind="stable")          # timsort: merges the pieces' sorted runs
        gs, ge = gs[perm], ge[perm]
        if ranks:                                     # the rows of the runs in order are 0..n-1
            order = perm if order is None else order[perm]
    if order is not None and bool((order[1:] > order[:-1]).all()):
        order = None
    idx = GenomeIndex.__new__(GenomeIndex)
    laid = {"_axis": (order, gs, ge)} if ranks else {"_values": (gs, ge)}
    if frames is not None:
        laid["_frame"] = concat_rows(frames)
    else:
        laid["_frame_source"] = frame_source
    idx._setup(names, int(offsets[-1]), np.unique(np.concatenate(zeros)) if zeros else np.empty(0), name,
               _maxlen=max(p.maxlen for p in pieces) if offsets[-1] else 1.0, **laid)
    return idx


__all__ = ["Piece", "Rejected", "check", "concat_rows", "join", "lay", "rows_of"]
