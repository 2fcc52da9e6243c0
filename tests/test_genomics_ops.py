"""`map`, `signal_stats`, `cluster`, `complement`, `jaccard`, `window` and `slop` of
`ctensor.apps.genomics` against bedtools 2.30 through pybedtools: the real chr1 tracks (GERP
elements and RefSeq exons), synthetic sets on two chromosomes, hypothesis-made small sets with
zero-length and touching intervals, and bad input.  `signal_stats` is checked against bedtools
map of the track cut into single bases (so bedtools' plain sum is the length-weighted one) and
against a per-base numpy expansion."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pybedtools
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctensor
from ctensor.apps import genomics as g

from .genomics_oracle import bed, cleanup_bedtools_tempfiles, synthetic  # noqa: F401 (autouse fixture)

DATA = Path(__file__).resolve().parents[1] / "ctensor" / "examples" / "data"
EXONS = DATA / "refseq.chr1.exons.bed.gz"
GERP = DATA / "gerp.chr1.bed.gz"
CORE = ["chrom", "start", "end"]
OPS = ["sum", "count", "mean", "min", "max"]


def sort(df):
    return df.sort_values(["chrom", "start", "end"], kind="stable").reset_index(drop=True)


def bt(df, extra=()):
    return pybedtools.BedTool.from_dataframe(df[CORE + list(extra)])


def real(path, n=None):
    df = g.read_intervals(str(path), "data")
    return df if n is None else df.iloc[:n]


def scored(df, seed):
    """df with an integer `score` column (what bedtools map aggregates)."""
    return df.assign(score=np.random.default_rng(seed).integers(-50, 1000, len(df)))


def genome_of(*frames, pad=1000):
    ends = pd.concat([f[["chrom", "end"]] for f in frames]).groupby("chrom")["end"].max() + pad
    return {str(c): int(e) for c, e in ends.items()}


def genome_file(tmp_path, sizes):
    p = tmp_path / "genome.txt"
    p.write_text("".join(f"{c}\t{n}\n" for c, n in sizes.items()))
    return str(p)


# ------------------------------------------------------------------------------------ map
def bedtools_map(q, d, ops):
    qs, ds = sort(q.assign(qid=np.arange(len(q)))), sort(d)
    res = bt(qs, ["qid"]).map(bt(ds, ["score"]), c=",".join(["4"] * len(ops)), o=",".join(ops))
    got = pd.read_csv(res.fn, sep="\t", header=None, names=CORE + ["qid"] + ops, na_values=".")
    return got.sort_values("qid").reset_index(drop=True)


def check_map(q, d, ops=OPS, data=None):
    ours = g.map(q, d if data is None else data, "score", ops).reset_index(drop=True)
    assert len(ours) == len(q)
    if not len(d) or not len(q):        # bedtools refuses an empty file: no overlaps, by definition
        assert (ours["score_count"] == 0).all() and ours[[f"score_{op}" for op in ops if op != "count"]].isna().all().all()
        return
    want = bedtools_map(q, d, ops)
    for op in ops:
        col = ours[f"score_{op}"].to_numpy(np.float64)
        # bedtools prints a mean with 7 decimals
        np.testing.assert_allclose(col, want[op].to_numpy(np.float64), rtol=1e-12, atol=1e-7 if op == "mean" else 0,
                                   err_msg=op)
    if "count" in ops:
        assert ours["score_count"].dtype == np.int64


@pytest.mark.parametrize("query, data", [(GERP, EXONS), (EXONS, GERP)], ids=["gerp-exons", "exons-gerp"])
def test_map_real_tracks(query, data):
    check_map(real(query), scored(real(data), 1))


def test_map_synthetic_two_chromosomes_and_ranks_plan():
    q = synthetic(3000, 2000, seed=3, chroms=("chr1", "chr2"), size=2_000_000)
    d = scored(synthetic(3000, (1, 20000), seed=4, chroms=("chr1", "chr2", "chr3"), size=2_000_000), 5)
    check_map(q, d)
    idx = g.index(d)
    idx.pair_plan = "ranks"          # the rank plan of the pair test (crowded windows)
    check_map(q, d, data=idx)


def _rows(data: bool):
    def fix(t):                       # bedtools 2.30 crashes on [0, 0) in the -b file
        c, s, n = t
        s = 1 if data and s == 0 and n == 0 else s
        return (c, s, s + n)
    length = st.one_of(st.just(0), st.integers(0, 30))
    item = st.tuples(st.sampled_from(["chr1", "chr2"]), st.integers(0, 200), length).map(fix)
    return st.lists(item, max_size=25)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrows=_rows(False), drows=_rows(True), scores=st.lists(st.integers(-9, 9), min_size=25, max_size=25))
def test_property_map_window_cluster_against_bedtools(qrows, drows, scores):
    q, d = bed(qrows), bed(drows)
    d = d.assign(score=scores[:len(d)])
    check_map(q, d)
    check_window(q, d, 7, 7)
    check_window(q, d, 0, 3)
    if len(d):
        check_cluster(d, 0)
        check_cluster(d, 4)


# ------------------------------------------------------------------------------------ window
def check_window(q, d, left, right):
    qi = q.assign(qid=np.arange(len(q)))
    di = d[CORE].assign(did=np.arange(len(d)))
    res = bt(qi, ["qid"]).window(bt(di, ["did"]), l=left, r=right)
    want = pd.read_csv(res.fn, sep="\t", header=None, names=CORE + ["qid"] + [c + "_" for c in CORE] + ["did"]) \
        if res.count() else pd.DataFrame({"qid": [], "did": []}, dtype=np.int64)
    got = g.window(qi, di, left=left, right=right)
    assert list(got.columns) == list(qi.columns) + [c + "_" for c in di.columns]
    pairs = lambda f, a, b: sorted(zip(f[a].astype(int), f[b].astype(int)))
    assert pairs(got, "qid", "did_") == pairs(want, "qid", "did")
    assert (np.diff(got["qid"].to_numpy()) >= 0).all()          # query order


def test_window_real_tracks():
    check_window(real(GERP, 20000), real(EXONS), 1000, 1000)
    check_window(real(EXONS, 5000), real(GERP), 0, 250)


# ------------------------------------------------------------------------------------ cluster
def check_cluster(d, distance):
    ds = sort(d[CORE])
    res = bt(ds).cluster(d=distance)
    want = pd.read_csv(res.fn, sep="\t", header=None, names=CORE + ["cluster"])
    got = g.cluster(ds, distance)
    np.testing.assert_array_equal(got["cluster"].to_numpy(), want["cluster"].to_numpy())
    # input order kept: the same ids when the rows come shuffled
    perm = np.random.default_rng(0).permutation(len(ds))
    shuffled = g.cluster(ds.iloc[perm], distance)
    np.testing.assert_array_equal(shuffled["cluster"].to_numpy(), got["cluster"].to_numpy()[perm])
    assert list(shuffled.index) == list(ds.index[perm])


@pytest.mark.parametrize("path", [EXONS, GERP], ids=["exons", "gerp"])
@pytest.mark.parametrize("distance", [0, 100])
def test_cluster_real_tracks(path, distance):
    check_cluster(real(path), distance)


# ------------------------------------------------------------------------------------ complement, slop
def test_complement_and_slop_against_bedtools(tmp_path):
    d = pd.concat([real(EXONS, 3000), synthetic(500, (0, 300), seed=8, chroms=("chr2", "chr3"), size=100_000)])
    sizes = {"chr3": 120_000, "chr1": int(d["end"].max()) + 5000, "chrM": 16569, "chr2": 100_500}
    gf = genome_file(tmp_path, sizes)
    order = {c: k for k, c in enumerate(sizes)}
    ds = d.sort_values(["chrom", "start"], key=lambda s: s.map(order) if s.name == "chrom" else s, kind="stable")
    want = pd.read_csv(bt(ds).complement(g=gf).fn, sep="\t", header=None, names=CORE)
    for genome in (gf, sizes, pd.Series(sizes), pd.DataFrame({"chrom": list(sizes), "length": list(sizes.values())})):
        got = g.complement(d, genome)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    for kw, flags in [({"both": 250}, {"b": 250}), ({"left": 10, "right": 3000}, {"l": 10, "r": 3000})]:
        want = pd.read_csv(bt(d).slop(g=gf, **flags).fn, sep="\t", header=None, names=CORE)
        got = g.slop(d, sizes, **kw)
        np.testing.assert_array_equal(got[CORE[1:]].to_numpy(), want[CORE[1:]].to_numpy())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(True))
def test_property_complement_against_bedtools(rows, tmp_path_factory):
    d = bed(rows)
    sizes = {"chr1": 260, "chr2": 240, "chr3": 5}
    gf = genome_file(tmp_path_factory.mktemp("g"), sizes)
    want = pd.read_csv(bt(sort(d)).complement(g=gf).fn, sep="\t", header=None, names=CORE)
    got = g.complement(d, sizes)
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())


# ------------------------------------------------------------------------------------ jaccard
def check_jaccard(a, b):
    want = bt(sort(a)).jaccard(bt(sort(b)))
    got = g.jaccard(a, b).iloc[0]
    assert int(got["intersection"]) == int(want["intersection"])
    assert int(got["union"]) == int(want["union"])
    assert int(got["n_intersections"]) == int(want["n_intersections"])
    assert got["jaccard"] == pytest.approx(float(want["jaccard"]), abs=1e-6)


def test_jaccard_real_and_synthetic():
    check_jaccard(real(GERP), real(EXONS))
    check_jaccard(synthetic(2000, (1, 3000), seed=1, chroms=("chr1", "chr2"), size=1_000_000),
                  synthetic(2000, (1, 3000), seed=2, chroms=("chr2", "chr3"), size=1_000_000))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arows=_rows(True), brows=_rows(True))
def test_property_jaccard_against_bedtools(arows, brows):
    a, b = bed(arows), bed(brows)
    if len(a) and len(b):
        check_jaccard(a, b)


# ------------------------------------------------------------------------------------ signal_stats
def per_base(sig):
    """The track cut into single bases [p, p+1), each with its interval's value."""
    n = (sig["end"] - sig["start"]).to_numpy()
    start = np.concatenate([np.arange(s, e) for s, e in zip(sig["start"], sig["end"])])
    return pd.DataFrame({"chrom": np.repeat(sig["chrom"].to_numpy(), n), "start": start, "end": start + 1,
                         "score": np.repeat(sig["value"].to_numpy(), n)})


