"""Chromosome coding from the Arrow buffers (`genome_names`) against pandas' factorize, and the
value layouts of an index (`radix_order.start_sorted`, `GenomeIndex`'s parts built without a row
order) against numpy oracles: the same answers whichever operation builds its parts first."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from ctensor.apps import genome_names as gn, genome_query
from ctensor.apps.genome_index import GenomeIndex
from ctensor.apps.radix_order import _sort_bits, ranked_axis, start_sorted

NAMES = ["chr1", "chr2", "chr10", "chrX", "chr22_x", "2L", "é", "abcdefg"]


def _column(values, kind):
    s = pd.Series(values, dtype=object)
    if kind == "str":
        return s.astype("str").array
    typ = {"string": pa.string(), "large": pa.large_string()}[kind]
    return pd.Series(values, dtype=pd.ArrowDtype(typ)).array


@pytest.mark.parametrize("n", [0, 1, 7, 300, 5000])
@pytest.mark.parametrize("kind", ["str", "string", "large"])
@pytest.mark.parametrize("names", [NAMES, NAMES[:2], ["chr1", "chr2", "chr3"], ["a"]])
def test_code_names_equals_sorted_factorize(n, kind, names):
    rng = np.random.default_rng(n)
    values = list(np.array(names, object)[rng.integers(0, len(names), n)])
    col = _column(values, kind)
    for part in (col, col[3:], col[1:max(1, n - 2)]):       # sliced arrays: offsets not from 0
        codes, got = gn.code_names(part)
        want = sorted(set(part))
        assert got == want
        assert [got[c] for c in codes] == list(part)


@pytest.mark.parametrize("layout", ["runs", "runs_then_random", "one", "two_chunks"])
def test_code_names_by_runs_or_hash_equals_sorted_factorize(layout):
    """Runs of equal names (a sorted BED file) are coded from the run heads; names that stop
    coming in runs after the sampled first rows, and chunked columns, are hashed."""
    rng = np.random.default_rng(7)
    n = 20_000
    values = list(np.sort(np.array(NAMES, object)[rng.integers(0, len(NAMES), n)]))
    if layout == "runs_then_random":
        values[2000:] = list(np.array(NAMES, object)[rng.integers(0, len(NAMES), n - 2000)])
    elif layout == "one":
        values = ["chr7"] * n
    col = _column(values, "string")
    if layout == "two_chunks":
        col = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([values[:n // 2], values[n // 2:]]))).array
    codes, got = gn.code_names(col)
    assert got == sorted(set(values))
    assert [got[c] for c in codes] == values


def test_code_names_finds_a_lone_name():
    values = ["chr1"] * 100_000
    values[54_321] = "chrM"
    codes, names = gn.code_names(_column(values, "str"))
    assert names == ["chr1", "chrM"] and codes[54_321] == 1 and (np.delete(codes, 54_321) == 0).all()


def test_packed_keys_refuse_long_or_missing_names():
    assert gn.packed_keys(_column(["chr1", "chrUn_gl000220"], "str")) is None
    assert gn.packed_keys(pd.Series(["chr1", None], dtype="str").array) is None
    assert gn.packed_keys(np.array(["chr1"], object)) is None
    assert gn.code_names(np.array(["chr1"], object)) is None


@pytest.mark.parametrize("chroms", [["chr1", "chrX", "a"], [f"s{i}" for i in range(70_000)]])
def test_key_table_codes_positions_and_absent_names(chroms):
    """Position in `chroms`, len(chroms) for any other name, longer names included."""
    table = gn.key_table(chroms)
    queries = chroms[:3] + chroms[-2:] + ["zz", "chr", "", "chrX\0"]
    col = _column(queries * 50, "str")
    keys = gn.packed_keys(col)
    codes = genome_query._lookup(keys, table)
    assert np.array_equal(genome_query._codes(chroms, col, table), codes)      # by runs or hashed alike
    where = {c: k for k, c in enumerate(chroms)}
    assert list(codes) == [where.get(q, len(chroms)) for q in queries] * 50
    assert gn.key_table(["chr1", "chrUn_gl000220"]) is None


@pytest.mark.parametrize("bits", [3, 16, 24, 25, 31, 44])
def test_sort_bits_sorts_values(bits, sorter):
    rng = np.random.default_rng(bits)
    k = rng.integers(0, 2**bits, 50_000)
    p = (k << 5) | rng.integers(0, 32, len(k))
    got = _sort_bits(p.copy(), 5, bits)
    assert np.array_equal(got >> 5, np.sort(k))
    assert np.array_equal(np.sort(got), np.sort(p))      # the low bits travel with their keys


@pytest.mark.parametrize("chroms", [5, 3000])
@pytest.mark.parametrize("n", [1, 2, 1000, 100_000])
def test_start_sorted_equals_the_ranked_axis_values(n, chroms, sorter):
    """Both keys: the genome-axis start itself beside the length (5 chromosomes), and the compact
    one (3000: code << 41 and a 13-bit length need 64 bits); widened starts at -1 included."""
    rng = np.random.default_rng(n)
    codes = rng.integers(0, chroms, n)
    s = rng.integers(-1, 2**28, n)
    s[rng.random(n) < 0.3] = s[0]                         # equal starts of other lengths
    s[rng.random(n) < 0.01] = -1
    e = s + rng.integers(1, 5000, n)
    order, gs, ge = ranked_axis(codes, s, e)
    got = start_sorted(codes, s, e)
    if got is None:
        assert order is None
        return
    vs, ve = got
    assert np.array_equal(vs, gs)                         # starts: the same sorted values
    assert sorted(zip(vs, ve)) == sorted(zip(gs, ge))     # the same intervals


def test_start_sorted_declines_keys_past_63_bits(sorter):
    s = np.array([2**40 - 10, 0, 5])
    e = np.array([2**40 - 1, 2**39, 6])
    assert start_sorted(np.zeros(3, np.int64), s, e) is None
    assert start_sorted(np.zeros(2, np.int64), np.array([0, 1]), np.array([3, 4])) is None     # in order


def _frame(rng, n, ties=0.3):
    chrom = np.array(["chr1", "chr2", "chrX"], object)[rng.integers(0, 3, n)]
    s = rng.integers(0, 20_000, n)
    s[rng.random(n) < ties] = 777
    e = s + rng.integers(0, 300, n)                       # zero-length intervals too
    return pd.DataFrame({"chrom": pd.Series(chrom, dtype="str"), "start": s, "end": e})


def _brute_count(q, d):
    out = np.zeros(len(q), np.int64)
    for c in set(q["chrom"]):
        qm, dm = (q["chrom"] == c).to_numpy(), (d["chrom"] == c).to_numpy()
        qs, qe = q["start"].to_numpy()[qm], q["end"].to_numpy()[qm]
        ds, de = d["start"].to_numpy()[dm], d["end"].to_numpy()[dm]
        qs, qe = np.where(qs == qe, qs - 1, qs), np.where(qs == qe, qe + 1, qe)     # bedtools widening
        ds, de = np.where(ds == de, ds - 1, ds), np.where(ds == de, de + 1, de)
        out[qm] = ((ds[None, :] < qe[:, None]) & (de[None, :] > qs[:, None])).sum(1)
    return out


def test_parts_from_values_then_ranks_agree(sorter):
    """count and merge build S, E and the union from the sorted values (no row order); overlap
    and intersect then build the ranks on the same index: every answer equals a fresh index's
    and the brute-force count, whichever came first."""
    rng = np.random.default_rng(5)
    d, q = _frame(rng, 3000), _frame(rng, 2000, ties=0.1)
    first = GenomeIndex(d, ops=("count", "merge", "depth"))
    assert "_axis" not in first.__dict__                 # no row order was made
    c = first.count_overlaps(q["start"].to_numpy(), q["end"].to_numpy(), q["chrom"])
    assert np.array_equal(c, _brute_count(q, d))
    fresh = GenomeIndex(d, ops=())
    fresh.order                                           # ranks first, then every part from them
    for a, b in zip(first.merge(), fresh.merge()):
        assert np.array_equal(np.asarray(a, object), np.asarray(b, object))
    for a, b in zip(first.depth(), fresh.depth()):
        assert np.array_equal(np.asarray(a, object), np.asarray(b, object))
    args = (q["start"].to_numpy(), q["end"].to_numpy(), q["chrom"])
    for a, b in zip(first.overlap(*args), fresh.overlap(*args)):
        assert np.array_equal(a, b)
    for a, b in zip(first.intersect(*args), fresh.intersect(*args)):
        assert np.array_equal(a, b)
    assert np.array_equal(fresh.count_overlaps(*args), c)


@pytest.mark.parametrize("ties", [0.0, 0.3])
def test_union_ends_equal_a_running_max_reference(ties, sorter):
    """UE (closest's part) is the right ends of the union einsum's runs: equal to the running
    maximum of the ends, cut where the next start lies beyond it (touching intervals join), with
    or without U built first; with every interval a run of its own it shares End's buffer."""
    rng = np.random.default_rng(11)
    d = _frame(rng, 4000, ties=ties)
    for first in ((), ("merge",)):
        idx = GenomeIndex(d, ops=first + ("closest",))
        gs, ge = idx._gs, idx._ge
        reach = np.maximum.accumulate(ge)
        want = reach[np.r_[gs[1:] > reach[:-1], True]]
        assert np.array_equal(np.asarray(idx.UE.level.idx), want)
    apart = pd.DataFrame({"chrom": pd.Series(["chr1"] * 50, dtype="str"), "start": np.arange(50) * 10,
                          "end": np.arange(50) * 10 + 5})
    idx = GenomeIndex(apart, ops=("closest",))
    assert np.asarray(idx.UE.level.idx) is idx._ge
