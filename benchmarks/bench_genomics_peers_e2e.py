"""ctensor.apps.genomics end to end against its peers, in one run, one thread each.

    python benchmarks/bench_genomics_peers_e2e.py [out.json]     # ~20 min; ~15 more with the scale tier
    python benchmarks/genomics_e2e_report.py out.json              # markdown tables
    python benchmarks/genomics_e2e_profile.py [workload]           # where ctensor's time goes

Env: GENOMICS_E2E_L=100,1000,10000,100000 (default 100,10000: the paper's sweep is long),
GENOMICS_E2E_SCALE=1 adds the 2M x 2M tier (minutes), GENOMICS_E2E_ONLY=name[,name] runs only
those workloads (names as in the report), GENOMICS_E2E_OPS=op[,op] only those operations (names of
genomics_e2e_common.OPS, e.g. coverage,merge), GENOMICS_E2E_SCALE_SLOW=1 runs bioframe and bedtools at
scale too (default: skipped there, they take tens of seconds per call), GENOMICS_E2E_SKIP=peer[,peer]
skips those in-process peers everywhere (e.g. pybedtools,bioframe at L = 1e5, where bedtools' coverage
and closest take minutes), GENOMICS_E2E_STAT=min reports
each tool's fastest call instead of the median (for a loaded machine), GENOMICS_E2E_CLOCK=cpu times
CPU seconds (the process's threads and the children it waited for: `genomics_e2e_common.clock`)
instead of wall time: on a shared machine the work each tool does, whatever the others' load; the
2-thread polars-bio column then sums both threads' work.

A plain script, not pytest-benchmark: pyranges1 exists only in the Python 3.12 interpreter, so it
runs in a subprocess (genomics_e2e_worker.py) that must time its own calls; one harness
(genomics_e2e_common.measure: one untimed call, then the median of 3-7 calls; 1-3 at scale, where
the peers that compile nothing are timed from their first call) in every process keeps all the
medians comparable.  Timed: DataFrame in -> the tool's natural result out.  Each
peer's first answer is compared with ctensor's in a normal form before its timings are kept.

Workloads (seeded): the paper protocol (100k queries x 100k data intervals of length L uniform on
1e8 bp of chr1, sorted by start, or the queries shuffled), the real tracks gerp.chr1 (88,292) vs
refseq.chr1.exons (43,424) in file order, and the scale tier: 2M x 2M intervals of length
100..4000 over 5 chromosomes (human chr1-5 sizes), both in random row order.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import genomics_e2e_common as c
import genomics_e2e_peers as p
import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
PY312 = "/root/.pyenv/versions/3.12.1/bin/python"
SCALE_CHROMS = {"chr1": 249_250_621, "chr2": 243_199_373, "chr3": 198_022_430,
                "chr4": 191_154_276, "chr5": 180_915_260}


# ---------------------------------------------------------------------------------- workloads
def _frame(chrom, s, e):
    return pd.DataFrame({"chrom": chrom, "start": s, "end": e, "id": np.arange(len(s), dtype=np.int64)})


def paper(L, shuffled, n=100_000):
    rng = np.random.default_rng(0)       # genomics_peers.synthetic's data, row ids added
    s = [np.sort(rng.integers(0, 10**8, n, dtype=np.int64)) for _ in range(2)]
    qs = s[0][np.random.default_rng(1).permutation(n)] if shuffled else s[0]
    return _frame("chr1", qs, qs + L), _frame("chr1", s[1], s[1] + L)


def real():
    import genomics_peers as gp
    q, d = gp.real_exons_gerp()
    return (_frame(x["chrom"].to_numpy(), x["start"].to_numpy(), x["end"].to_numpy()) for x in (q, d))


def scale(n=2_000_000):
    rng = np.random.default_rng(2)
    names = np.array(list(SCALE_CHROMS))
    sizes = np.array(list(SCALE_CHROMS.values()), np.int64)

    def one():
        k = rng.choice(len(names), n, p=sizes / sizes.sum())      # random order, as read
        length = rng.integers(100, 4000, n, dtype=np.int64)
        s = (rng.random(n) * (sizes[k] - length)).astype(np.int64)
        return _frame(names[k], s, s + length)
    return one(), one()


def workloads():
    Ls = [int(x) for x in os.environ.get("GENOMICS_E2E_L", "100,10000").split(",")]
    for L in Ls:
        for shuffled in (False, True):
            yield f"L{L}_{'unsorted' if shuffled else 'sorted'}", (lambda L=L, s=shuffled: paper(L, s)), not shuffled
    yield "gerp_exons", real, False
    if os.environ.get("GENOMICS_E2E_SCALE") == "1":
        yield "scale_2M", scale, False


def wanted_ops():
    """The operations to run (GENOMICS_E2E_OPS, default all of c.OPS), in c.OPS order."""
    only = os.environ.get("GENOMICS_E2E_OPS")
    return tuple(op for op in c.OPS if not only or op in only.split(","))


def wanted(name):
    only = os.environ.get("GENOMICS_E2E_ONLY")
    return not only or name in only.split(",")


# ------------------------------------------------------------------------------------- checks
def _gap(q, d, qid, did):  # half-open gap (0 overlapping or book-ended), same chromosome
    qs, qe = q["start"].to_numpy()[qid], q["end"].to_numpy()[qid]
    ds, de = d["start"].to_numpy()[did], d["end"].to_numpy()[did]
    return np.maximum(0, np.maximum(qs, ds) - np.minimum(qe, de))


def check(op, ref, got, q, d):
    """'ok' or what differs.  closest1 (one pick per query among ties): the peer's pick must be as
    near, in half-open gap, as ctensor's; picks that differ are counted (ties broken otherwise)."""
    if op == "closest1":
        if not np.array_equal(got["qid"], np.arange(len(q))):
            return f"rows: {len(got['qid'])} for {len(q)} queries"
        bad = int((_gap(q, d, got["qid"], got["did"]) != _gap(q, d, ref["qid"], ref["did"])).sum())
        other = int((got["did"] != ref["did"]).sum())
        return f"NOT nearest for {bad} queries" if bad else f"ok ({other} other tie picks)"
    if op == "coverage":
        keys = [k for k in ("covered", "count") if k in got]
        bad = [k for k in keys if not np.array_equal(got[k], ref[k])]
        return f"differs: {bad}" if bad else f"ok ({'+'.join(keys)})"
    for k in (k for k in ref if k != "ordered"):
        if len(ref[k]) != len(got[k]):
            return f"{k}: {len(got[k])} rows vs ctensor {len(ref[k])}"
        if not np.array_equal(ref[k], got[k]):
            return f"{k}: {int((ref[k] != got[k]).sum())} values differ"
    return "ok"


