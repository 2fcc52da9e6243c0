"""Batched spatial queries over Dask arrays: the boxes or centres of a `dask.array` (m, 2), block
by block of rows, each block answered by `PointIndex.box_many` / `radius_many` (the compiled
einsums of `ctensor.apps.spatial`) against one index sent to every worker once
(`dask_broadcast.broadcast`).  The answer is a Dask array of (2, k) int64 pairs (query index,
point id), k unknown until computed, sorted by query then id (then layout order with sort=False,
`spatial_batch`): `.compute()` equals the in-memory batched answer.  Errors in the queries (NaN, lo > hi, negative radius) are raised when the block
holding them is computed: a FormatError naming the block's first row and the row within it."""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from .dask_broadcast import broadcast, is_dask_array, resolve


def _box_block(idx, lo, hi, offset, workers, sort):
    return _block(lambda: resolve(idx).box_many(lo, hi, workers, sort), offset)


def _radius_block(idx, centers, r, offset, workers, sort):
    return _block(lambda: resolve(idx).radius_many(centers, r, workers, sort), offset)


def _block(run, offset):
    """The pairs of one block of queries starting at batch row `offset`, query indices made global;
    a FormatError names the block (its rows are numbered within the block)."""
    try:
        pairs = run()
    except FormatError as e:
        raise FormatError(f"the block of queries from row {offset}: {e}") from None
    pairs[0] += offset
    return pairs


def _rows(x, name, chunks=None):
    """`x` as a dask array (m, 2) with one chunk across its columns (and the row chunks `chunks`)."""
    import dask.array as da
    x = x if is_dask_array(x) else da.from_array(np.asarray(x), chunks=(chunks[0], -1) if chunks else "auto")
    if x.ndim != 2 or x.shape[1] != 2:
        raise FormatError(f"{name}: expected an array of shape (m, 2), got shape {x.shape}")
    return x.rechunk((chunks[0] if chunks else x.chunks[0], 2))


def _pairs(parts):
    import dask.array as da
    return da.concatenate([da.from_delayed(p, shape=(2, np.nan), dtype=np.int64) for p in parts], axis=1) \
        if parts else da.zeros((2, 0), np.int64)


def box_many(idx, lo, hi, workers: int = 1, sort: bool = True):
    """(2, k) pairs of the boxes lo[q]..hi[q] (dask arrays, or one of them numpy) as a Dask array."""
    import dask
    lo = _rows(lo, "lo")
    hi = _rows(hi, "hi", lo.chunks)
    if lo.shape[0] != hi.shape[0]:
        raise FormatError(f"hi: {hi.shape[0]} boxes but lo has {lo.shape[0]}")
    shared = broadcast(idx)
    offsets = np.concatenate([[0], np.cumsum(lo.chunks[0])])
    parts = [dask.delayed(_box_block)(shared, a, b, int(o), workers, sort)
             for a, b, o in zip(lo.to_delayed().ravel(), hi.to_delayed().ravel(), offsets[:-1])]
    return _pairs(parts)


def radius_many(idx, centers, r, workers: int = 1, sort: bool = True):
    """(2, k) pairs of the discs (dask centres (m, 2); r a number, or (m,) per centre, numpy or
    dask) as a Dask array."""
    import dask
    import dask.array as da
    centers = _rows(centers, "centers")
    offsets = np.concatenate([[0], np.cumsum(centers.chunks[0])])
    if np.ndim(r) == 0 and not is_dask_array(r):
        radii = [r] * len(centers.chunks[0])
    else:
        r = r if is_dask_array(r) else da.from_array(np.asarray(r), chunks=centers.chunks[0])
        if r.shape != (centers.shape[0],):
            raise FormatError(f"r: expected a number or one radius per centre ({centers.shape[0]}), got shape {r.shape}")
        radii = list(r.rechunk(centers.chunks[0]).to_delayed().ravel())
    shared = broadcast(idx)
    parts = [dask.delayed(_radius_block)(shared, c, rr, int(o), workers, sort)
             for c, rr, o in zip(centers.to_delayed().ravel(), radii, offsets[:-1])]
    return _pairs(parts)


__all__ = ["box_many", "is_dask_array", "radius_many"]
