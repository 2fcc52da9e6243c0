"""Trilinear interpolation on sparse voxel grids and volume rendering (NeRF / Plenoxels) as compiled
einsums — the continuous tensor paper's §7.3 case study (Fig. 25).

A voxel grid is piecewise constant over the cells [i - 0.5, i + 0.5) × [j - 0.5, j + 0.5) ×
[k - 0.5, k + 0.5) (voxel centres at integer coordinates).  Integrating it over the unit box
centred at a point p is exactly the trilinear interpolation of the 8 voxel-centre values around p,
so interpolation of many points is one einsum (`INTERPOLATE`):

    Out[m, c] = P[m, u, v, w] * S[u, v, w] * Grid[u + x, v + y, w + z, c] * Box[x, y, z]
                * d(u, v, w; counting, counting, counting) * d(x, y, z; lebesgue, lebesgue, lebesgue)

P holds one pinpoint (u, v, w) per point m (Dense over m, SparsePoint below: no sort), Box is the
unit cube [-0.5, 0.5)^3, S the grid's support, the open box (-1, X) × (-1, Y) × (-1, Z) outside
which the integral is 0 (a redundant factor that lets the kernel leave a point at its first
coordinate outside, before the loops over x, y, z), and Grid is stored as `UnitCells^3` over a Dense channel level: the x and
y cell levels are dense and the z level locates a voxel's row of channel values through an int32
index (-1 for an unoccupied voxel), each in O(1) (`ctensor.formats.unit_cells`).  Only occupied
voxels store channel values.

Public names (stable): `voxel_grid`, `VoxelGrid`, `interpolate`, `sample_rays`, `render`,
`INTERPOLATE`.  Every call may run in many threads at once (no shared mutable buffers: each call
builds its own point tensor and output; kernels are compiled once under `workers.COMPILE_LOCK`).
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..formats import Dense, Element, Pattern, SparsePoint, Tensor, UnitCells, box
from .graphics_input import (channel, finite_rows, occupancy, per_ray, point_rows, positive_int, real_array,
                             voxel_values)
from .graphics_render import composite
from .workers import check_workers, compiled, map_chunks

__all__ = ["INTERPOLATE", "VoxelGrid", "interpolate", "render", "sample_rays", "voxel_grid"]

INTERPOLATE = ("Out[m, c] = P[m, u, v, w] * S[u, v, w] * Grid[u + x, v + y, w + z, c] * Box[x, y, z]"
               " * d(u, v, w; counting, counting, counting) * d(x, y, z; lebesgue, lebesgue, lebesgue)")

_BOX = box([-0.5] * 3, [0.5] * 3, closed="left")      # read-only: shared by every call
_KERNELS: dict = {}                                  # format key -> Kernel (`workers.compiled`)
_CHUNK_SAMPLES = 1 << 18                             # samples per interpolation call in `render`
# points per kernel call: an output chunk of about 1 MiB (in L2), at most 65,536 points
_CHUNK_BYTES, _MIN_CHUNK, _CHUNK_POINTS = 1 << 20, 1024, 1 << 16


class VoxelGrid:
    """A sparse voxel grid: `tensor` Grid[x, y, z, c] (UnitCells^3 over Dense channels), `shape`
    (X, Y, Z), `channels` C, `dtype` of the stored values (float32 or float64), `occupied` (number of
    stored voxels), `nbytes` (index + values).  Build it with `voxel_grid`; read-only."""

    __slots__ = ("tensor", "support", "shape", "channels", "dtype", "occupied")

    def __init__(self, tensor: Tensor, shape: tuple, channels: int, dtype, occupied: int):
        self.tensor, self.shape, self.channels = tensor, shape, channels
        self.dtype, self.occupied = np.dtype(dtype), occupied
        # S[u, v, w]: the open box (-1, X) x (-1, Y) x (-1, Z) outside which every point reads 0
        self.support = box([-1.0] * 3, [float(n) for n in shape], closed="neither")

    @property
    def nbytes(self) -> int:
        return self.tensor.nbytes

    def __repr__(self):
        return (f"VoxelGrid(shape={self.shape}, channels={self.channels}, dtype={self.dtype}, "
                f"occupied={self.occupied}, nbytes={self.nbytes})")


def voxel_grid(values, occupied=None) -> VoxelGrid:
    """A sparse voxel grid of `values` at the `occupied` voxels (continuous paper §7.3).

    values : numpy array (X, Y, Z, C), float32 or float64 — voxel (i, j, k) is the cell
        [i - 0.5, i + 0.5) × [j - 0.5, j + 0.5) × [k - 0.5, k + 0.5) (closed below, open above;
        its centre at (i, j, k), in voxel units); C channels per voxel.  The dtype is kept
        (float32 stores 4 bytes per channel value).
    occupied : numpy bool array (X, Y, Z), optional — the voxels to store; default: the voxels
        with a non-zero value in some channel.  Unoccupied voxels read 0 in every channel.

    Memory: an int32 index of X*Y*Z entries (int64 past 2**31 - 1 occupied voxels) plus
    occupied * C values.  Raises TypeError (values not a float32/float64 ndarray, occupied not
    bool), FormatError (wrong ndim or shape, a NaN/inf value in an occupied voxel, naming the
    first one).
    """
    values = voxel_values(values)
    occ = occupancy(occupied, values)
    X, Y, Z, C = values.shape
    data = values[occ]                                   # (n, C) rows in x, y, z order
    bad = np.argwhere(~np.isfinite(data))
    if bad.size:
        vox = np.argwhere(occ)[bad[0][0]]
        idx = (*(int(i) for i in vox), int(bad[0][1]))
        raise FormatError(f"values[{', '.join(map(str, idx))}] = {values[idx].item()!r} is not finite "
                          "(an occupied voxel)")
    n = len(data)
    rows = np.full(X * Y * Z, -1, np.int32 if n < 2**31 else np.int64)
    rows[occ.reshape(-1)] = np.arange(n, dtype=rows.dtype)
    leaf = Element(0.0, val=data.reshape(-1), dtype=values.dtype)
    level = UnitCells(UnitCells(UnitCells(Dense(leaf, C), Z, rows=rows), Y), X)
    return VoxelGrid(Tensor(level, name="Grid"), (X, Y, Z), C, values.dtype, n)


def _grid(grid) -> VoxelGrid:
    if not isinstance(grid, VoxelGrid):
        raise TypeError(f"grid: expected a VoxelGrid (from ctensor.apps.graphics.voxel_grid), got {type(grid).__name__}")
    return grid


def _point_tensor(pts: np.ndarray) -> Tensor:
    """P[m, u, v, w]: point m at (u, v, w) — Dense over the ids, one pinpoint per axis below (the
    points stay in their order: no sort, and the output is written row after row).  A column
    that is contiguous already (Fortran-order points) is used in place, others are copied."""
    col = lambda a: pts[:, a] if pts.strides[0] == pts.itemsize else pts[:, a].copy()     # noqa: E731
    lv = SparsePoint(SparsePoint(SparsePoint(Pattern(), col(2)), col(1)), col(0))
    return Tensor(Dense(lv, len(pts)), name="P")


def _interpolate_into(grid: VoxelGrid, pts: np.ndarray, out: np.ndarray, first: int):
    """The INTERPOLATE einsum on (M, 3) float64 points (`point_rows`; rows `first`.. of the
    caller's, for error messages), written into out (M, C), a C-contiguous array of the grid's
    dtype holding zeros (np.zeros).

    One kernel call per chunk of points (about 1 MiB of output), through one packed call
    (`Kernel.pack`).  Each run accumulates its Out[m, c] straight into its rows of `out`
    (`PackedCall.set_output`: zeros already, so the kernel does not write the fill first), and
    nothing is copied after.  Each chunk's points are checked for NaN/inf as they are read
    (`finite_rows`), then copied into the call's coordinate buffers — or, when the points'
    columns are contiguous (Fortran order), read in place (`PackedCall.set_input`, which checks
    each column's window itself).  The
    buffers belong to this call."""
    per = _CHUNK_BYTES // (grid.channels * grid.dtype.itemsize)       # points whose output fills the chunk
    n, size = len(pts), max(1, min(max(per, _MIN_CHUNK), _CHUNK_POINTS, len(pts)))
    full = n - n % size
    _run_chunks(grid, pts[:full], out[:full], size, first)
    _run_chunks(grid, pts[full:], out[full:], n - full, first + full)


def _run_chunks(grid: VoxelGrid, pts: np.ndarray, out: np.ndarray, size: int, first: int):
    """Rows of pts (a multiple of `size` of them) in chunks of `size` points through one packed call,
    each chunk's output written into its rows of out."""
    if len(pts) == 0:
        return
    finite_rows(pts[:size], "points", first)
    args = dict(P=_point_tensor(pts[:size]), S=grid.support, Grid=grid.tensor, Box=_BOX)
    # Out[m, c] of the grid's dtype: a float32 grid gets a float32 output leaf (each corner's sum in
    # float64, rounded to float32), half the bytes of a float64 one
    out_fmt = Dense(Dense(Element(0.0, dtype=grid.dtype)))
    k = compiled(_KERNELS, grid.tensor.level.format_key(), INTERPOLATE, args, out=out_fmt)
    in_place = pts.strides[0] == pts.itemsize                 # each coordinate's column is contiguous
    cols = [pts[:, a] for a in range(3)] if in_place else [lv.idx for lv in args["P"].levels()[1:4]]
    call = k.pack(**args)
    try:
        for lo in range(0, len(pts), size):
            if lo:
                chunk = pts[lo:lo + size]
                if in_place:
                    try:                   # set_input checks each column's window for NaN / inf
                        for a, col in enumerate(cols):
                            call.set_input("P", a + 1, "idx", col, lo)     # level a + 1 holds coordinate a
                    except FormatError:
                        finite_rows(chunk, "points", first + lo)      # the first bad element, by row
                        raise
                else:
                    finite_rows(chunk, "points", first + lo)          # while the chunk is read from memory
                    for a, col in enumerate(cols):
                        col[:] = chunk[:, a]
            # the kernel writes rows lo .. lo + size - 1 in place; they are still np.zeros' zeros
            call.set_output(out, lo, zeroed=True)
            call.run()
    finally:
        call.release()


def interpolate(grid: VoxelGrid, points, *, workers: int = 1) -> np.ndarray:
    """Trilinear interpolation of `grid` at `points` (continuous paper §7.3, Fig. 25): the einsum
    `INTERPOLATE`, one compiled kernel for all points (called on chunks of ~1 MiB of output).

    grid : VoxelGrid (`voxel_grid`).
    points : array (M, 3) of finite reals, in voxel coordinates (voxel (i, j, k) is centred at
        (i, j, k)); a point's value is the trilinear blend of the 8 voxel centres around it, where
        unoccupied voxels and voxels outside the grid contribute 0 (so the value fades to 0 over
        the half voxel outside the grid's outer centres).
    workers : int — threads splitting the points (-1: every core); the result is identical to one
        thread's.

    Returns an (M, C) array of the grid's dtype (float32 or float64): a float32 grid's values are
    read exactly and each corner's contribution added in float64, the running sum rounded to
    float32 (within 1e-6 relative of the float64 result).
    Raises TypeError (grid not a VoxelGrid, non-numeric points, bad workers) or FormatError (points
    not (M, 3), or NaN/inf, naming the first offending element).
    """
    grid = _grid(grid)
    pts = point_rows(points, "points")
    # zeros from calloc: fresh pages the OS zeroes on first touch, which the kernel then need not
    # fill before it accumulates (`PackedCall.set_output(zeroed=True)`); each worker fills its
    # own rows, each chunk's once
    out = np.zeros((len(pts), grid.channels), grid.dtype)
    map_chunks(lambda lo, hi: _interpolate_into(grid, pts[lo:hi], out[lo:hi], lo), len(pts), check_workers(workers))
    return out


def sample_rays(origins, directions, near, far, n_samples: int):
    """Sample points along rays: for ray r, the midpoints of `n_samples` equal segments of
    [near_r, far_r], t_k = near + (k + 0.5) * (far - near) / n_samples, at o_r + t_k * d_r.

    origins, directions : arrays (R, 3) of finite reals (voxel units; directions need not be unit
        vectors: t is measured in multiples of |d_r|).
    near, far : scalars or (R,) arrays, finite, near <= far.
    n_samples : positive int.

    Returns (points (R, n_samples, 3) float64, t (R, n_samples) float64).  Raises TypeError (non-
    numeric input, n_samples not an int), ValueError (n_samples < 1) or FormatError (shapes,
    NaN/inf, far < near, naming the first offending element).
    """
    o, d, t = _rays(origins, directions, near, far, n_samples)
    return o[:, None, :] + t[:, :, None] * d[:, None, :], t


def _rays(origins, directions, near, far, n_samples):
    """Checked (origins, directions, t) of `sample_rays`."""
    o = real_array(origins, "origins", (None, 3))
    d = real_array(directions, "directions", (len(o), 3))
    s = positive_int(n_samples, "n_samples")
    lo, hi = per_ray(near, "near", len(o)), per_ray(far, "far", len(o))
    bad = np.flatnonzero(hi < lo)
    if bad.size:
        r = int(bad[0])
        raise FormatError(f"far[{r}] = {hi[r].item()!r} is below near[{r}] = {lo[r].item()!r}")
    t = lo[:, None] + (np.arange(s) + 0.5)[None, :] * ((hi - lo) / s)[:, None]
    return o, d, t


def render(grid: VoxelGrid, origins, directions, near, far, n_samples: int, *, density: int = 0,
           colour=(1, 2, 3), background=0.0, workers: int = 1) -> np.ndarray:
    """Volume-render `grid` along rays (emission–absorption compositing, Plenoxels-style): the
    samples of `sample_rays` are interpolated by the `INTERPOLATE` einsum, then composited
    (`graphics_render.composite`): α_k = 1 - exp(-max(σ_k, 0) δ_k), weight T_k α_k with
    transmittance T_k = exp(-Σ_{j<k} max(σ_j, 0) δ_j), pixel Σ_k T_k α_k c_k + T_S · background.

    grid : VoxelGrid whose channel `density` holds σ (per voxel unit of length) and channels
        `colour` the radiance (used as stored: no activation).
    origins, directions, near, far, n_samples : as `sample_rays`; δ_k = (far - near) / n_samples
        * |d_r| (the segment length in voxel units).
    density : int, colour : sequence of ints — channel numbers of the grid.
    background : scalar or (len(colour),) array — seen where the ray is not absorbed.
    workers : int — threads for the interpolation (identical result to one thread).

    Returns (R, len(colour)) float64.  Raises as `sample_rays` and `interpolate`; TypeError or
    ValueError for channel numbers that are not ints in 0 .. C-1.
    """
    grid = _grid(grid)
    dch = channel(density, "density", grid.channels)
    if isinstance(colour, (str, bytes)) or not hasattr(colour, "__iter__"):
        raise TypeError(f"colour: expected a sequence of channel numbers, got {colour!r}")
    cch = [channel(c, f"colour[{k}]", grid.channels) for k, c in enumerate(colour)]
    bg = np.asarray(background, np.float64)
    if bg.ndim > 1 or (bg.ndim == 1 and len(bg) != len(cch)) or not np.isfinite(bg).all():
        raise FormatError(f"background: expected a finite scalar or {len(cch)} values, got {background!r}")
    workers = check_workers(workers)
    o, d, t = _rays(origins, directions, near, far, n_samples)
    n_rays, s = t.shape
    seg = (per_ray(far, "far", n_rays) - per_ray(near, "near", n_rays)) / s          # in units of |d|
    length = seg * np.linalg.norm(d, axis=1)
    delta = np.broadcast_to(length[:, None], (n_rays, s))
    out = np.empty((n_rays, len(cch)))
    per = max(1, _CHUNK_SAMPLES // s)                    # rays per interpolation call: bounded memory
    for lo in range(0, n_rays, per):
        hi = min(lo + per, n_rays)
        # the samples of `sample_rays` (the same o + t * d), laid out (3, rays * samples): their
        # columns are contiguous, and the kernel reads them in place (no copy, `interpolate`)
        pts = (o[lo:hi].T[:, :, None] + t[None, lo:hi] * d[lo:hi].T[:, :, None]).reshape(3, -1).T
        f = interpolate(grid, pts, workers=workers).reshape(hi - lo, s, grid.channels)
        out[lo:hi] = composite(f[:, :, dch], f[:, :, cch], delta[lo:hi], bg)
    return out

