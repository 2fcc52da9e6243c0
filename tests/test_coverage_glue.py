"""coverage's glue (issue 28) against plain oracles: the query chromosome coding by runs of equal
names (`genome_query._run_codes`), the validated-frame path of `GenomeIndex.genome`
(`checked=True`), and the sorted ends of the index part E (`genome_layout.sorted_ends`).  The
answers themselves are checked against bedtools in test_genomics.py and test_genomics_ops.py."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ctensor.apps import genomics as g
from ctensor.apps.genome_layout import sorted_ends
from ctensor.apps.genome_query import _codes
from ctensor.apps.genome_names import key_table

CHROMS = ["chr1", "chr2", "chr10", "chrX"]


def _oracle(chroms, names):
    code = {c: k for k, c in enumerate(chroms)}
    return np.array([code.get(c, len(chroms)) for c in names], np.int64)


def _arrow(names):
    return pd.Series(names, dtype="string[pyarrow]").astype(pd.Series(["chr1"]).astype(str).dtype).array


@pytest.mark.parametrize("layout", ["one", "runs", "runs_absent", "random", "short_runs", "medium_runs", "tiny"])
def test_query_codes_by_runs_equal_a_dict_lookup(layout):
    """Names in one run (a scalar), in runs (sorted by chromosome, one absent from the data), in
    random order (one absent) and changing every few rows (Arrow's index_in), in runs of 20 (the
    heads by Arrow's index_in), fewer rows than the sample."""
    rng = np.random.default_rng(len(layout))
    n = {"tiny": 300}.get(layout, 50_000)
    pool = CHROMS + ["chrUn"] if layout in ("runs_absent", "random") else CHROMS
    if layout == "one":
        names = ["chr2"] * n
    elif layout in ("runs", "runs_absent", "tiny"):
        names = list(np.sort(rng.choice(pool, n)))
    elif layout == "short_runs":
        names = list(np.repeat(rng.choice(pool, n // 8), 8))
    elif layout == "medium_runs":                        # coded by runs, the many heads by Arrow
        names = list(np.repeat(rng.choice(pool + ["chrUn"], n // 20), 20))
    else:
        names = list(rng.choice(pool, n))
    table = key_table(CHROMS)
    got = _codes(CHROMS, _arrow(names), table)
    want = _oracle(CHROMS, names)
    if np.ndim(got) == 0:
        assert layout == "one" and (want == got).all()
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("sort", [True, False])
def test_genome_checked_equals_checked_again(sort):
    """A frame validated by read_intervals gives the same genome axis without the re-checks."""
    rng = np.random.default_rng(3)
    n = 20_000
    c = rng.choice(CHROMS + ["chrM"], n)
    s = rng.integers(0, 10**6, n)
    e = s + rng.integers(0, 500, n)                      # zero-length ones widened
    q = pd.DataFrame({"chrom": c, "start": s, "end": e})
    if sort:
        q = q.sort_values(["chrom", "start"], ignore_index=True)
    idx = g.index(pd.DataFrame({"chrom": CHROMS, "start": [0] * 4, "end": [10] * 4}))
    from ctensor.apps.genomics_ops import read_rows
    qq = read_rows(q, "query")
    a = (qq["chrom"], qq["start"].to_numpy(), qq["end"].to_numpy())
    for x, y in zip(idx.genome(*a, checked=True), idx.genome(*a)):
        np.testing.assert_array_equal(x, y)


def test_sorted_ends_equal_numpy_sort():
    rng = np.random.default_rng(4)
    s = np.sort(rng.integers(0, 2**45, 100_000)).astype(np.float64)
    ge = s + rng.integers(1, 5000, len(s))
    np.testing.assert_array_equal(sorted_ends(ge), np.sort(ge))
    neg = np.array([3.0, -1.0, 2.0, -0.5])               # off the genome axis: numpy's float order
    np.testing.assert_array_equal(sorted_ends(neg), np.sort(neg))
    assert sorted_ends(np.zeros(0)).shape == (0,)


def test_coverage_of_sorted_and_shuffled_queries_agree():
    """The same queries in chromosome runs and shuffled, on one thread and two: the same answer
    per row."""
    rng = np.random.default_rng(6)
    n = 30_000
    d = pd.DataFrame({"chrom": rng.choice(CHROMS, n), "start": rng.integers(0, 10**6, n)})
    d["end"] = d["start"] + rng.integers(0, 3000, n)
    q = pd.DataFrame({"chrom": rng.choice(CHROMS + ["chrY"], n), "start": rng.integers(0, 10**6, n)})
    q["end"] = q["start"] + rng.integers(0, 3000, n)
    q = q.sort_values(["chrom", "start"], ignore_index=True)
    a = g.coverage(q, d)
    perm = rng.permutation(n)
    b = g.coverage(q.iloc[perm], d)
    pd.testing.assert_frame_equal(a.iloc[perm], b)
    # two threads, each coding its chunk's names (by runs in the sorted frame, by Arrow shuffled)
    pd.testing.assert_frame_equal(g.coverage(q, d, workers=2), a)
    pd.testing.assert_frame_equal(g.coverage(q.iloc[perm], d, workers=2), b)


def test_missing_or_empty_names_from_arrow_offsets():
    """`bedio._missing_or_empty` on Arrow columns (string and large_string, several chunks, a
    sliced chunk) equals pandas' isna | == ''."""
    import pyarrow as pa

    from ctensor.apps.bedio import _missing_or_empty
    cases = [["chr1", "chr2"], ["", "chr1"], ["chr1", ""], ["chr1", None], [], ["a", "bb", "", "c"]]
    for names in cases:
        for typ in (pa.string(), pa.large_string()):
            whole = pa.array(names, typ)
            want = bool(pd.isna(pd.Series(names, dtype=object)).any() or (pd.Series(names, dtype=object) == "").any())
            chunked = pa.chunked_array([whole[: len(names) // 2], whole[len(names) // 2:]], typ)
            for arr in (pa.chunked_array([whole], typ), chunked):
                assert _missing_or_empty(pd.arrays.ArrowStringArray(arr)) == want, (names, typ)
    sliced = pa.array(["", "chr1", "chr2"], pa.string())[1:]            # the empty name is cut off
    assert not _missing_or_empty(pd.arrays.ArrowStringArray(pa.chunked_array([sliced])))
