"""How `GenomeIndex` lays genomic intervals out as continuous tensors: the genome axis, the index
tensors and their formats, the per-query tensors, and the decoding of outputs back to rows (the
queries' coordinates and chromosome names are put on the axis by `genome_query`).

Source: the continuous tensor paper §7.2 (genomic intervals as continuous tensors).  numpy here
only sorts, dedups and accumulates coordinates; every answer is computed by the einsums of
`genome_index.EINSUMS`.

Genome axis.  BED intervals are 0-based and half-open, `[start, end)`, integers.  bedtools 2.30
widens a zero-length interval `[p, p)` to `[p - 1, p + 1)` for every overlap test (`widen`).
Chromosome k is laid on one real line at offset `k * SPAN` (coordinates are below 2**40, so a
widened interval never reaches the next chromosome, two chromosomes' intervals never touch, and
every sum stays exact in float64).

Index tensors (j = rank of an interval in (widened) start order, ties in row order; sizes for n
intervals, plus a few words per tensor; `GenomeIndex.nbytes` counts each buffer once, and tensors
share buffers where they hold the same numbers: the starts of `D` are the coordinates of `S` when
the starts are distinct, the ends of `D` are `End`, and `UE` are the right ends of `U`):
- `S[x, j]`  the starts as pinpoints: SparseList over the m distinct starts -> integer
  SparseInterval (the tiled range of ranks starting there, one shared offsets array) -> Pattern,
  16 bytes per distinct start.  A counting reduction over x collapses to a difference of two
  offsets after two finger searches (`ctensor.looplets.count`), a min of x to one search
  (`ctensor.looplets.extremum`);
- `E[x, j]`  the ends as pinpoints, same format, ranks in end order;
- `D[j, x]`  the intervals in start order, one interval `[start, end)` per j (Dense ->
  SparseInterval -> Pattern), 16 bytes per interval;
- `End[j]`   the end of each interval in start order, a value per j (Dense -> Element(float)),
  8 bytes per interval;
- `UE[x]`    the ends of the maximal runs of the union of the intervals (what `bedtools merge`
  prints; touching intervals join), strictly increasing pinpoints (SparseList -> Pattern), 8 bytes
  per run: the right ends of `U` below (`union_ends`);
- `Depth[x]` the depth track: how many intervals cover x (SparseRunList -> Element(int)), the
  format of `bedtools genomecov -bg`; 24 bytes per run of constant depth.  Computed by the einsum
  `Depth[x] = D[j, x] * d(j; counting)` (`genome_index.EINSUMS["depth"]`), not built here;
- `U[x]`     the union of the intervals as maximal runs, touching ones joined (SparseRunList ->
  Pattern): what `bedtools merge` prints, and what coverage measures each query against; 16 bytes
  per run.  Computed by the einsum `U[x] = D[j, x] * d(j; boolean)` (`EINSUMS["union"]`).

The uniform grid (`layout="grid"`; the paper's Grid[x, j], Fig. 23):
- `G[c, j]`  cells [c, c + w) of one width w, c a multiple of w on the genome axis; each non-empty
  cell is stored as a pinpoint at its left edge c, listing the ids j of the intervals meeting it in
  start order (an interval spanning k cells is listed k times): SparseList over the edges (real)
  -> SparseList over j (integer) -> Pattern, 16 bytes per non-empty cell plus 8 per entry.  Edge
  pinpoints rather than the cells as runs (SparseRunList), because a counting reduction over a real
  index counts pinpoints: the cells meeting a query [qs, qe) are the edges in
  [floor_w(qs), qe), each (cell, j) counts once, and no right-end array is stored.
  Not `UniformGrid` over an interval level (`formats.grid_intervals.interval_index`, S[x, j]: the
  pieces between endpoints, each listing the ids covering it, in every cell they meet): it keeps
  every cell of the axis (here each chromosome 2**41 apart), and with the same cell width its join
  answered count 1.9-12.5x and join 1.5-6.3x slower (`benchmarks/bench_grid_intervals.py`, one
  chromosome, issue 31);
- `DS[j]`   the start of each interval in start order, a value per j (Dense -> Element(float)),
  8 bytes per interval (the buffer of `S`/`D` when they share it).
The width: `choose_cell`.
"""
from __future__ import annotations

