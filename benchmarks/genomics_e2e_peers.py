"""In-process peers of bench_genomics_peers_e2e.py, called end to end as a user calls them: pandas
DataFrames `q`, `d` (chrom, start, end, id) in, the tool's natural result out (a DataFrame; for
NCLS and superintervals, array libraries, the glue a user writes: per-chromosome indexes and the
result frame assembled as ctensor assembles its own).

Each peer is {op: spec}; spec is either ("call", fn(q, d), norm) or ("index", build(d),
query(q, idx), norm) for peers with an index (build and query are also timed apart).  norm(result,
q, d, names) gives the normal form of genomics_e2e_common, computed outside the timing.
An operation a peer lacks is absent: the report says so instead of timing something else.
"""
from __future__ import annotations

import genomics_e2e_common as c
import numpy as np
import pandas as pd


def _col(r, name):
    return r[name].to_numpy()


# ------------------------------------------------------------------------------------ ctensor
def ctensor_peer():
    import ctensor.apps.genomics as g
    ops = {"count": ("count", g.count_overlaps, lambda r, q, d, n: c.norm_count(_col(r, "id"), _col(r, "count"), len(q))),
           "overlap": ("overlap", g.overlap, lambda r, q, d, n: c.norm_pairs(_col(r, "id"), _col(r, "id_"))),
           "coverage": ("coverage", g.coverage,
                        lambda r, q, d, n: c.norm_coverage(_col(r, "id"), _col(r, "covered"), len(q), _col(r, "count"))),
           "closest": ("closest", g.closest,
                       lambda r, q, d, n: c.norm_closest(_col(r, "id"), _col(r, "id_"), _col(r, "distance"))),
           "closest1": ("closest", lambda q, d: g.closest(q, d, ties="first"),
                        lambda r, q, d, n: c.norm_closest1(_col(r, "id"), _col(r, "id_")))}
    peer = {op: ("index", lambda d, name=name: g.index(d, ops=(name,)), fn, norm)
            for op, (name, fn, norm) in ops.items()}
    peer["merge"] = ("call", lambda q, d: g.merge(d),
                     lambda r, q, d, n: c.norm_merge(_col(r, "chrom"), _col(r, "start"), _col(r, "end"), n))
    return peer


# ------------------------------------------------------------------ per-chromosome user glue
def _groups(df, names):
    """{chromosome code: row positions}, one factorize + one stable argsort."""
    codes = c.chrom_codes(df["chrom"].to_numpy(), names)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return {k: order[bounds[k]:bounds[k + 1]] for k in range(len(names)) if bounds[k + 1] > bounds[k]}


def _per_chrom(q, idx, names, query):
    """int64 per query row: `query(idx[k], starts, ends)` over the query rows of each chromosome k
    the peer's per-chromosome index holds (0 on the others)."""
    s, e = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
    out = np.zeros(len(q), np.int64)
    for k, rows in _groups(q, names).items():
        if k in idx:
            out[rows] = query(idx[k], s[rows], e[rows])
    return out


def _take(col, rows):  # one column's rows: numpy take, or the extension array's own take
    if isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
        return col.array.take(rows)
    return np.take(col.to_numpy(), rows)


def _pairs_frame(q, d, qi, dj):
    """The overlap frame, columns as ctensor's (data suffixed "_"), assembled as ctensor assembles
    its own (frame_take): a take per column, the pair's chromosome taken once."""
    left = {c: _take(q[c], qi) for c in q.columns}
    right = {f"{c}_": left[c] if c == "chrom" else _take(d[c], dj) for c in d.columns}
    return pd.DataFrame({**left, **right}, copy=False)


def _cov_frame(q, count, covered):
    length = (q["end"] - q["start"]).to_numpy()
    return q.assign(count=count, covered=covered, length=length,
                    fraction=np.divide(covered, length, out=np.zeros(len(q)), where=length > 0))


def _union(s, e):  # merged runs of one chromosome (book-ended runs merge), numpy
    o = np.argsort(s, kind="stable")
    ss, reach = s[o], np.maximum.accumulate(e[o])
    new = np.r_[True, ss[1:] > reach[:-1]]
    return ss[new], reach[np.r_[new[1:], True]]


_norm_count = lambda r, q, d, n: c.norm_count(_col(r, "id"), _col(r, "count"), len(q))
_norm_pairs = lambda r, q, d, n: c.norm_pairs(_col(r, "id"), _col(r, "id_"))
_norm_cov = lambda r, q, d, n: c.norm_coverage(_col(r, "id"), _col(r, "covered"), len(q), _col(r, "count"))


# --------------------------------------------------------------------------------------- NCLS
def _ncls_union(NCLS, s, e):
    us, ue = _union(s, e)
    return NCLS(us, ue, np.arange(len(us), dtype=np.int64))


