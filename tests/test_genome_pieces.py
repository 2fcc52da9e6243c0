"""`genome_pieces`: an index joined from pieces laid out apart (a Dask frame's partitions, each
where it was read) equals the index of all the rows: the same start order (the ranked axis, ties in
row order) or sorted values, chromosome names, zero-length positions and longest interval, and the
same answers to every operation, row positions included.  Oracle: `GenomeIndex` of the rows
concatenated, and the operations on it (themselves checked against bedtools elsewhere)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from ctensor.apps import genome_pieces as gp
from ctensor.apps import genomics as g
from ctensor.apps.genome_index import GenomeIndex

from .genomics_oracle import synthetic

OPS = [("count_overlaps", {}), ("any_overlap", {}), ("overlap", {"return_index": True}),
       ("closest", {"return_index": True}), ("coverage", {}), ("intersect", {}), ("subtract", {})]


def _joined(parts, ranks, lazy):
    frames = [gp.check(p) for p in parts]
    source = lambda: pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)     # noqa: E731
    return gp.join([gp.lay(f, ranks) for f in frames], None if lazy else frames, source if lazy else None)


def _same_index(idx, parts, ranks, query):
    whole = pd.concat(parts, ignore_index=True)
    ref = GenomeIndex(whole, ops=())
    assert (idx.n, idx.chroms, idx.maxlen) == (ref.n, ref.chroms, ref.maxlen)
    np.testing.assert_array_equal(idx._zero_at, ref._zero_at)
    if ranks:
        order, gs, ge = idx._axis
        want = ref._ranked_axis()
        assert (order is None) == (want[0] is None)
        for a, b in zip((order, gs, ge), want):
            if a is not None:
                np.testing.assert_array_equal(a, b)
    else:                                       # equal starts in any order: compare as (start, end) pairs
        gs, ge = idx._values
        rs, re = ref._sorted_values()
        np.testing.assert_array_equal(gs, rs)
        a, b = np.lexsort((ge, gs)), np.lexsort((re, rs))
        np.testing.assert_array_equal(ge[a], re[b])
    for op, kw in OPS:
        pd.testing.assert_frame_equal(getattr(g, op)(query, idx, **kw), getattr(g, op)(query, whole, **kw))


@pytest.fixture(scope="module")
def sets():
    q = synthetic(1500, (0, 2000), seed=31, chroms=("chr1", "chr2", "chr3"), size=2_000_000)
    d = synthetic(2000, (0, 3000), seed=32, chroms=("chr1", "chr2", "chrX"), size=2_000_000)
    d.loc[::9, "end"] = d.loc[::9, "start"]                         # zero-length intervals too
    return q, d, d.sort_values(["chrom", "start"], kind="stable").reset_index(drop=True)


SPLITS = {
    "by chromosome, names out of order": lambda d, s: [d[d.chrom == c] for c in ("chrX", "chr1", "chr2")],
    "sorted ranges": lambda d, s: [s.iloc[:700], s.iloc[700:1500], s.iloc[1500:]],
    "one piece in start order": lambda d, s: [s],
    "interleaved (a merge)": lambda d, s: [d.iloc[:900], d.iloc[900:]],
    "ranges sharing starts": lambda d, s: [s.iloc[:1200], s.iloc[1190:]],
    "empty pieces": lambda d, s: [d.iloc[:0], d.iloc[:10], d.iloc[:0]],
    "all empty": lambda d, s: [d.iloc[:0], d.iloc[:0]],
}


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("ranks", [True, False])
@pytest.mark.parametrize("lazy", [False, True])
def test_joined_index_equals_the_whole(sets, split, ranks, lazy):
    q, d, s = sets
    parts = SPLITS[split](d, s)
    _same_index(_joined(parts, ranks, lazy), parts, ranks, q)


@given(st.data())
def test_joined_index_equals_the_whole_on_random_splits(sets, data):
    """Random pieces: contiguous row ranges of the data in its own or in start order, or pieces
    by chromosome; the pieces' layout with or without ranks."""
    q, d, s = sets
    base = data.draw(st.sampled_from(["rows", "sorted", "chromosomes"]))
    if base == "chromosomes":
        names = data.draw(st.permutations(["chr1", "chr2", "chrX"]))
        parts = [d[d.chrom == c] for c in names]
    else:
        rows = d if base == "rows" else s
        cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
        parts = [rows.iloc[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)])]
    ranks = data.draw(st.booleans())
    _same_index(_joined(parts, ranks, lazy=data.draw(st.booleans())), parts, ranks, q.iloc[:300])


def test_join_declines_rejected_pieces_and_too_many_chromosomes(sets, monkeypatch):
    _, d, _ = sets
    bad = d.iloc[:5].assign(end=d["start"].iloc[:5] - 1)
    frames = [gp.check(d.iloc[:100]), gp.check(bad)]
    assert isinstance(frames[1], gp.Rejected) and frames[1].rows is bad
    assert gp.lay(frames[1]) is None
    assert gp.join([gp.lay(f) for f in frames], frames) is None
    monkeypatch.setattr(gp, "MAX_CHROMS", 2)
    assert gp.join([gp.lay(gp.check(d))], [gp.check(d)]) is None


def test_lazy_rows_are_made_on_first_use(sets):
    """An index joined without its rows makes them (and their codes) only when an operation
    reads them: the operations whose Dask path lays the pieces out without ranks
    (`genomics_dask._VALUE_OPS`) read the sorted values only."""
    from ctensor.apps.genomics_dask import _VALUE_OPS
    q, d, _ = sets
    made = []
    frames = [gp.check(d[d.chrom == c]) for c in ("chr2", "chr1", "chrX")]

    def source():
        made.append(1)
        return pd.concat(frames, ignore_index=True)
    idx = gp.join([gp.lay(f, ranks=False) for f in frames], frame_source=source)
    for op in sorted(_VALUE_OPS):
        pd.testing.assert_frame_equal(getattr(g, op)(q, idx), getattr(g, op)(q, pd.concat(frames, ignore_index=True)))
    assert not made
    pd.testing.assert_frame_equal(g.overlap(q, idx), g.overlap(q, pd.concat(frames, ignore_index=True)))
    assert made == [1]
    codes, s, e = idx._rows_in
    ref = GenomeIndex(pd.concat(frames, ignore_index=True), ops=())._rows_in
    for a, b in zip((codes, s, e), ref):
        np.testing.assert_array_equal(a, b)
