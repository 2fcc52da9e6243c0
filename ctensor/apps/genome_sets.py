"""The index-level computations of bedtools' `map`, `cluster`, `complement` and `jaccard`, and of
the bigWig "stats" question, each by einsums compiled by ctensor (`genome_einsums.EINSUMS`:
map_*, rank, union, covered, integral, shared).  Source: the continuous tensor paper §7.2
(interval questions as continuous einsums; Lebesgue integrals of piecewise-constant tracks).

The DataFrame functions users call are in `ctensor.apps.genomics` (which documents the
semantics); these take a `GenomeIndex` and genome-axis coordinates (`genome_layout`).
"""
from __future__ import annotations

import numpy as np

from .. import Pattern, SparseRunList, Tensor
from ..errors import FormatError
from .genome_einsums import EINSUMS, SEMIRING
from .genome_layout import BUILD, interval_tensor, sorted_points, values
from .workers import compiled

_KERNELS: dict = {}         # kernels of the einsums run outside a GenomeIndex (thread-safe: `compiled`)


def run(key, op=None, out=None, **tensors):
    """Call the kernel of EINSUMS[op or key], compiled on first use (keyed by `key`)."""
    k = compiled(_KERNELS, key, EINSUMS[op or key], tensors, out=out, semiring=SEMIRING.get(op or key))
    return k(**tensors)


# ------------------------------------------------------------------ map
def map_values(index, gs, ge, v: np.ndarray, op: str) -> np.ndarray:
    """`op` ('sum', 'min' or 'max') of v[j] (float64, data in start order) over the data intervals
    j overlapping each query [gs, ge) (genome axis, widened); ±inf (min/max) or 0 (sum) where none
    does.  The pairs' test is the overlap einsum's, by the same plan (`GenomeIndex._pair_plan`)."""
    plan = index._pair_plan(gs, ge, grid=False)
    tensors = index._pair_tensors(gs, ge, plan, "overlap")
    key = f"map_{op}" + ("_ranks" if plan == "ranks" else "")
    M = index._run(key, V=values(v, "V"), **tensors)
    return np.asarray(M.level.child.val, np.float64)


# ------------------------------------------------------------------ signal (bedGraph) integrals
def signal_track(gs, ge, v) -> Tensor:
    """Sig[x]: the piecewise-constant track of disjoint intervals [gs, ge) (sorted) with values v
    (float64), 0 elsewhere.  Raises FormatError naming the first interval that overlaps the one
    before it (position in start order)."""
    bad = np.flatnonzero(ge[:-1] > gs[1:])
    if bad.size:
        k = int(bad[0]) + 1
        raise FormatError(f"signal: interval {k} (in start order) overlaps the one before it; a bedGraph "
                          "track's intervals must be disjoint")
    return Tensor(SparseRunList(Pattern() if v is None else _leaf(v), np.array([0, len(gs)], np.int64),
                                gs, ge, "left"), name="Sig", validate=False)


def _leaf(v):
    from .. import Element
    return Element(0.0, val=np.asarray(v, np.float64), dtype=np.float64)


def integral(Sig: Tensor, gs, ge) -> np.ndarray:
    """∫ over each query [gs, ge) of the track Sig (float64): the length-weighted sum."""
    T = run("integral", Q=interval_tensor(gs, ge, "left"), Sig=Sig)
    return np.asarray(T.level.child.val, np.float64)


def support(Sig: Tensor, gs, ge) -> np.ndarray:
    """Bases of each query [gs, ge) covered by the track's intervals (whatever their value)."""
    lvl = Sig.level
    Sup = Tensor(SparseRunList(Pattern(), lvl.ptr, lvl.left, lvl.right, "left"), name="Sup", validate=False)
    T = run("support", "integral", Q=interval_tensor(gs, ge, "left"), Sig=Sup)
    return np.rint(np.asarray(T.level.child.val)).astype(np.int64)


# ------------------------------------------------------------------ runs of a union, cluster ids
def union_runs(gs, ge) -> tuple[np.ndarray, np.ndarray]:
    """The maximal runs [left, right) of the union of the intervals [gs, ge) (genome axis, any
    order), touching ones joined: the union einsum (`bedtools merge`)."""
    if not len(gs):
        return np.zeros(0), np.zeros(0)
    order = np.argsort(gs, kind="stable")
    D = BUILD["D"](gs[order], ge[order])
    M = run("union", out=SparseRunList(Pattern()), D=D)
    return np.asarray(M.level.left), np.asarray(M.level.right)


def cluster_ids(gs, ge, distance: int) -> np.ndarray:
    """1-based number of the cluster of each interval (in the order given): intervals whose gaps
    are at most `distance` bases share a cluster, clusters numbered along the genome axis.  A
    cluster is a run of the union of [gs, ge + distance); its number is the rank of the interval's
    start among the runs' starts, #(run starts <= gs): the rank einsum."""
    left, _ = union_runs(gs, ge + distance)
    if not len(gs):
        return np.zeros(0, np.int64)
    A = interval_tensor(np.full(len(gs), -np.inf), gs, "both")
    N = run("rank_both", "rank", A=A, S=sorted_points(left))
    return np.asarray(N.level.child.val, np.int64)


def shared_bases(a_left, a_right, b_left, b_right) -> int:
    """Bases in both unions (each given as disjoint sorted runs on one genome axis)."""
    if not len(a_left) or not len(b_left):
        return 0
    MA = Tensor(SparseRunList(Pattern(), np.array([0, len(a_left)], np.int64), a_left, a_right, "left"),
                name="MA", validate=False)
    MB = Tensor(SparseRunList(Pattern(), np.array([0, len(b_left)], np.int64), b_left, b_right, "left"),
                name="MB", validate=False)
    return int(round(run("shared", MA=MA, MB=MB)))


__all__ = ["cluster_ids", "integral", "map_values", "run", "shared_bases", "signal_track",
           "support", "union_runs"]
