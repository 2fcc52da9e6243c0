"""Data sets and peer implementations for the genomics interval benchmarks (bench_genomics.py).

Three operations, each with the semantics of bedtools 2.30 (0-based half-open BED intervals,
a overlaps b iff a.start < b.end and b.start < a.end), one chromosome at a time:

    count     bedtools intersect -a query -b data -c       -> int64 array, one count per query
    join      bedtools intersect -a query -b data -wa -wb  -> (qi, dj) int64 positional indices
    coverage  bedtools coverage  -a query -b data          -> dict count, covered, length, fraction

Every peer is split into ``build(data_df)`` (the "index"; untimed in query-only benchmarks) and
``query(index, q)`` with ``q = Query(df, start, end)``, and returns the common normal form above.
Join pairs come in each peer's own order; ``canonical_pairs`` sorts them for comparison.

The query of pybedtools, pyranges and bioframe includes converting the query DataFrame into the
tool's own representation (temp BED file / PyRanges); the index is the data in that representation.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections import namedtuple
from functools import cache

import numpy as np
import pandas as pd
from numba import njit

BED = ["chrom", "start", "end"]
GENOME = 10**8
SYNTHETIC_L = (100, 1000, 10000, 100000)
REAL = ("gerp_exons", "snps_exons")
DATASETS = tuple(f"L{L}" for L in SYNTHETIC_L) + REAL
_HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIRS = (os.path.join(os.path.dirname(_HERE), "ctensor", "examples", "data"),
             "/work/shared/data/genomics")

Query = namedtuple("Query", "df start end")


# ------------------------------------------------------------------------------------ data
def synthetic(L, n=100_000, seed=0):
    """Paper protocol: n query and n data intervals on "chr1", integer starts uniform in
    [0, 1e8), all of length exactly L, each set sorted by start. Returns (query_df, data_df)."""
    rng = np.random.default_rng(seed)
    starts = [np.sort(rng.integers(0, GENOME, n, dtype=np.int64)) for _ in range(2)]
    q, d = (pd.DataFrame({"chrom": "chr1", "start": s, "end": s + np.int64(L)}) for s in starts)
    return q, d


def _data_file(name):
    for p in (os.path.join(d, name) for d in DATA_DIRS):
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{name} not found in {DATA_DIRS}")


def read_bed(path):
    df = pd.read_csv(path, sep="\t", header=None, usecols=[0, 1, 2], names=BED, comment="#")
    return df.astype({"start": np.int64, "end": np.int64})


def widen_zero_length(df):
    """bedtools treats a zero-length record [s, s) (an insertion) as [s-1, s+1) in intersect and
    coverage; apply that rule up front so that every peer answers bedtools' question."""
    z = (df.end == df.start).to_numpy()
    if z.any():
        df = df.copy()
        df.loc[z, "start"] -= 1
        df.loc[z, "end"] += 1
    return df


def real_exons_gerp():
    """hg19 chr1: query = 88,292 GERP elements, data = 43,424 RefSeq exons (file order,
    not sorted; overlapping exons of different transcripts kept)."""
    return tuple(read_bed(_data_file(f"{n}.bed.gz")) for n in ("gerp.chr1", "refseq.chr1.exons"))


def real_snps_exons(widen=True):
    """pybedtools' bundled snps.bed.gz (chr1 part, 600,901 SNPs; the exons are chr1 only and the
    single-chromosome index API takes no chrom) against the exons. The 1,124 zero-length SNPs
    are widened as bedtools does (widen_zero_length); that changes only their coverage columns
    (no zero-length SNP sits on an exon boundary, so counts and pairs are the same either way)."""
    import pybedtools
    snps = read_bed(pybedtools.example_filename("snps.bed.gz"))
    snps = snps[snps.chrom == "chr1"].reset_index(drop=True)
    exons = read_bed(_data_file("refseq.chr1.exons.bed.gz"))
    return (widen_zero_length(snps) if widen else snps), exons


@cache
def dataset(name):
    """(query Query, data_df) for a name in DATASETS."""
    if name.startswith("L"):
        q, d = synthetic(int(name[1:]))
    else:
        q, d = {"gerp_exons": real_exons_gerp, "snps_exons": real_snps_exons}[name]()
    return Query(q, *_se(q)), d


def _se(df):
    # writeable copies: pandas 3 hands out read-only views, a second numba specialisation
    return df.start.to_numpy(np.int64, copy=True), df.end.to_numpy(np.int64, copy=True)


