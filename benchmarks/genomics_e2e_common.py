"""Shared by the end-to-end genomics benchmark (bench_genomics_peers_e2e.py) and its subprocess
peers (genomics_e2e_worker.py, run by the Python 3.12 interpreter for pyranges1): the timing
harness, the workload files, and the normal forms results are compared in.

numpy and pandas only: the 3.12 interpreter has neither pyarrow nor numba nor ctensor, so the
workloads travel as .npz files (chromosome codes + names, starts, ends) and the peers' answers
come back the same way.  Every peer is timed by the same `measure` in its own process.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import pandas as pd

# the operations, in table order; closest1 = one nearest interval per query (ties broken by
# each tool), closest = every tied nearest interval (bedtools closest -d -t all)
OPS = ("count", "overlap", "coverage", "merge", "closest", "closest1")


def clock() -> float:
    """Seconds on the benchmark's clock: wall time (perf_counter), or with GENOMICS_E2E_CLOCK=cpu
    the CPU time of this process (every thread) plus that of the children it has waited for
    (bedtools, run by pybedtools).  On a machine shared with other jobs, CPU time is what a tool
    spends whatever the others do; wall time there counts the time it waited for a core."""
    if os.environ.get("GENOMICS_E2E_CLOCK") == "cpu":
        import resource             # (os.times counts in clock ticks: 10 ms)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + kids.ru_utime + kids.ru_stime
    return time.perf_counter()


def measure(fn, *args, rounds=(3, 7), budget=2.0, warm=True):
    """Median (or, with GENOMICS_E2E_STAT=min, minimum) time (s, `clock`) of fn(*args) after one untimed call (JIT compilation, imports, caches
    of the first call), over at least rounds[0] and at most rounds[1] calls, stopping once
    `budget` seconds have been spent.  Returns (median, result of the first call).  warm=False
    (the scale tier's slow peers, which compile nothing) times the first call as well."""
    times = []
    if warm:
        out = fn(*args)
        if "ctensor" in sys.modules:    # the optimised tier of what the first call compiled
            sys.modules["ctensor"].wait_optimized()
    else:
        t = clock()
        out = fn(*args)
        times.append(clock() - t)
    while len(times) < rounds[0] or (len(times) < rounds[1] and sum(times) < budget):
        t = clock()
        fn(*args)
        times.append(clock() - t)
    # GENOMICS_E2E_STAT=min: the fastest call (on a loaded machine the median moves by up to 2x
    # between runs; the minimum is the call least disturbed by other processes)
    return float(np.min(times) if os.environ.get("GENOMICS_E2E_STAT") == "min" else np.median(times)), out


# ----------------------------------------------------------------------------- workload files
def save_workload(path, q, d):
    """q, d: DataFrames chrom, start, end, id -> one .npz (chromosome names shared by both)."""
    names = pd.Index(sorted(set(q["chrom"].unique()) | set(d["chrom"].unique())))
    arrays = {"names": np.asarray(names, dtype=str)}
    for tag, df in (("q", q), ("d", d)):
        arrays[f"{tag}_chrom"] = names.get_indexer(df["chrom"]).astype(np.int32)
        for c in ("start", "end", "id"):
            arrays[f"{tag}_{c}"] = df[c].to_numpy(np.int64)
    np.savez(path, **arrays)


def load_workload(path):
    """(query DataFrame, data DataFrame, chromosome names) as the benchmark built them: columns
    chrom (pandas' default string dtype), start, end, id (int64), rows in the workload's order."""
    z = np.load(path)
    names = z["names"]
    frames = [pd.DataFrame({"chrom": names[z[f"{t}_chrom"]], "start": z[f"{t}_start"],
                            "end": z[f"{t}_end"], "id": z[f"{t}_id"]}) for t in ("q", "d")]
    return frames[0], frames[1], list(names)


def chrom_codes(values, names):
    return pd.Index(names).get_indexer(pd.Series(values).astype(str)).astype(np.int64)


# ------------------------------------------------------------------------------ normal forms
# Each peer's natural output is turned into one of these outside the timing, then compared.
# "ordered": were the rows as returned in query order (ids ascending)?  The output contract.
def _ordered(qid):
    return np.array(bool(np.all(qid[1:] >= qid[:-1])))


def norm_count(qid, count, nq):
    qid = np.asarray(qid, np.int64)
    out = np.full(nq, -1, np.int64)
    out[qid] = np.asarray(count, np.int64)
    return {"count": out, "ordered": _ordered(qid)}


def norm_pairs(qid, did):
    qid, did = np.asarray(qid, np.int64), np.asarray(did, np.int64)
    o = np.lexsort((did, qid))
    return {"qid": qid[o], "did": did[o], "ordered": _ordered(qid)}


def norm_coverage(qid, covered, nq, count=None):
    r = {"covered": norm_count(qid, covered, nq)["count"], "ordered": _ordered(np.asarray(qid))}
    if count is not None:
        r["count"] = norm_count(qid, count, nq)["count"]
    return r


def norm_merge(chrom, start, end, names):
    c = chrom_codes(chrom, names)
    s, e = np.asarray(start, np.int64), np.asarray(end, np.int64)
    o = np.lexsort((s, c))
    return {"chrom": c[o], "start": s[o], "end": e[o], "ordered": _ordered(o)}


def norm_closest(qid, did, dist):
    """dist in bedtools' convention (0 overlapping, gap + 1 otherwise)."""
    qid, did, dist = (np.asarray(x, np.int64) for x in (qid, did, dist))
    o = np.lexsort((dist, did, qid))
    return {"qid": qid[o], "did": did[o], "dist": dist[o], "ordered": _ordered(qid)}


def norm_closest1(qid, did):
    """One nearest data interval per query (the peer's pick among ties); checked by its gap."""
    qid, did = np.asarray(qid, np.int64), np.asarray(did, np.int64)
    o = np.argsort(qid, kind="stable")
    return {"qid": qid[o], "did": did[o], "ordered": _ordered(qid)}


def result_path(tmp, peer, workload, op):
    return os.path.join(tmp, f"{peer}--{workload}--{op}.npz")
