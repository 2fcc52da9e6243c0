"""The genomics apps' numpy glue against numpy/pandas oracles: the radix row orders
(`radix_order`), the pair lists put back in row order (`workers.in_order`), the output frames'
gathers (`frame_take.take_rows`, `RankedColumns`) and the chromosome coding
(`genome_layout.factorize_names`).  The operations' answers themselves are checked against
bedtools in test_genomics.py."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ctensor.apps.frame_take import RankedColumns, take_rows
from ctensor.apps.genome_layout import SPAN, factorize_names
from ctensor.apps.radix_order import axis_keys, exact_order, visit_order
from ctensor.apps.workers import in_order, split_rows


def _axis(rng, n, chroms, span=2**28, ties=0.0):
    """Genome-axis starts (float64): `chroms` chromosomes, widened starts from -1, some repeated."""
    x = rng.integers(0, chroms, n) * SPAN + rng.integers(-1, span, n)
    if n and ties:
        x[rng.random(n) < ties] = x[0]
    return x.astype(np.float64)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000, 70_000, 300_000])
@pytest.mark.parametrize("chroms", [1, 5])
def test_exact_order_is_stable_argsort(n, chroms, sorter):
    rng = np.random.default_rng(n + chroms)
    x = _axis(rng, n, chroms, ties=0.2)
    assert np.array_equal(exact_order(x), np.argsort(x, kind="stable"))
    assert np.array_equal(exact_order(np.sort(x)), np.arange(n))
    k = x.astype(np.int64)                  # integer keys (the index's code * width + start)
    assert np.array_equal(exact_order(k), np.argsort(k, kind="stable"))


def test_exact_order_off_the_genome_axis_falls_back():
    """Fractional, infinite, NaN or below -1: not genome-axis keys; numpy's stable argsort."""
    for x in (np.array([0.5, 0.25, 0.5]), np.array([np.inf, 1.0, -np.inf]), np.array([3.0, np.nan, 1.0]),
              np.array([-2.0, 5.0, -2.0])):
        assert axis_keys(x) is None
        assert np.array_equal(exact_order(x), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("n", [2, 1000, 200_000])
def test_visit_order_is_a_bucketed_start_order(n, sorter):
    """A permutation; sorted by the keys' top bits: a row visited later never starts a bucket
    (2**(top - bits) keys wide) earlier."""
    rng = np.random.default_rng(n)
    x = _axis(rng, n, 5)
    p = visit_order(x)
    assert np.array_equal(np.sort(p), np.arange(n))
    keys = axis_keys(x)
    keys -= keys.min()
    top = int(keys.max()).bit_length()
    bits = min(top, n.bit_length() + 2, 32)
    bucket = keys[p] >> (top - bits)
    assert (np.diff(bucket) >= 0).all()


def _scatter_in_order(out, perm, r=0):
    """The oracle: each run row's block of entries moved to its original row's place, by sorting
    the entries stably by original row."""
    orig = perm[out[r]]
    o = np.argsort(orig, kind="stable")
    return tuple(orig[o] if k == r else a[o] for k, a in enumerate(out))


@pytest.mark.parametrize("n", [0, 1, 9, 5000])
def test_in_order_pairs_equal_a_stable_sort_by_row(n):
    rng = np.random.default_rng(n)
    perm = rng.permutation(n).astype(np.int64)
    cnt = rng.integers(0, 5, n)
    q = np.repeat(np.arange(n, dtype=np.int64), cnt)
    out = (q, rng.integers(0, 100, len(q)), rng.random(len(q)))
    got, want = in_order(out, perm, rows=(0,)), _scatter_in_order(out, perm)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_split_rows_orders_unsorted_rows_and_puts_them_back():
    """A chunk run in visit order: per-row outputs and pair lists come back in row order, and the
    function saw its rows bucketed by start."""
    rng = np.random.default_rng(4)
    x = _axis(rng, 20_000, 3)
    seen = []

    def fn(s):
        seen.append(s)
        return np.repeat(np.arange(len(s)), 2), np.repeat(s, 2)
    qi, v = split_rows(fn, 1, (x,), rows=(0,), order_by=x)
    assert np.array_equal(qi, np.repeat(np.arange(len(x)), 2)) and np.array_equal(v, np.repeat(x, 2))
    assert np.mean(np.diff(seen[0]) < 0) < 0.1             # about sorted (the input: ~0.5)


def _frame(rng, n):
    return pd.DataFrame({"chrom": pd.array(rng.choice(["chr1", "chr2"], n), dtype="str"),
                         "start": rng.integers(0, 9, n), "f": rng.random(n),
                         "o": np.array([str(i) for i in range(n)], object),
                         "cat": pd.Categorical(rng.choice(list("abc"), n)),
                         "ni": pd.array(rng.integers(0, 5, n), dtype="Int64"), "b": rng.random(n) > 0.5,
                         "t": pd.to_datetime(rng.integers(0, 10**9, n), unit="s")}, index=np.arange(n)[::-1])


def test_take_rows_one_worker_equals_iloc():
    """Column by column (numpy take, extension take) equals iloc + reset_index for every column kind;
    a column given in `taken` is used as it is; IndexError for a row out of range."""
    rng = np.random.default_rng(1)
    df = _frame(rng, 3000)
    rows = rng.integers(0, len(df), 7000)
    want = df.iloc[rows].reset_index(drop=True)
    pd.testing.assert_frame_equal(take_rows(df, rows), want, check_exact=True)
    pd.testing.assert_frame_equal(take_rows(df, rows[:0]), df.iloc[:0].reset_index(drop=True), check_exact=True)
    got = take_rows(df, rows, taken={"chrom": want["chrom"].array})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    with pytest.raises(IndexError):
        take_rows(df, np.append(rows, len(df)))


@pytest.mark.parametrize("workers", [1, 2])
def test_take_rows_keeps_object_string_columns(workers):
    """An object column of strings stays object (pandas' constructor infers `str` for it from a
    bare numpy array: overlap's `name` column came back as str from 2048 pairs on)."""
    df = pd.DataFrame({"name": pd.Series(["a", "b"] * 3000, dtype=object), "x": np.arange(6000)})
    rows = np.arange(6000)[::-1].copy()
    pd.testing.assert_frame_equal(take_rows(df, rows, workers), df.iloc[rows].reset_index(drop=True),
                                  check_exact=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_ranked_columns_equal_iloc_at_the_rows(workers):
    rng = np.random.default_rng(2)
    df = _frame(rng, 9000)
    order = rng.permutation(len(df)).astype(np.int64)
    ranks = rng.integers(0, len(df), 20_000)
    want = df.iloc[order[ranks]].reset_index(drop=True)
    for r in (RankedColumns(df, order), RankedColumns(df.iloc[order].reset_index(drop=True), None)):
        pd.testing.assert_frame_equal(r.take(ranks, workers), want, check_exact=True)
        pd.testing.assert_frame_equal(r.take(ranks, workers), want, check_exact=True)     # cached columns
    with pytest.raises(IndexError):
        RankedColumns(df, order).take(np.array([len(df)]))


@pytest.mark.parametrize("values", [
    ["chr2"] * 500 + ["chr1"] * 600 + ["chr2"] * 300,        # runs, a name repeated later
    list(np.random.default_rng(0).choice(["a", "b", "c"], 1000)),    # short runs: hashed
    ["x"] * 300, ["chr1"] * 10, []])
@pytest.mark.parametrize("kind", ["str", "object", "series"])
def test_factorize_names_equals_pandas(values, kind):
    s = pd.Series(values, dtype="str")
    obj = {"str": s.array, "object": s.to_numpy(object), "series": s}[kind]
    codes, names = factorize_names(obj)
    want_codes, want_names = pd.factorize(obj)
    assert np.array_equal(codes, want_codes) and list(names) == list(want_names)


def test_factorize_names_missing_names_are_minus_one():
    s = pd.Series(["a"] * 300 + [None] * 10 + ["b"] * 300, dtype="str")
    codes, names = factorize_names(s.array)
    want_codes, want_names = pd.factorize(s.array)
    assert np.array_equal(codes, want_codes) and list(names) == list(want_names)
