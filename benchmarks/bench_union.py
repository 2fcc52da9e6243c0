"""Union and sum of k interval tracks: one compiled einsum against bioframe and a numba sweep.

    pytest benchmarks/bench_union.py -o addopts="" --benchmark-min-rounds=5 --benchmark-max-time=0.5
    (one group per (k, operation), printed by pytest-benchmark; compile times by test_compile, -s)

ctensor: `C[x] = T0[x] | T1[x] | …` (the union as maximal runs; `bedtools merge` of the k tracks
together, touching runs coalesced) and `s[] = (T0[x] | …) * d(x; lebesgue)` (bases covered by
at least one track).  With four or more tracks every track is read by the union protocol
(`ctensor/formats/run_union.py`), one loop whose code is linear in k.  Peers: `bioframe.merge`
of the concatenated tracks (min_dist=0 merges touching intervals too), and a hand-written numba
sweep over the sorted starts and ends (the reference the answers are checked against).  Data:
k synthetic tracks of 100,000 intervals each on a 250 Mb chromosome (fixed seed), every track
canonical (sorted, disjoint), half-open [start, end).
"""
from __future__ import annotations

import time
from functools import cache

import bioframe
import numpy as np
import pandas as pd
import pytest
from numba import njit

import ctensor as ct

N, LENGTH = 100_000, 250_000_000
KS = (4, 8)


@cache
def tracks(k):
    rng = np.random.default_rng(k)
    out = []
    for _ in range(k):
        s = np.sort(rng.choice(LENGTH, N, replace=False)).astype(np.float64)
        e = np.minimum(s + rng.integers(10, 2000, N), np.r_[s[1:], LENGTH])
        out.append((s, e))
    return out


@cache
def tensors(k):
    return {f"T{j}": ct.intervals(s, e) for j, (s, e) in enumerate(tracks(k))}


@cache
def frame(k):
    return pd.concat([pd.DataFrame({"chrom": "chr1", "start": s.astype(np.int64), "end": e.astype(np.int64)})
                      for s, e in tracks(k)], ignore_index=True)


def text(k, scalar):
    chain = " | ".join(f"T{j}[x]" for j in range(k))
    return f"s[] = ({chain}) * d(x; lebesgue)" if scalar else f"C[x] = {chain}"


@njit(cache=False)
def _sweep(s, e):
    """Maximal runs covered by at least one [s, e) from sorted starts s and sorted ends e."""
    n = s.shape[0]
    rs, re = np.empty(n, np.float64), np.empty(n, np.float64)
    i = j = k = depth = 0
    while i < n:
        if s[i] < e[j] or (s[i] == e[j]):          # a start at an end: touching runs coalesce
            if depth == 0:
                if k > 0 and re[k - 1] == s[i]:
                    k -= 1
                else:
                    rs[k] = s[i]
            depth += 1
            i += 1
        else:
            depth -= 1
            if depth == 0:
                re[k] = e[j]
                k += 1
            j += 1
    while j < n:
        depth -= 1
        if depth == 0:
            re[k] = e[j]
            k += 1
        j += 1
    return rs[:k], re[:k]


def endpoints(k):
    """Every track's starts and ends, each sorted (the sweep's input; timed with it)."""
    return tuple(np.sort(np.concatenate([t[side] for t in tracks(k)])) for side in (0, 1))


def sweep(k):
    return _sweep(*endpoints(k))


@pytest.mark.parametrize("k", KS)
def test_compile(k):
    """Compile times (lowering + LLVM), reported separately from the calls; no threshold."""
    for scalar in (False, True):
        t0 = time.perf_counter()
        kernel = ct.compile(text(k, scalar), **tensors(k))
        print(f"\nk={k} {'scalar' if scalar else 'runs'}: compile {time.perf_counter() - t0:.3f} s "
              f"({ {a: round(b, 3) for a, b in kernel.compile_seconds.items()} })")


GROUPS = {False: "union runs", True: "bases covered"}


@pytest.mark.parametrize("scalar", sorted(GROUPS))
@pytest.mark.parametrize("k", KS)
def test_ctensor(benchmark, k, scalar):
    benchmark.group = f"{GROUPS[scalar]} k={k}"
    kernel = ct.compile(text(k, scalar), **tensors(k))
    out = benchmark(kernel, **tensors(k))
    rs, re = sweep(k)
    if scalar:
        assert out == float((re - rs).sum())
    else:
        np.testing.assert_array_equal(out.level.left, rs)
        np.testing.assert_array_equal(out.level.right, re)


@pytest.mark.parametrize("scalar", sorted(GROUPS))
@pytest.mark.parametrize("k", KS)
def test_bioframe(benchmark, k, scalar):
    benchmark.group = f"{GROUPS[scalar]} k={k}"
    df = frame(k)
    if scalar:
        rs, re = sweep(k)
        assert benchmark(lambda: int((lambda m: (m.end - m.start).sum())(bioframe.merge(df, min_dist=0)))) \
            == int((re - rs).sum())
    else:
        assert len(benchmark(bioframe.merge, df, min_dist=0)) == len(sweep(k)[0])


@pytest.mark.parametrize("k", KS)
def test_numba(benchmark, k):
    benchmark.group = f"union runs k={k}"
    sweep(k)                                   # compiled before the timing
    benchmark(sweep, k)
