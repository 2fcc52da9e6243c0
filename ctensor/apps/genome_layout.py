"""How `GenomeIndex` lays genomic intervals out as continuous tensors: the genome axis, the index
tensors and their formats, the per-query tensors, and the decoding of outputs back to rows.

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
the starts are distinct, the ends of `D` are `End`, which are `UE` when no two intervals meet):
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
  per run;
- `Depth[x]` the depth track: how many intervals cover x (SparseRunList -> Element(int)), the
  format of `bedtools genomecov -bg`; 24 bytes per run of constant depth.
"""
from __future__ import annotations

import numpy as np

from .. import (
    Dense,
    Element,
    Pattern,
    SparseInterval,
    SparseList,
    SparseRunList,
    Tensor,
)

SPAN = float(2**41)
MAX_CHROMS = 2**53 // 2**41 - 2


def widen(start: np.ndarray, end: np.ndarray):
    """bedtools' zero-length rule: [p, p) takes part in overlaps as [p-1, p+1).
    Returns (start, end, zero mask); the inputs themselves when no interval has length zero."""
    zero = start == end
    if not zero.any():
        return start, end, zero
    return np.where(zero, start - 1, start), np.where(zero, end + 1, end), zero


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
    chromosome: a widened interval at 0 starts at -1, below its chromosome's offset."""
    code = np.floor((left + right) / (2 * SPAN)).astype(np.int64)
    base = code * SPAN
    return code, (left - base).astype(np.int64), (right - base).astype(np.int64)


# ------------------------------------------------------------------ index tensors
def depth_track(gs: np.ndarray, ge: np.ndarray) -> Tensor:
    """Depth of coverage as runs [c_k, c_{k+1}) of constant positive depth (bedtools genomecov -bg):
    endpoint events sorted, summed per coordinate, accumulated."""
    coords = np.concatenate([gs, ge])
    delta = np.concatenate([np.ones(len(gs), np.int64), -np.ones(len(ge), np.int64)])
    u, inv = np.unique(coords, return_inverse=True)
    d = np.zeros(len(u), np.int64)
    np.add.at(d, inv, delta)
    keep = d != 0                                  # a coordinate where as many end as start changes nothing
    u, d = u[keep], d[keep]
    depth = np.cumsum(d)
    run = depth[:-1] > 0
    left, right, val = u[:-1][run], u[1:][run], depth[:-1][run]
    lvl = SparseRunList(Element(0, val=val, dtype=np.int64), np.array([0, len(left)], np.int64), left, right, "left")
    return Tensor(lvl, name="Depth")


def sorted_points(x: np.ndarray) -> Tensor:
    """P[x, j] over sorted coordinates x (j = position in x): SparseList over the distinct
    coordinates, each owning a tiled range of ids (integer SparseInterval, one shared array of
    offsets) -> Pattern.  16 bytes per distinct coordinate, where `points` stores an id array too;
    when the coordinates are distinct, `x` itself is the coordinate buffer (`D` shares it)."""
    n = len(x)
    first = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if n else np.zeros(0, np.int64)
    cum = np.append(first, n).astype(np.int64)           # ids of coordinate k: cum[k] .. cum[k+1]-1
    ids = SparseInterval(Pattern(), cum[:-1], cum[1:], "left", shape=n)
    coords = x if len(first) == n else x[first]
    return Tensor(SparseList(ids, np.array([0, len(first)], np.int64), coords), name="points", validate=False)


def values(v: np.ndarray, name: str) -> Tensor:
    """V[j] = v[j], Dense -> Element(float); `v` itself is the buffer (no copy)."""
    return Tensor(Dense(Element(0.0, val=v, dtype=np.float64), len(v)), name=name, validate=False)


def union_ends(gs: np.ndarray, ge: np.ndarray) -> Tensor:
    """UE[x]: the right ends of the maximal runs of the union of [gs, ge) (gs sorted), as strictly
    increasing pinpoints (SparseList -> Pattern).  The reach (running max of the ends) closes a run
    where the next interval starts beyond it; one that starts at the reach touches and joins.
    When no two intervals meet, every interval is a run and `ge` itself is the buffer (`End`
    shares it)."""
    if len(ge):
        reach = np.maximum.accumulate(ge)
        closes = np.r_[gs[1:] > reach[:-1], True]
        ends = ge if closes.all() else reach[closes]      # all closing: reach == ge
    else:
        ends = ge
    return Tensor(SparseList(Pattern(), np.array([0, len(ends)], np.int64), ends), name="UE", validate=False)


BUILD = {  # index tensor name -> build(starts sorted, ends in start order), genome axis
    "S": lambda gs, ge: sorted_points(gs),
    "E": lambda gs, ge: sorted_points(np.sort(ge)),
    "D": lambda gs, ge: interval_tensor(gs, ge, "left"),
    "End": lambda gs, ge: values(ge, "End"),
    "UE": union_ends,
    "Depth": depth_track,
}


def unique_bytes(tensors) -> int:
    """Bytes of the tensors' arrays, each buffer counted once (views of one array share it, and
    tensors may share one: `D`, `End` and `UE` the ends, `D` and `S` the starts)."""
    seen, total = set(), 0
    for t in tensors:
        for a in t.level.arrays():
            if isinstance(a, np.ndarray):
                base = a.base if a.base is not None else a
                if id(base) not in seen:
                    seen.add(id(base))
                    total += base.nbytes
    return total