def random_track(seed, n=300, chroms=("chr1", "chr2")):
    rng = np.random.default_rng(seed)
    parts = []
    for c in chroms:
        edges = np.sort(rng.choice(20_000, 2 * n, replace=False))
        keep = rng.random(n) < 0.8
        parts.append(pd.DataFrame({"chrom": c, "start": edges[0::2][keep], "end": edges[1::2][keep],
                                   "value": np.round(rng.normal(0, 3, n)[keep], 3)}))
    return pd.concat(parts, ignore_index=True)


def test_signal_stats_against_bedtools_per_base_map():
    sig = random_track(0)
    q = synthetic(400, (0, 700), seed=9, chroms=("chr1", "chr2", "chr3"), size=21_000)
    got = g.signal_stats(q, sig).reset_index(drop=True)
    want = bedtools_map(q, per_base(sig), ["sum", "count"])
    # bedtools widens a zero-length query; signal_stats measures its bases: none
    nonzero = (q["end"] > q["start"]).to_numpy()
    np.testing.assert_allclose(got["sum"].to_numpy()[nonzero], want["sum"].fillna(0).to_numpy()[nonzero], atol=1e-9)
    np.testing.assert_array_equal(got["covered"].to_numpy()[nonzero], want["count"].to_numpy()[nonzero])
    assert (got.loc[~nonzero, ["sum", "covered", "size"]].to_numpy() == 0).all()
    size = (q["end"] - q["start"]).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_allclose(got["mean0"], np.where(size > 0, got["sum"] / size, np.nan))
        np.testing.assert_allclose(got["mean"], np.where(got["covered"] > 0, got["sum"] / got["covered"], np.nan))


