"""Hand-written peers of `ctensor.apps.graphics.interpolate` for bench_graphics.py (references only):
numba single-thread kernels over a dense channel-last grid and over a sparse index grid (int32 index
+ compact rows, the layout `voxel_grid` stores), and PyTorch CPU (`grid_sample`, a manual 8-corner
gather, and svox2's sparse pure-PyTorch path).  All compute trilinear interpolation of voxel-centre values (voxel (i, j, k) centred at
(i, j, k)), 0 outside the grid and at unoccupied voxels, into an (M, C) float32 array."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=False, boundscheck=False)
def _corners(p, X, Y, Z):
    fx, fy, fz = np.floor(p[0]), np.floor(p[1]), np.floor(p[2])
    return int(fx), int(fy), int(fz), p[0] - fx, p[1] - fy, p[2] - fz


@njit(cache=False, boundscheck=False)
def numba_sparse(index, rows, pts, out):
    """index (X, Y, Z) int32 (-1: unoccupied), rows (n, C) float32, pts (M, 3) float64 -> out (M, C)."""
    X, Y, Z = index.shape
    C = rows.shape[1]
    for m in range(pts.shape[0]):
        p = pts[m]
        if not (-1.0 < p[0] < X and -1.0 < p[1] < Y and -1.0 < p[2] < Z):
            for c in range(C):
                out[m, c] = 0.0
            continue
        ix, iy, iz, tx, ty, tz = _corners(p, X, Y, Z)
        acc = np.zeros(C, np.float32)
        for k in range(8):
            cx, cy, cz = ix + (k >> 2), iy + ((k >> 1) & 1), iz + (k & 1)
            if 0 <= cx < X and 0 <= cy < Y and 0 <= cz < Z:
                r = index[cx, cy, cz]
                if r >= 0:
                    w = (tx if k >> 2 else 1 - tx) * (ty if (k >> 1) & 1 else 1 - ty) * (tz if k & 1 else 1 - tz)
                    for c in range(C):
                        acc[c] += np.float32(w) * rows[r, c]
        for c in range(C):
            out[m, c] = acc[c]


@njit(cache=False, boundscheck=False)
def numba_dense(vals, pts, out):
    """vals (X, Y, Z, C) float32 channel-last, pts (M, 3) -> out (M, C)."""
    X, Y, Z, C = vals.shape
    for m in range(pts.shape[0]):
        p = pts[m]
        for c in range(C):
            out[m, c] = 0.0
        if not (-1.0 < p[0] < X and -1.0 < p[1] < Y and -1.0 < p[2] < Z):
            continue
        ix, iy, iz, tx, ty, tz = _corners(p, X, Y, Z)
        for k in range(8):
            cx, cy, cz = ix + (k >> 2), iy + ((k >> 1) & 1), iz + (k & 1)
            if 0 <= cx < X and 0 <= cy < Y and 0 <= cz < Z:
                w = np.float32((tx if k >> 2 else 1 - tx) * (ty if (k >> 1) & 1 else 1 - ty)
                               * (tz if k & 1 else 1 - tz))
                for c in range(C):
                    out[m, c] += w * vals[cx, cy, cz, c]


def sparse_layout(vals: np.ndarray, occ: np.ndarray):
    index = np.full(occ.shape, -1, np.int32)
    index[occ] = np.arange(int(occ.sum()), dtype=np.int32)
    return index, np.ascontiguousarray(vals[occ])


def torch_volume(vals: np.ndarray):
    """(1, C, Z, Y, X) float32 tensor for grid_sample (x is the last, W axis)."""
    import torch
    return torch.from_numpy(np.ascontiguousarray(vals.transpose(3, 2, 1, 0)))[None]


def torch_grid_sample(vol, pts: np.ndarray, shape, chunk: int = 1 << 20) -> np.ndarray:
    """align_corners=True maps -1 / +1 to the centres of the first / last voxel; zeros padding."""
    import torch
    import torch.nn.functional as F
    scale = torch.tensor([2.0 / (shape[0] - 1), 2.0 / (shape[1] - 1), 2.0 / (shape[2] - 1)])
    outs = []
    with torch.no_grad():
        for lo in range(0, len(pts), chunk):
            g = torch.from_numpy(pts[lo:lo + chunk].astype(np.float32)) * scale - 1.0
            o = F.grid_sample(vol, g[None, None, None], mode="bilinear", padding_mode="zeros", align_corners=True)
            outs.append(o[0, :, 0, 0, :].T)
    return torch.cat(outs).numpy()


def torch_gather(flat, shape, pts: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """flat (X*Y*Z, C) float32 tensor (channel-last): 8 corner gathers weighted and summed."""
    import torch
    X, Y, Z = shape
    outs = []
    with torch.no_grad():
        for lo in range(0, len(pts), chunk):
            p = torch.from_numpy(pts[lo:lo + chunk].astype(np.float32))
            f = torch.floor(p)
            t = p - f
            i = f.to(torch.int64)
            acc = torch.zeros(len(p), flat.shape[1])
            for k in range(8):
                d = torch.tensor([k >> 2, (k >> 1) & 1, k & 1])
                c = i + d
                ok = ((c >= 0) & (c < torch.tensor([X, Y, Z]))).all(1)
                w = torch.where(d.bool(), t, 1 - t).prod(1) * ok
                q = ((c[:, 0].clamp(0, X - 1) * Y + c[:, 1].clamp(0, Y - 1)) * Z + c[:, 2].clamp(0, Z - 1))
                acc += w[:, None] * flat[q]
            outs.append(acc)
    return torch.cat(outs).numpy()


def svox2_layout(vals: np.ndarray, occ: np.ndarray):
    """svox2's sparse grid (Fridovich-Keil, Yu et al., "Plenoxels", CVPR 2022; sxyu/svox2,
    svox2/svox2.py `SparseGrid`): `links` (X+2, Y+2, Z+2) int32 index into compact `data` rows,
    -1 for an empty voxel.  The one-voxel border of -1 links gives the zero-outside semantics of
    `interpolate` under svox2's clamping of points into the grid (a point outside lands on the empty
    border and reads 0)."""
    import torch
    links = np.full(tuple(n + 2 for n in occ.shape), -1, np.int32)
    links[1:-1, 1:-1, 1:-1][occ] = np.arange(int(occ.sum()), dtype=np.int32)
    return torch.from_numpy(links), torch.from_numpy(np.ascontiguousarray(vals[occ]))


def _svox2_fetch(data, links):
    """svox2 `SparseGrid._fetch_links`: the rows of the occupied links, zeros elsewhere."""
    import torch
    out = torch.zeros((links.size(0), data.size(1)), dtype=data.dtype)
    mask = links >= 0
    out[mask] = data[links[mask].long()]
    return out


def torch_svox2(links, data, pts: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """svox2's pure-PyTorch `SparseGrid.sample(points, use_kernel=False)` (the CPU / non-CUDA path):
    clamp the point into the grid, l = floor clamped to size - 2, the 8 corner links by advanced
    indexing, `_fetch_links` of each, and the nested lerp along z, y, x.  Coordinates shifted by +1
    for the -1 border of `svox2_layout`.  (M, C) float32."""
    import torch
    size = links.shape
    outs = []
    with torch.no_grad():
        for lo in range(0, len(pts), chunk):
            p = torch.from_numpy(pts[lo:lo + chunk].astype(np.float32)) + 1.0
            p.clamp_min_(0.0)
            for i in range(3):
                p[:, i].clamp_max_(size[i] - 1)
            l = p.to(torch.long)
            for i in range(3):
                l[:, i].clamp_max_(size[i] - 2)
            wb = p - l
            wa = 1.0 - wb
            lx, ly, lz = l.unbind(-1)
            c = {}
            for dx in (0, 1):
                for dy in (0, 1):
                    for dz in (0, 1):
                        c[dx, dy, dz] = _svox2_fetch(data, links[lx + dx, ly + dy, lz + dz])
            c00 = c[0, 0, 0] * wa[:, 2:] + c[0, 0, 1] * wb[:, 2:]
            c01 = c[0, 1, 0] * wa[:, 2:] + c[0, 1, 1] * wb[:, 2:]
            c10 = c[1, 0, 0] * wa[:, 2:] + c[1, 0, 1] * wb[:, 2:]
            c11 = c[1, 1, 0] * wa[:, 2:] + c[1, 1, 1] * wb[:, 2:]
            c0 = c00 * wa[:, 1:2] + c01 * wb[:, 1:2]
            c1 = c10 * wa[:, 1:2] + c11 * wb[:, 1:2]
            outs.append(c0 * wa[:, :1] + c1 * wb[:, :1])
    return torch.cat(outs).numpy()
