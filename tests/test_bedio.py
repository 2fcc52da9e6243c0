"""`ctensor.apps.bedio.read_intervals`: every accepted source kind, BED naming and skipping rules,
and one test per validation error checking the message names the input, column and line/row."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ctensor as ct
from ctensor.apps.bedio import MAX_COORD, read_intervals
from ctensor.errors import FormatError

DATA = Path(__file__).resolve().parents[1] / "ctensor" / "examples" / "data"
SIX = "chr1\t10\t20\tgeneA\t0\t+\nchr2\t5\t5\tgeneB\t7.5\t-\nchrX\t0\t100\tNA\t.\t.\n"


def write(tmp_path, text: str, name="data.bed", gz=False) -> Path:
    p = tmp_path / name
    raw = text.encode()
    p.write_bytes(gzip.compress(raw) if gz else raw)
    return p


def check_frame(df, chrom, start, end):
    assert isinstance(df.index, pd.RangeIndex) and df.index.start == 0
    assert list(df.columns[:3]) == ["chrom", "start", "end"]
    assert df["start"].dtype == np.int64 and df["end"].dtype == np.int64
    assert list(df["chrom"]) == list(chrom)
    assert df["start"].tolist() == list(start) and df["end"].tolist() == list(end)


# ------------------------------------------------------------------------------------ good input
def test_format_error_is_the_package_one():
    assert FormatError is ct.FormatError and issubclass(FormatError, ValueError)


def test_dataframe_extras_kept_new_frame_fresh_index():
    src = pd.DataFrame({"score": [1.5, 2.5], "end": [20, 30], "chrom": ["chr1", "chr2"],
                        "start": [10.0, 30.0], "tag": ["a", "b"]}, index=[7, 3])
    out = read_intervals(src, name="query")
    check_frame(out, ["chr1", "chr2"], [10, 30], [20, 30])
    assert list(out.columns) == ["chrom", "start", "end", "score", "tag"]
    assert out["score"].dtype == np.float64 and out["tag"].tolist() == ["a", "b"]
    out.loc[0, "tag"] = "z"
    assert src["tag"].tolist() == ["a", "b"] and src["start"].dtype == np.float64


def test_canonical_dataframe_taken_as_it_is():
    """A frame already in the output's form (chrom str, start/end int64, in that order) is taken
    without rebuilding (`bedio._canonical`): the same frame as the rebuilt one, a fresh index, the
    caller's frame untouched; a bad value in such a frame still gets the full check's error."""
    src = pd.DataFrame({"chrom": ["chr1", "chr2"], "start": [10, 30], "end": [20, 30], "tag": ["a", "b"]},
                       index=[7, 3])
    src["chrom"] = src["chrom"].astype(str)
    out = read_intervals(src, name="query")
    rebuilt = read_intervals(src.assign(start=src["start"].astype(float)), name="query")
    pd.testing.assert_frame_equal(out, rebuilt)
    assert list(src.index) == [7, 3] and isinstance(out.index, pd.RangeIndex)
    with pytest.raises(FormatError, match=r"^query: row 1: end \(25\) is before start \(30\)$"):
        read_intervals(src.assign(end=[20, 25]), name="query")


def test_dataframe_empty_and_limits():
    empty = read_intervals(pd.DataFrame({"chrom": [], "start": [], "end": []}))
    check_frame(empty, [], [], [])
    big = read_intervals(pd.DataFrame({"chrom": ["c"], "start": [0], "end": [MAX_COORD]}))
    assert big["end"].iloc[0] == 2**40 - 1
    nullable = pd.DataFrame({"chrom": ["c"], "start": pd.array([1], dtype="Int64"),
                             "end": np.array([2], dtype=np.uint64)})
    check_frame(read_intervals(nullable), ["c"], [1], [2])


def test_tuples():
    check_frame(read_intervals(([1, 2], [3, 4])), ["chr1", "chr1"], [1, 2], [3, 4])
    check_frame(read_intervals(("chr7", np.array([1, 2]), np.array([3, 4]))), ["chr7"] * 2,
                [1, 2], [3, 4])
    check_frame(read_intervals((["a", "b"], pd.Series([1, 2], index=[9, 8]), (5, 6))),
                ["a", "b"], [1, 2], [5, 6])


def test_bed_plain_six_columns(tmp_path):
    out = read_intervals(write(tmp_path, SIX))
    check_frame(out, ["chr1", "chr2", "chrX"], [10, 5, 0], [20, 5, 100])
    assert list(out.columns) == ["chrom", "start", "end", "name", "score", "strand"]
    assert out["score"].tolist() == ["0", "7.5", "."] and out["name"].tolist()[2] == "NA"


def test_bed_gzip_detected_by_magic_not_suffix(tmp_path):
    for name in ("data.bed.gz", "data.bed"):
        out = read_intervals(write(tmp_path, SIX, name=name, gz=True))
        check_frame(out, ["chr1", "chr2", "chrX"], [10, 5, 0], [20, 5, 100])
    plain = write(tmp_path, SIX, name="plain.bed.gz")  # misleading suffix, plain text
    assert len(read_intervals(plain)) == 3


def test_bed_headers_comments_blank_lines_crlf(tmp_path):
    text = ("browser position chr1:1-100\ntrack name=x\n#chrom\tstart\tend\tname\tscore\tstrand\n"
            + SIX.replace("chr2\t", "\n#mid comment\nchr2\t"))
    out = read_intervals(write(tmp_path, text))
    check_frame(out, ["chr1", "chr2", "chrX"], [10, 5, 0], [20, 5, 100])
    crlf = read_intervals(write(tmp_path, SIX.replace("\n", "\r\n"), name="crlf.bed"))
    assert crlf["strand"].tolist() == ["+", "-", "."]
    three = read_intervals(write(tmp_path, "chr1\t1\t2\r\nchr1\t3\t4", name="noeol.bed"))
    check_frame(three, ["chr1", "chr1"], [1, 3], [2, 4])


def test_bed_many_columns_named(tmp_path):
    line = "\t".join(["chr1", "0", "10"] + [str(k) for k in range(4, 15)]) + "\n"
    out = read_intervals(write(tmp_path, line * 2))
    assert list(out.columns) == ["chrom", "start", "end", "name", "score", "strand", "thickStart",
                                 "thickEnd", "itemRgb", "blockCount", "blockSizes", "blockStarts",
                                 "col13", "col14"]
    assert out["col14"].tolist() == ["14", "14"]


@pytest.mark.parametrize("text, gz", [("", False), ("", True), ("#only\ntrack x\n\n", False)])
def test_bed_empty(tmp_path, text, gz):
    check_frame(read_intervals(write(tmp_path, text, gz=gz)), [], [], [])


@pytest.mark.parametrize("fname", ["refseq.chr1.exons.bed.gz", "gerp.chr1.bed.gz"])
def test_real_data_matches_plain_pandas(fname):
    path = DATA / fname
    if not path.exists():
        pytest.skip(f"{path} not present")
    out = read_intervals(path)
    ref = pd.read_csv(path, sep="\t", header=None, comment="#")
    assert len(out) == len(ref) > 1000
    assert out["start"].tolist() == ref[1].tolist() and out["end"].tolist() == ref[2].tolist()
    assert (out["chrom"] == "chr1").all() and out.shape[1] == ref.shape[1]


def test_missing_file_and_bad_type(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_intervals(tmp_path / "nope.bed")
    with pytest.raises(TypeError):
        read_intervals([1, 2, 3])


# ---------------------------------------------------------------------------------- bad files
HEAD = "#header\ntrack name=t\nchr1\t1\t2\n"  # data starts on line 3; the bad line is line 4


@pytest.mark.parametrize("bad, match", [
    ("chr1\t10\t5", r"data\.bed line 4: end \(5\) is before start \(10\)"),
    ("chr1\tabc\t5", r"data\.bed line 4: column 'start': 'abc' is not a number"),
    ("chr1\t1\t10.5", r"data\.bed line 4: column 'end': '10\.5' is not an integer"),
    ("chr1\t1\t10.0", r"line 4: column 'end': '10\.0' is not an integer"),
    ("chr1\t\t5", r"data\.bed line 4: column 'start': empty value"),
    ("chr1\t-1\t5", r"data\.bed line 4: column 'start': -1 is negative"),
    ("chr1\t1\t1099511627776", r"line 4: column 'end': 1099511627776 is larger than the maximum"),
    ("chr1\t1\t99999999999999999999999", r"line 4: column 'end': .* is larger than the maximum"),
    ("\t1\t5", r"data\.bed line 4: column 'chrom': empty chromosome name"),
    ("chr1\t1", r"data\.bed line 4: expected at least 3 tab-separated fields .* found 2"),
    ("chr1 1 5", r"data\.bed line 4: expected at least 3 .* found 1"),
    ("chr1\t1\t5\tx", r"data\.bed line 4: 4 fields, but line 3 has 3"),
])
def test_bad_bed_line(tmp_path, bad, match):
    for gz in (False, True):
        with pytest.raises(FormatError, match=match):
            read_intervals(write(tmp_path, HEAD + bad + "\nchr1\t1\t2\n", gz=gz))


def test_bad_bed_first_bad_line_reported(tmp_path):
    text = "chr1\t1\t2\n" * 5 + "chr1\t9\t3\n" + "chr1\tx\t2\n"
    with pytest.raises(FormatError, match=r"line 6: end \(3\) is before start \(9\)"):
        read_intervals(write(tmp_path, text))
    with pytest.raises(FormatError, match=r"line 2: column 'start': 'x' is not a number"):
        read_intervals(write(tmp_path, "chr1\t1\t2\nchr1\tx\t2\nchr1\ty\t2\n"))


def test_corrupt_gzip(tmp_path):
    p = tmp_path / "bad.bed.gz"
    p.write_bytes(gzip.compress(SIX.encode())[:20])
    with pytest.raises(FormatError, match="bad.bed.gz"):
        read_intervals(p)


# ------------------------------------------------------------------------ bad frames and arrays
def frame(**over):
    cols = {"chrom": ["chr1"] * 4, "start": [0, 1, 2, 3], "end": [5, 6, 7, 8]}
    cols.update(over)
    return pd.DataFrame(cols)


@pytest.mark.parametrize("df, match", [
    (frame().drop(columns="start"), r"^query: missing column 'start'$"),
    (frame().drop(columns=["chrom", "end"]), r"^query: missing columns 'chrom', 'end'$"),
    (frame(end=[5, 6, 7, 10.5]), r"^query: column 'end' row 3: 10\.5 is not an integer$"),
    (frame(start=[0, 1, "abc", 3]), r"^query: column 'start' row 2: 'abc' is not a number$"),
    (frame(start=[0, None, 2, 3]), r"^query: column 'start' row 1: missing value$"),
    (frame(start=[0, np.nan, 2, 3]), r"^query: column 'start' row 1: missing value$"),
    (frame(start=[0, 1, 2, np.inf]), r"column 'start' row 3: inf is not a finite number"),
    (frame(start=pd.array([0, 1, None, 3], dtype="Int64")), r"column 'start' row 2: missing"),
    (frame(start=[0, -1, 2, 3]), r"^query: column 'start' row 1: -1 is negative$"),
    (frame(end=[5, 6, 7, -8.0]), r"^query: column 'end' row 3: -8\.0 is negative$"),
    (frame(end=[5, 2**40, 7, 8]), r"column 'end' row 1: 1099511627776 is larger than the maximum"),
    (frame(end=np.array([5, 2**64 - 1, 7, 8], dtype=np.uint64)), r"column 'end' row 1: .* larger"),
    (frame(end=[5, 6, 1, 8]), r"^query: row 2: end \(1\) is before start \(2\)$"),
    (frame(chrom=["chr1", "", "chr1", "chr1"]), r"column 'chrom' row 1: empty chromosome name"),
    (frame(chrom=["chr1", "chr1", None, "chr1"]), r"column 'chrom' row 2: missing chromosome"),
    (frame(chrom=["chr1", np.nan, "chr1", "chr1"]), r"column 'chrom' row 1: missing chromosome"),
    (frame(start=[True, False, True, True]), r"column 'start' row 0: boolean"),
])
def test_bad_dataframe(df, match):
    with pytest.raises(FormatError, match=match):
        read_intervals(df, name="query")


def test_bad_dataframe_index_is_positional():
    df = frame(end=[5, 6, 1, 8])
    df.index = [10, 20, 30, 40]
    with pytest.raises(FormatError, match=r"query: row 2: end"):
        read_intervals(df, name="query")


def test_duplicate_column():
    df = pd.concat([frame(), frame()[["start"]]], axis=1)
    with pytest.raises(FormatError, match="query: column 'start' appears 2 times"):
        read_intervals(df, name="query")


@pytest.mark.parametrize("src, match", [
    (([0, 1], [5, 0.5]), r"^q: column 'end' row 1: 0\.5 is not an integer$"),
    (([0, 1], [5, 0]), r"^q: row 1: end \(0\) is before start \(1\)$"),
    (("c", [0, 1], [5]), r"q: column 'end' has 1 values but 'start' has 2"),
    ((["a"], [0, 1], [5, 6]), r"q: column 'chrom' has 1 values"),
    (([[0, 1]], [[5, 6]]), r"q: column 'start' must be 1-D"),
    (([0], [1], [2], [3]), r"q: a tuple source must be"),
    ((["a", ""], [0, 1], [5, 6]), r"q: column 'chrom' row 1: empty chromosome name"),
])
def test_bad_tuple(src, match):
    with pytest.raises(FormatError, match=match):
        read_intervals(src, name="q")