def test_signal_stats_numpy_reference_and_track_order():
    sig = random_track(1, chroms=("chr2",))
    q = pd.DataFrame({"chrom": "chr2", "start": [0, 5, 100, 19_990], "end": [20_000, 5, 2500, 20_000]})
    track = np.zeros(20_000)
    for s, e, v in zip(sig["start"], sig["end"], sig["value"]):
        track[s:e] = v
    got = g.signal_stats(q, sig.sample(frac=1, random_state=0))        # any row order
    for k, (s, e) in enumerate(zip(q["start"], q["end"])):
        assert got["sum"].iloc[k] == pytest.approx(track[s:e].sum(), abs=1e-9)


def test_errors_name_the_argument_and_row():
    d = bed([("chr1", 10, 20), ("chr1", 30, 40)]).assign(score=["1", "x"])
    with pytest.raises(ctensor.FormatError, match="column 'score' row 1"):
        g.map(d, d, "score")
    with pytest.raises(ctensor.FormatError, match="ops"):
        g.map(d, d.assign(score=1), "score", "median")
    with pytest.raises(ctensor.FormatError, match="overlaps"):
        g.signal_stats(d, bed([("chr1", 0, 10), ("chr1", 5, 12)]).assign(value=1.0))
    with pytest.raises(ctensor.FormatError, match="not in the genome"):
        g.complement(d, {"chr2": 100})
    with pytest.raises(ctensor.FormatError, match="is 35 bases long"):
        g.slop(d, {"chr1": 35}, both=1)
    with pytest.raises(ctensor.FormatError, match="distance"):
        g.cluster(d, -1)
    with pytest.raises(ctensor.FormatError, match="w"):
        g.window(d, d, -5)
    with pytest.raises(TypeError, match="genome"):
        g.complement(d, 100)