def ncls_peer(names):
    from ncls import NCLS

    def build(d, union=False):
        s, e = d["start"].to_numpy(np.int64), d["end"].to_numpy(np.int64)
        out = {}
        for k, rows in _groups(d, names).items():
            out[k] = (NCLS(s[rows], e[rows], rows.astype(np.int64)),
                      _ncls_union(NCLS, s[rows], e[rows]) if union else None)
        out["frame"] = d     # the overlap frame takes the data rows from here
        return out

    def pairs(q, idx):
        s, e = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
        got = [idx[k][0].all_overlaps_both(s[rows], e[rows], rows.astype(np.int64))
               for k, rows in _groups(q, names).items() if k in idx]
        return (np.concatenate([a for a, _ in got]) if got else np.zeros(0, np.int64),
                np.concatenate([b for _, b in got]) if got else np.zeros(0, np.int64))

    def count(q, idx):   # NCLS has no counting query: all pairs + bincount
        return np.bincount(pairs(q, idx)[0], minlength=len(q))

    def coverage(q, idx):  # NCLS.coverage sums clipped hits, so it runs on the merged runs
        s, e = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
        covered = np.zeros(len(q), np.int64)
        for k, rows in _groups(q, names).items():
            if k in idx:
                covered[rows] = idx[k][1].coverage(s[rows], e[rows], np.arange(len(rows)))
        return _cov_frame(q, count(q, idx), covered)

    return {"count": ("index", build, lambda q, idx: q.assign(count=count(q, idx)), _norm_count),
            "overlap": ("index", build, lambda q, idx: _pairs_frame(q, idx["frame"], *pairs(q, idx)), _norm_pairs),
            "coverage": ("index", lambda d: build(d, union=True), coverage, _norm_cov)}


# ----------------------------------------------------------------------------- superintervals
def _drop(a, b):
    # merge_overlaps' default combine nests the merged values in tuples: quadratic in the run
    # length (10 s for 100k intervals at L = 1e4, 0.1 s with this documented `combine`)
    return None


def superintervals_peer(names):
    from superintervals import IntervalMap
    i32 = lambda x: np.ascontiguousarray(x, dtype=np.int32)    # the library takes int32 only

    def build(d, union=False, ids=False):
        s, e = d["start"].to_numpy(np.int64), d["end"].to_numpy(np.int64)
        out = {}
        for k, rows in _groups(d, names).items():
            # closed coordinates: [s, e) is stored as [s, e - 1]; search_idxs numbers the map's
            # own sorted order, so the row ids the overlap join needs are stored as values
            m = IntervalMap.from_arrays(i32(s[rows]), i32(e[rows] - 1), rows.tolist() if ids else None)
            # coverage() sums min(end) - max(start) over merged runs stored half-open as given
            u = IntervalMap.from_arrays(i32(s[rows]), i32(e[rows])).merge_overlaps(_drop) if union else None
            out[k] = (m, rows, u)
        out["frame"] = d
        return out

    def count(q, idx):
        return _per_chrom(q, idx, names, lambda m, s, e: m[0].count_batch(i32(s), i32(e - 1)))

    def pairs(q, idx):
        s, e = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
        qi, dj = [], []
        for k, rows in _groups(q, names).items():
            if k in idx:
                hits = idx[k][0].search_values_batch(i32(s[rows]), i32(e[rows] - 1))  # list of lists
                n = np.fromiter(map(len, hits), np.int64, len(hits))
                qi.append(np.repeat(rows, n))
                dj.append(np.fromiter((j for h in hits for j in h), np.int64, int(n.sum())))
        return np.concatenate(qi), np.concatenate(dj)

    def coverage(q, idx):  # no batch coverage call: one call per query
        s, e = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
        covered = np.zeros(len(q), np.int64)
        for k, rows in _groups(q, names).items():
            if k in idx:
                u = idx[k][2]
                covered[rows] = [u.coverage(a, b)[1] for a, b in zip(s[rows].tolist(), e[rows].tolist())]
        return _cov_frame(q, count(q, idx), covered)

    def merge(q, d):   # stored half-open as given, book-ended runs touch and merge (bedtools)
        s, e = d["start"].to_numpy(np.int64), d["end"].to_numpy(np.int64)
        rows_out = []
        for k, rows in _groups(d, names).items():
            m = IntervalMap.from_arrays(i32(s[rows]), i32(e[rows])).merge_overlaps(_drop)
            rows_out += [(names[k], *m.at(i)[:2]) for i in range(m.size())]
        return pd.DataFrame(rows_out, columns=["chrom", "start", "end"])

    return {"count": ("index", build, lambda q, idx: q.assign(count=count(q, idx)), _norm_count),
            "overlap": ("index", lambda d: build(d, ids=True),
                        lambda q, idx: _pairs_frame(q, idx["frame"], *pairs(q, idx)), _norm_pairs),
            "coverage": ("index", lambda d: build(d, union=True), coverage, _norm_cov),
            "merge": ("call", merge,
                      lambda r, q, d, n: c.norm_merge(_col(r, "chrom"), _col(r, "start"), _col(r, "end"), n))}


