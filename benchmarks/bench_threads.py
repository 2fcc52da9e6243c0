"""Thread scaling: one kernel called from two threads, and the apps' `workers=` (issue 27 item 2).

    OPENBLAS_NUM_THREADS=1 pytest benchmarks/bench_threads.py --benchmark-min-rounds=5 -s

(one BLAS thread: kpconv's dense contraction runs in numpy's BLAS, whose own threads would make
workers=1 use every core already; `ctensor.apps.pointcloud`'s docstring)

The peer of each 2-thread timing is the same work on one thread, in the same run:
- kernel: the interval dot product `s[] = A[x] * B[x] * d(x; lebesgue)` on two pairs of 2e6-interval
  tensors, called one after the other ("serial") or from two threads at once ("2 threads");
- genomics: `count_overlaps` and `overlap` of 1e6 queries against 1e6 intervals (uniform on
  2e8 bp, lengths uniform in [1, 1000)), workers=1 vs workers=2, as DataFrame functions
  (`ctensor.apps.genomics`: reading the query frame runs on one thread, the output frame's rows
  are gathered on the workers) and as `GenomeIndex` methods on arrays;
- spatial: batches of 10,000 boxes and of 10,000 disks (about 100 points each) over 1e6 uniform
  points, workers=1 vs workers=2.
- graphics: `interpolate` of ~4.2e6 samples on the small tier's grid (`graphics_data`); point clouds:
  `kpconv` of 40,000 points of pyvista's airplane mesh at C = 32 (every point a query); workers=1 vs 2.
- control: numpy sorts two 2e6-float arrays (GIL-free C code, no ctensor) one after the other or in
  two threads: the speed-up two threads can get on this machine at that moment.
Each result is checked equal to the one-thread result outside the timing.  The table printed at the
end (with -s) gives the ratios, and the load average while it ran: the machine has 2 cores, so
anything else running shows up in the 2-thread numbers (and in the control's).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np
import pandas as pd
import pytest

import ctensor as ct
from ctensor.apps import genomics, spatial

N_DOT = 2_000_000
N_GENOME = 1_000_000
N_POINTS, N_QUERIES = 1_000_000, 10_000

_TIMES: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _report():
    load0 = os.getloadavg()
    yield
    load1 = os.getloadavg()
    print(f"\n\nthread scaling (min of rounds; load average {load0[0]:.2f} before, {load1[0]:.2f} after; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')})")
    print(f"{'work':<28}{'1 thread ms':>12}{'2 threads ms':>14}{'speed-up':>10}{'ratio':>8}")
    for work in dict.fromkeys(k[0] for k in _TIMES):
        one, two = _TIMES.get((work, 1)), _TIMES.get((work, 2))
        if one and two:
            print(f"{work:<28}{one * 1e3:>12.1f}{two * 1e3:>14.1f}{one / two:>9.2f}x{two / one:>8.2f}")


def _record(benchmark, work, threads):
    _TIMES[(work, threads)] = benchmark.stats.stats.min


# ------------------------------------------------------------------ control: GIL-free numpy
@pytest.mark.benchmark(group="control: numpy sort of 2 x 2e6 floats")
@pytest.mark.parametrize("threads", [1, 2])
def test_control_numpy_sort(benchmark, threads):
    rng = np.random.default_rng(0)
    arrays = [rng.random(2_000_000), rng.random(2_000_000)]
    if threads == 1:
        got = benchmark(lambda: [np.sort(a) for a in arrays])
    else:
        with ThreadPoolExecutor(2) as ex:
            got = benchmark(lambda: list(ex.map(np.sort, arrays)))
    assert all(np.array_equal(g, np.sort(a)) for g, a in zip(got, arrays))
    _record(benchmark, "control: numpy sort x2", threads)


# ------------------------------------------------------------------ one kernel, two threads
@cache
def _dot():
    def make(seed):
        rng = np.random.default_rng(seed)
        edges = np.cumsum(rng.uniform(0.1, 1.0, 2 * N_DOT))
        return ct.intervals(edges[0::2], edges[1::2], values=rng.uniform(-1, 1, N_DOT))
    pairs = [(make(1), make(2)), (make(3), make(4))]
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=pairs[0][0], B=pairs[0][1])
    return k, pairs, [k(A=a, B=b) for a, b in pairs]


@pytest.mark.benchmark(group="kernel: interval dot product, 2 calls on 2e6 intervals")
@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_two_calls(benchmark, threads):
    k, pairs, want = _dot()
    if threads == 1:
        got = benchmark(lambda: [k(A=a, B=b) for a, b in pairs])
    else:
        with ThreadPoolExecutor(2) as ex:
            got = benchmark(lambda: list(ex.map(lambda p: k(A=p[0], B=p[1]), pairs)))
    assert got == want
    _record(benchmark, "dot product x2 (2e6)", threads)


# ------------------------------------------------------------------ genomics workers=
@cache
def _genome():
    rng = np.random.default_rng(7)

    def frame(n):
        s = rng.integers(0, 200_000_000, n)
        return pd.DataFrame({"chrom": "chr1", "start": s, "end": s + rng.integers(1, 1000, n)})
    data, query = frame(N_GENOME), frame(N_GENOME)
    idx = genomics.index(data)
    return idx, query, {op: getattr(genomics, op)(query, idx) for op in ("count_overlaps", "overlap")}


@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
@pytest.mark.parametrize("workers", [1, 2])
def test_genomics_workers(benchmark, op, workers):
    idx, query, want = _genome()
    benchmark.group = f"genomics {op}: 1e6 queries, 1e6 intervals"
    got = benchmark.pedantic(getattr(genomics, op), (query, idx), {"workers": workers}, rounds=5, warmup_rounds=1)
    pd.testing.assert_frame_equal(got, want[op], check_exact=True)
    _record(benchmark, f"genomics {op} (1e6)", workers)


@pytest.mark.parametrize("op", ["count_overlaps", "overlap"])
@pytest.mark.parametrize("workers", [1, 2])
def test_genome_index_workers(benchmark, op, workers):
    idx, query, _ = _genome()
    args = (query["start"].to_numpy(), query["end"].to_numpy(), "chr1")
    want = getattr(idx, op)(*args)
    benchmark.group = f"GenomeIndex.{op}: 1e6 queries, 1e6 intervals (arrays)"
    got = benchmark.pedantic(getattr(idx, op), args, {"workers": workers}, rounds=5, warmup_rounds=1)
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    _record(benchmark, f"GenomeIndex.{op} (1e6)", workers)


# ------------------------------------------------------------------ spatial workers=
@cache
def _spatial():
    rng = np.random.default_rng(11)
    idx = spatial.index(rng.uniform(0, 1000, (N_POINTS, 2)))
    lo = rng.uniform(0, 990, (N_QUERIES, 2))
    hi = lo + 10.0                    # 100 square units: ~100 points per box
    centers, r = lo + 5.0, 5.6        # disk of ~98.5 square units
    want = (spatial.box_query(idx, lo, hi), spatial.radius_query(idx, centers, r))
    return idx, lo, hi, centers, r, want


@pytest.mark.parametrize("kind", ["box", "radius"])
@pytest.mark.parametrize("workers", [1, 2])
def test_spatial_workers(benchmark, kind, workers):
    idx, lo, hi, centers, r, want = _spatial()
    benchmark.group = f"spatial {kind}_query: 10,000 queries, 1e6 points"
    if kind == "box":
        got = benchmark(spatial.box_query, idx, lo, hi, workers=workers)
    else:
        got = benchmark(spatial.radius_query, idx, centers, r, workers=workers)
    assert np.array_equal(got, want[kind == "radius"])
    _record(benchmark, f"spatial {kind} (1e4 x 1e6)", workers)


# ------------------------------------------------------------------ graphics / point clouds workers=
@cache
def _graphics():
    from ctensor.apps import graphics
    from graphics_data import TIERS, blob_grid, camera_rays, sample_points
    t = TIERS["small"]
    grid = graphics.voxel_grid(blob_grid(t["G"], t["C"], t["occupancy"]))
    o, d, near, far = camera_rays((t["G"],) * 3, t["rays"] * 2)
    pts = sample_points(o, d, near, far, t["samples"])          # 4 x the small tier's samples: ~4.2e6
    return graphics, grid, pts, graphics.interpolate(grid, pts)


@pytest.mark.parametrize("workers", [1, 2])
def test_graphics_workers(benchmark, workers):
    graphics, grid, pts, want = _graphics()
    benchmark.group = f"graphics interpolate: {len(pts):,} samples, small-tier grid"
    got = benchmark.pedantic(graphics.interpolate, (grid, pts), {"workers": workers}, rounds=5, warmup_rounds=1)
    assert np.array_equal(got, want)
    _record(benchmark, "graphics interpolate", workers)


@cache
def _kpconv():
    from ctensor.apps import pointcloud as pc
    from ctensor.examples.pointclouds import paper_radius, sample_mesh
    pts = sample_mesh("airplane", 40_000, seed=0)
    r = paper_radius(pts, 30)
    rng = np.random.default_rng(0)
    kps = rng.uniform(-r / 2, r / 2, (15, 3))
    f = rng.standard_normal((len(pts), 32))
    w = rng.standard_normal((15, 32, 32)) / np.sqrt(15 * 32)
    args = (pts, f, kps, w, r, r / 2.5)
    return pc, args, pc.kpconv(*args)


@pytest.mark.parametrize("workers", [1, 2])
def test_kpconv_workers(benchmark, workers):
    pytest.importorskip("pyvista")
    pc, args, want = _kpconv()
    benchmark.group = "pointcloud kpconv: 40,000 points of the airplane mesh, C = 32"
    got = benchmark.pedantic(pc.kpconv, args, {"workers": workers}, rounds=5, warmup_rounds=1)
    assert np.array_equal(got, want)
    _record(benchmark, "pointcloud kpconv (4e4, C=32)", workers)
