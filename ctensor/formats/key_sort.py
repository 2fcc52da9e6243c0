"""Sorting packed keys: the one sort of the index builds (a spatial grid's point order, a genome
index's start order), of non-negative int64 values that pack every sort key and, where ties must
keep row order, the row number in their low bits (so the values are distinct and any sort is
stable for them).

From `LIBRARY_SORT_AT` values on, polars' single-threaded sort is used when polars is installed
(the `examples`, `dask` and `test` extras): on this machine's numpy, which has no SIMD sort,
`np.sort` of int64 takes 112 ms for 2M values and 640 ms for 1e7, polars 32 and 173 ms.  Below
that size numpy is as fast, and without polars numpy's sort is used at every size.
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["LIBRARY_SORT_AT", "library_sort", "sort_values", "uses_library"]

LIBRARY_SORT_AT = 1 << 18       # values from which polars' sort is used (module docstring)


@functools.cache
def _polars():
    """The polars module, or None when it is not installed (looked up once)."""
    try:
        import polars
    except ImportError:
        return None
    return polars


def uses_library(n: int) -> bool:
    """Would `library_sort` sort `n` values (polars installed, `n` not short)?"""
    return n >= LIBRARY_SORT_AT and _polars() is not None


def library_sort(values: np.ndarray):
    """`values` (int64) sorted ascending as a new read-only array by polars' single-threaded sort,
    or None when polars is not installed or `values` is short (module docstring)."""
    if not uses_library(len(values)):
        return None
    return _polars().Series(values).sort(multithreaded=False).to_numpy()


def sort_values(values: np.ndarray) -> np.ndarray:
    """`values` (int64) sorted ascending, as a new array (read-only when polars sorted it)."""
    done = library_sort(values)
    return np.sort(values) if done is None else done