# ------------------------------------------------------------------------------------ closest -k
def check_closest_k(q, d, k, ties):
    qs = sort(q).assign(qid=lambda f: np.arange(len(f)))
    ds = sort(d).assign(did=lambda f: np.arange(len(f)))
    res = bt(qs, ["qid"]).closest(bt(ds, ["did"]), d=True, k=k, t=ties)
    names = CORE + ["qid"] + [c + "_" for c in CORE] + ["did", "distance"]
    want = pd.read_csv(res.fn, sep="\t", header=None, names=names, na_values=".")
    got = g.closest(qs, ds, ties=ties, k=k, return_index=True)
    assert (np.diff(got["index"].to_numpy()) >= 0).all()
    # within a query: distance order
    dist = got["distance"].fillna(-1).to_numpy()
    same = got["index"].to_numpy()[1:] == got["index"].to_numpy()[:-1]
    assert (dist[1:][same] >= dist[:-1][same]).all()
    key = lambda f, q, s, dd: sorted(zip(f[q].astype(int), f[s].fillna(-1).astype(int), f[dd].fillna(-1).astype(int)))
    want = want.assign(start_=want["start_"].fillna(-1))
    got = got.assign(s=got["start_"].astype("Int64").fillna(-1))
    # bedtools picks among ties of equal start with an unstable sort: compare the data starts
    assert key(got, "index", "s", "distance") == key(want, "qid", "start_", "distance")
    if ties == "all":
        assert sorted(zip(got["index"], got["index_"])) == sorted(zip(want["qid"], want["did"].fillna(-1).astype(int)))


@pytest.mark.parametrize("ties", ["all", "first", "last"])
@pytest.mark.parametrize("k", [2, 5])
def test_closest_k_real_tracks(k, ties):
    check_closest_k(real(GERP, 6000), real(EXONS, 8000), k, ties)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrows=_rows(False), drows=_rows(True), k=st.integers(1, 6), ties=st.sampled_from(["all", "first", "last"]))
def test_property_closest_k_against_bedtools(qrows, drows, k, ties):
    q, d = bed(qrows), bed(drows)
    if len(q) and len(d):
        check_closest_k(q, d, k, ties)


# ------------------------------------------------------------------------------------ unsorted queries
@pytest.mark.parametrize("op, kw", [("count_overlaps", {}), ("overlap", {"return_index": True}), ("coverage", {}),
                                    ("intersect", {}), ("subtract", {}), ("closest", {"return_index": True}),
                                    ("closest", {"k": 4}), ("map", {"column": "score", "ops": ["sum", "max"]})])