# ------------------------------------------------------------------------- numba reference
@njit(cache=False, inline="always")
def _lower(a, x):  # #(a < x) for sorted a (binary search)
    lo, hi = 0, a.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=False, inline="always")
def _upper(a, x):  # #(a <= x) for sorted integer a
    return _lower(a, x + 1)


@njit(cache=False)
def _count_kernel(ds, de, qs, qe):
    out = np.empty(qs.shape[0], np.int64)
    for i in range(qs.shape[0]):
        out[i] = _lower(ds, qe[i]) - _upper(de, qs[i])  # #(ds < qe) - #(de <= qs)
    return out


@njit(cache=False, inline="always")
def _arrive(s, e, me, act_s, act_e, act_i, n, out_me, out_other, k):
    """[s, e) (number `me`) arrives: compact the other side's active list (drop ends <= s) and
    pair it with every survivor. Returns the new active length and pair count."""
    m = 0
    for t in range(n):
        if act_e[t] > s:
            act_s[m], act_e[m], act_i[m] = act_s[t], act_e[t], act_i[t]
            m += 1
            if act_s[t] < e:  # only false for a zero-length arrival
                if k < out_me.shape[0]:
                    out_me[k], out_other[k] = me, act_i[t]
                k += 1
    return m, k


@njit(cache=False)
def _sweep_join(qs, qe, ds, de, oq, od):
    """Sweep line over both sets sorted by start; each side keeps an active list (start, end,
    number side by side), so each pair is reported once, when its later-starting interval arrives:
    O(nq + nd + pairs) for arbitrary lengths. Writes the first len(oq) pairs (positions in the
    sorted orders) into oq, od and returns the number of pairs k (k > len(oq): call again)."""
    nq, nd = qs.shape[0], ds.shape[0]
    aqs, aqe, aqi = np.empty(nq, np.int64), np.empty(nq, np.int64), np.empty(nq, np.int64)
    ads, ade, adi = np.empty(nd, np.int64), np.empty(nd, np.int64), np.empty(nd, np.int64)
    naq = nad = k = i = j = 0
    while i < nq or j < nd:
        if j >= nd or (i < nq and qs[i] <= ds[j]):
            nad, k = _arrive(qs[i], qe[i], i, ads, ade, adi, nad, oq, od, k)
            aqs[naq], aqe[naq], aqi[naq] = qs[i], qe[i], i
            naq, i = naq + 1, i + 1
        else:
            naq, k = _arrive(ds[j], de[j], j, aqs, aqe, aqi, naq, od, oq, k)
            ads[nad], ade[nad], adi[nad] = ds[j], de[j], j
            nad, j = nad + 1, j + 1
    return k


@njit(cache=False)
def _coverage_kernel(ds, de, us, ue, cum, qs, qe):
    n = qs.shape[0]
    count, covered = np.empty(n, np.int64), np.empty(n, np.int64)
    for i in range(n):
        a, b = qs[i], qe[i]
        count[i] = _lower(ds, b) - _upper(de, a)
        i0 = _upper(ue, a)  # first union piece with ue > a
        i1 = _lower(us, b)  # first union piece with us >= b
        covered[i] = 0 if i1 <= i0 else (
            cum[i1] - cum[i0] - max(0, a - us[i0]) - max(0, ue[i1 - 1] - b))
    return count, covered


def _sorted_perm(s):  # None if s is already sorted, else a stable argsort
    return None if s.shape[0] < 2 or bool(np.all(s[1:] >= s[:-1])) else np.argsort(s, kind="stable")


def numba_count_build(d):  # the two sorts are the index
    return tuple(np.sort(x) for x in _se(d))


def numba_count(idx, q):
    return _count_kernel(idx[0], idx[1], q.start, q.end)


def numba_join_build(d):
    s, e = _se(d)
    p = _sorted_perm(s)
    if p is not None:
        s, e = s[p], e[p]
    return s, e, p, np.sort(e)


def numba_join(idx, q):
    ds, de, dp, de_sorted = idx
    qp = _sorted_perm(q.start)
    qs, qe = (q.start, q.end) if qp is None else (q.start[qp], q.end[qp])
    # output sized by the binary-search count: exact unless zero-length queries and data meet
    k = int(_count_kernel(ds, de_sorted, qs, qe).sum())
    cap = -1
    while k > cap:
        cap = k
        oq, od = np.empty(cap, np.int64), np.empty(cap, np.int64)
        k = _sweep_join(qs, qe, ds, de, oq, od)
    oq, od = oq[:k], od[:k]
    return (oq if qp is None else qp[oq]), (od if dp is None else dp[od])


