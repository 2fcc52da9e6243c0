"""Trilinear interpolation on sparse voxel grids: ctensor.apps.graphics against numba and PyTorch CPU.

    pytest benchmarks/bench_graphics.py --benchmark-json=graphics.json
    python benchmarks/graphics_report.py graphics.json

Tiers (issue 29, continuous paper §7.3): paper — G = 256, C = 28 float32 channels, 3 % occupancy in
clustered blobs, 256 x 256 rays x 128 samples (8.39 M points) from a camera outside the grid; small
— G = 128, C = 4, 128 x 128 rays x 64 samples; frog — pyvista's frog CT scan (500 x 470 x 136, 4
channels), 256 x 256 rays x 192 samples of the render example's camera.  Timed: the interpolation of
all samples from Python to an (M, C) float32 array (every implementation allocating its output per
call); the peers run one thread (numba kernels are serial; PyTorch under torch.set_num_threads(1)).
PyTorch peers: `grid_sample` on the dense volume, a manual 8-corner gather on the dense grid, and
svox2's sparse pure-PyTorch sampling path (`SparseGrid.sample(use_kernel=False)`: links + compact
rows, `graphics_peers.torch_svox2`).  Compile time is its own test (a cold in-memory and on-disk cache).
Every implementation's answer is checked against ctensor's before timing.  PyTorch's paths on the
paper tier take tens of seconds per round: they run one round.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from functools import cache

import numpy as np
import pytest

import graphics_data as gd
import graphics_peers as pe
from ctensor.apps import graphics as g

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


@cache
def workload(tier):
    if tier == "frog":
        pytest.importorskip("pyvista")
        from ctensor.examples import render_frog as rf
        labels, spacing = rf.frog_labels()
        vals = rf.tissue_channels(labels)
        occ = labels != 0
        o, d, near, far = rf.orbit_camera(labels.shape, spacing, 256)
        pts = gd.sample_points(o, d, near, far, 192)
    else:
        t = gd.TIERS[tier]
        vals = gd.blob_grid(t["G"], t["C"], t["occupancy"])
        occ = (vals != 0).any(-1)
        o, d, near, far = gd.camera_rays(vals.shape[:3], t["rays"])
        pts = gd.sample_points(o, d, near, far, t["samples"])
    grid = g.voxel_grid(vals, occupied=occ)
    g.interpolate(grid, pts[:10])                      # compiled outside the timings
    return vals, occ, pts, grid


@cache
def expected(tier):
    vals, occ, pts, grid = workload(tier)
    return g.interpolate(grid, pts)


def _check(tier, got):
    want = expected(tier)
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))


IMPLS = ["ctensor", "numba_sparse", "numba_dense", "torch_gather", "torch_grid_sample", "torch_svox2"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("tier", ["small", "paper", "frog"])
def test_interpolate(benchmark, tier, impl):
    vals, occ, pts, grid = workload(tier)
    benchmark.group = f"interpolate {tier}"
    C = vals.shape[3]
    if impl == "ctensor":
        run = lambda: g.interpolate(grid, pts)
    elif impl == "numba_sparse":
        index, rows = pe.sparse_layout(vals, occ)

        def run():
            out = np.empty((len(pts), C), np.float32)
            pe.numba_sparse(index, rows, pts, out)
            return out
    elif impl == "numba_dense":
        dense = np.where(occ[..., None], vals, 0).astype(np.float32)

        def run():
            out = np.empty((len(pts), C), np.float32)
            pe.numba_dense(dense, pts, out)
            return out
    elif impl == "torch_svox2":
        links, data = pe.svox2_layout(vals, occ)
        run = lambda: pe.torch_svox2(links, data, pts)
    elif impl == "torch_gather":
        flat = torch.from_numpy(np.where(occ[..., None], vals, 0).astype(np.float32).reshape(-1, C))
        run = lambda: pe.torch_gather(flat, vals.shape[:3], pts)
    else:
        vol = pe.torch_volume(np.where(occ[..., None], vals, 0).astype(np.float32))
        run = lambda: pe.torch_grid_sample(vol, pts, vals.shape[:3])
    _check(tier, run())
    slow = impl.startswith("torch") and tier != "small"
    benchmark.extra_info.update(points=len(pts), channels=C, grid_mib=grid.nbytes / 2**20)
    benchmark.pedantic(run, rounds=1 if slow else 5, iterations=1, warmup_rounds=0)


@pytest.mark.parametrize("tier", ["small", "paper", "frog"])
def test_interleaved_ratio(benchmark, tier):
    """ctensor against the numba sparse index-grid kernel, alternated round by round in one loop
    (CPU time of this process, both one thread, outputs allocated per call): on a shared machine the
    ratio of two separately timed tests moves with the load between them.  Min and median of 7
    rounds each, in extra_info (printed by graphics_report.py)."""
    vals, occ, pts, grid = workload(tier)
    index, rows = pe.sparse_layout(vals, occ)
    C = vals.shape[3]

    def numba():
        out = np.empty((len(pts), C), np.float32)
        pe.numba_sparse(index, rows, pts, out)
        return out
    _check(tier, numba())
    times = {"ctensor": [], "numba_sparse": []}

    def rounds():
        for _ in range(7):
            for name, fn in (("numba_sparse", numba), ("ctensor", lambda: g.interpolate(grid, pts))):
                t0 = time.process_time()
                fn()
                times[name].append(time.process_time() - t0)
    benchmark.group = "interleaved"
    benchmark.pedantic(rounds, rounds=1, iterations=1)
    for name, ts in times.items():
        benchmark.extra_info[name] = {"min": min(ts), "median": float(np.median(ts))}
    benchmark.extra_info["tier"] = tier


_COMPILE = """
import time, numpy as np
from ctensor.apps import graphics as g
grid = g.voxel_grid(np.ones((4, 4, 4, {C}), np.float32))
pts = np.zeros((10, 3))
t0 = time.perf_counter()
g.interpolate(grid, pts)
print(time.perf_counter() - t0)
"""


@pytest.mark.parametrize("channels", [4, 28])
def test_compile_time(benchmark, channels):
    """The first interpolate call in a fresh process with an empty kernel cache (parse, plan,
    validity, lowering, LLVM, object code), as printed by the child; the benchmark's own time
    includes the process start and imports."""
    times = []

    def run():
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, CTENSOR_CACHE_DIR=d)
            r = subprocess.run([sys.executable, "-c", _COMPILE.format(C=channels)], env=env, check=True,
                               capture_output=True, text=True)
            times.append(float(r.stdout.split()[-1]))
    benchmark.group = "compile"
    benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["compile_s"] = sorted(times)[len(times) // 2]


def test_memory():
    """Grid memory at the paper tier against the index grid + compact data and the dense grid."""
    vals, occ, pts, grid = workload("paper")
    index_plus_rows = occ.size * 4 + int(occ.sum()) * vals.shape[3] * 4
    dense = vals.size * 4
    print(f"\nvoxel_grid {grid.nbytes / 2**20:.1f} MiB; index grid + compact rows {index_plus_rows / 2**20:.1f} MiB "
          f"(ratio {grid.nbytes / index_plus_rows:.3f}); dense {dense / 2**20:.0f} MiB")
    assert grid.nbytes <= 1.2 * index_plus_rows
