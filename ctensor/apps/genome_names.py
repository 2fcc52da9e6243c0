"""Chromosome names to integer codes: the glue before the einsums.

A chromosome column holds a few distinct names over millions of rows.  Hashing the strings
(pandas' factorize, Arrow's dictionary_encode / index_in) costs ~30 ms for 2M names.  Names of at
most 7 bytes (chr1 ... chr22, chrX, chrM, 2L, scaffold numbers) are read here straight from an
Arrow string column's offsets and data buffers as one uint64 each, the bytes little-endian in the
low 7 bytes and the length in the top one (so the key is exact: two names share a key iff they
are equal), and those integers are factorized — by runs when equal names come in runs (a BED
file sorted by chromosome), else by Arrow's hash (`dictionary_encode`, ~8 ms for 2M keys); only
the few distinct keys are then turned back into names.  Anything else (longer names, missing
names, not Arrow) returns None and the caller factorizes the strings as before.

`key_table` (the coder of an index's names), `packed_keys`; `code_names` codes a data column.
Read-only after construction: a table may serve many threads.
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

SMALL_BATCH = 256       # queries whose chromosome names are looked up in a dict, not by pandas
_MAX = 7                                # bytes of a name packed into one key
_LOW = np.array([(1 << (8 * k)) - 1 for k in range(_MAX + 1)], np.uint64)


def _arrow_strings(chrom):
    """The column as one Arrow string array without missing names, or None."""
    if not isinstance(chrom, pd.arrays.ArrowExtensionArray):
        return None
    import pyarrow as pa                # present: the column is Arrow-backed
    arr = chrom.__arrow_array__()
    if isinstance(arr, pa.ChunkedArray):     # one chunk as it is: combine_chunks copies (2M: 1.4 ms)
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    if arr.null_count or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    return arr


def packed_keys(chrom) -> np.ndarray | None:
    """One uint64 per name (bytes in the low 7 bytes, length in the top byte) of an Arrow-backed
    string column without missing names whose names all have at most 7 bytes; else None."""
    arr = _arrow_strings(chrom)
    if arr is None or sys.byteorder != "little":
        return None
    import pyarrow as pa
    n = len(arr)
    _, obuf, dbuf = arr.buffers()
    odt = np.dtype(np.int32 if arr.type.equals(pa.string()) else np.int64)       # large_string: int64
    off = np.frombuffer(obuf, odt, n + 1, arr.offset * odt.itemsize).astype(np.int64, copy=False)
    if not n:
        return np.zeros(0, np.uint64)
    lens = np.diff(off)
    lo, hi = int(lens.min()), int(lens.max())
    if hi > _MAX:
        return None
    data = np.frombuffer(dbuf, np.uint8) if dbuf is not None else np.zeros(0, np.uint8)
    first, last = int(off[0]), int(off[-1])
    if lo == hi:                        # one length (chr1 ... chr9): the bytes are an (n, L) table
        if not lo:
            return np.zeros(n, np.uint64)
        rows = data[first:last].reshape(n, lo)
        if lo == 4:
            keys = rows.view("<u4").ravel().astype(np.uint64)
        else:
            wide = np.zeros((n, 8), np.uint8)
            wide[:, :lo] = rows
            keys = wide.view("<u8").ravel()
        keys |= np.uint64(lo << 56)
        return keys
    # the 8 bytes at each name's offset (an unaligned view, one gather), masked to its length;
    # names whose 8 bytes would run past the buffer (a few at the end) from a padded copy
    keys = np.empty(n, np.uint64)
    m = int(np.searchsorted(off[:-1], len(data) - 8, "right")) if len(data) >= 8 else 0
    if m:
        words = np.ndarray((len(data) - 7,), "<u8", data, 0, (1,))
        np.take(words, off[:m], out=keys[:m])
    if m < n:
        base = int(off[m])
        pad = np.zeros(last - base + 8, np.uint8)
        pad[:last - base] = data[base:last]
        words = np.ndarray((last - base + 1,), "<u8", pad, 0, (1,))
        keys[m:] = words[off[m:-1] - base]
    keys &= _LOW[lens]
    keys |= lens.astype(np.uint64) << np.uint64(56)
    return keys


class KeyTable:
    """Codes of the packed keys of some names: `code[key]` for each of `keys` (distinct), `absent`
    for any other key (the queries' coding: `genome_query._codes`)."""

    def __init__(self, keys: np.ndarray, codes: np.ndarray, absent: int):
        self.absent = absent
        self.code = dict(zip(np.asarray(keys, np.uint64).tolist(), np.asarray(codes, np.int64).tolist()))


def name_key(name: str) -> int | None:
    """The packed key of one name (None past 7 bytes)."""
    b = name.encode("utf-8")
    return None if len(b) > _MAX else int.from_bytes(b, "little") | (len(b) << 56)


def key_name(key: int) -> str:
    n = int(key) >> 56
    return (int(key) & ((1 << 56) - 1)).to_bytes(8, "little")[:n].decode("utf-8")


def key_table(chroms) -> KeyTable | None:
    """The coder of an index's names `chroms` (code = position; len(chroms) for other names),
    None when a name is longer than 7 bytes."""
    keys = [name_key(c) for c in chroms]
    if any(k is None for k in keys):
        return None
    return KeyTable(np.array(keys, np.uint64), np.arange(len(keys)), len(keys))


def code_names(chrom):
    """(int64 codes, names sorted) of a data column of packable names (codes index the sorted
    names), or None (see the module docstring)."""
    keys = packed_keys(chrom)
    if keys is None:
        return None
    rows, distinct = _factorize_runs(keys) or _factorize_keys(keys)
    return _by_name(rows, [key_name(k) for k in distinct.tolist()])


def _factorize_keys(keys):
    """`pd.factorize(keys)` (int64 codes, distinct keys in order of first appearance) by Arrow's
    hash (`dictionary_encode`): 2M keys over 5 names 7.8 ms where pandas' takes 14.4."""
    import pyarrow as pa                # present: the keys came from an Arrow column
    import pyarrow.compute as pc
    enc = pc.dictionary_encode(pa.array(keys))
    rows = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return rows, enc.dictionary.to_numpy(zero_copy_only=False)


RUN_SAMPLE = 1024       # rows checked for runs of equal names before the whole column (`run_starts`)


def run_starts(keys: np.ndarray):
    """The first row of each run of equal packed name keys (int64, from 0) when the names come in
    long runs (a BED file sorted by chromosome; one chromosome), else None: more than one change
    of name in 16 rows, checked first on the first RUN_SAMPLE rows (names in random order cost no
    full pass), or no rows.  One comparison of neighbours (100k rows: ~0.1 ms, where hashing
    every key costs ~0.45 ms)."""
    n = len(keys)
    k = min(n, RUN_SAMPLE)
    if not n or int(np.count_nonzero(keys[1:k] != keys[:k - 1])) > RUN_SAMPLE // 16:
        return None
    heads = np.flatnonzero(keys[1:] != keys[:-1])
    if len(heads) > n // 16:
        return None
    first = np.empty(len(heads) + 1, np.int64)
    first[0] = 0
    first[1:] = heads + 1
    return first


def _factorize_runs(keys):
    """`pd.factorize(keys)` of packed keys whose equal names come in long runs (`run_starts`): the
    run heads factorized; None when they do not."""
    n = len(keys)
    first = run_starts(keys)
    if first is None:
        return None
    run_rows, distinct = pd.factorize(keys[first])
    if len(first) == 1:
        return np.zeros(n, np.int64), distinct
    return np.repeat(run_rows.astype(np.int64, copy=False), np.diff(np.append(first, n))), distinct


def sorted_codes(chrom):
    """(int64 codes, names sorted by str): codes index the sorted names (`code_names`, else
    `factorize_names` and the few names ranked)."""
    coded = code_names(chrom)
    if coded is not None:
        return coded
    codes, names = factorize_names(chrom)
    return _by_name(np.asarray(codes, np.int64), [str(c) for c in names])


def _by_name(codes: np.ndarray, names: list):
    """Codes into `names` recoded to index the names sorted, and the sorted names."""
    by_name = sorted(range(len(names)), key=names.__getitem__)
    if by_name != list(range(len(names))):
        rank = np.empty(len(names), np.int64)
        rank[by_name] = np.arange(len(names), dtype=np.int64)
        codes = rank[codes]
    return codes, [names[k] for k in by_name]


def factorize_names(chrom):
    """`pd.factorize(chrom)`: (int64 codes, -1 for a missing name; the distinct names in order of
    first appearance).  An Arrow string column without missing names whose equal names come in
    runs (a BED file sorted by chromosome) is coded from one vectorised comparison of neighbours,
    the names read at the runs' heads only: 0.3 ms for 100k rows where hashing every name took
    1.0 ms.  Anything else is hashed (pandas' factorize)."""
    n = len(chrom)
    if isinstance(chrom, pd.arrays.ArrowExtensionArray) and n > SMALL_BATCH:
        import pyarrow as pa
        import pyarrow.compute as pc
        arr = chrom.__arrow_array__()
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        runs = lambda k: np.flatnonzero(pc.not_equal(arr.slice(1, k - 1), arr.slice(0, k - 1))
                                        .to_numpy(zero_copy_only=False))
        # the first rows as a sample: names in random order are hashed without a full pass here
        if arr.null_count == 0 and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) \
                and len(runs(min(n, 4 * SMALL_BATCH))) <= 4 * SMALL_BATCH // 16:
            heads = runs(n)
            if len(heads) <= n // 16:                  # long runs; else hashing is cheaper
                first = np.r_[0, heads + 1]
                seen = {}
                run_code = np.fromiter((seen.setdefault(c, len(seen)) for c in arr.take(first).to_pylist()),
                                       np.int64, len(first))
                return np.repeat(run_code, np.diff(np.r_[first, n])), list(seen)
    return pd.factorize(chrom)
