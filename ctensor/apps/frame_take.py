"""The rows of a DataFrame at given positions, built on `workers` threads: the output side of the
apps' pair operations (`overlap`, `intersect`, `closest`, `window`, `subtract`), whose result frame
repeats the query and data rows of millions of pairs.

`take_rows(frame, rows, workers)` equals `frame.iloc[rows].reset_index(drop=True)` (the same
columns, dtypes and values).  With one worker it is that call.  With more, each column is taken in
contiguous chunks of `rows` on a thread pool (`workers.map_chunks`): numpy columns into one
preallocated array (`np.take(..., out=)` releases the GIL for non-object dtypes), extension arrays
(pandas' Arrow strings, nullable integers, categoricals) as chunks that
`_concat_same_type` joins (for Arrow-backed arrays a chunked array: no copy), so the row gather,
which dominates these operations once the kernels run on several threads, is no longer serial.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .workers import chunks, map_chunks

__all__ = ["take_rows"]


def take_rows(frame: pd.DataFrame, rows: np.ndarray, workers: int = 1) -> pd.DataFrame:
    """`frame.iloc[rows].reset_index(drop=True)`, each column gathered on `workers` threads.
    `rows`: int64 positions in 0..len(frame)-1 (the apps' own pair arrays, already checked)."""
    rows = np.asarray(rows, np.int64)
    if workers <= 1 or len(chunks(len(rows), workers)) == 1 or frame.shape[1] == 0 \
            or not frame.columns.is_unique:
        return frame.iloc[rows].reset_index(drop=True)
    if rows.min() < 0 or rows.max() >= len(frame):     # np.take below clips instead of raising
        raise IndexError(f"rows: positions must lie in [0, {len(frame)})")
    cols = {}
    for name in frame.columns:
        col = frame[name]
        cols[name] = _take_column(col.array if isinstance(col.dtype, pd.api.extensions.ExtensionDtype)
                                  else col.to_numpy(), rows, workers)
    out = pd.DataFrame(cols, copy=False)
    out.columns = frame.columns            # keeps the columns' Index type and name
    return out


def _take_column(values, rows, workers):
    """One column's values at `rows`: a numpy array or an extension array of the same dtype."""
    if isinstance(values, np.ndarray):
        out = np.empty(len(rows), values.dtype)

        def part(lo, hi):
            # mode='clip' writes straight into out (mode='raise' buffers: 2x slower); rows are checked
            np.take(values, rows[lo:hi], out=out[lo:hi], mode="clip")
        map_chunks(part, len(rows), workers)
        return out
    parts = map_chunks(lambda lo, hi: values.take(rows[lo:hi]), len(rows), workers)
    return type(values)._concat_same_type(parts)
