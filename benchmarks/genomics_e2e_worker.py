"""Subprocess peers of bench_genomics_peers_e2e.py: pyranges1 (only installed in the Python 3.12
interpreter) and polars-bio (its own process so that POLARS_MAX_THREADS, read by polars at import,
can differ between its 1- and 2-thread columns).

    python genomics_e2e_worker.py PEER WORKLOAD.npz TMPDIR OPS MIN_ROUNDS MAX_ROUNDS BUDGET

The parent sets the thread variables (RAYON_NUM_THREADS for pyranges1's Rust core ruranges,
POLARS_MAX_THREADS for polars); polars-bio's DataFusion partitions follow them below.  The
workload is read and turned into the peer's own frame (a PyRanges, a polars DataFrame) BEFORE
any timing, as a user would already have it; the timings exclude the subprocess start and the
file reading.  Prints {op: median seconds} as JSON; the first (untimed) answer of each operation
goes to TMPDIR in the normal form of genomics_e2e_common for the parent to compare.
"""
from __future__ import annotations

import json
import os
import sys

import genomics_e2e_common as c
import numpy as np


# ----------------------------------------------------------------------------------- pyranges1
def pyranges1_peer(q, d):
    import pyranges1 as pr
    rename = {"chrom": "Chromosome", "start": "Start", "end": "End"}
    pq, pd_ = (pr.PyRanges(x.rename(columns=rename)) for x in (q, d))
    nq = len(q)
    qlen = (q["end"] - q["start"]).to_numpy()
    ops = {   # op: (timed call, normaliser of its answer)
        "count": (lambda: pq.count_overlaps(pd_),
                  lambda r: c.norm_count(r["id"], r["Count"], nq)),
        # preserve_input_order=True (the default): rows in query order, ctensor's contract
        "overlap": (lambda: pq.join_overlaps(pd_),
                    lambda r: c.norm_pairs(r["id"], r["id_b"])),
        # bedtools coverage's count and fraction in one call (the union of `other` per query)
        "coverage": (lambda: pq.count_overlaps(pd_, calculate_coverage=True),
                     lambda r: c.norm_coverage(r["id"], np.rint(r["CoverageOverlaps"].to_numpy()
                                               * qlen[r["id"].to_numpy()]), nq, r["Count"])),
        # slack=1: book-ended intervals merge too, as bedtools merge does (slack=0 keeps them apart)
        "merge": (lambda: pd_.merge_overlaps(slack=1),
                  lambda r: c.norm_merge(r["Chromosome"], r["Start"], r["End"], NAMES)),
        # Distance is bedtools closest -d's (book-ended = 1); ties="all" as -t all
        "closest": (lambda: pq.nearest_ranges(pd_, ties="all"),
                    lambda r: c.norm_closest(r["id"], r["id_b"], r["Distance"])),
        "closest1": (lambda: pq.nearest_ranges(pd_, ties="first"),
                     lambda r: c.norm_closest1(r["id"], r["id_b"])),
    }
    return ops


# ---------------------------------------------------------------------------------- polars-bio
def polars_bio_peer(q, d):
    import polars as pl
    import polars_bio as pb
    threads = int(os.environ.get("POLARS_MAX_THREADS", "1"))
    pb.set_option(pb.POLARS_BIO_MAX_THREADS, threads)     # DataFusion target_partitions
    pq, pd_ = pl.from_pandas(q), pl.from_pandas(d)
    for f in (pq, pd_):                                   # BED coordinates: 0-based half-open
        f.config_meta.set(coordinate_system_zero_based=True)
    nq = len(q)
    qlen = (q["end"] - q["start"]).to_numpy()
    out = "polars.DataFrame"      # materialised: the LazyFrame default would time nothing
    return {
        "count": (lambda: pb.count_overlaps(pq, pd_, output_type=out),
                  lambda r: c.norm_count(r["id"], r["count"], nq)),
        # the default algorithm (Coitrees) and SuperIntervals are both timed, the faster kept
        # (neither wins everywhere on this machine); main() records which
        **{f"overlap@{a}": (lambda a=a: pb.overlap(pq, pd_, algorithm=a, output_type=out),
                            lambda r: c.norm_pairs(r["id_1"], r["id_2"]))
           for a in ("Coitrees", "SuperIntervals")},
        # covered bases only (bioframe's coverage): no count, no fraction
        "coverage": (lambda: pb.coverage(pq, pd_, output_type=out),
                     lambda r: c.norm_coverage(r["id"], r["coverage"], nq)),
        # min_dist=1: book-ended intervals merge too, as bedtools merge (0 keeps them apart)
        "merge": (lambda: pb.merge(pd_, min_dist=1, output_type=out),
                  lambda r: c.norm_merge(r["chrom"].to_numpy(), r["start"], r["end"], NAMES)),
        # k=1: one nearest per query, distance = half-open gap (book-ended = 0)
        "closest1": (lambda: pb.nearest(pq, pd_, output_type=out),
                     lambda r: c.norm_closest1(r["id_1"], r["id_2"])),
    }


PEERS = {"pyranges1": pyranges1_peer, "polars_bio": polars_bio_peer}
NAMES: list = []


def main(argv):
    global NAMES
    peer, path, tmp, ops, lo, hi, budget = argv
    q, d, NAMES = c.load_workload(path)
    workload = os.path.basename(path)[:-4]
    table = PEERS[peer](q, d)
    tag = peer + (f"{os.environ.get('POLARS_MAX_THREADS', '1')}t" if peer == "polars_bio" else "")
    medians, variants = {}, {}
    for key, (call, norm) in table.items():
        op, _, variant = key.partition("@")
        if op not in ops.split(","):
            continue
        t, r = c.measure(call, rounds=(int(lo), int(hi)), budget=float(budget))
        if op in medians and medians[op] <= t:
            continue
        medians[op], variants[op] = t, variant
        np.savez(c.result_path(tmp, tag, workload, op), **{k: np.asarray(v) for k, v in norm(r).items()})
    print(json.dumps({"peer": tag, "medians": medians, "variants": variants}))


if __name__ == "__main__":
    main(sys.argv[1:])
