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

`exact_order` is `np.argsort(x, kind="stable")`.  `ranked_axis` and `start_sorted` lay an index's
intervals out in start order: the first with the row order (operations that map ranks back to
rows), the second as values only (sorted starts and their ends: counts, unions and depth tracks
need no rows), by sorting start and length packed into one int64, so each radix pass moves one
array and no row order is gathered afterwards (2M intervals over 5 chromosomes: ~2 fewer random
gathers of 2M).  `visit_order` is any permutation that puts the
rows in start order up to buckets holding about one row each (the keys' top bits): the answer of
each row does not depend on the order it is run in, and the kernels' searches then move forward
by about a row's worth of the index.

From `formats.key_sort.LIBRARY_SORT_AT` values on, the sorts go to polars' single-threaded sort of
int64 values when polars is installed (the `examples`/`dask` extras): 2M 41-bit values in 32 ms of CPU, against
65-72 ms for the counting pass + timsort below and 112 ms for numpy's `np.sort` on this machine.
A stable argsort then sorts each key packed above its row number (the row breaks ties: stable),
41 ms for 2M against 67-84 ms for two or three counting passes.  Below that size numpy's counting
passes are as fast (100k rows: 1.8-1.9 vs 2.0 ms).
"""
from __future__ import annotations

import numpy as np

from ..formats.key_sort import library_sort as _library_sort, uses_library

__all__ = ["axis_keys", "exact_order", "ranked_axis", "start_sorted", "visit_order"]

_SHIFT = 41                     # genome_layout.SPAN == 2**41: chromosome k starts at k << 41
_DIGIT = 16                     # numpy's stable argsort of uint16 is a counting sort
_SPAN = float(1 << _SHIFT)


def axis_keys(x: np.ndarray, exact: bool = True):
    """Non-negative int64 keys in the order of the genome-axis coordinates `x` (float64 or int64,
    integral, >= -1), or None when `x` is not such an array (then a comparison sort is used).
    `exact=False` skips the check that floats are integral (a visiting order may be any
    permutation: a fraction dropped only coarsens it; inf and NaN still give None)."""
    if x.dtype.kind not in "fi" or not len(x):
        return None
    with np.errstate(invalid="ignore"):
        w = x.astype(np.int64)
    if exact and x.dtype.kind == "f" and not np.array_equal(w, x):        # fractional, inf or NaN
        return None
    w += 1                                                      # a widened start at 0 is -1
    if int(w.min()) < 0:
        return None
    if int(w.max()) >> _SHIFT:                                  # several chromosomes: pack them
        code = w >> _SHIFT
        w &= (1 << _SHIFT) - 1
        w += code * (int(w.max()) + 1)                          # < 2**53 for MAX_CHROMS codes
    return w


def _digits(bits: int):
    """(shift, width) of the counting passes over `bits` bits, least significant first: 16-bit
    digits, the last one 8 bits or less when the bits allow (numpy counts uint8 digits in one
    pass of 256 buckets, ~3x faster than uint16's two: 2M digits in ~7 vs ~22 ms)."""
    bits = max(bits, 1)
    out, shift = [], 0
    while shift < bits:
        width = min(_DIGIT, bits - shift)
        out.append((shift, width))
        shift += width
    # 16 + 15 stays two passes; 16 + 7 becomes 15 + 8 wherever the top digit fits in 8 bits
    if len(out) > 1 and out[-1][1] < 8 and out[-2][1] == _DIGIT:
        (s0, _), (_, w1) = out[-2], out[-1]
        out[-2:] = [(s0, _DIGIT - (8 - w1)), (s0 + _DIGIT - (8 - w1), 8)]
    return out


def _digit(keys: np.ndarray, shift: int, width: int) -> np.ndarray:
    """Bits [shift, shift + width) of `keys` as uint8/uint16 (one 8-byte temporary: in place)."""
    if shift:
        d = keys >> shift
        d &= (1 << width) - 1
    else:
        d = keys & ((1 << width) - 1)
    return d.astype(np.uint8 if width <= 8 else np.uint16)


def _radix(keys: np.ndarray, bits: int) -> np.ndarray:
    """Stable argsort of non-negative int64 `keys` < 2**bits: the keys packed above their row
    numbers and sorted as values (`_library_sort`), or counting passes over the digits of
    `_digits`, least significant first (each pass stable, so the last one leaves ties in row
    order)."""
    rows = (len(keys) - 1).bit_length()
    if bits + rows <= 63 and uses_library(len(keys)):         # else no packing
        packed = keys << rows
        packed |= np.arange(len(keys), dtype=np.int64)
        done = _library_sort(packed)
        if done is not None:
            return np.bitwise_and(done, (1 << rows) - 1, out=packed)
    perm = None
    for shift, width in _digits(bits):
        digit = _digit(keys, shift, width)
        if perm is not None:
            digit = np.take(digit, perm)
        p = np.argsort(digit, kind="stable")
        perm = p if perm is None else np.take(perm, p)
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
    buckets of about a quarter row: the keys' top ~log2(len(x)) + 2 bits in `_digits`' counting
    passes (100k rows: 11 + 8 bits; 16 bits in one pass left ~1.5 rows a bucket, and the searches'
    steps back cost coverage ~0.8 ms more than the second pass's 0.4); a comparison argsort when
    `x` is not on the genome axis."""
    keys = axis_keys(x, exact=False)
    if keys is None:
        return np.argsort(x)
    keys -= keys.min()
    top = int(keys.max()).bit_length()
    n_bits = len(x).bit_length()
    bits = min(top, n_bits + 2, 2 * _DIGIT)
    if top > bits:
        keys >>= top - bits
    return _radix(keys, bits)


_MSD_AT = 25        # bits from which one pass over the top digit + a merge sort beats LSD passes


def _sort_bits(p: np.ndarray, lo: int, bits: int) -> np.ndarray:
    """`p` (non-negative int64 < 2**(lo + bits)) sorted, as a new array: from `LIBRARY_SORT_AT`
    values by `_library_sort` (by the whole value).  Otherwise, up to 24 bits above `lo`: counting passes
    over `_digits`, least significant first, each moving the values themselves (the bits below
    `lo` then keep their order within equal keys).  More bits: one counting pass over the top 16
    bits, then numpy's stable sort (timsort) of the values, which finds each bucket's ~n/2**16
    values as short runs to merge (2M values of 43 bits: 65 ms of CPU, where two LSD passes
    took 91 ms and numpy's quicksort 112 ms); it sorts by the whole value."""
    done = _library_sort(p)
    if done is not None:
        return done
    if bits < _MSD_AT:
        for shift, width in _digits(bits):
            p = np.take(p, np.argsort(_digit(p, lo + shift, width), kind="stable"))
        return p
    p = np.take(p, np.argsort(_digit(p, lo + bits - _DIGIT, _DIGIT), kind="stable"))
    return np.sort(p, kind="stable")


def ranked_axis(codes: np.ndarray, s: np.ndarray, e: np.ndarray):
    """(order, gs, ge) of intervals [s, e) on chromosomes `codes` (int64, row order; s >= -1,
    widened): `order` the stable start order of the rows (None when they already are in it),
    gs and ge the genome-axis starts and ends (float64, code * 2**41 + coordinate) in that order."""
    gs = codes * _SPAN
    ge = gs + e
    gs += s
    if not len(gs) or bool((gs[1:] >= gs[:-1]).all()):
        return None, gs, ge
    # the integers code * (max s + 2) + s + 1 are in the order of gs, with fewer bits
    key = codes * (int(s.max()) + 2)
    key += s
    key -= int(key.min())
    order = _radix(key, int(key.max()).bit_length())
    return order, np.take(gs, order), np.take(ge, order)


def start_sorted(codes: np.ndarray, s: np.ndarray, e: np.ndarray):
    """(gs, ge) as `ranked_axis` gives them, without the order: the starts ascending and each
    one's end (equal starts in any order).  None when the rows already are in start order (the
    ranked axis is free then) or start and length do not fit in 63 bits together."""
    n = len(s)
    if not n:
        return None
    # in place where numpy allows: each fresh 16 MB temporary page-faults afresh (glibc maps it).
    # The key is the genome-axis start + 1 itself (code << 41 | s + 1) when it fits beside the
    # length: unpacked by a shift and one cast (2M intervals: ~8 ms less than the compact key,
    # which packs the code above only as many bits as the starts need)
    top = int(s.max()) + 1
    lens = e - s
    lb = int(lens.max()).bit_length()
    direct = (int(codes.max()) << _SHIFT | top).bit_length() + lb <= 63
    sb = _SHIFT if direct else top.bit_length()
    key = codes << sb
    key += s                                         # widened starts are >= -1: key + 1 >= 0
    key += 1
    if bool((key[1:] >= key[:-1]).all()):
        return None
    kmin = 0 if direct else int(key.min())
    if kmin:
        key -= kmin
    kb = int(key.max()).bit_length()
    if kb + lb > 63:
        return None
    key <<= lb
    key |= lens
    p = _sort_bits(key, lb, kb)                      # may be read-only (polars'): not written
    np.bitwise_and(p, (1 << lb) - 1, out=lens)
    p = np.right_shift(p, lb, out=key)               # key's buffer is free now (p is a new array)
    if direct:                                       # code * 2**41 + s + 1, exact as an integer
        p -= 1
        gs = p.astype(np.float64)
    else:
        p += kmin                                    # (code << sb) | (s + 1)
        gs = np.empty(n, np.float64)
        np.right_shift(p, sb, out=gs, casting="unsafe")
        gs *= _SPAN
        p &= (1 << sb) - 1
        gs += p
        gs -= 1
    return gs, gs + lens
