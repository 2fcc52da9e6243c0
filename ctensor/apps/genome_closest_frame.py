"""The output frame of `closest`: the query rows, the nearest data rows suffixed `_`, `distance`.

`closest` (`ctensor.apps.genomics`) returns one row per (query, tied nearest data interval): on
the 2M x 2M scale tier 15.4M rows, whose assembly by pandas (`iloc` of both frames, the data frame
cast to nullable integers, `concat`, `loc` for the missing distances) took longer than finding
them.  Here each data column is taken once with numpy at the pair's data row and wrapped as it
ends up (integers as a masked nullable array, no cast of a taken frame), and the data's
chromosome names are the query's (a pair's data interval lies on the query's chromosome), taken
once for both columns when their dtypes agree.  Equal to the pandas construction (the tests
compare them): same columns, dtypes, values and missing values.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .frame_take import take_rows

__all__ = ["closest_frame"]


def _nullable(dtype):
    """The nullable integer dtype of an integer column's dtype (uint64 -> UInt64); a nullable dtype
    as it is."""
    if isinstance(dtype, pd.api.extensions.ExtensionDtype):
        return dtype
    return f"{'U' if dtype.kind == 'u' else ''}Int{dtype.itemsize * 8}"


def _data_column(col: pd.Series, dj, rows, missing):
    """Column `col` of the data at rows `dj` (-1: missing, given as `missing` when any, with `rows`
    holding 0 there), as pandas' reindex of the data frame cast to nullable integers gives it."""
    values = col.array if isinstance(col.dtype, pd.api.extensions.ExtensionDtype) else col.to_numpy()
    if missing is not None and not len(values):
        pass                                    # no data at all: nothing to take (pandas below)
    elif isinstance(values, np.ndarray):
        if values.dtype.kind in "iu":           # a masked nullable array: a copy of the mask each
            return pd.arrays.IntegerArray(np.take(values, rows),
                                          np.zeros(len(rows), bool) if missing is None else missing.copy())
        if missing is None:
            return np.take(values, rows)
        if values.dtype.kind == "f":
            out = np.take(values, rows)
            out[missing] = np.nan
            return out
    elif missing is None:
        return values.take(rows)
    # anything else with missing rows (bool and object columns become objects, ...): pandas itself
    frame = col.reset_index(drop=True).to_frame()
    if pd.api.types.is_integer_dtype(col):
        frame = frame.astype(_nullable(col.dtype))
    return frame.reindex(np.where(missing, -1, dj)).iloc[:, 0].reset_index(drop=True)


def closest_frame(q: pd.DataFrame, data: pd.DataFrame, qi, dj, dist, return_index: bool = False,
                  workers: int = 1) -> pd.DataFrame:
    """`closest`'s frame of the pairs (query row qi, data row dj, distance): the query's columns at
    qi (RangeIndex), the data's columns at dj suffixed `_` (integer columns as the nullable dtype of
    their width and sign; dj = -1: every data column and `distance` missing), `distance` (Int64),
    and with `return_index` the columns `index` (qi) and `index_` (dj) first.  `qi`, `dj`, `dist`:
    int64 arrays of one length.  `workers`: threads the query rows are gathered on."""
    missing = dj < 0
    if not missing.any():
        missing = None
    rows = dj if missing is None else np.where(missing, 0, dj)
    left = take_rows(q, qi, workers)
    cols = {}
    for name in data.columns:
        if (name == "chrom" and missing is None and "chrom" in left.columns
                and data["chrom"].dtype == left["chrom"].dtype
                and isinstance(left["chrom"].dtype, pd.api.extensions.ExtensionDtype)):
            # the query's chromosome names taken above (a new array over its immutable buffers)
            cols[f"{name}_"] = left["chrom"].array[:]
        else:
            cols[f"{name}_"] = _data_column(data[name], dj, rows, missing)
    mask = np.zeros(len(dj), bool) if missing is None else missing
    dist = np.asarray(dist, np.int64)
    cols["distance"] = pd.arrays.IntegerArray(dist if missing is None else np.where(mask, 0, dist), mask)
    # numpy columns as Series of their own dtype: the constructor would infer strings from objects
    right = pd.DataFrame({k: pd.Series(v, dtype=v.dtype, copy=False) if isinstance(v, np.ndarray) else v
                          for k, v in cols.items()}, copy=False)
    out = pd.concat([left, right], axis=1)
    if return_index:
        out.insert(0, "index_", dj)
        out.insert(0, "index", qi)
    return out