def _union(d):
    """(starts, ends, union starts, union ends): the union as disjoint sorted pieces."""
    s, e = _se(d)
    if s.shape[0] == 0:
        return s, e, s.copy(), e.copy()
    p = np.argsort(s, kind="stable")
    ss, reach = s[p], np.maximum.accumulate(e[p])
    new = np.r_[True, ss[1:] > reach[:-1]]  # touching intervals are merged
    return s, e, ss[new], reach[np.r_[new[1:], True]]


def numba_coverage_build(d):  # sorted starts, sorted ends, union pieces, prefix sums of lengths
    s, e, us, ue = _union(d)
    cum = np.zeros(us.shape[0] + 1, np.int64)
    np.cumsum(ue - us, out=cum[1:])
    return np.sort(s), np.sort(e), us, ue, cum


def _cov_dict(count, covered, length):
    frac = np.divide(covered, length, out=np.zeros(length.shape[0]), where=length > 0)
    return {"count": np.asarray(count, np.int64), "covered": np.asarray(covered, np.int64),
            "length": np.asarray(length, np.int64), "fraction": frac}


def numba_coverage(idx, q):
    count, covered = _coverage_kernel(*idx, q.start, q.end)
    return _cov_dict(count, covered, q.end - q.start)


def warmup():  # compile the numba kernels, outside any timing
    q, d = synthetic(10, n=50, seed=1)
    for build, query in (PEERS[op]["numba"] for op in PEERS):
        query(build(d), Query(q, *_se(q)))


# ------------------------------------------------------------------------------------ NCLS
def _ncls(s, e):
    from ncls import NCLS
    return NCLS(s, e, np.arange(s.shape[0], dtype=np.int64))


def ncls_join(idx, q):
    return idx.all_overlaps_both(q.start, q.end, np.arange(q.start.shape[0], dtype=np.int64))


def ncls_count(idx, q):  # NCLS 0.0.71 has no counting query; k_overlaps_both truncates
    qi, _ = ncls_join(idx, q)
    return np.bincount(qi, minlength=q.start.shape[0])


def ncls_coverage_build(d):  # NCLS.coverage sums clipped hits: needs a disjoint (merged) index
    s, e, us, ue = _union(d)
    return _ncls(s, e), _ncls(us, ue)


def ncls_coverage(idx, q):
    count = ncls_count(idx[0], q)
    covered = idx[1].coverage(q.start, q.end, np.arange(q.start.shape[0], dtype=np.int64))
    return _cov_dict(count, covered, q.end - q.start)


# ------------------------------------------------------------------ superintervals, AIList
def superintervals_build(d):
    """superintervals.IntervalMap (int32 coordinates only; closed, so [s, e) is stored as [s, e-1]).
    The row ids are its values: search_idxs numbers the map's own sorted order."""
    from superintervals import IntervalMap
    s, e = _se(d)
    return IntervalMap.from_arrays(s.astype(np.int32), (e - 1).astype(np.int32), list(range(len(s))))


def superintervals_count(idx, q):
    return np.asarray(idx.count_batch(q.start.astype(np.int32), (q.end - 1).astype(np.int32)), np.int64)


def superintervals_join(idx, q):  # search_values_batch: a Python list of lists per query
    hits = idx.search_values_batch(q.start.astype(np.int32), (q.end - 1).astype(np.int32))
    n = np.fromiter(map(len, hits), np.int64, len(hits))
    return np.repeat(np.arange(len(hits), dtype=np.int64), n), np.fromiter((j for h in hits for j in h), np.int64, int(n.sum()))


def ailist_build(d):
    """The Augmented Interval List (Feng et al. 2019, `ailist`): from_array + construct."""
    from ailist import AIList
    s, e = _se(d)
    a = AIList.from_array(s, e, np.arange(len(s), dtype=np.int64))
    a.construct()
    return a


def ailist_count(idx, q):
    return np.asarray(idx.nhits_from_array(q.start, q.end), np.int64)


def ailist_join(idx, q):
    qi, dj = idx.intersect_ids(q.start, q.end)
    return np.asarray(qi, np.int64), np.asarray(dj, np.int64)


# -------------------------------------------------------------------------------- bioframe
def bioframe_count(d, q):
    import bioframe as bf
    return bf.count_overlaps(q.df[BED], d, return_input=False)["count"].to_numpy(np.int64)


def bioframe_join(d, q):
    import bioframe as bf
    r = bf.overlap(q.df[BED], d, how="inner", return_input=False, return_index=True)
    return r["index"].to_numpy(np.int64), r["index_"].to_numpy(np.int64)


