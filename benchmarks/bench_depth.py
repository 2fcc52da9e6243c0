"""Depth of coverage (`bedtools genomecov -bg`) against the peers, end to end from a DataFrame.

    pytest benchmarks/bench_depth.py -o addopts="" --benchmark-min-rounds=3 --benchmark-max-time=0.5
    (one table per data set, printed by pytest-benchmark; ratios against the numba sweep)

ctensor: `genomics.depth(df)` = read + index + the einsum `Depth[x] = D[j, x] * d(j; counting)`
(a continuous output revisited once per interval, merged by `runtime.merge_output`); its kernel
is compiled before the timing (compile time is reported by `test_ctensor_compile`).  Peers:
bedtools genomecov -bg (pybedtools; the BED and genome files are written beforehand) and a
hand-written numba sweep over the sorted starts and ends (the reference every answer is checked
against).  PyRanges' `to_rle` needs pyrle, which is not a dependency here.  Data: chr1 only (the real tracks of the genomics benchmark, SNPs
with zero-length records widened as bedtools does, and the paper's synthetic sets).
"""
from __future__ import annotations

from functools import cache

import genomics_peers as g
import numpy as np
import pandas as pd
import pytest
from numba import njit

from ctensor.driver import compile_kernel

DATASETS = ("exons", "gerp", "snps", "L1000", "L100000")


@cache
def data(name) -> pd.DataFrame:
    if name == "exons":
        return g.real_exons_gerp()[1]
    if name == "gerp":
        return g.real_exons_gerp()[0]
    if name == "snps":
        return g.real_snps_exons()[0]
    return g.synthetic(int(name[1:]))[1]


@njit(cache=False)
def _sweep(s, e):
    """Runs (start, end, depth) of constant non-zero depth from sorted starts s and sorted ends e."""
    n = s.shape[0]
    rs, re, rd = np.empty(2 * n, np.int64), np.empty(2 * n, np.int64), np.empty(2 * n, np.int64)
    i = j = k = 0
    depth = 0
    prev = 0
    while i < n or j < n:
        x = s[i] if i < n and (j >= n or s[i] <= e[j]) else e[j]
        if depth > 0 and x > prev:
            if k > 0 and re[k - 1] == prev and rd[k - 1] == depth:
                re[k - 1] = x
            else:
                rs[k], re[k], rd[k] = prev, x, depth
                k += 1
        while i < n and s[i] == x:
            depth += 1
            i += 1
        while j < n and e[j] == x:
            depth -= 1
            j += 1
        prev = x
    return rs[:k], re[:k], rd[:k]


def numba_depth(df):
    return _sweep(np.sort(df.start.to_numpy(np.int64)), np.sort(df.end.to_numpy(np.int64)))


def ctensor_depth(df):
    from ctensor.apps import genomics
    out = genomics.depth(df)
    return out.start.to_numpy(), out.end.to_numpy(), out.depth.to_numpy()


def bedtools_depth(files):
    import pybedtools
    bed, genome = files
    out = pybedtools.BedTool(bed).genome_coverage(bg=True, g=genome)
    df = out.to_dataframe(names=["chrom", "start", "end", "depth"], dtype={"chrom": str})
    return df.start.to_numpy(np.int64), df.end.to_numpy(np.int64), df.depth.to_numpy(np.int64)


def _bed_files(df, tmp):
    import pybedtools
    bed = pybedtools.BedTool.from_dataframe(df[["chrom", "start", "end"]]).sort().saveas(str(tmp / "d.bed"))
    genome = tmp / "genome.txt"
    genome.write_text(f"chr1\t{int(df.end.max()) + 1}\n")
    return bed.fn, str(genome)


def _same(a, b):
    return all(np.array_equal(np.asarray(x, np.int64), np.asarray(y, np.int64)) for x, y in zip(a, b))


@pytest.fixture(scope="module", autouse=True)
def _warm():
    numba_depth(data("exons"))
    ctensor_depth(data("exons"))          # compiles the depth kernel and its merging sibling


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("peer", ["ctensor", "numba", "bedtools"])
def test_depth(benchmark, peer, ds, tmp_path):
    df = data(ds)
    benchmark.group = f"depth:{ds}"
    benchmark.extra_info.update(op="depth", peer=peer, dataset=ds, mode="e2e")
    if peer == "bedtools":
        fn, arg = bedtools_depth, _bed_files(df, tmp_path)
    else:
        fn, arg = {"ctensor": ctensor_depth, "numba": numba_depth}[peer], df
    if peer == "bedtools":
        out = benchmark.pedantic(fn, (arg,), rounds=3, iterations=1)
    else:
        out = benchmark(fn, arg)
    assert _same(out, numba_depth(df)), f"{peer} disagrees with the numba sweep on {ds}"


def test_ctensor_compile(benchmark):
    """Compile time of the depth kernel and its merging sibling (cold: a fresh compile each round)."""
    import ctensor as ct
    from ctensor.apps.genome_index import EINSUMS
    from ctensor.apps.genome_layout import interval_tensor
    D = interval_tensor(np.array([0.0, 1.0]), np.array([2.0, 3.0]), "left")
    benchmark.group = "depth:compile"

    def compile_both():
        k = compile_kernel(EINSUMS["depth"], dict(D=D), use_store=False)
        k(D=D)                            # overlapping: compiles the merging sibling
        return k
    k = benchmark.pedantic(compile_both, rounds=3, iterations=1)
    assert "merged" in k._siblings
