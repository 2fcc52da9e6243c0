"""Main example: compiled continuous einsums on real hg19 chr1 tracks, checked against bioframe.

    python -m ctensor.examples.genome

Data (vendored in ctensor/examples/data, see its README): RefSeq exons and GERP constrained
elements on chr1 (bedtools-test 2.30), and the chr1 part of the 800,000 real SNPs shipped in the
pybedtools wheel.  BED intervals are 0-based half-open, so every tensor uses closed="left".

Each quantity is one einsum compiled by ctensor (compile and run times printed separately) and
compared with an independent computation by bioframe on the same data.
"""
from __future__ import annotations

import os
import sys
import time
from importlib import resources

import numpy as np
import pandas as pd

import ctensor as ct

BED = ["chrom", "start", "end"]


def data_path(name: str) -> str:
    return str(resources.files("ctensor.examples") / "data" / name)


def read_bed(path: str, names) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", header=None, names=names, usecols=range(len(names)))


def snps_path() -> str:
    import pybedtools
    return os.path.join(os.path.dirname(pybedtools.__file__), "test", "data", "snps.bed.gz")


def timed(text, **tensors):
    t0 = time.perf_counter()
    k = ct.compile(text, **tensors)
    t1 = time.perf_counter()
    out = k(**tensors)
    t2 = time.perf_counter()
    return out, t1 - t0, t2 - t1


def report(label, value, check, compile_s, run_s):
    ok = "OK " if check else "MISMATCH"
    print(f"  [{ok}] {label}: {value}")
    print(f"         compile {compile_s * 1e3:7.1f} ms   run {run_s * 1e3:7.2f} ms")
    return check


def main() -> int:
    import bioframe as bf

    exons = read_bed(data_path("refseq.chr1.exons.bed.gz"), BED + ["name", "score", "strand"])
    gerp = read_bed(data_path("gerp.chr1.bed.gz"), BED + ["score"])
    snps = read_bed(snps_path(), BED + ["name"])
    snps = snps[snps.chrom == "chr1"].reset_index(drop=True)
    print(f"hg19 chr1: {len(exons):,} RefSeq exons, {len(gerp):,} GERP elements, {len(snps):,} SNPs")

    # 1-D boolean exon track: overlapping exons of different transcripts merged (closed="left": BED)
    E = ct.intervals(exons.start, exons.end, closed="left", sort=True, merge=True)
    G = ct.intervals(gerp.start, gerp.end, closed="left")                      # boolean
    W = ct.intervals(gerp.start, gerp.end, values=gerp.score.to_numpy(), closed="left")
    P = ct.points(snps.start.to_numpy(dtype=float).reshape(-1, 1))           # P[x, id]
    merged = bf.merge(exons[BED])
    print(f"merged exon track: {len(E.pieces()):,} intervals (bioframe.merge: {len(merged):,})")
    ov = bf.overlap(gerp, merged, how="inner", return_overlap=True, suffixes=("", "_e"))
    ov_len = (ov.overlap_end - ov.overlap_start).to_numpy()
    good = True

    s, c, r = timed("s[] = E[x] * G[x] * d(x; lebesgue)", E=E, G=G)
    good &= report("GERP bases inside exons  s[] = E[x]*G[x]*d(x; lebesgue)", f"{s:,.0f} bp",
                   s == ov_len.sum(), c, r)

    w, c, r = timed("s[] = E[x] * W[x] * d(x; lebesgue)", E=E, W=W)
    ref = float((ov_len * ov.score.to_numpy()).sum())
    good &= report("GERP-score-weighted exon coverage  s[] = E[x]*W[x]*d(x; lebesgue)", f"{w:.6g}",
                   abs(w - ref) <= 1e-9 * abs(ref), c, r)

    C, c, r = timed("C[x] = E[x] * G[x]", E=E, G=G)
    pieces = C.pieces()
    good &= report("intersection track  C[x] = E[x]*G[x]", f"{len(pieces):,} intervals",
                   len(pieces) == len(ov) and np.array_equal(
                       np.sort([p[0][0][0].value for p in pieces]), np.sort(ov.overlap_start.to_numpy())), c, r)
    for (iv,), v in pieces[:5]:
        print(f"           chr1\t{int(iv[0].value)}\t{int(iv[1].value)}")

    n, c, r = timed("n[] = P[x, i] * E[x] * d(x, i; counting, counting)", P=P, E=E)
    snp_ref = int(bf.overlap(snps, merged, how="inner", suffixes=("", "_e")).shape[0])
    good &= report("SNPs inside exons  n[] = P[x,i]*E[x]*d(x,i; counting, counting)", f"{n:,} of {len(snps):,}",
                   n == snp_ref, c, r)
    print("all results match bioframe" if good else "SOME RESULTS DIFFER FROM bioframe")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