def bioframe_coverage(d, q):
    import bioframe as bf
    qd = q.df[BED].reset_index(drop=True)
    covered = bf.coverage(qd, d, return_input=False)["coverage"].to_numpy(np.int64)
    return _cov_dict(bioframe_count(d, q), covered, q.end - q.start)


def arrops_join(idx, q):  # bioframe's array-level kernel, one chromosome, no DataFrames
    from bioframe.core.arrops import overlap_intervals
    qi, dj = overlap_intervals(q.start, q.end, idx[0], idx[1])
    return qi.astype(np.int64, copy=False), dj.astype(np.int64, copy=False)


def arrops_count(idx, q):
    return np.bincount(arrops_join(idx, q)[0], minlength=q.start.shape[0])


# -------------------------------------------------------------------------------- pyranges
def _pr(df, col):
    import pyranges as pr
    s, e = _se(df)
    return pr.PyRanges(pd.DataFrame({"Chromosome": df.chrom.to_numpy(object), "Start": s, "End": e,
                                     col: np.arange(s.shape[0], dtype=np.int64)}))


def pyranges_join(idx, q):
    r = _pr(q.df, "qi").join(idx).df
    return r["qi"].to_numpy(np.int64), r["dj"].to_numpy(np.int64)


def pyranges_count_join(idx, q):  # join + bincount: faster than count_overlaps when few pairs
    return np.bincount(pyranges_join(idx, q)[0], minlength=q.start.shape[0])


def pyranges_count(idx, q):  # PyRanges.count_overlaps (NCLS + value_counts per chromosome)
    r = _pr(q.df, "qi").count_overlaps(idx).df
    out = np.zeros(q.start.shape[0], np.int64)
    out[r["qi"].to_numpy()] = r["NumberOverlaps"].to_numpy()
    return out


def pyranges_coverage(idx, q):  # PyRanges.coverage = count_overlaps + merge + NCLS coverage
    r = _pr(q.df, "qi").coverage(idx).df
    qi = r["qi"].to_numpy()
    n = q.start.shape[0]
    count, frac = np.zeros(n, np.int64), np.zeros(n)
    count[qi], frac[qi] = r["NumberOverlaps"].to_numpy(), r["FractionOverlaps"].to_numpy()
    length = q.end - q.start
    return _cov_dict(count, np.rint(frac * length).astype(np.int64), length)


# ------------------------------------------------------------------------------ pybedtools
def _bt(df, with_index):
    from pybedtools import BedTool
    out = df[BED].reset_index(drop=True)
    if with_index:
        out = out.assign(name=np.arange(len(out), dtype=np.int64))
    return BedTool.from_dataframe(out)


def _read_cols(bt, cols, *tmp):
    """Columns `cols` of a bedtools result as int/float arrays; deletes its temp files."""
    try:
        r = pd.read_csv(bt.fn, sep="\t", header=None, usecols=cols)
    except pd.errors.EmptyDataError:
        r = pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})
    for t in (bt, *tmp):
        os.remove(t.fn)
    return [r[c].to_numpy() for c in cols]


def pybedtools_count(idx, q):
    a = _bt(q.df, False)
    (c,) = _read_cols(a.intersect(idx, c=True), [3], a)  # a has 3 columns, the count is the 4th
    return c.astype(np.int64)


def pybedtools_join(idx, q):
    a = _bt(q.df, True)
    qi, dj = _read_cols(a.intersect(idx, wa=True, wb=True), [3, 7], a)  # a.name, b.name
    return qi.astype(np.int64), dj.astype(np.int64)


def pybedtools_coverage(idx, q):
    a = _bt(q.df, False)
    cnt, cov, ln, fr = _read_cols(a.coverage(idx), [3, 4, 5, 6], a)
    return {"count": cnt.astype(np.int64), "covered": cov.astype(np.int64),
            "length": ln.astype(np.int64), "fraction": fr.astype(np.float64)}


# -------------------------------------------------------------------------------- registry
# PEERS[op][peer] = (build(data_df) -> index, query(index, Query) -> normal form)
def _bf_build(d):  # bioframe has no index: the data frame itself
    return d[BED].reset_index(drop=True)


def ncls_build(d):
    return _ncls(*_se(d))


def pyranges_build(d):
    return _pr(d, "dj")


def pybedtools_build(d):  # temp BED file, name column = positional index
    return _bt(d, True)


