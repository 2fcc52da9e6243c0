"""`ctensor.apps.genomics` against bedtools 2.30 through pybedtools (the oracle, in
`tests/genomics_oracle.py`): real tracks, synthetic sets, hand-written edge cases, a hypothesis
property test, bad input through the public functions, and kernel reuse.

Equality is exact after normalising row order (pairs and pieces: sorted multisets per query, query
order checked separately); the coverage fraction is compared to 1e-6 since bedtools prints 7 decimals.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pybedtools
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctensor
from ctensor.apps import genome_layout
from ctensor.apps import genomics as g
from ctensor.apps.bedio import MAX_COORD, read_intervals

from .genomics_oracle import bed, check, cleanup_bedtools_tempfiles, oracle, synthetic  # noqa: F401 (autouse fixture)

DATA = Path(__file__).resolve().parents[1] / "ctensor" / "examples" / "data"
EXONS = DATA / "refseq.chr1.exons.bed.gz"
GERP = DATA / "gerp.chr1.bed.gz"
SNPS = pybedtools.example_filename("snps.bed.gz")

PAIR_OPS = ["count_overlaps", "overlap", "any_overlap", "no_overlap", "coverage", "intersect", "subtract", "closest"]


# ------------------------------------------------------------------------------------ real data
_frames: dict = {}


def frame(path) -> pd.DataFrame:
    if path not in _frames:
        _frames[path] = read_intervals(str(path), "data")
    return _frames[path]


_indexes: dict = {}


def real_index(path) -> g.GenomeIndex:
    if path not in _indexes:
        _indexes[path] = g.index(str(path))
    return _indexes[path]


@pytest.mark.parametrize("op", PAIR_OPS)
@pytest.mark.parametrize("query, data", [(GERP, EXONS), (EXONS, GERP)], ids=["gerp-exons", "exons-gerp"])
def test_real_tracks(op, query, data):
    # query as a BED.gz path, data as a prebuilt GenomeIndex of a BED.gz path
    check(op, str(query), real_index(data), q=frame(query), d=frame(data))


def test_real_tracks_data_as_path():
    check("count_overlaps", str(GERP), str(EXONS), q=frame(GERP), d=frame(EXONS))


@pytest.mark.parametrize("path", [GERP, EXONS], ids=["gerp", "exons"])
def test_real_merge(path):
    check("merge", str(path), None, q=frame(path))


@pytest.mark.parametrize("op", ["count_overlaps", "any_overlap", "no_overlap"])
def test_snps_against_exons(op):
    # 800k SNPs on chr1 and chr21 (absent from the exons), 1564 of them zero-length
    ours, exp = check(op, SNPS, real_index(EXONS), q=frame(SNPS), d=frame(EXONS))
    if op == "count_overlaps":
        assert (ours.loc[ours["chrom"] == "chr21", "count"] == 0).all()
        assert ours["count"].sum() > 0


# ------------------------------------------------------------------------------------ synthetic
SYNTH = {
    "L100": dict(L=100), "L1000": dict(L=1000), "L10000": dict(L=10000),
    "multichrom": dict(L=(1, 5000), chroms=("chr1", "chr2", "chr3"), size=1_000_000),
}
_synth: dict = {}


def synth(name):
    if name not in _synth:
        kw = SYNTH[name]
        q = synthetic(20_000, seed=1, **kw)
        d = synthetic(20_000, seed=2, **kw)
        _synth[name] = q, d, g.index(d)
    return _synth[name]


@pytest.mark.parametrize("op", ["count_overlaps", "overlap", "any_overlap", "coverage", "intersect", "subtract",
                                "closest"])
@pytest.mark.parametrize("name", list(SYNTH))
def test_synthetic(name, op):
    q, d, idx = synth(name)
    check(op, q, idx, d=d)


@pytest.mark.parametrize("name", list(SYNTH))
def test_synthetic_merge(name):
    q, d, _ = synth(name)
    check("merge", pd.concat([q, d], ignore_index=True), None)


def test_array_inputs():
    q, d, _ = synth("L1000")
    qs, qe = q["start"].to_numpy()[:2000], q["end"].to_numpy()[:2000]
    ds, de = d["start"].to_numpy(), d["end"].to_numpy()
    ours = g.count_overlaps((qs, qe), (ds, de))                      # (start, end): chromosome chr1
    exp = oracle("count_overlaps", bed(zip(["chr1"] * len(qs), qs, qe)), bed(zip(["chr1"] * len(ds), ds, de)))
    assert ours["count"].tolist() == exp["count"].tolist()
    ours3 = g.count_overlaps(("chr1", qs, qe), (np.array(["chr1"] * len(ds)), ds, de))
    assert ours3["count"].tolist() == exp["count"].tolist()


# ------------------------------------------------------------------------------------ edge cases
EDGE = {
    "touching": ([("chr1", 10, 20), ("chr1", 0, 10), ("chr1", 30, 40)],
                 [("chr1", 20, 30)]),
    "nested": ([("chr1", 10, 100), ("chr1", 20, 30), ("chr1", 0, 300)],
               [("chr1", 20, 30), ("chr1", 40, 50), ("chr1", 5, 200), ("chr1", 22, 25)]),
    "identical": ([("chr1", 10, 20), ("chr1", 10, 20)],
                  [("chr1", 10, 20), ("chr1", 10, 20)]),
    "zero_in_query": ([("chr1", 0, 0), ("chr1", 5, 5), ("chr1", 20, 20), ("chr1", 19, 19),
                       ("chr1", 31, 31), ("chr1", 30, 30), ("chr1", 100, 100)],
                      [("chr1", 20, 30), ("chr1", 0, 3)]),
    "zero_in_data": ([("chr1", 10, 20), ("chr1", 21, 25), ("chr1", 0, 1), ("chr1", 30, 31),
                      ("chr1", 29, 30), ("chr1", 28, 29), ("chr1", 30, 30), ("chr1", 19, 21)],
                     [("chr1", 20, 20), ("chr1", 30, 30), ("chr1", 1, 1), ("chr1", 30, 30)]),
    "zero_both": ([("chr1", 5, 5), ("chr1", 6, 6), ("chr1", 7, 7), ("chr1", 8, 8), ("chr1", 0, 0)],
                  [("chr1", 6, 6), ("chr1", 1, 1)]),
    "query_chrom_absent": ([("chrX", 10, 20), ("chr1", 10, 20), ("chr2", 0, 5), ("chrY", 0, 0)],
                           [("chr1", 15, 25), ("chr10", 0, 100)]),
    "data_chrom_absent": ([("chr1", 10, 20), ("chr1", 50, 60)],
                          [("chr5", 10, 20), ("chr1", 15, 55), ("chrUn_gl000220", 0, 9), ("chr2", 1, 2)]),
    "unsorted_multichrom": ([("chr2", 5, 50), ("chr10", 0, 9), ("chr1", 40, 41), ("chr2", 0, 6),
                             ("chr1", 0, 1000)],
                            [("chr10", 3, 4), ("chr2", 45, 46), ("chr1", 40, 60), ("chr2", 5, 6),
                             ("chr1", 999, 1001), ("chr2", 49, 70)]),
    # closest works on the runs of the data's union: nested, touching (one run) and zero-length data,
    # queries inside a run, in gaps nearer either side, touching a run, past the last one
    "union_runs": ([("chr1", 50, 60), ("chr1", 115, 120), ("chr1", 120, 125), ("chr1", 136, 150),
                    ("chr1", 190, 195), ("chr1", 110, 110), ("chr1", 135, 136), ("chr1", 300, 310),
                    ("chr1", 5, 5), ("chr2", 7, 9)],
                   [("chr1", 0, 100), ("chr1", 10, 20), ("chr1", 100, 110), ("chr1", 130, 135),
                    ("chr1", 131, 132), ("chr1", 200, 200), ("chr1", 140, 141), ("chr2", 1, 3), ("chr2", 3, 5)]),
    # bedtools' binning stops at 2**29; beyond that see test_coordinates_beyond_bedtools
    "large_coordinates": ([("chr1", 2**29 - 20, 2**29 - 10), ("chr1", 2**29 - 6, 2**29 - 5)],
                          [("chr1", 2**29 - 15, 2**29 - 1), ("chr1", 2**29 - 5, 2**29 - 5)]),
    "empty_query": ([], [("chr1", 10, 20), ("chr1", 30, 30)]),
    "empty_data": ([("chr1", 10, 20), ("chr1", 5, 5), ("chr2", 0, 0)], []),
    "both_empty": ([], []),
}


@pytest.mark.parametrize("op", PAIR_OPS)
@pytest.mark.parametrize("case", list(EDGE))
def test_edge_cases(case, op):
    q, d = (bed(rows) for rows in EDGE[case])
    check(op, q, d)


def test_edge_semantics_spelled_out():
    """The bedtools rules the edge cases rely on, stated directly (bedtools agrees: see above)."""
    q = bed([("chr1", 10, 20), ("chr1", 20, 20), ("chr1", 5, 5), ("chrX", 0, 1)])
    d = bed([("chr1", 20, 30)])
    assert g.count_overlaps(q, d)["count"].tolist() == [0, 1, 0, 0]      # touching: no overlap
    cov = g.coverage(q, d)
    assert cov["length"].tolist() == [10, 2, 2, 1]                      # zero-length counts 2
    sub = g.subtract(q, d)
    # [20, 20) acts as [19, 21), which [20, 30) does not wholly cover: kept, printed as given
    assert sub[["chrom", "start", "end"]].values.tolist() == [["chr1", 10, 20], ["chr1", 20, 20],
                                                             ["chr1", 5, 5], ["chrX", 0, 1]]


@pytest.mark.parametrize("layout", [{}, {"layout": "grid"}, {"layout": "grid", "cell": 3}],
                         ids=["sorted", "grid", "grid-cell3"])
def test_coordinates_beyond_bedtools(layout):
    """Coordinates up to 2**40 - 1 (bedtools refuses >= 2**29): expected answers worked by hand."""
    big = 10**12
    q = bed([("chr1", big - 5, big), ("chr1", big, big), ("chr2", 2**40 - 3, 2**40 - 1)])
    d = g.index(bed([("chr1", big - 1, big + 3), ("chr2", 2**40 - 2, 2**40 - 2)]), **layout)
    assert g.count_overlaps(q, d)["count"].tolist() == [1, 1, 1]
    assert g.intersect(q, d)[["start", "end"]].values.tolist() == [[big - 1, big], [big, big],
                                                                   [2**40 - 3, 2**40 - 1]]
    assert g.subtract(q, d)[["start", "end"]].values.tolist() == [[big - 5, big - 1]]
    assert g.coverage(q, d)["covered"].tolist() == [1, 2, 2]


@pytest.mark.parametrize("rows", [[], [("chr1", 10, 20)], [("chr1", 0, 0)], [("chr1", 0, 0), ("chr2", 5, 6)],
                                  [("chr1", 10, 12)], [("chr1", 10, 11), ("chr1", 11, 12)],
                                  [("chr1", 5, 5), ("chr1", 6, 8)], [("chr1", 5, 5), ("chr1", 5, 5)],
                                  [("chr2", 0, 0), ("chr1", 3, 4)], [("chr1", 5, 5), ("chr1", 7, 7)]],
                         ids=lambda r: ";".join(f"{c}:{s}-{e}" for c, s, e in r) or "empty")
def test_merge_edge_cases(rows):
    check("merge", bed(rows), None)


# ------------------------------------------------------------------------------------ hypothesis
def _rows(data: bool):
    def fix(t):                       # bedtools 2.30 crashes on [0, 0) in the -b file
        c, s, n = t
        return (c, 1 if data and s == 0 and n == 0 else s, (1 if data and s == 0 and n == 0 else s) + n)
    length = st.one_of(st.just(0), st.integers(0, 30))                 # zero-length often
    item = st.tuples(st.sampled_from(["chr1", "chr2"]), st.integers(0, 200), length).map(fix)
    return st.lists(item, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrows=_rows(data=False), drows=_rows(data=True), plan=st.sampled_from(["window", "ranks", "grid"]),
       cell=st.sampled_from([None, 1, 2, 5, 16, 1000]))
def test_property_against_bedtools(qrows, drows, plan, cell):
    # plan 'grid': layout="grid" with the width `cell` (None: chosen from the data); coordinates
    # up to 230 meet cells of 1..16 bases at every offset, intervals span up to 30 of them
    q, d = bed(qrows), bed(drows)
    if plan == "grid":
        idx = g.index(d, layout="grid", cell=cell)
    else:
        idx = g.index(d)
        idx.pair_plan = plan
    for op in ["count_overlaps", "overlap", "coverage", "intersect", "subtract", "closest"]:
        check(op, q, idx, d=d)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(data=True))
def test_property_merge_against_bedtools(rows):
    check("merge", bed(rows), None)


def genomecov(df: pd.DataFrame) -> pd.DataFrame:
    """bedtools genomecov -bg on a frame (sorted first, as genomecov reads it chromosome by
    chromosome), with a genome file of each chromosome's largest end."""
    cols = ["chrom", "start", "end", "depth"]
    if len(df) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "chrom" else np.int64) for c in cols})
    bt = pybedtools.BedTool.from_dataframe(df[["chrom", "start", "end"]]).sort()
    sizes = df.groupby("chrom")["end"].max() + 1
    genome = pybedtools.BedTool("\n".join(f"{c}\t{n}" for c, n in sizes.items()) + "\n", from_string=True)
    res = bt.genome_coverage(bg=True, g=genome.fn)
    if res.count() == 0:
        return genomecov(df.iloc[:0])
    out = res.to_dataframe(names=cols, dtype={"chrom": str})
    return out.sort_values(["chrom", "start"], kind="stable").reset_index(drop=True)


