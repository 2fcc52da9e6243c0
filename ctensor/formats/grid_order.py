"""The order of a grid's points: by cell, then by each coordinate, then by row -- the storage
order of a point tensor under `UniformGrid` levels (`constructors.points`, the spatial and point
cloud indexes), whose fibers must list each cell's points sorted.

With the cell edges, the sort is a radix sort: (cell, x0's rank within its x0-cell, row) packed
into one int64 per row and sorted once (`key_sort.sort_values`), or least-significant-digit
passes of numpy's stable int16 sort when the key needs more than 63 bits; ties in (cell, rank)
are then put in coordinate order by a lexsort of the tied rows only.
"""
from __future__ import annotations

import numpy as np

from .key_sort import sort_values

__all__ = ["grid_order"]


def grid_order(c: np.ndarray, cell: np.ndarray, edges: list | None = None, with_cells: bool = False):
    """The permutation sorting points by (cell, x0, x1, ..., row).  `c` may be in either memory
    order (a Fortran-ordered `c` reads each axis contiguously).  `with_cells`: (permutation,
    cell[permutation]), the sorted cells being a by-product of the radix sort.

    With `edges`, the cell edges of the binned axes (`cell` numbered row-major over them, axis 0
    outermost, as `grid_cells` does), the sort is a radix sort (`_radix_order`).  Without: a sort by
    x0, then a stable sort by cell; ties in x0 redone as the stable lexsort of every coordinate."""
    if edges is not None and len(cell) and int(cell.min()) >= 0:
        order, cells = _radix_order(c, cell, edges)
        return (order, cells) if with_cells else order
    first = c[:, 0]
    order = np.argsort(first)
    if (np.diff(first[order]) == 0).any():
        order = np.lexsort(tuple(c[:, j] for j in reversed(range(c.shape[1]))))
    key = cell[order]
    if len(key) and int(key.max()) < 2**15 and int(key.min()) >= 0:
        key = key.astype(np.int16)
    order = order[np.argsort(key, kind="stable")]
    return (order, cell[order]) if with_cells else order


DIGIT = 15              # bits per radix pass: numpy's stable sort of int16 keys is a radix sort
PACKED_BITS = 63        # (cell, rank, row) packed in up to this many bits: one sort of int64 values


def _cell_ranks(x: np.ndarray, cell0: np.ndarray, e: np.ndarray) -> np.ndarray:
    """floor((x - e[k]) * 2**DIGIT / (e[k+1] - e[k])) clipped to [0, 2**DIGIT), x in its cell
    k = cell0: non-decreasing in x within one cell (a subtraction of a constant, then a product by
    a positive constant, each rounded to nearest: both monotone), so sorting by it sorts by x up to
    equal ranks."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = np.take(e, cell0)                               # in place: one float temporary
        np.subtract(x, t, out=t)
        t *= np.take((1 << DIGIT) / np.diff(e), cell0)
    # NaN (0 * inf: a cell too narrow or too wide for float64) becomes rank 0, which fmax gives,
    # keeping the order monotone; inf clips to the top rank
    np.minimum(np.fmax(t, 0.0, out=t), (1 << DIGIT) - 1, out=t)
    return t.astype(np.int16)


def _radix_order(c: np.ndarray, cell: np.ndarray, edges: list):
    """(order, cell[order]) of the (cell, x0, x1, ..., row) order: by (cell, x0's rank in its
    x0-cell (`_cell_ranks`), row), packed into one int64 per row and sorted as values
    (`key_sort.sort_values`: polars' sort when installed; 1e7 points: ~0.35 s, where the stable
    int16 passes below took 1.3 s), or, when they do not fit in 63 bits, by least-significant-digit
    radix passes (the rank, then each DIGIT-bit digit of the cell number, every pass a stable
    int16 sort).  Rows that share (cell,
    rank) with a neighbour are then re-sorted by every coordinate: a lexsort of those rows only
    (rare, unless points repeat).  Both keep rows of equal keys in row order."""
    n, e0 = len(cell), edges[0]
    inner = int(np.prod([len(e) - 1 for e in edges[1:]], dtype=np.int64))
    cell0 = cell // inner                                   # the x0-cell of each point
    rank = _cell_ranks(c[:, 0], cell0, e0)
    rows = max(n - 1, 1).bit_length()
    top = int(cell.max())
    if top.bit_length() + DIGIT + rows <= PACKED_BITS:
        key = cell << (DIGIT + rows)
        r = rank.astype(np.int64)
        r <<= rows
        key |= r
        key |= np.arange(n, dtype=np.int64)
        key = sort_values(key)
        order = key & ((1 << rows) - 1)
        cs = np.right_shift(key, rows, out=r)               # (cell, rank) of each row, sorted
        same = cs[1:] == cs[:-1]                            # row k+1 ties row k on (cell, rank)
        cs >>= DIGIT                                        # the sorted cells
    else:
        order, shift = np.argsort(rank, kind="stable"), 0
        while True:
            digit = ((cell[order] >> shift) & ((1 << DIGIT) - 1)).astype(np.int16)
            order = order[np.argsort(digit, kind="stable")]
            shift += DIGIT
            if top >> shift == 0:
                break
        cs, rs = cell[order], rank[order]
        same = (cs[1:] == cs[:-1]) & (rs[1:] == rs[:-1])
    if same.any():
        tied = np.zeros(n, bool)
        tied[1:] |= same
        tied[:-1] |= same
        pos = np.flatnonzero(tied)
        run = np.cumsum(np.concatenate([[True], ~same])[pos])   # a number per run of tied rows
        rows = order[pos]                                   # each run in row order (stable)
        order[pos] = rows[np.lexsort(tuple(c[rows, j] for j in reversed(range(c.shape[1]))) + (run,))]
    return order, cs