def test_unsorted_queries_run_sorted_give_the_same_rows(op, kw, monkeypatch):
    """Queries out of start order run sorted (`workers.split_rows(order_by=)`) and come back in
    their order: the same frame as running them as given, with and without workers."""
    from ctensor.apps import workers
    q = synthetic(3000, (0, 500), seed=31, chroms=("chr1", "chr2"), size=200_000)     # unsorted
    d = scored(synthetic(2000, (1, 800), seed=32, chroms=("chr1", "chr2"), size=200_000), 3)
    fn = getattr(g, op)
    monkeypatch.setattr(workers, "SORT_AT", 10**9)
    want = fn(q, d, **kw)
    monkeypatch.setattr(workers, "SORT_AT", 1)
    pd.testing.assert_frame_equal(fn(q, d, **kw), want)
    monkeypatch.setattr(workers, "MIN_CHUNK", 100)
    pd.testing.assert_frame_equal(fn(q, d, workers=3, **kw), want)


# ------------------------------------------------------------------------------------ other frame kinds
@pytest.mark.parametrize("op, kw", [("count_overlaps", {}), ("overlap", {}), ("coverage", {}), ("closest", {}),
                                    ("map", {"column": "score", "ops": "mean"}), ("window", {"w": 10})])
def test_pyarrow_backed_and_polars_frames(op, kw):
    pl = pytest.importorskip("polars")
    q = real(GERP, 3000)
    d = scored(real(EXONS, 3000), 4)
    fn = getattr(g, op)
    want = fn(q, d, **kw)
    arrow = fn(q.convert_dtypes(dtype_backend="pyarrow"), d.convert_dtypes(dtype_backend="pyarrow"), **kw)
    pd.testing.assert_frame_equal(arrow, want, check_dtype=False)
    got = fn(pl.from_pandas(q), pl.from_pandas(d), **kw)
    assert isinstance(got, pl.DataFrame)
    pd.testing.assert_frame_equal(got.to_pandas(), want.reset_index(drop=True), check_dtype=False)
    assert len(g.merge(pl.from_pandas(d))) == len(g.merge(d))


def test_grid_too_large_for_memory_is_refused():
    """Issue 31 (c): a cell width whose grid cannot fit in memory is refused with a message, before
    numpy tries to allocate terabytes."""
    d = bed([("chr1", 0, 10**12), ("chr1", 10, 10**12 - 5)])
    with pytest.raises(ValueError, match="cell: a grid of 1-base cells .* GiB, more than this machine"):
        g.index(d, layout="grid", cell=1)
    assert g.index(d, layout="grid", cell=10**9).count_overlaps([5], [6]).tolist() == [1]


def _closest_frame_oracle(q, data, qi, dj, dist, return_index):
    """closest's frame by pandas itself: iloc of the query, the data cast to nullable integers and
    reindexed (label -1 absent: missing), concat, an Int64 distance with NA where dj is -1."""
    missing = dj < 0
    nullable = {c: (data[c].dtype if isinstance(data[c].dtype, pd.api.extensions.ExtensionDtype)
                    else f"{'U' if data[c].dtype.kind == 'u' else ''}Int{data[c].dtype.itemsize * 8}")
                for c in data.columns if pd.api.types.is_integer_dtype(data[c])}
    right = data.reset_index(drop=True).astype(nullable).reindex(np.where(missing, -1, dj)).reset_index(drop=True)
    out = pd.concat([q.iloc[qi].reset_index(drop=True), right.add_suffix("_")], axis=1)
    out["distance"] = pd.array(np.where(missing, 0, dist), dtype="Int64")
    out.loc[missing, "distance"] = pd.NA
    if return_index:
        out.insert(0, "index_", dj)
        out.insert(0, "index", qi)
    return out


