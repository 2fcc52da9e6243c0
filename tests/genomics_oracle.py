"""bedtools (through pybedtools) as the oracle for `ctensor.apps.genomics`.

Every helper takes bioframe-style frames (`chrom, start, end`), hands bedtools a BED file whose
4th column is the row position (`qid` for the query, `did` for the data) and reads the answer
back with explicit column names, so results can be matched row by row without guessing.
Also: `compare_*` helpers that assert our answer equals bedtools' after the documented
normalisation of row order, and the synthetic data generators.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pybedtools
import pytest

from ctensor.apps import genomics as g
from ctensor.apps.bedio import read_intervals

CORE = ["chrom", "start", "end"]
COVERAGE_TOL = 1e-6          # bedtools prints the fraction with 7 decimals


# ---------------------------------------------------------------------------- bedtools side
_written: dict = {}


def bedtool(df: pd.DataFrame, idname: str) -> pybedtools.BedTool:
    """A BED4 BedTool: chrom, start, end, row position (named `idname` on the way back).
    Large frames are written once (cached by identity; the frame is kept alive with the file)."""
    key = (id(df), idname)
    if key in _written and _written[key][0] is df:
        return _written[key][1]
    core = df[CORE].reset_index(drop=True).assign(**{idname: np.arange(len(df))})
    bt = pybedtools.BedTool.from_dataframe(core)
    if len(df) > 10_000:
        _written[key] = (df, bt)
    return bt


def read_bt(bt: pybedtools.BedTool, names, dtypes=None) -> pd.DataFrame:
    """Read a bedtools result file with explicit names; an empty file gives an empty frame."""
    types = {"chrom": str, "chrom_": str, "start": np.int64, "end": np.int64,
             "start_": np.int64, "end_": np.int64, "qid": np.int64, "did": np.int64,
             "count": np.int64, "covered": np.int64, "distance": np.int64, "length": np.int64, "fraction": np.float64}
    types.update(dtypes or {})
    dt = {n: types[n] for n in names}
    try:
        return pd.read_csv(bt.fn, sep="\t", header=None, names=names, dtype=dt)
    except pd.errors.EmptyDataError:
        return pd.DataFrame({n: pd.Series([], dtype=dt[n]) for n in names})


def oracle(op: str, q: pd.DataFrame, d: pd.DataFrame | None = None) -> pd.DataFrame:
    """bedtools' answer for operation `op` (named as in `ctensor.apps.genomics`)."""
    if op == "merge":
        # bedtools merge grows a cluster only to the right, so with equal starts its answer depends
        # on input order ([5,8) then [5,5) gives 5-8; [5,5) then [5,8) gives 4-8, the widened
        # union).  Sort by start, zero-length first on ties: then its answer is the union.
        key = q[CORE].assign(nonzero=q["start"] != q["end"])
        key = key.sort_values(["chrom", "start", "nonzero", "end"], kind="stable")
        return read_bt(pybedtools.BedTool.from_dataframe(key[CORE]).merge(), CORE)
    a, b = bedtool(q, "qid"), bedtool(d, "did")
    qcols = CORE + ["qid"]
    if op == "count_overlaps":
        return read_bt(a.intersect(b, c=True), qcols + ["count"])
    if op == "overlap":
        return read_bt(a.intersect(b, wa=True, wb=True), qcols + ["chrom_", "start_", "end_", "did"])
    if op == "any_overlap":
        return read_bt(a.intersect(b, u=True), qcols)
    if op == "no_overlap":
        return read_bt(a.intersect(b, v=True), qcols)
    if op == "coverage":
        return read_bt(a.coverage(b), qcols + ["count", "covered", "length", "fraction"])
    if op == "intersect":
        return read_bt(a.intersect(b), qcols)
    if op == "subtract":
        return read_bt(a.subtract(b), qcols)
    if op == "closest":
        # bedtools closest needs both files sorted (chrom, start); a query without data on its
        # chromosome prints ". -1 -1 ." and distance -1
        # chromosome prints ". -1 -1 ." and distance -1 (without the "." for an empty data file)
        res = a.sort().closest(b.sort(), d=True, t="all")
        if len(d) == 0:
            return read_bt(res, qcols + ["chrom_", "start_", "end_", "distance"]).assign(did="-1")
        return read_bt(res, qcols + ["chrom_", "start_", "end_", "did", "distance"], {"did": str})
    raise ValueError(op)


# ---------------------------------------------------------------------------- comparisons
def _core(df: pd.DataFrame, extra=()) -> pd.DataFrame:
    return df[CORE + list(extra)].reset_index(drop=True)


def _by_query(df: pd.DataFrame, keys) -> pd.DataFrame:
    """Rows grouped per query (query order kept) and sorted inside each query by `keys`."""
    return df.sort_values(["qid", *keys], kind="stable").reset_index(drop=True)


