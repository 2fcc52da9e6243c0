"""The queries of a `GenomeIndex` on its genome axis: coordinates checked and widened, chromosome
names coded against the index's names, each chromosome at its offset (`genome_layout`).

Source: the continuous tensor paper §7.2 (genomic intervals as continuous tensors).  Names of at
most 7 bytes are read from an Arrow column's buffers as packed keys (`genome_names`) and coded by
runs of equal names when they come in runs (a BED file sorted by chromosome, one chromosome),
else looked up by Arrow's hash in the index's few names; other names are factorized.  Read-only:
any number of threads may code queries against one index at once.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import FormatError
from .bedio import query_coords
from .genome_layout import SPAN, widen
from .genome_names import SMALL_BATCH, factorize_names, packed_keys, run_starts
from .workers import map_chunks


def query_axis(chroms, chrom, start, end, workers: int = 1, table=None, checked: bool = False):
    """Query intervals on the genome axis of an index of chromosomes `chroms` (names, index order):
    (widened start, widened end, zero mask), as `GenomeIndex.genome` documents.  `workers`: the
    chromosome coding (a hash pass over the names) and the axis arithmetic of a large batch run
    in contiguous chunks on that many threads (pandas' and Arrow's hashing release the GIL).
    `table`: `genome_names.key_table(chroms)`, to code short names from the Arrow buffers.
    `checked`: start and end are int64 arrays already validated (a frame from `read_intervals`:
    0 <= start <= end <= MAX_COORD), so their checks are not repeated (two passes each)."""
    if not checked:
        start, end = query_coords(start, "start"), query_coords(end, "end")
        if start.shape != end.shape:
            raise FormatError(f"query: {start.shape[0]} starts but {end.shape[0]} ends")
        if (end < start).any():                          # (negative coordinates: `query_coords`)
            k = int(np.flatnonzero(end < start)[0])
            raise FormatError(f"query row {k}: interval [{start[k]}, {end[k]}) ends before it starts")
    if chrom is not None and not isinstance(chrom, str):
        if not isinstance(chrom, (pd.Series, pd.Index, pd.Categorical, pd.api.extensions.ExtensionArray)):
            chrom = np.asarray(chrom, dtype=object)
        if np.shape(chrom) != start.shape:
            raise FormatError(f"chrom: expected one name per query ({start.shape[0]}) or one str, "
                              f"got shape {np.shape(chrom)}")
    s, e, zero = widen(start, end)
    if chrom is None:
        if len(chroms) > 1:
            raise TypeError("chrom: the index holds several chromosomes; pass the query's chrom")
        return s.astype(np.float64), e.astype(np.float64), zero
    if isinstance(chrom, pd.Series):
        chrom = chrom.array                          # positional slices below
    gs, ge = np.empty(len(s), np.float64), np.empty(len(s), np.float64)

    def part(lo, hi):
        code = _codes(chroms, chrom if isinstance(chrom, str) else chrom[lo:hi], table)
        if np.ndim(code) == 0:          # one chromosome in the chunk: a scalar offset broadcasts
            np.add(code * SPAN, s[lo:hi], out=gs[lo:hi])
            np.add(code * SPAN, e[lo:hi], out=ge[lo:hi])
        else:                           # the offsets written into gs, no array of their own
            np.multiply(code, SPAN, out=gs[lo:hi])
            np.add(gs[lo:hi], e[lo:hi], out=ge[lo:hi])
            np.add(gs[lo:hi], s[lo:hi], out=gs[lo:hi])
    map_chunks(part, len(s), workers)
    return gs, ge, zero


def _run_codes(keys, table):
    """Codes of packed name keys whose equal names come in long runs (a BED file sorted by
    chromosome; one chromosome): each run's head looked up once, a scalar when there is one run;
    None when they do not (`genome_names.run_starts`; 2M rows: ~2 ms where hashing every key costs
    ~12)."""
    n = len(keys)
    first = run_starts(keys)
    if first is None:
        return None
    heads = keys[first]
    # a few heads looked up in the table's dict (Arrow's hash set-up costs ~25 µs), many by Arrow
    per_run = np.array([table.code.get(k, table.absent) for k in heads.tolist()], np.int64) \
        if len(heads) <= 64 else _lookup(heads, table)
    if len(first) == 1:
        return per_run[0]
    return np.repeat(per_run, np.diff(np.append(first, n)))


def _lookup(keys, table):
    """The codes of packed name keys in `table` (`table.absent` for names the index lacks) by
    Arrow's `index_in` against the table's few keys: a hash lookup of each row's key in a set
    built once from the table (2M rows over 5 names: 6.8 ms, where factorizing the rows' keys
    first took 15)."""
    import pyarrow as pa                # present: the keys came from an Arrow column
    import pyarrow.compute as pc
    known = np.fromiter(table.code, np.uint64, len(table.code))
    codes = np.fromiter(table.code.values(), np.int64, len(table.code))
    pos = pc.index_in(pa.array(keys), value_set=pa.array(known)).fill_null(len(known))
    pos = pos.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    if table.absent == len(known) and np.array_equal(codes, np.arange(len(known))):
        return pos                      # codes are the keys' positions (`key_table`)
    return np.append(codes, table.absent)[pos]


def _codes(chroms, chrom, table=None):
    """The index of each query's chromosome name in `chroms` (int64; len(chroms) for a name absent
    from the data, whose queries get an empty region after the last chromosome); a scalar for one
    name given for every query, or one name in every row of a coded Arrow column.  `table`
    (`genome_names.key_table(chroms)` or None): codes an Arrow column of short names from its
    buffers, without hashing the strings (by runs of equal names when they come in runs)."""
    if isinstance(chrom, str):          # one name for every query: one lookup, not one per query
        return np.int64(chroms.index(chrom) if chrom in chroms else len(chroms))
    code = {name: k for k, name in enumerate(chroms)}
    if len(chrom) <= SMALL_BATCH:       # a dict beats pandas' hashing set-up (~100 µs)
        return np.fromiter((code.get(c, len(chroms)) for c in chrom), np.int64, len(chrom))
    keys = packed_keys(chrom) if table is not None else None
    if keys is not None:
        by_runs = _run_codes(keys, table)
        return by_runs if by_runs is not None else _lookup(keys, table)
    # one pass over the names (`factorize_names`), then the few distinct names looked up
    local, names = factorize_names(chrom)
    lut = np.fromiter((code.get(str(c), len(chroms)) for c in names), np.int64, len(names))
    return np.where(local < 0, len(chroms), lut[local] if len(names) else 0)     # NaN: no chromosome