@pytest.mark.parametrize("chrom_dtype", ["str", "object", "category"])
@pytest.mark.parametrize("with_missing", [False, True])
@pytest.mark.parametrize("return_index", [False, True])
def test_closest_frame_equals_pandas_construction(chrom_dtype, with_missing, return_index):
    """genome_closest_frame.closest_frame (numpy takes, masked nullable integers, the query's
    chromosome names reused) equals the pandas construction: columns, dtypes, values and missing
    values, for integer columns of every width and sign, floats, bools, strings, nullable and
    categorical columns; and the result's columns share no writable memory (a write to one leaves
    the others and the inputs as they were)."""
    from ctensor.apps.genome_closest_frame import closest_frame
    rng = np.random.default_rng(3)
    n, m, k = 50, 40, 200
    names = np.array(["chr1", "chr2", "chr10"])
    q = pd.DataFrame({"chrom": pd.Series(names[rng.integers(0, 3, n)]).astype(chrom_dtype),
                      "start": rng.integers(0, 100, n), "end": rng.integers(100, 200, n),
                      "name": pd.array([f"q{i}" for i in range(n)], dtype="str")})
    dc = rng.integers(0, 3, m)
    data = pd.DataFrame({"chrom": pd.Series(names[dc]).astype(chrom_dtype),
                         "start": rng.integers(0, 100, m), "end": rng.integers(100, 200, m),
                         "u64": rng.integers(0, 2**63, m, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
                         "i32": rng.integers(-5, 5, m).astype(np.int32), "f32": rng.random(m).astype(np.float32),
                         "flag": rng.random(m) < 0.5, "n": pd.array(rng.integers(0, 9, m), dtype="Int64"),
                         "obj": np.array([f"o{i}" for i in range(m)], dtype=object)})
    qi = np.sort(rng.integers(0, n, k))
    # a pair's data interval lies on the query's chromosome, as closest's pairs do
    qcode = pd.Series(q["chrom"]).astype(str).map({s: i for i, s in enumerate(names)}).to_numpy()
    dj = np.array([rng.choice(np.flatnonzero(dc == qcode[i])) if (dc == qcode[i]).any() else -1 for i in qi])
    if with_missing:
        dj[rng.random(k) < 0.2] = -1
    dist = np.where(dj < 0, -1, rng.integers(0, 50, k)).astype(np.int64)
    got = closest_frame(q, data, qi, dj, dist, return_index)
    want = _closest_frame_oracle(q, data, qi, dj, dist, return_index)
    pd.testing.assert_frame_equal(got, want)
    # writes to the result's columns change no other column and neither input
    q0, data0, snap = q.copy(deep=True), data.copy(deep=True), got.copy(deep=True)
    written = ["i32_", "start_", "distance"] + (["chrom_"] if chrom_dtype != "category" else [])
    for c in written:
        got.loc[0, c] = "chrZ" if c == "chrom_" else 99
    for c in got.columns:
        if c not in written:
            pd.testing.assert_series_equal(got[c], snap[c])
    assert got.loc[0, written].tolist() == [99, 99, 99] + (["chrZ"] if "chrom_" in written else [])
    pd.testing.assert_frame_equal(q, q0)
    pd.testing.assert_frame_equal(data, data0)


@pytest.mark.parametrize("ties", ["all", "first", "last"])
@pytest.mark.parametrize("zero", [False, True])
def test_nearest_in_row_order_equals_start_order(ties, zero):
    """genome_closest.nearest on unsorted queries (searches in start order, tie pairs by the rank
    einsum in row order) returns what it returns for the same queries sorted, rows mapped back:
    the same pairs, by row, each row's in data start order; queries on a chromosome without data
    get their (-1, -1) row.  (g.closest itself is checked against bedtools above.)"""
    from ctensor.apps import genome_closest as gc
    rng = np.random.default_rng(7)
    n, m = 3000, 2000
    dchrom = np.array(["chr1", "chr2"])[rng.integers(0, 2, m)]
    ds = rng.integers(0, 200_000, m)
    de = ds + rng.integers(1, 500, m)
    if zero:                                        # zero-length data intervals: the lexsort path
        de = np.where(rng.random(m) < 0.1, ds, de)
    idx = g.index(pd.DataFrame({"chrom": dchrom, "start": ds, "end": de}))
    qchrom = np.array(["chr1", "chr2", "chr3"])[rng.integers(0, 3, n)]
    qs = rng.integers(0, 200_000, n)
    qe = qs + rng.integers(0, 300, n)
    gs, ge, _ = idx.genome(qchrom, qs, qe)
    assert gc._visit(gs) is not None                # the row-order path runs
    qi, dj, dist = gc.nearest(idx, gs, ge, ties)
    p = np.argsort(gs, kind="stable")
    assert gc._visit(gs[p]) is None
    sq, sd, sdist = gc.nearest(idx, gs[p], ge[p], ties)
    back = np.argsort(p[sq], kind="stable")         # rows mapped back, each row's pairs kept in order
    np.testing.assert_array_equal(qi, p[sq][back])
    np.testing.assert_array_equal(dj, sd[back])
    np.testing.assert_array_equal(dist, sdist[back])
    assert (dj[qchrom[qi] == "chr3"] == -1).all() and np.array_equal(np.unique(qi), np.arange(n))


def test_closest_frame_with_empty_data_equals_pandas_construction():
    """No data at all: every query gets one row of missing data columns and distance."""
    from ctensor.apps.genome_closest_frame import closest_frame
    q = pd.DataFrame({"chrom": ["chr1", "chr2"], "start": [1, 5], "end": [3, 9]})
    data = pd.DataFrame({"chrom": pd.array([], dtype="str"), "start": np.zeros(0, np.int64),
                         "end": np.zeros(0, np.int64), "score": np.zeros(0)})
    qi, dj, dist = np.arange(2), np.full(2, -1), np.full(2, -1)
    pd.testing.assert_frame_equal(closest_frame(q, data, qi, dj, dist, True),
                                  _closest_frame_oracle(q, data, qi, dj, dist, True))


@pytest.mark.parametrize("seed", range(3))
def test_first_tie_by_rank_equals_extremum_einsum(seed):
    """genome_closest._first_tie (one rank search over the running maximum of the ends) equals the
    extremum einsum map_min of j over the overlap candidates, on nested, touching and equal-start
    intervals over two chromosomes, for queries widened by their distance (each meets a tie)."""
    from ctensor.apps import genome_closest as gc
    from ctensor.apps.genome_sets import map_values
    rng = np.random.default_rng(seed)
    m, n = 1500, 2500
    ds = rng.integers(0, 30_000, m)
    de = ds + np.where(rng.random(m) < 0.05, rng.integers(1000, 8000, m), rng.integers(1, 60, m))
    idx = g.index(pd.DataFrame({"chrom": np.array(["chr1", "chr2"])[rng.integers(0, 2, m)], "start": ds, "end": de}))
    qs = rng.integers(0, 40_000, n)
    gs, ge, _ = idx.genome(np.array(["chr1", "chr2"])[rng.integers(0, 2, n)], qs, qs + rng.integers(1, 40, n))
    dist = gc._distance(idx, gs, ge)
    assert np.isfinite(dist).all()
    lo, hi = gs - dist, ge + dist
    want = map_values(idx, lo, hi, np.arange(idx.n, dtype=np.float64), "min")
    np.testing.assert_array_equal(gc._first_tie(idx, lo, hi), want.astype(np.int64))


def test_coverage_frame_is_query_assign():
    """coverage's frame is `query.assign(count=, covered=, length=, fraction=)` on the query read as
    `chrom, start, end, *extras`: the query's index and dtypes kept, a query column of an added
    name replaced where it stands, the others appended; writing into the result leaves the query
    as it was."""
    q = pd.DataFrame({"chrom": ["chr1", "chr1", "chr2"], "count": [7.5, 8.5, 9.5], "start": [0, 15, 3],
                      "end": [12, 15, 9], "tag": pd.array([1, None, 3], "Int64")}, index=[10, 20, 30])
    d = bed([("chr1", 5, 10), ("chr1", 8, 14), ("chr2", 100, 200)])
    got = g.coverage(q, d)
    want = q[["chrom", "start", "end", "count", "tag"]].assign(
        count=np.array([2, 0, 0]), covered=np.array([7, 0, 0]), length=np.array([12, 2, 6]),   # [15, 15) is [14, 16)
        fraction=np.array([7 / 12, 0.0, 0.0]))
    pd.testing.assert_frame_equal(got, want)
    got.loc[10, "tag"] = 99
    got.loc[20, "start"] = -5
    assert q.loc[10, "tag"] == 1 and q.loc[20, "start"] == 15
