"""DataFrames of other libraries in, the same kind out: the genomics functions work on pandas
frames (numpy or pyarrow-backed columns); a polars DataFrame passed to one is converted on the way
in (`to_pandas(use_pyarrow_extension_array=True)`: the columns stay Arrow buffers, no copy of the
coordinates) and the answer converted back (`polars.from_pandas`).  polars is optional; nothing
here imports it unless a polars object is passed."""
from __future__ import annotations

import functools


def is_polars(obj) -> bool:
    """Is `obj` a polars DataFrame (checked without importing polars)?"""
    return (type(obj).__module__ or "").startswith("polars") and hasattr(obj, "to_pandas") \
        and hasattr(obj, "columns")


def to_pandas(obj):
    """A polars DataFrame as a pandas one over the same Arrow buffers."""
    return obj.to_pandas(use_pyarrow_extension_array=True)


def polars_in_out(fn):
    """Decorator: polars DataFrame arguments become pandas, and then a pandas answer becomes
    polars (the row index, which polars does not have, is dropped)."""
    @functools.wraps(fn)
    def op(*args, **kw):
        if not any(is_polars(a) for a in (*args, *kw.values())):
            return fn(*args, **kw)
        args = tuple(to_pandas(a) if is_polars(a) else a for a in args)
        kw = {k: (to_pandas(v) if is_polars(v) else v) for k, v in kw.items()}
        out = fn(*args, **kw)
        import pandas as pd
        import polars as pl
        return pl.from_pandas(out.reset_index(drop=True)) if isinstance(out, pd.DataFrame) else out
    return op


__all__ = ["is_polars", "polars_in_out", "to_pandas"]
