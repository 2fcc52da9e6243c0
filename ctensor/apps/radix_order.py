"""Row orders of genome-axis coordinates by radix passes: the sorts of the apps' glue.

The index needs its intervals in start order (stable: equal starts keep their row order), and a
batch of unsorted queries runs fastest in about start order (the continuous paper §7.2: a finger
search costs the distance it moves; 2M random queries: the count kernel takes 4.0 s in row order,
0.08 s in start order).  numpy's comparison argsort of 2M float64 starts takes 0.2-0.7 s; its
stable argsort of uint16 keys is a counting sort (O(n), ~7 ms for 2M), so an order by 16-bit
digits, least significant first, costs a few counting passes.

Genome-axis coordinates are integers `code * 2**41 + s`, s in [-1, 2**40] (`genome_layout`);
`axis_keys` drops the empty span between chromosomes, `code * (max s + 2) + (s + 1)`, so the keys
of real genomes need 28-32 bits (two passes) instead of 44.

`exact_order` is `np.argsort(x, kind="stable")`.  `visit_order` is any permutation that puts the
rows in start order up to buckets holding about one row each (the keys' top bits): the answer of
each row does not depend on the order it is run in, and the kernels' searches then move forward
by about a row's worth of the index.
"""
from __future__ import annotations

import numpy as np

__all__ = ["axis_keys", "exact_order", "visit_order"]

_SHIFT = 41                     # genome_layout.SPAN == 2**41: chromosome k starts at k << 41
_DIGIT = 16                     # numpy's stable argsort of uint16 is a counting sort


def axis_keys(x: np.ndarray):
    """Non-negative int64 keys in the order of the genome-axis coordinates `x` (float64 or int64,
    integral, >= -1), or None when `x` is not such an array (then a comparison sort is used)."""
    if x.dtype.kind not in "fi" or not len(x):
        return None
    with np.errstate(invalid="ignore"):
        w = x.astype(np.int64)
    if x.dtype.kind == "f" and not np.array_equal(w, x):        # fractional, inf or NaN
        return None
    w += 1                                                      # a widened start at 0 is -1
    if int(w.min()) < 0:
        return None
    if int(w.max()) >> _SHIFT:                                  # several chromosomes: pack them
        code = w >> _SHIFT
        w &= (1 << _SHIFT) - 1
        w += code * (int(w.max()) + 1)                          # < 2**53 for MAX_CHROMS codes
    return w


def _radix(keys: np.ndarray, bits: int) -> np.ndarray:
    """Stable argsort of non-negative int64 `keys` < 2**bits: counting passes over 16-bit digits,
    least significant first (each pass stable, so the last one leaves ties in row order)."""
    perm = None
    for shift in range(0, max(bits, 1), _DIGIT):
        digit = ((keys >> shift if shift else keys) & (2**_DIGIT - 1)).astype(np.uint16)
        if perm is not None:
            digit = digit[perm]
        p = np.argsort(digit, kind="stable")
        perm = p if perm is None else perm[p]
    return perm


def exact_order(x: np.ndarray) -> np.ndarray:
    """`np.argsort(x, kind="stable")` (int64) of genome-axis coordinates: radix passes over
    `axis_keys`, else numpy's stable comparison sort."""
    keys = axis_keys(x)
    if keys is None:
        return np.argsort(x, kind="stable")
    keys -= keys.min()
    return _radix(keys, int(keys.max()).bit_length())


def visit_order(x: np.ndarray) -> np.ndarray:
    """A permutation (int64) visiting the rows in the order of `x` (genome-axis coordinates) up to
    buckets of about one row: the keys' top ~log2(len(x)) + 2 bits, one counting pass for batches
    up to 2**17 rows, two beyond; a comparison argsort when `x` is not on the genome axis."""
    keys = axis_keys(x)
    if keys is None:
        return np.argsort(x)
    keys -= keys.min()
    top = int(keys.max()).bit_length()
    n_bits = len(x).bit_length()
    bits = min(top, _DIGIT if n_bits <= 17 else min(n_bits + 2, 2 * _DIGIT))
    if top > bits:
        keys >>= top - bits
    return _radix(keys, bits)