def check(op: str, query, data, q: pd.DataFrame | None = None, d: pd.DataFrame | None = None):
    """Run `op` on (query, data) -- frames, paths or a GenomeIndex -- and assert it equals bedtools.

    `q`, `d`: the frames bedtools sees (default: `read_intervals` of query/data).
    Returns (ours, expected) for further checks."""
    q = read_intervals(query, "query") if q is None else q.reset_index(drop=True)
    if d is None and op != "merge":
        d = data.frame if isinstance(data, g.GenomeIndex) else read_intervals(data, "data")
    exp = oracle(op, q, d)
    if op == "merge":
        ours = g.merge(query)
        pd.testing.assert_frame_equal(_core(ours), _core(exp), check_dtype=False)
        return ours, exp
    fn = getattr(g, op)
    if op == "closest":
        ours = fn(query, data, return_index=True)
        got = pd.DataFrame({"qid": ours["index"].to_numpy(), "did": ours["index_"].to_numpy(),
                            "distance": ours["distance"].fillna(-1).to_numpy(np.int64)})
        assert (np.diff(got["qid"].to_numpy()) >= 0).all(), "closest: rows not in query order"
        pd.testing.assert_frame_equal(_core(ours), _core(q.iloc[got["qid"]]), check_dtype=False)
        found = got["did"].to_numpy() >= 0
        dd = _core(d.iloc[got["did"][found]]).add_suffix("_")
        pd.testing.assert_frame_equal(ours.loc[found, ["chrom_", "start_", "end_"]].reset_index(drop=True), dd,
                                      check_dtype=False)
        want = exp[["qid", "did", "distance"]].assign(did=exp["did"].replace(".", "-1").astype(np.int64))
        pd.testing.assert_frame_equal(_by_query(got, ["did"]), _by_query(want, ["did"]), check_dtype=False)
        return ours, exp
    if op == "overlap":
        ours = fn(query, data, return_index=True)
        got = pd.DataFrame({"qid": ours["index"].to_numpy(), "did": ours["index_"].to_numpy()})
        # rows really are those of the query and the data, in query order then data start order
        pd.testing.assert_frame_equal(_core(ours), _core(q.iloc[got["qid"]]), check_dtype=False)
        dd = _core(d.iloc[got["did"]]).add_suffix("_")
        pd.testing.assert_frame_equal(ours[["chrom_", "start_", "end_"]].reset_index(drop=True), dd,
                                      check_dtype=False)
        assert (np.diff(got["qid"].to_numpy()) >= 0).all(), "pairs not in query order"
        # "data start order" is by the widened start: [66, 66) (as [65, 67)) may precede [65, 90)
        ws = dd["start_"].to_numpy() - (dd["start_"] == dd["end_"]).to_numpy()
        key = pd.DataFrame({"qid": got["qid"], "s": ws})
        assert key.equals(key.sort_values(["qid", "s"], kind="stable")), "pairs not in data start order"
        pd.testing.assert_frame_equal(_by_query(got, ["did"]), _by_query(exp[["qid", "did"]], ["did"]),
                                      check_dtype=False)
        return ours, exp
    ours = fn(query, data)
    if op in ("any_overlap", "no_overlap"):
        assert list(ours.index) == list(exp["qid"]), f"{op}: rows differ"
        pd.testing.assert_frame_equal(_core(ours), _core(exp), check_dtype=False)
        return ours, exp
    if op in ("count_overlaps", "coverage"):
        cols = ["count"] if op == "count_overlaps" else ["count", "covered", "length"]
        assert list(exp["qid"]) == list(range(len(q))), "bedtools changed the row order"
        pd.testing.assert_frame_equal(_core(ours, cols), _core(exp, cols), check_dtype=False)
        if op == "coverage":
            np.testing.assert_allclose(ours["fraction"].to_numpy(float), exp["fraction"].to_numpy(float),
                                       rtol=0, atol=COVERAGE_TOL)
        return ours, exp
    # intersect / subtract: pieces per query, in query order, as sorted multisets inside a query.
    # The query row of each piece: run again with the row position planted as an extra column.
    traced = fn(with_ids(q), data)
    pd.testing.assert_frame_equal(_core(ours), _core(traced))
    got = _core(traced).assign(qid=traced["qid_"].to_numpy())
    assert (np.diff(got["qid"].to_numpy()) >= 0).all(), f"{op}: rows not in query order"
    pd.testing.assert_frame_equal(_by_query(got, ["start", "end"]),
                                  _by_query(exp[CORE + ["qid"]], ["start", "end"]), check_dtype=False)
    return ours, exp


def with_ids(q: pd.DataFrame) -> pd.DataFrame:
    """The query frame plus an extra column `qid_` (its row position), which our functions carry
    through to their rows, so pieces can be traced back to their query."""
    return q.reset_index(drop=True).assign(qid_=np.arange(len(q)))


# ---------------------------------------------------------------------------- data
def synthetic(n: int, L, seed: int, chroms=("chr1",), size: int = 10_000_000) -> pd.DataFrame:
    """`n` intervals, uniform starts on each chromosome of length `size`; length `L` (int) or
    uniform in `L` = (lo, hi) inclusive."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, size, n)
    ln = np.full(n, L) if np.isscalar(L) else rng.integers(L[0], L[1] + 1, n)
    chrom = rng.choice(np.asarray(chroms, dtype=object), n)
    return pd.DataFrame({"chrom": chrom, "start": start, "end": start + ln})


def bed(rows) -> pd.DataFrame:
    """A small BED frame from (chrom, start, end) tuples."""
    return pd.DataFrame(list(rows), columns=CORE).astype({"chrom": object, "start": np.int64, "end": np.int64}) \
        if rows else pd.DataFrame({"chrom": pd.Series([], dtype=object), "start": np.zeros(0, np.int64),
                                   "end": np.zeros(0, np.int64)})


@pytest.fixture(scope="module", autouse=True)
def cleanup_bedtools_tempfiles():
    """pybedtools' temporary files, removed after each module that imports this fixture."""
    yield
    pybedtools.cleanup()