PEERS = {
    "count": {"numba": (numba_count_build, numba_count),
              "ncls": (ncls_build, ncls_count),
              "superintervals": (superintervals_build, superintervals_count),
              "ailist": (ailist_build, ailist_count),
              "bioframe": (_bf_build, bioframe_count),
              "bioframe_arrops": (_se, arrops_count),
              "pyranges": (pyranges_build, pyranges_count),
              "pyranges_join": (pyranges_build, pyranges_count_join),
              "pybedtools": (pybedtools_build, pybedtools_count)},
    "join": {"numba": (numba_join_build, numba_join),
             "ncls": (ncls_build, ncls_join),
             "superintervals": (superintervals_build, superintervals_join),
             "ailist": (ailist_build, ailist_join),
             "bioframe": (_bf_build, bioframe_join),
             "bioframe_arrops": (_se, arrops_join),
             "pyranges": (pyranges_build, pyranges_join),
             "pybedtools": (pybedtools_build, pybedtools_join)},
    "coverage": {"numba": (numba_coverage_build, numba_coverage),
                 "ncls": (ncls_coverage_build, ncls_coverage),
                 "bioframe": (_bf_build, bioframe_coverage),
                 "pyranges": (pyranges_build, pyranges_coverage),
                 "pybedtools": (pybedtools_build, pybedtools_coverage)},
}


# --------------------------------------------------------------------------------- checks
def canonical_pairs(qi, dj):
    qi, dj = np.asarray(qi, np.int64), np.asarray(dj, np.int64)
    o = np.lexsort((dj, qi))
    return qi[o], dj[o]


def pair_fingerprint(qi, dj, nq):
    """Per query: number of partners, sum and sum of squares of partner indices (exact while the
    sums stay < 2**53): an order-free check of a join without sorting 2e7 pairs."""
    qi, dj = np.asarray(qi, np.int64), np.asarray(dj, np.float64)
    return (np.bincount(qi, minlength=nq), np.bincount(qi, dj, minlength=nq),
            np.bincount(qi, dj * dj, minlength=nq))


def same(op, a, b, nq=None, full=False):
    """Do two results of `op` agree? Join: exact sorted pairs if full, else fingerprints."""
    if op == "count":
        return np.array_equal(np.asarray(a, np.int64), np.asarray(b, np.int64))
    if op == "join":
        if full:
            fa, fb = canonical_pairs(*a), canonical_pairs(*b)
        else:
            fa, fb = pair_fingerprint(*a, nq), pair_fingerprint(*b, nq)
        return all(np.array_equal(x, y) for x, y in zip(fa, fb))
    return (all(np.array_equal(a[k], b[k]) for k in ("count", "covered", "length"))
            and np.allclose(a["fraction"], b["fraction"], rtol=0, atol=1e-6))


# --------------------------------------------------------------------------------- memory
def _peak_rss_child(op, peer, name):
    rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB on Linux
    if peer == "numba":
        warmup()
    if peer == "ctensor":
        build, query = _ctensor_peer(op)
        sq, sd = synthetic(10, n=50, seed=1)
        query(build(sd), Query(sq, *_se(sq)))       # compile outside the measurement
    else:
        build, query = PEERS[op][peer]
    q, d = dataset(name)
    idx = build(d)
    before = rss()
    out = query(idx, q)
    npairs = len(out[0]) if op == "join" else None
    print(json.dumps({"op": op, "peer": peer, "dataset": name, "before_mib": before,
                      "peak_mib": rss(), "pairs": npairs}))


def peak_rss(op, peer, name):
    """Peak RSS (MiB) of one query in a fresh process: {'before_mib' (inputs + index + numba),
    'peak_mib', 'pairs'}."""
    code = f"import genomics_peers as g; g._peak_rss_child({op!r}, {peer!r}, {name!r})"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ctensor_peer(op):
    """(build, query) of ctensor.apps.genomics for the memory helper, index limited to `op`."""
    from ctensor.apps import genomics
    name = {"count": "count_overlaps", "join": "overlap", "coverage": "coverage"}[op]
    return (lambda d: genomics.index(d, ops=(name,)),
            lambda idx, q: getattr(idx, name)(q.start, q.end))


def peak_rss_join_ncls(L=100_000):
    return peak_rss("join", "ncls", f"L{L}")


if __name__ == "__main__":  # python benchmarks/genomics_peers.py [L]: join memory, NCLS vs numba
    for p in ("ncls", "numba", "ctensor"):
        print(json.dumps(peak_rss("join", p, f"L{int(sys.argv[1]) if sys.argv[1:] else 100_000}")))
