"""The union and depth tracks of a genomic index (`U[x] = D[j, x] * d(j; boolean)`, `Depth[x] =
D[j, x] * d(j; counting)`), whose passes the runtime merges by a sweep when they come in start
order with their ends in order (`runtime.merge_output._swept`).  Oracles: the general merge
(the sort of every boundary key) on the same passes, and a brute-force union and depth per base;
the DataFrame operations themselves are checked against bedtools in test_genomics.py."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ctensor.apps.genomics as g
import ctensor.runtime.merge_output as mo
from ctensor.formats.level import CLOSED

OPS = [("+", np.int64), ("+", np.float64), ("min", np.float64), ("max", np.int64), ("or", None)]


def passes(rng, n, closed, sorted_ends=True, spread=40):
    """n runs of one fiber, starts in order (the passes of a sweep), ends in order too unless
    `sorted_ends` is False; endpoints on a small grid so keys tie often."""
    left = np.sort(rng.integers(0, spread, n)).astype(np.float64)
    length = np.full(n, rng.integers(0, 6)) if sorted_ends else rng.integers(0, 6, n)
    right = left + length
    a, c = CLOSED[closed]
    if a > 0 or c < 0:       # a run open at an end has positive length
        right = right + 1
    return left, np.full(n, a, np.int8), right, np.full(n, c, np.int8)


@pytest.mark.parametrize("closed", list(CLOSED))
@pytest.mark.parametrize("op,dtype", OPS)
def test_sweep_merge_equals_general_merge(closed, op, dtype, monkeypatch):
    """merge_runs with the sweep equals merge_runs with the general sort, for every closedness and
    reduction, on passes that tie, touch, nest and repeat."""
    rng = np.random.default_rng(7)
    for n, sorted_ends in [(n, e) for n in (1, 2, 3, 10, 200) for e in (True, False)]:
        for rep in range(4):
            left, le, right, re = passes(rng, n, closed, sorted_ends)
            assert mo._swept(left, le, right, re) is not None
            val = None if dtype is None else rng.integers(-3, 4, n).astype(dtype)
            ptr = np.array([0, n], np.int64)
            got = mo.merge_runs(ptr, left, le, right, re, val, op)
            with monkeypatch.context() as m:
                m.setattr(mo, "_swept", lambda *a: None)
                want = mo.merge_runs(ptr, left, le, right, re, val, op)
            for x, y in zip(got, want):
                if y is None:
                    assert x is None
                else:
                    np.testing.assert_array_equal(x, y)
                    assert x.dtype == y.dtype


def test_sweep_declines_passes_out_of_order():
    """Starts out of order, mixed closedness or an infinite end: the general sort merges them; ends
    out of order are a sweep only for a Pattern leaf (the union needs no key order)."""
    rng = np.random.default_rng(3)
    left, le, right, re = passes(rng, 50, "left", sorted_ends=False)
    assert (np.diff(right) < 0).any()
    assert mo._swept(left, le, right, re)[2] is False
    right2 = right.copy()
    right2[7] = np.inf
    assert mo._swept(left, le, right2, re) is None
    left, le, right, re = passes(rng, 50, "left")
    assert mo._swept(left[::-1].copy(), le, right[::-1].copy(), re) is None
    le2 = le.copy()
    le2[3] = 1
    assert mo._swept(left, le2, right, re) is None


def brute(rows):
    """Per chromosome: depth of every base (bedtools' zero-length rule: [p, p) covers p-1 and p)."""
    out = {}
    for c, s, e in rows:
        s, e = (s - 1, e + 1) if s == e else (s, e)
        d = out.setdefault(c, np.zeros(200, np.int64))
        d[max(s, 0):e] += 1                  # depth prints runs clipped at 0
    return out


@pytest.mark.parametrize("seed", range(6))
def test_union_and_depth_against_brute_force(seed):
    """merge, depth and the covered bases of coverage on random sets (sorted by start with ends in
    order, which the sweep merges, or shuffled) equal a per-base count."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    c = rng.choice(["chr1", "chr2"], n)
    s = rng.integers(0, 150, n)
    e = s + (np.full(n, rng.integers(0, 20)) if seed % 2 else rng.integers(0, 20, n))
    d = pd.DataFrame({"chrom": c, "start": s, "end": e})
    if seed % 3 == 0:
        d = d.sort_values(["chrom", "start"], kind="stable").reset_index(drop=True)
    depth = brute(zip(c, s, e))
    got = g.depth(d)
    for name, dep in depth.items():
        rows = got[got["chrom"] == name]
        want = np.zeros(200, np.int64)
        for a, b, v in zip(rows["start"], rows["end"], rows["depth"]):
            want[a:b] += v
        np.testing.assert_array_equal(want, dep)
        m = g.merge(d)
        m = m[m["chrom"] == name]
        covered = np.zeros(200, bool)
        for a, b in zip(m["start"], m["end"]):
            assert not covered[a:b].any() or a == b
            covered[a:b] = True
        # zero-length runs print as given (bedtools); the others are the bases of depth > 0
        zl = (m["start"] == m["end"]).to_numpy()
        for a in m["start"].to_numpy()[zl]:
            covered[max(a - 1, 0):a + 1] = True
        np.testing.assert_array_equal(covered, dep > 0)
    q = pd.DataFrame({"chrom": ["chr1", "chr2", "chr1"], "start": [0, 10, 50], "end": [150, 90, 51]})
    cov = g.coverage(q, d)
    for k, (name, a, b) in enumerate(zip(q["chrom"], q["start"], q["end"])):
        dep = depth.get(name, np.zeros(200, np.int64))
        assert cov["covered"][k] == int((dep[a:b] > 0).sum())


@pytest.mark.parametrize("seed", range(8))
def test_cover_runs_and_both_plans_against_brute_force(seed):
    """coverage's union runs (`genome_cover.cover_parts`: the einsum union U[x] = D[j, x] *
    d(j; boolean) that merge prints) equal the running maximum of the ends over the starts in
    order, and the covered bases of both plans
    (direct, ranks) equal a per-base count, for queries in any order, zero-length ones, and
    queries on a chromosome the data lacks."""
    from ctensor.apps import genome_cover as gc
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 80))
    c = rng.choice(["chr1", "chr2", "chr3"][: 1 + seed % 3], n)
    s = rng.integers(0, 150, n)
    e = s + rng.integers(0, 25 if seed % 2 else 4, n)          # sparse sets touch and leave gaps
    d = pd.DataFrame({"chrom": c, "start": s, "end": e})
    idx = g.index(d, ops=("coverage",))
    parts = gc.cover_parts(idx)
    # reference: the runs from the running maximum of the ends over the starts in order
    gs_, ge_ = idx._sorted_values()
    reach = np.maximum.accumulate(ge_)
    last = np.append(gs_[1:] > reach[:-1], True)
    first = np.insert(last[:-1], 0, True)
    np.testing.assert_array_equal(parts["US"].level.idx, gs_[first])
    np.testing.assert_array_equal(parts["UR"].level.idx, reach[last])
    np.testing.assert_array_equal(parts["Uc"].level.left, gs_[first])
    m = 300
    qc = rng.choice(["chr1", "chr2", "chr3", "chrX"], m)
    qs = rng.integers(0, 170, m)
    qe = qs + rng.integers(0, 40, m)
    depth = brute(zip(c, s, e))
    want = []
    for name, a, b in zip(qc, qs, qe):
        a, b = (a - 1, b + 1) if a == b else (a, b)         # bedtools widens zero-length queries
        dep = depth.get(name, np.zeros(200, np.int64))
        want.append(int((dep[max(a, 0):b] > 0).sum()))
    gs, ge, _ = idx.genome(qc, qs, qe)
    for how in ("direct", "ranks"):
        order = np.argsort(gs, kind="stable")                  # the rank plan's searches go forward
        got = np.empty(m, np.int64)
        got[order] = gc.covered(idx, gs[order], ge[order], how)
        np.testing.assert_array_equal(got, want, err_msg=how)
    np.testing.assert_array_equal(gc.covered(idx, gs, ge, "direct"), want)     # any order
    cov = g.coverage(pd.DataFrame({"chrom": qc, "start": qs, "end": qe}), idx)
    np.testing.assert_array_equal(cov["covered"], want)


def test_cover_parts_built_once_across_threads():
    """Many threads asking for coverage's union runs at once share one build."""
    from concurrent.futures import ThreadPoolExecutor

    from ctensor.apps import genome_cover as gc
    rng = np.random.default_rng(5)
    s = rng.integers(0, 10**6, 5000)
    idx = g.index(pd.DataFrame({"chrom": "chr1", "start": s, "end": s + 50}), ops=())
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda _: gc.cover_parts(idx)["Uc"], range(16)))
    assert all(t is got[0] for t in got)
