"""The rows of a DataFrame at given positions, built column by column on `workers` threads: the
output side of the apps' pair operations (`overlap`, `intersect`, `closest`, `window`, `subtract`),
whose result frame repeats the query and data rows of millions of pairs.

`take_rows(frame, rows, workers)` equals `frame.iloc[rows].reset_index(drop=True)` (the same
columns, dtypes and values).  Each column is gathered on its own, numpy columns by `np.take`,
extension arrays (pandas' Arrow strings, nullable integers, categoricals) by their `take`, and one
DataFrame is made of them without a copy (fewer than `SMALL_TAKE` rows: iloc, whose fixed cost is
lower).  One thread: about iloc's CPU time for integer columns (16M rows of three int64 columns,
83 vs 104 ms in row order, 326 vs 332 ms at random rows); what it adds is `taken` (a column the
caller already has, e.g. an overlap pair's chromosome, is not gathered again) and the split over
threads: with several workers each column is taken in contiguous chunks of `rows` on a thread
pool (`workers.map_chunks`), numpy columns into slices of one array (`np.take(..., out=)` releases
the GIL for non-object dtypes), extension arrays as chunks that `_concat_same_type` joins (for
Arrow-backed arrays a chunked array: no copy).
"""
from __future__ import annotations

import threading

import numpy as np
import pandas as pd

from .workers import chunks, map_chunks

__all__ = ["RankedColumns", "take_rows"]

SMALL_TAKE = 2048       # fewer rows: frame.iloc (one take per block of same-dtype columns)


def take_rows(frame: pd.DataFrame, rows: np.ndarray, workers: int = 1, taken=None) -> pd.DataFrame:
    """`frame.iloc[rows].reset_index(drop=True)`, column by column on `workers` threads.
    `rows`: int64 positions in 0..len(frame)-1 (the apps' own pair arrays; IndexError otherwise).
    `taken`: {column name: values} of columns the caller already holds at `rows` (e.g. the
    chromosome of an overlap pair, the query's own column), used as they are (no copy)."""
    rows = np.asarray(rows, np.int64)
    if frame.shape[1] == 0 or not frame.columns.is_unique or len(rows) < SMALL_TAKE:
        # few rows: pandas' one take per block costs less than a column's fixed overhead
        return frame.iloc[rows].reset_index(drop=True)
    _check(rows, len(frame), workers)
    taken = taken or {}
    cols = {}
    for name in frame.columns:
        if name in taken:
            cols[name] = taken[name]
            continue
        col = frame[name]
        cols[name] = _take_column(col.array if isinstance(col.dtype, pd.api.extensions.ExtensionDtype)
                                  else col.to_numpy(), rows, workers)
    return _assemble(frame, cols)


def _check(rows, n, workers):
    """IndexError for a row outside [0, n) when the take is split over threads (np.take into slices
    of one array runs with mode='clip'); one thread's np.take raises it itself."""
    if len(chunks(len(rows), workers)) > 1 and len(rows) and (rows.min() < 0 or rows.max() >= n):
        raise IndexError(f"rows: positions must lie in [0, {n})")


def _assemble(frame, cols):
    """One DataFrame of the taken columns (no copy), with `frame`'s column Index (type, name).
    numpy columns go in as Series of their own dtype: the constructor would infer `str` for an
    object column of strings (pandas' string inference), and a taken frame keeps its dtypes."""
    cols = {k: pd.Series(v, dtype=v.dtype, copy=False) if isinstance(v, np.ndarray) else v
            for k, v in cols.items()}
    out = pd.DataFrame(cols, copy=False)
    out.columns = frame.columns
    return out


def _take_column(values, rows, workers):
    """One column's values at `rows`: a numpy array or an extension array of the same dtype."""
    if isinstance(values, np.ndarray):
        if len(chunks(len(rows), workers)) == 1:
            return np.take(values, rows)            # mode='raise': IndexError out of range
        out = np.empty(len(rows), values.dtype)

        def part(lo, hi):
            # mode='clip' writes straight into out (mode='raise' buffers: 2x slower); rows are checked
            np.take(values, rows[lo:hi], out=out[lo:hi], mode="clip")
        map_chunks(part, len(rows), workers)
        return out
    parts = map_chunks(lambda lo, hi: values.take(rows[lo:hi]), len(rows), workers)
    return parts[0] if len(parts) == 1 else type(values)._concat_same_type(parts)


class RankedColumns:
    """The columns of an index's data frame in the index's start order (rank j holds row
    order[j]), each taken once on first use and kept: an overlap's pairs list, per query, a run of
    consecutive ranks, so gathering the data columns by rank reads runs of neighbouring entries,
    where gathering by row read one random entry per pair (2M x 2M, 15.4M pairs in query order,
    CPU time: 100 vs 129 ms per int64 column, and no order[j] gather of the pairs, 27 ms); the
    columns cost one gather of the data's rows each, once per index.  `order` None: the frame is
    already in start order.
    Safe from many threads (built under a lock, read-only after)."""

    def __init__(self, frame: pd.DataFrame, order):
        self.frame, self.order = frame, order
        self._cols = {}
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"frame": self.frame, "order": self.order, "_cols": {}}

    def __setstate__(self, state):
        self.__dict__.update(state, _lock=threading.Lock())

    def take(self, ranks: np.ndarray, workers: int = 1, taken=None) -> pd.DataFrame:
        """`take_rows` of the frame at the rows of `ranks` (positions in start order)."""
        ranks = np.asarray(ranks, np.int64)
        if self.order is None or not self.frame.columns.is_unique or len(ranks) < SMALL_TAKE:
            rows = ranks if self.order is None else self.order[ranks]
            return take_rows(self.frame, rows, workers, taken)
        _check(ranks, len(self.frame), workers)
        taken = taken or {}
        return _assemble(self.frame, {name: taken[name] if name in taken else
                                      _take_column(self._column(name), ranks, workers)
                                      for name in self.frame.columns})

    def _column(self, name):
        col = self._cols.get(name)
        if col is None:
            with self._lock:
                col = self._cols.get(name)
                if col is None:
                    s = self.frame[name]
                    values = s.array if isinstance(s.dtype, pd.api.extensions.ExtensionDtype) else s.to_numpy()
                    col = self._cols[name] = _take_column(values, self.order, 1)
        return col