import os

import numpy as np

from .. import (
    Dense,
    Element,
    Pattern,
    SparseInterval,
    SparseList,
    Tensor,
)
from .genome_names import factorize_names  # noqa: F401 (re-exported: tests and callers import it here)

SPAN = float(2**41)
MAX_CHROMS = 2**53 // 2**41 - 2


def widen(start: np.ndarray, end: np.ndarray):
    """bedtools' zero-length rule: [p, p) takes part in overlaps as [p-1, p+1).
    Returns (start, end, zero mask); the inputs themselves when no interval has length zero."""
    zero = start == end
    if not zero.any():
        return start, end, zero
    return np.where(zero, start - 1, start), np.where(zero, end + 1, end), zero


def zero_positions(codes: np.ndarray, s: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """Genome positions (code * SPAN + start, sorted, distinct) of the zero-length intervals
    (`zero`, widened starts `s`): three masked gathers, skipped when there are none."""
    return np.unique(codes[zero] * SPAN + s[zero] + 1) if zero.any() else np.empty(0)


# ------------------------------------------------------------------ per-query tensors, decoding
def interval_tensor(start, end, closed) -> Tensor:
    """interval_set(start, end, closed) without re-validation: callers pass genome-axis coordinates
    they made (checked, widened, so start < end), starts all finite or all -inf (prefixes), so the
    format facts are read off the first start instead of a pass over the array."""
    lvl = SparseInterval(Pattern(), start, end, closed)
    prefix = len(start) > 0 and start[0] == -np.inf
    lvl.__dict__.update(finite=not prefix, unbounded=prefix)      # the cached_property values
    return Tensor(Dense(lvl, len(lvl.left)), name="interval_set", validate=False)


def rows(ptr) -> np.ndarray:
    """Row (query) number of every entry of a Dense -> sparse output, from the sparse level's ptr.
    Rows of about one entry: +1 at every row start, accumulated (np.repeat pays per row); longer
    rows: np.repeat (the accumulation pays per entry, 2-4x more past ~3 entries per row)."""
    m, n = int(ptr[-1]), len(ptr) - 1
    if m > 3 * n:
        return np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    return np.cumsum(np.bincount(ptr[1:-1], minlength=m)[:m])


def decode(left, right):
    """Genome-axis intervals -> (chromosome code, start, end).  The midpoint decides the
    chromosome: chromosome k's intervals lie in [k*SPAN - 1, k*SPAN + 2**40] (a widened interval
    at 0 starts at -1, below its offset), so their midpoints are within SPAN/2 of k*SPAN, and the
    nearest multiple of SPAN is k's offset (a piece [-1, 0) of a depth track included)."""
    code = np.floor((left + right) / (2 * SPAN) + 0.5).astype(np.int64)
    base = code * SPAN
    return code, (left - base).astype(np.int64), (right - base).astype(np.int64)


# ------------------------------------------------------------------ index tensors
def sorted_points(x: np.ndarray) -> Tensor:
    """P[x, j] over sorted coordinates x (j = position in x): SparseList over the distinct
    coordinates, each owning a tiled range of ids (integer SparseInterval, one shared array of
    offsets) -> Pattern.  16 bytes per distinct coordinate, where `points` stores an id array too;
    when the coordinates are distinct, `x` itself is the coordinate buffer (`D` shares it)."""
    n = len(x)
    new = np.empty(n, bool)
    if n:
        new[0] = True
        np.not_equal(x[1:], x[:-1], out=new[1:])
    first = np.flatnonzero(new)
    cum = np.empty(len(first) + 1, np.int64)             # ids of coordinate k: cum[k] .. cum[k+1]-1
    cum[:-1] = first
    cum[-1] = n
    ids = SparseInterval(Pattern(), cum[:-1], cum[1:], "left", shape=n)
    if n:                   # the ranges tile 0..n-1 by construction: no pass over them to find it
        ids.__dict__["tiled"] = True
    coords = x if len(first) == n else x[first]
    return Tensor(SparseList(ids, np.array([0, len(first)], np.int64), coords), name="points", validate=False)


def values(v: np.ndarray, name: str) -> Tensor:
    """V[j] = v[j], Dense -> Element(float); `v` itself is the buffer (no copy)."""
    return Tensor(Dense(Element(0.0, val=v, dtype=np.float64), len(v)), name=name, validate=False)


def union_ends(ends: np.ndarray) -> Tensor:
    """UE[x]: the right ends of the maximal runs of the union (the union einsum `U`'s right array:
    runs [left, right), touching ones joined), as strictly increasing pinpoints (SparseList ->
    Pattern); `ends` itself is the buffer."""
    return Tensor(SparseList(Pattern(), np.array([0, len(ends)], np.int64), ends), name="UE", validate=False)


def sorted_ends(ge: np.ndarray) -> np.ndarray:
    """The ends in start order, sorted.  They are nearly sorted (out of order by at most an
    interval's length): timsort (kind="stable") merges their runs, 3.5x faster than quicksort on
    2M ends.  Non-negative float64 values (genome-axis ends are >= 1) are ordered as their bit
    patterns read as int64, and numpy's timsort of int64 compares without the NaN test of
    float64's: 2M ends of the scale tier 30 -> 19 ms."""
    if len(ge) and ge.min() >= 0:
        return np.sort(ge.view(np.int64), kind="stable").view(np.float64)
    return np.sort(ge, kind="stable")


# ------------------------------------------------------------------ the uniform grid
GRID_MAX_CELL = int(SPAN)     # one cell per chromosome: every interval listed once


def grid_cells(gs: np.ndarray, ge: np.ndarray, w: int):
    """First and last cell (int64 numbers k of the cells [k*w, (k+1)*w)) met by each [gs, ge).
    Genome-axis coordinates are integers below 2**53, exact as int64; ge - 1 is the last base."""
    return np.floor_divide(gs.astype(np.int64), w), np.floor_divide(ge.astype(np.int64) - 1, w)


def cell_floor(x: np.ndarray, w: int) -> np.ndarray:
    """The left edge of the cell holding each coordinate x (genome axis, float64)."""
    return (np.floor_divide(x.astype(np.int64), w) * w).astype(np.float64)


def grid_size(gs: np.ndarray, ge: np.ndarray, w: int):
    """(bytes of `G` at cell width w, non-empty cells, entries) without building it.  The cells
    met by intervals in start order are ranges [first, last] with first non-decreasing, so the
    cells each range adds to the union are those past the running max of the earlier lasts."""
    if not len(gs):
        return 16 + 8, 0, 0
    first, last = grid_cells(gs, ge, w)
    entries = int((last - first + 1).sum())
    reach = np.maximum.accumulate(last)
    new = last - np.maximum(first - 1, np.r_[first[0] - 1, reach[:-1]])
    cells = int(np.maximum(new, 0).sum())
    return 16 + 8 * cells + 8 * (cells + 1) + 8 * entries, cells, entries


def choose_cell(gs: np.ndarray, ge: np.ndarray, budget: int) -> int:
    """The cell width of `layout="grid"` when none is given: about the narrowest width w >= w0,
    the mean (widened) interval length rounded up, whose `G` takes at most `budget` bytes
    (`GenomeIndex` passes 16 bytes per interval: G plus the start and end arrays then stay within
    2x the interval arrays).  Search: w0 * 2**k for k = 0, 1, ... up to the first that fits, then
    back down in steps of 2**(1/4) while the narrower width still fits.  Narrow cells prune best
    (with w about the interval length a query meets ~2x the pairs it overlaps) but list a long
    interval many times and store more cells; on sparse data the cells' own 16 bytes set the
    width (~2x the mean gap between intervals).  One cell per chromosome (GRID_MAX_CELL) when
    nothing narrower fits."""
    n = len(gs)
    w0 = max(1, int(np.ceil(float((ge - gs).mean())))) if n else 1
    fits = lambda w: grid_size(gs, ge, w)[0] <= budget
    w = w0
    while w < GRID_MAX_CELL and not fits(w):
        w *= 2
    if w >= GRID_MAX_CELL:
        return GRID_MAX_CELL
    best = w
    for k in (1, 2, 3):
        v = round(w / 2 ** (k / 4))
        if v < w0 or not fits(v):
            break
        best = v
    return best


def check_grid_memory(gs, ge, w):
    """A grid that would not fit in this machine's memory is refused before numpy tries to allocate
    it (ValueError naming the cell width and the size)."""
    size, _, entries = grid_size(gs, ge, w)
    need = size + 48 * entries       # building it: the (cell, j) entries and their sort, ~6 arrays of int64
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        have = 1 << 40
    if need > have:
        raise ValueError(f"cell: a grid of {w}-base cells over these intervals takes {need / 2**30:.3g} GiB, more "
                         f"than this machine's {have / 2**30:.3g} GiB of memory; give a wider cell, or none "
                         "(chosen from the data)")


def grid_tensor(gs: np.ndarray, ge: np.ndarray, w: int) -> Tensor:
    """G[c, j] (see the module docstring) of the intervals [gs, ge) in start order, cell width w:
    (cell, j) entries generated interval by interval, stably sorted by cell (so j ascends in
    every cell), cells counted."""
    n = len(gs)
    first, last = grid_cells(gs, ge, w)
    k = last - first + 1
    total = int(k.sum())
    j = np.repeat(np.arange(n, dtype=np.int64), k)
    cell = np.repeat(first - (np.cumsum(k) - k), k) + np.arange(total, dtype=np.int64)
    order = np.argsort(cell, kind="stable")
    cell, j = cell[order], j[order]
    edges, counts = np.unique(cell, return_counts=True)
    ptr = np.zeros(len(edges) + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    ids = SparseList(Pattern(), ptr, j, shape=n)
    lvl = SparseList(ids, np.array([0, len(edges)], np.int64), (edges * w).astype(np.float64))
    return Tensor(lvl, name="G", validate=False)


BUILD = {  # index tensor name -> build(starts sorted, ends in start order), genome axis
    "S": lambda gs, ge: sorted_points(gs),
    "E": lambda gs, ge: sorted_points(ge if bool((ge[1:] >= ge[:-1]).all()) else sorted_ends(ge)),
    "D": lambda gs, ge: interval_tensor(gs, ge, "left"),
    "End": lambda gs, ge: values(ge, "End"),
    "DS": lambda gs, ge: values(gs, "DS"),
}

# the parts that read only the sorted values (equal starts in any order give the same tensor)
VALUE_PARTS = frozenset({"S", "E"})


def unique_bytes(tensors) -> int:
    """Bytes of the tensors' arrays, each buffer counted once (views of one array share it, and
    tensors may share one: `D`, `End` the ends, `D` and `S` the starts, `UE` and `U` the union's
    right ends).  A buffer is the outermost numpy array of a chain of views (a kernel's output
    array owns a C buffer, which is not one)."""
    seen, total = set(), 0
    for t in tensors:
        for a in t.level.arrays():
            if isinstance(a, np.ndarray):
                base = a
                while isinstance(base.base, np.ndarray):
                    base = base.base
                if id(base) not in seen:
                    seen.add(id(base))
                    total += base.nbytes
    return total
