"""The covered bases of each query (`bedtools coverage`'s third column): the Lebesgue measure of
the query's meet with the union of the data, by one of two einsum plans.

Source: the continuous tensor paper §7.2 (genomic intervals as continuous tensors, a query's
covered bases as `B[i] = Q[i, x] * U[x] * d(x; lebesgue)`).

The union's maximal runs (touching intervals join, as `bedtools merge` prints them) are the
index's part `U`, the einsum `U[x] = D[j, x] * d(j; boolean)` that `merge` prints (one pass over
the intervals in start order: the kernel folds each overlapping run into the previous one).  Parts
derived from it (stored in the index's `_parts` as "Uc_starts", "Uc_ends", built once under its
lock):
- `US[x]`, `UR[x]` the run starts / ends as strictly increasing pinpoints (SparseList -> Pattern
  over U's own endpoint arrays, no copy).

Plans (`plan`):
- "direct": `EINSUMS["covered"]`, one kernel; each query seeks its first run by a galloping search
  from the fiber's start (the compiled search keeps no finger across queries), so it costs about
  log2(runs) probes per query: 0.45 ms for 100k queries over 10 runs, 1.7 ms over 1000, 6.6 ms
  over 100k;
- "ranks": `EINSUMS["covered_ranks"]` over the runs R[i] = [#(run ends <= qs), #(run starts <
  qe)), two finger-search rank kernels first (`EINSUMS["rank_points"]`): ~1.9 ms for 100k queries at any run count up to
  ~10k, 3.1-4.5 ms at 100k runs.
`coverage` runs the count and the covered bases of a batch of queries in about start order
(`workers.split_rows`) and adds their lengths and covered fractions.  The direct plan is taken
below DIRECT_AT runs (the two cross at ~1500-2000 runs on 100k sorted
queries, L = 100 and 1e4, `benchmarks`-style min of 15; the rank plan's cost barely depends on
the run count there).
"""
from __future__ import annotations

import numpy as np

from .. import Dense, Pattern, SparseInterval, SparseList, Tensor
from .genome_layout import interval_tensor, values
from .workers import split_rows

# fewer union runs than this: measure each query against the runs directly (module docstring)
DIRECT_AT = 1024


def points(x: np.ndarray, name: str) -> Tensor:
    """P[x]: strictly increasing coordinates as pinpoints (SparseList -> Pattern), `x` the buffer."""
    return Tensor(SparseList(Pattern(), np.array([0, len(x)], np.int64), x), name=name, validate=False)


def cover_parts(index) -> dict:
    """The index's union runs `Uc` (its part `U`) and their starts and ends as pinpoints `US`, `UR`
    (module docstring), built on first use under the index's lock; a dict of the three tensors."""
    parts = index._parts
    if "Uc_ends" not in parts:
        with index._lock:
            if "Uc_ends" not in parts:
                lvl = index.U.level              # the union einsum, built (and timed) by the index
                parts["Uc_starts"] = points(np.asarray(lvl.left), "US")
                parts["Uc_ends"] = points(np.asarray(lvl.right), "UR")   # last: says both are built
    return {"Uc": index.U, "US": parts["Uc_starts"], "UR": parts["Uc_ends"]}


def plan(index) -> str:
    """'direct' below DIRECT_AT union runs, else 'ranks' (module docstring)."""
    return "direct" if len(cover_parts(index)["Uc"].level.left) < DIRECT_AT else "ranks"


def covered(index, gs, ge, how=None) -> np.ndarray:
    """Bases of each query [gs, ge) (genome axis, widened) covered by the union of the index's
    data, int64 (n,), by the plan `how` (default `plan(index)`).  Queries in start order make the
    rank plan's finger searches short; the direct plan does not depend on their order."""
    p = cover_parts(index)
    how = how or plan(index)
    if how == "direct":
        B = index._run("covered", Q=interval_tensor(gs, ge, "left"), U=p["Uc"])
    else:
        ninf = index._ninf(len(gs))
        lo = index._run("rank_run_ends", "rank_points", A=interval_tensor(ninf, gs, "both"), P=p["UR"]).level.child.val
        hi = index._run("rank_run_starts", "rank_points", A=interval_tensor(ninf, ge, "left"), P=p["US"]).level.child.val
        runs = p["Uc"].level
        R = Tensor(Dense(SparseInterval(Pattern(), np.asarray(lo, np.int64), np.asarray(hi, np.int64), "left",
                                        shape=len(runs.left)), len(gs)), name="R", validate=False)
        B = index._run("covered_ranks", R=R, URv=values(runs.right, "URv"), USv=values(runs.left, "USv"),
                       QS=values(gs, "QS"), QE=values(ge, "QE"))
    # the measures are sums of differences of integer-valued float64 coordinates below 2**53:
    # exact integers, so the cast needs no rounding (np.rint's temporary cost ~0.3 ms per 100k
    # queries here, mostly page faults on a fresh 800 KB buffer)
    return np.asarray(B.level.child.val).astype(np.int64)


def coverage(index, gs, ge, workers: int = 1) -> dict:
    """`bedtools coverage` of queries [gs, ge) (genome axis, widened): {"count", "covered",
    "length", "fraction"} as `GenomeIndex.coverage` documents.  The rows are split over `workers`
    threads and visited in about start order (`workers.split_rows`), which the count's finger
    searches need (100k shuffled queries: 35 ms in row order, 1.8 ms in visit order)."""
    count, cov = split_rows(lambda s, e: (index._count(s, e), covered(index, s, e)), workers, (gs, ge),
                            order_by=gs)
    # widened lengths, exact in float64; cast as they are written (no float temporary)
    length = np.subtract(ge, gs, out=np.empty(len(gs), np.int64), casting="unsafe")
    return {"count": count, "covered": cov, "length": length, "fraction": cov / length}