# --------------------------------------------------------------------------------------- runs
def run_inprocess(peer, spec, op, q, d, names, rounds, budget, warm=True):
    """{'e2e', 'build', 'query' medians, 'result' normal form} of one peer on one operation."""
    if spec[0] == "call":
        t, r = c.measure(spec[1], q, d, rounds=rounds, budget=budget, warm=warm)
        return {"e2e": t}, spec[2](r, q, d, names)
    _, build, query, norm = spec
    # ctensor's end-to-end call is the operation on the frame (it builds its index inside)
    e2e = query if peer == "ctensor" else (lambda q, d: query(q, build(d)))
    t, r = c.measure(e2e, q, d, rounds=rounds, budget=budget, warm=warm)
    tb, idx = c.measure(build, d, rounds=rounds, budget=budget, warm=warm)
    tq, _ = c.measure(query, q, idx, rounds=rounds, budget=budget, warm=warm)
    return {"e2e": t, "build": tb, "query": tq}, norm(r, q, d, names)


def run_subprocess(peer, threads, path, tmp, rounds, budget):
    exe = PY312 if peer == "pyranges1" else sys.executable
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), POLARS_MAX_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    cmd = [exe, os.path.join(HERE, "genomics_e2e_worker.py"), peer, path, tmp, ",".join(wanted_ops()),
           str(rounds[0]), str(rounds[1]), str(budget)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode:
        print(out.stderr[-3000:], file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_workload(name, make, presorted, tmp):
    q, d = make()
    names = sorted(set(q["chrom"]) | set(d["chrom"]))
    path = os.path.join(tmp, f"{name}.npz")
    c.save_workload(path, q, d)
    big = name.startswith("scale")
    # the scale tier: up to 7 calls within 10 s, as the small ones have (some 2M calls page-fault
    # afresh, 50-200 ms more: with 3 calls, often all 3 did, for ctensor and peers alike)
    rounds, budget = ((1, 7), 10.0) if big else ((3, 7), 2.0)
    slow_ok = not big or os.environ.get("GENOMICS_E2E_SCALE_SLOW") == "1"
    peers = {"ctensor": p.ctensor_peer(), "ncls": p.ncls_peer(names),
             "superintervals": p.superintervals_peer(names), "ailist": p.ailist_peer(names)}
    skip = [x for x in os.environ.get("GENOMICS_E2E_SKIP", "").split(",") if x]
    if slow_ok:
        peers.update(bioframe=p.bioframe_peer(), pybedtools=p.pybedtools_peer(presorted))
    peers = {peer: ops for peer, ops in peers.items() if peer not in skip}
    peers = {peer: {op: spec for op, spec in specs.items() if op in wanted_ops()} for peer, specs in peers.items()}
    rec = {"n_query": len(q), "n_data": len(d), "presorted": presorted, "ops": {op: {} for op in wanted_ops()},
           "skipped": sorted(set(skip) | (set() if slow_ok else {"bioframe", "pybedtools"}))}
    refs = {}
    for peer, ops in peers.items():
        for op, spec in ops.items():
            # the scale tier's slow peers compile nothing: their first call is timed too
            warm = not big or peer in ("ctensor",)
            times, res = run_inprocess(peer, spec, op, q, d, names, rounds, budget, warm)
            if peer == "ctensor":
                refs[op] = res
                status = "reference"
                if op in ("overlap", "closest"):
                    times["rows"] = len(res["qid"])
            else:
                status = check(op, refs[op], res, q, d)
            rec["ops"][op][peer] = {**times, "check": status, "ordered": bool(res.get("ordered", True))}
            print(f"{name:18s} {op:9s} {peer:15s} {status:28s} "
                  + " ".join(f"{k}={v * 1e3:.1f}ms" for k, v in times.items() if k != "rows"), flush=True)
        if peer == "pybedtools":
            import pybedtools
            pybedtools.cleanup()
    _release_memory()
    for peer, threads in (("pyranges1", 1), ("polars_bio", 1), ("polars_bio", 2)):
        got = run_subprocess(peer, threads, path, tmp, rounds, budget)
        if got is None:
            rec.setdefault("failed", []).append(f"{peer}{threads}")
            continue
        for op, t in got["medians"].items():
            res = dict(np.load(c.result_path(tmp, got["peer"], name, op)))
            status = check(op, refs[op], res, q, d)
            rec["ops"][op][got["peer"]] = {"e2e": t, "check": status, "ordered": bool(res.get("ordered", True)),
                                           "variant": got["variants"].get(op, "")}
            print(f"{name:18s} {op:9s} {got['peer']:15s} {status:28s} e2e={t * 1e3:.1f}ms", flush=True)
    return rec


def _release_memory():
    """Hand the in-process peers' freed memory back to the OS before the subprocess peers start: at
    the scale tier the parent held ~12 GB of freed-but-kept heap (glibc keeps it) and the kernel's
    OOM killer stopped the run when polars-bio's process grew beside it."""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def one_thread():
    """One thread for everyone, set before the peers' libraries are imported (they are imported
    inside the peer functions); polars-bio's 2-thread column sets its own in its subprocess."""
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
              "RAYON_NUM_THREADS", "POLARS_MAX_THREADS"):
        os.environ[v] = "1"


def main(argv):
    one_thread()
    out = argv[0] if argv else "genomics_e2e.json"
    import ctensor
    src = os.path.dirname(os.path.dirname(ctensor.__file__))
    # CTENSOR_COMMIT names the commit when ctensor is imported from an exported tree (git archive)
    commit = os.environ.get("CTENSOR_COMMIT") or subprocess.run(
        ["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    results = {"meta": {"ctensor": src, "commit": commit, "load": os.getloadavg(),
                        "stat": os.environ.get("GENOMICS_E2E_STAT", "median"),
                        "clock": os.environ.get("GENOMICS_E2E_CLOCK", "wall"),
                        "cpus": os.cpu_count()}, "workloads": {}}
    with tempfile.TemporaryDirectory(prefix="genomics_e2e_") as tmp:
        for name, make, presorted in workloads():
            if wanted(name):
                results["workloads"][name] = run_workload(name, make, presorted, tmp)
                with open(out, "w") as f:          # after each workload: a partial run is usable
                    json.dump(results, f, indent=1)
    results["meta"]["load_end"] = os.getloadavg()
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main(sys.argv[1:])