# ------------------------------------------------------------------------------------ AIList
def ailist_peer(names):
    """The Augmented Interval List (Feng, Ratan & Sheffield 2019; the `ailist` package, C): one
    list per chromosome built by user glue (from_array + construct, timed as the build), then its
    batch queries, nhits_from_array (count) and intersect_ids (pairs; ids are the data rows).
    Half-open: [s, e) meets [a, b) iff s < b and a < e, as bedtools counts."""
    from ailist import AIList
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)

    def build(d):
        s, e = d["start"].to_numpy(np.int64), d["end"].to_numpy(np.int64)
        out = {}
        for k, rows in _groups(d, names).items():
            a = AIList.from_array(i64(s[rows]), i64(e[rows]), i64(rows))
            a.construct()
            out[k] = a
        out["frame"] = d
        return out

    def count(q, idx):
        return _per_chrom(q, idx, names, lambda a, s, e: a.nhits_from_array(i64(s), i64(e)))

    def pairs(q, idx):
        s, e = q["start"].to_numpy(np.int64), q["end"].to_numpy(np.int64)
        qi, dj = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for k, rows in _groups(q, names).items():
            if k in idx:
                a, b = idx[k].intersect_ids(i64(s[rows]), i64(e[rows]))
                qi.append(rows[np.asarray(a, np.int64)])
                dj.append(np.asarray(b, np.int64))
        return np.concatenate(qi), np.concatenate(dj)

    return {"count": ("index", build, lambda q, idx: q.assign(count=count(q, idx)), _norm_count),
            "overlap": ("index", build, lambda q, idx: _pairs_frame(q, idx["frame"], *pairs(q, idx)), _norm_pairs)}


# ----------------------------------------------------------------------------------- bioframe
def bioframe_peer():
    import bioframe as bf
    return {"count": ("call", bf.count_overlaps, _norm_count),
            "overlap": ("call", lambda q, d: bf.overlap(q, d, how="inner"), _norm_pairs),
            # covered bases only ("coverage"), no count / fraction
            "coverage": ("call", bf.coverage,
                         lambda r, q, d, n: c.norm_coverage(_col(r, "id"), _col(r, "coverage"), len(q))),
            "merge": ("call", lambda q, d: bf.merge(d),
                      lambda r, q, d, n: c.norm_merge(_col(r, "chrom"), _col(r, "start"), _col(r, "end"), n)),
            # k=1, distance = half-open gap (book-ended 0)
            "closest1": ("call", bf.closest, lambda r, q, d, n: c.norm_closest1(_col(r, "id"), _col(r, "id_")))}


# --------------------------------------------------------------------------------- pybedtools
def pybedtools_peer(presorted):
    """bedtools 2.30 through pybedtools: the frames are written to temp BED files (timed: a user
    starting from DataFrames pays it), the answer read back with BedTool.to_dataframe.  With
    `presorted` (both inputs sorted by chrom, start) intersect and coverage get -sorted (the
    chromsweep algorithm, bedtools' fastest); merge and closest need sorted input, so they sort."""
    from pybedtools import BedTool
    bt = lambda df: BedTool.from_dataframe(df[["chrom", "start", "end", "id"]])
    cols = lambda *x: ["chrom", "start", "end", "id", *x]
    fast = {"sorted": True} if presorted else {}
    srt = (lambda b: b) if presorted else (lambda b: b.sort())

    def read(b, names):
        return b.to_dataframe(names=names, disable_auto_names=True, header=None)

    return {
        "count": ("call", lambda q, d: read(bt(q).intersect(bt(d), c=True, **fast), cols("count")), _norm_count),
        "overlap": ("call", lambda q, d: read(bt(q).intersect(bt(d), wa=True, wb=True, **fast),
                                              cols() + [x + "_" for x in cols()]), _norm_pairs),
        "coverage": ("call", lambda q, d: read(bt(q).coverage(bt(d), **fast),
                                               cols("count", "covered", "length", "fraction")), _norm_cov),
        "merge": ("call", lambda q, d: read(srt(bt(d)).merge(), ["chrom", "start", "end"]),
                  lambda r, q, d, n: c.norm_merge(_col(r, "chrom"), _col(r, "start"), _col(r, "end"), n)),
        "closest": ("call", lambda q, d: read(srt(bt(q)).closest(srt(bt(d)), d=True, t="all"),
                                              cols() + [x + "_" for x in cols()] + ["distance"]),
                    lambda r, q, d, n: c.norm_closest(_col(r, "id"), _col(r, "id_"), _col(r, "distance"))),
        "closest1": ("call", lambda q, d: read(srt(bt(q)).closest(srt(bt(d)), d=True, t="first"),
                                               cols() + [x + "_" for x in cols()] + ["distance"]),
                     lambda r, q, d, n: c.norm_closest1(_col(r, "id"), _col(r, "id_"))),
    }