def _same_depth(got, want):
    assert list(got.columns) == ["chrom", "start", "end", "depth"]
    assert got["chrom"].astype(str).tolist() == want["chrom"].astype(str).tolist()
    for c in ("start", "end", "depth"):
        assert got[c].to_numpy(np.int64).tolist() == want[c].to_numpy(np.int64).tolist(), c


@pytest.mark.parametrize("path", [EXONS, GERP], ids=["exons", "gerp"])
def test_depth_real_tracks_against_genomecov(path):
    _same_depth(g.depth(str(path)), genomecov(frame(path)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(data=True))
def test_property_depth_against_genomecov(rows):
    d = bed(rows)
    _same_depth(g.depth(d), genomecov(d))


# ------------------------------------------------------------------------------------ bad input
GOOD = bed([("chr1", 10, 20), ("chr1", 30, 40)])


def _bad_frames():
    base = {"chrom": ["chr1", "chr1", "chr1"], "start": [0, 10, 20], "end": [5, 15, 25]}
    yield "end_before_start", pd.DataFrame({**base, "end": [5, 9, 25]}), ["row 1", "end", "before start"]
    yield "negative_start", pd.DataFrame({**base, "start": [0, 10, -3]}), ["row 2", "start", "negative"]
    yield "non_integer", pd.DataFrame({**base, "end": [5.0, 15.5, 25.0]}), ["row 1", "end", "not an integer"]
    yield "non_integer_text", pd.DataFrame({**base, "start": ["0", "1x", "20"]}), ["row 1", "start", "'1x'"]
    yield "missing_column", pd.DataFrame({"chrom": base["chrom"], "start": base["start"]}), ["missing column 'end'"]


BAD_FRAMES = list(_bad_frames())


@pytest.mark.parametrize("side", ["query", "data"])
@pytest.mark.parametrize("case, df, words", BAD_FRAMES, ids=[c for c, _, _ in BAD_FRAMES])
@pytest.mark.parametrize("fn", [g.count_overlaps, g.overlap, g.coverage, g.intersect, g.subtract, g.closest])
def test_bad_frame(fn, case, df, words, side):
    args = (df, GOOD) if side == "query" else (GOOD, df)
    with pytest.raises(ctensor.FormatError) as err:
        fn(*args)
    msg = str(err.value)
    assert msg.startswith(side), msg
    for w in words:
        assert w in msg, msg


BAD_FILES = [
    ("chr1\t10\t20\nchr1\t30\tabc\n", ["line 2", "end", "'abc'"]),
    ("# header\nchr1\t10\t20\nchr1\t30\n", ["line 3", "at least 3"]),
    ("chr1\t10\t20\nchr1\t40\t30\n", ["line 2", "before start"]),
    ("chr1\t10\t20\tx\nchr1\t30\t40\n", ["line 2", "same number of fields"]),
    ("chr1\t10\t20\nchr1\t-5\t40\n", ["line 2", "start", "negative"]),
    ("chr1\t10\t20.5\nchr1\t30\t40\n", ["line 1", "end", "not an integer"]),
]


@pytest.mark.parametrize("side", ["query", "data"])
@pytest.mark.parametrize("text, words", BAD_FILES, ids=[f"file{i}" for i in range(len(BAD_FILES))])
def test_bad_bed_file(tmp_path, text, words, side):
    path = tmp_path / f"bad_{side}.bed"
    path.write_text(text)
    for fn in (g.count_overlaps, g.subtract):
        args = (str(path), GOOD) if side == "query" else (GOOD, str(path))
        with pytest.raises(ctensor.FormatError) as err:
            fn(*args)
        msg = str(err.value)
        assert str(path) in msg, msg
        for w in words:
            assert w in msg, msg
    with pytest.raises(ctensor.FormatError, match="line"):
        g.index(str(path))
    with pytest.raises(ctensor.FormatError, match="line"):
        g.merge(str(path))


# ------------------------------------------------------------------------------------ pair plans
@pytest.fixture(params=["window", "ranks"])
def pair_plan(request, monkeypatch):
    """Pin the plan of overlap/intersect (see genome_index.EINSUMS) for every index built."""
    from ctensor.apps import genome_index
    monkeypatch.setattr(genome_index, "RANK_PLAN_AT", 0.0 if request.param == "ranks" else np.inf)
    return request.param


@pytest.mark.parametrize("op", ["overlap", "intersect"])
@pytest.mark.parametrize("case", list(EDGE))
def test_pair_plans_edge_cases(case, op, pair_plan):
    q, d = (bed(rows) for rows in EDGE[case])
    check(op, q, d)


@pytest.mark.parametrize("op", ["overlap", "intersect"])
@pytest.mark.parametrize("query, data", [(GERP, EXONS), (EXONS, GERP)], ids=["gerp-exons", "exons-gerp"])
def test_pair_plans_real_tracks(op, query, data, pair_plan):
    check(op, frame(query), g.index(frame(data)))


@pytest.mark.parametrize("name", ["L100", "L10000"])
def test_pair_plans_synthetic(name, pair_plan):
    q, d, _ = synth(name)
    idx = g.index(d)
    check("overlap", q, idx, d=d)
    assert idx._pair_plan(*idx.genome(None, [1], [2])[:2]) == pair_plan


def test_pair_plan_cost_model_picks_ranks_for_crowded_windows():
    q, d, idx = synth("L10000")            # ~20 candidates per query
    sparse = synth("L100")[2]              # ~0.2
    gs, ge, _ = idx.genome(None, q["start"], q["end"])
    assert idx._pair_plan(gs, ge) == "ranks"
    assert sparse._pair_plan(gs[:10], gs[:10] + 100) == "window"


# ------------------------------------------------------------------------------------ grid layout
GRID_OPS = ["count_overlaps", "overlap", "any_overlap", "no_overlap", "coverage", "intersect"]
_grids: dict = {}


def grid_index(key, make, cell=None) -> g.GenomeIndex:
    if (key, cell) not in _grids:
        _grids[key, cell] = g.index(make(), layout="grid", cell=cell)
    return _grids[key, cell]


def same_rows_as_sorted(op, query, grid, data):
    """The grid layout answers with the very rows of the sorted layout, in the same order."""
    fn = getattr(g, op)
    kw = {"return_index": True} if op == "overlap" else {}
    pd.testing.assert_frame_equal(fn(query, grid, **kw), fn(query, data, **kw))


@pytest.mark.parametrize("op", PAIR_OPS)
@pytest.mark.parametrize("query, data", [(GERP, EXONS), (EXONS, GERP)], ids=["gerp-exons", "exons-gerp"])
def test_grid_real_tracks(op, query, data):
    idx = grid_index(data, lambda: str(data))
    check(op, str(query), idx, q=frame(query), d=frame(data))
    if op in GRID_OPS:
        same_rows_as_sorted(op, frame(query), idx, real_index(data))


@pytest.mark.parametrize("op", ["count_overlaps", "any_overlap", "no_overlap"])
def test_grid_snps_against_exons(op):
    check(op, SNPS, grid_index(EXONS, lambda: str(EXONS)), q=frame(SNPS), d=frame(EXONS))


@pytest.mark.parametrize("op", GRID_OPS)
@pytest.mark.parametrize("cell", [None, 64], ids=["auto", "cell64"])
@pytest.mark.parametrize("name", list(SYNTH))
def test_grid_synthetic(name, cell, op):
    # cell 64: intervals of the L1000/L10000 sets span 16-160 cells, those of multichrom up to 80
    q, d, idx = synth(name)
    grid = grid_index(name, lambda: d, cell)
    check(op, q, grid, d=d)
    same_rows_as_sorted(op, q, grid, idx)


@pytest.mark.parametrize("op", PAIR_OPS)
@pytest.mark.parametrize("cell", [None, 1, 7], ids=["auto", "cell1", "cell7"])
@pytest.mark.parametrize("case", list(EDGE))
def test_grid_edge_cases(case, cell, op):
    # cells of 1 and 7 bases: touching intervals meet at cell edges and inside cells, zero-length
    # ones (widened to 2 bases) straddle edges, long ones span many cells
    q, d = (bed(rows) for rows in EDGE[case])
    check(op, q, g.index(d, layout="grid", cell=cell), d=d)


def test_grid_pairs_found_in_many_cells_reported_once():
    """A pair meets in up to 31 one-base cells; the reference cell reports it once, in start order."""
    q = bed([("chr1", 0, 40), ("chr1", 15, 16), ("chr1", 25, 25)])
    d = bed([("chr1", 20, 50), ("chr1", 10, 30), ("chr1", 0, 5), ("chr1", 15, 15), ("chr1", 39, 40)])
    idx = g.index(d, layout="grid", cell=1)
    out = g.overlap(q, idx, return_index=True)
    assert out[["index", "index_"]].values.tolist() == [[0, 2], [0, 1], [0, 3], [0, 0], [0, 4],
                                                         [1, 1], [1, 3], [2, 1], [2, 0]]
    assert g.count_overlaps(q, idx)["count"].tolist() == [5, 2, 2]
    check("intersect", q, idx, d=d)


def test_grid_cell_choice():
    """The width from the data: the narrowest from the mean length up within the memory budget;
    a width given is used as is; the sorted layout takes none."""
    d = synth("L1000")[1]
    idx = g.index(d, layout="grid")
    n = len(d)
    assert idx.layout == "grid" and idx.cell >= 1000
    gbytes = genome_layout.grid_size(idx._gs, idx._ge, idx.cell)[0]
    assert gbytes == genome_layout.unique_bytes([idx.G])
    assert gbytes <= 16 * n
    narrower = round(idx.cell / 2 ** 0.25)
    assert narrower < 1000 or genome_layout.grid_size(idx._gs, idx._ge, narrower)[0] > 16 * n
    assert g.index(d, layout="grid", cell=64).cell == 64
    assert g.index(d).layout == "sorted" and g.index(d).cell is None
    empty = g.index(bed([]), ops=("count",), layout="grid")
    assert empty.nbytes == genome_layout.grid_size(empty._gs, empty._ge, empty.cell)[0] == 24


@pytest.mark.parametrize("kw, words", [({"layout": "tree"}, "layout"), ({"cell": 10}, "only for layout='grid'"),
                                       ({"layout": "grid", "cell": 0}, "cell"),
                                       ({"layout": "grid", "cell": 2.5}, "cell"),
                                       ({"layout": "grid", "cell": True}, "cell")])
def test_grid_bad_arguments(kw, words):
    with pytest.raises(ValueError, match=words):
        g.index(GOOD, **kw)


def test_grid_prebuilt_index_keeps_its_layout():
    idx = g.index(GOOD, layout="grid")
    assert g.index(idx) is idx and g.index(idx, layout="grid") is idx
    assert g.index(idx, cell=idx.cell) is idx
    with pytest.raises(ValueError, match="layout"):
        g.index(idx, layout="sorted")
    with pytest.raises(ValueError, match="cell"):
        g.index(idx, cell=idx.cell + 1)


def test_grid_kernels_reused_and_inspectable():
    idx = g.index(bed([("chr1", 10, 20), ("chr1", 15, 40), ("chr2", 0, 5)]), layout="grid", cell=4)
    q1, q2 = bed([("chr1", 0, 12), ("chr2", 1, 2)]), bed([("chr1", 18, 19), ("chr1", 50, 60), ("chr3", 0, 9)])
    for fn in (g.count_overlaps, g.overlap, g.intersect):
        fn(q1, idx)
    names = ["grid_count", "grid_overlap", "grid_intersect"]
    first = {k: idx.kernels[k] for k in names}
    assert g.count_overlaps(q2, idx)["count"].tolist() == [2, 0, 0]
    assert len(g.overlap(q2, idx)) == 2 and len(g.intersect(q2, idx)) == 2
    for k in names:
        assert idx.kernels[k] is first[k], k
        assert "G_idx" in idx.kernels[k].ir and "W_left" in idx.kernels[k].ir, k


# ------------------------------------------------------------------------------------ memory
def _disjoint():
    s = np.arange(0, 2_000_000, 100)
    return pd.DataFrame({"chrom": "chr1", "start": s, "end": s + 50})


MEMORY_SETS = {**{n: lambda n=n: synth(n)[1] for n in SYNTH}, "exons": lambda: frame(EXONS),
               "gerp": lambda: frame(GERP), "disjoint": _disjoint}


@pytest.mark.parametrize("op", ["count", "overlap", "intersect", "closest"])
@pytest.mark.parametrize("name", list(MEMORY_SETS))
def test_index_memory(name, op):
    """Issue 3: an index for one operation holds at most 2x the 16 bytes per interval of the
    start/end arrays it indexes, up to a few words (SparseList ptr arrays, an offsets sentinel):
    at most two float64/int64 arrays of n entries (genome_layout's sizes)."""
    d = MEMORY_SETS[name]()
    idx = g.index(d, ops=(op,))
    n = len(d)
    assert idx.nbytes <= 2 * 16 * n + 48, (idx.nbytes, n)
    if name == "disjoint" and op in ("closest", "intersect"):
        # distinct starts and no two intervals meeting: D shares S's starts, UE is End
        assert idx.nbytes <= 1.5 * 16 * n + 48, (idx.nbytes, n)


@pytest.mark.parametrize("op", ["count", "overlap", "intersect"])
@pytest.mark.parametrize("name", list(MEMORY_SETS))
def test_grid_index_memory(name, op):
    """The grid (cell width chosen from the data) with the start/end values: within 2x the interval
    arrays, up to the same few words."""
    d = MEMORY_SETS[name]()
    idx = g.index(d, ops=(op,), layout="grid")
    assert set(idx._parts) == {"G", "DS", "D" if op == "intersect" else "End"}
    assert idx.nbytes <= 2 * 16 * len(d) + 48, (idx.nbytes, len(d))


def test_index_tensors_shared_between_operations():
    """Operations indexed together share their tensors: closest adds only the union ends to overlap."""
    d = synth("L1000")[1]
    both = g.index(d, ops=("overlap", "closest"))
    assert set(both._parts) == {"S", "End", "UE"}
    assert both.nbytes == g.index(d, ops=("closest",)).nbytes


# ------------------------------------------------------------------------------------ kernel reuse
def test_kernels_reused_across_queries():
    idx = g.index(bed([("chr1", 10, 20), ("chr1", 15, 40), ("chr2", 0, 5)]))
    a = g.count_overlaps(bed([("chr1", 0, 12), ("chr2", 1, 2)]), idx)
    # the brief named the kernel 'count_starts'; commit 6bf56ed fused the two counting einsums
    # into one named 'count': check every counting kernel the index holds
    names = [k for k in g.EINSUMS if k.startswith("count")]
    assert names and set(names) <= set(idx.kernels), (names, list(idx.kernels))
    first = {k: idx.kernels[k] for k in names}
    b = g.count_overlaps(bed([("chr1", 18, 19), ("chr1", 50, 60), ("chr3", 0, 9)]), idx)
    for k in names:
        assert idx.kernels[k] is first[k], k
        assert isinstance(idx.kernels[k].ir, str) and idx.kernels[k].ir.strip(), k
    assert a["count"].tolist() == [1, 1] and b["count"].tolist() == [2, 0, 0]


def test_closest_keeps_integer_data_columns_of_every_width_nullable():
    """Extra integer data columns become the nullable dtype of their width and sign: a uint64 value
    from 2**63 on failed the cast to Int64 (a pandas TypeError)."""
    q = pd.DataFrame({"chrom": ["chr1", "chr9"], "start": [10, 0], "end": [20, 5]})
    d = pd.DataFrame({"chrom": ["chr1"], "start": [3], "end": [12], "hash": np.array([2**63], np.uint64),
                      "rank": np.array([-7], np.int32), "n": pd.array([4], dtype="Int64")})
    out = g.closest(q, d)
    assert [str(out[c].dtype) for c in ("hash_", "rank_", "n_", "distance")] == ["UInt64", "Int32", "Int64", "Int64"]
    assert out.loc[0, ["hash_", "rank_", "n_", "distance"]].tolist() == [2**63, -7, 4, 0]
    assert out.loc[1, ["hash_", "rank_", "n_", "distance"]].isna().all()          # no data on chr9


def test_closest_kernels_are_searches_and_reused():
    """The (min,+)/(max,+) closest einsums compile to one extremum search per query (no loop over
    the data), and a second call reuses them."""
    idx = g.index(bed([("chr1", 10, 20), ("chr1", 40, 45), ("chr2", 0, 5)]))
    a = g.closest(bed([("chr1", 30, 31), ("chr3", 0, 9)]), idx)
    kernels = {k: idx.kernels[k] for k in ("closest_next", "closest_prev")}
    for k in kernels.values():
        assert "_extremum" in k.ir
    b = g.closest(bed([("chr1", 0, 1), ("chr2", 7, 8)]), idx)
    assert all(idx.kernels[k] is v for k, v in kernels.items())
    assert a["start_"].tolist()[:1] == [40] and a["distance"].tolist()[0] == 10   # 40 - 31 + 1
    assert a["distance"].isna().tolist() == [False, True]
    assert b[["start_", "distance"]].values.tolist() == [[10, 10], [0, 3]]


# ------------------------------------------------------------------- found by differential hunts
def test_depth_of_zero_length_at_0_stays_on_its_chromosome():
    """[0, 0) widens to [-1, 1): the depth piece [-1, 0) lies below chromosome k's offset and was
    decoded onto chromosome k - 1 (the last one for k = 0) at 2**41 - 1; clipped at 0 it vanishes.
    (bedtools genomecov aborts on [0, 0): the expectation is the docstring's convention.)"""
    d = pd.DataFrame({"chrom": ["chr1", "chr1", "chr2", "chr2"], "start": [0, 0, 0, 0], "end": [0, 3, 0, 5]})
    want = pd.DataFrame({"chrom": ["chr1", "chr1", "chr2", "chr2"], "start": [0, 1, 0, 1],
                         "end": [1, 3, 1, 5], "depth": [2, 1, 2, 1]})
    got = g.depth(d)
    assert got.astype({"chrom": object}).to_dict("list") == want.to_dict("list")
    assert g.merge(d).to_dict("list") == {"chrom": ["chr1", "chr2"], "start": [-1, -1], "end": [3, 5]}  # as bedtools


def test_closest_window_ends_before_the_previous_chromosome():
    """A zero-length interval at MAX_COORD widens to end at 2**40, which is where the window of the
    next chromosome's queries began: a query on a chromosome without data found it."""
    top = MAX_COORD
    d = pd.DataFrame({"chrom": ["chr1"], "start": [top], "end": [top]})
    q = pd.DataFrame({"chrom": ["chr2", "chr1"], "start": [0, 5], "end": [10, 6]})
    got = g.closest(q, d, return_index=True)
    assert got["index_"].tolist() == [-1, 0] and got["distance"].isna().tolist() == [True, False]
    assert got["distance"][1] == (top - 1) - 6 + 1           # b.start - a.end + 1, b widened to start at top - 1


def test_query_labels_and_output_columns():
    q = pd.DataFrame({"chrom": ["chr1", "chr1", "chr2"], "start": [10, 50, 0], "end": [20, 60, 5]}, index=[100, 200, 300])
    d = pd.DataFrame({"chrom": ["chr1"], "start": [15], "end": [55]})
    assert g.any_overlap(q, d).index.tolist() == [100, 200]
    assert q.loc[g.no_overlap(q, d).index].equals(q.loc[[300]])
    assert g.count_overlaps(q, d).index.tolist() == [100, 200, 300]
    assert g.count_overlaps(q.assign(count=9), d)["count"].tolist() == [1, 1, 0]     # DataFrame.assign
    for op, kw, col in [(g.closest, {}, "distance"), (g.overlap, {}, "start_"), (g.overlap, {"return_index": True}, "index"),
                        (g.closest, {"return_index": True}, "index_")]:
        with pytest.raises(ctensor.FormatError, match=f"query: column '{col}'"):
            op(q.assign(**{col: 7}), d, **kw)
