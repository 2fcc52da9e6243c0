"""Workloads of the graphics benchmarks (issue 29): sparse voxel grids with clustered occupancy and
camera rays from outside the grid; the frog CT volume of the pyvista wheel.  Deterministic."""
from __future__ import annotations

import numpy as np

TIERS = {"paper": dict(G=256, C=28, occupancy=0.03, rays=256, samples=128),
         "small": dict(G=128, C=4, occupancy=0.03, rays=128, samples=64)}


def blob_grid(G: int, C: int, occupancy: float, seed: int = 0) -> np.ndarray:
    """(G, G, G, C) float32 values, non-zero on ~`occupancy` of the voxels, in clustered blobs
    (balls of random radius around random centres, grown until the occupancy is reached)."""
    rng = np.random.default_rng(seed)
    occ = np.zeros((G, G, G), bool)
    ax = np.arange(G)
    target = occupancy * G ** 3
    while occ.sum() < target:
        c = rng.uniform(0.15 * G, 0.85 * G, 3)
        r = rng.uniform(0.03 * G, 0.08 * G)
        lo, hi = np.maximum((c - r).astype(int), 0), np.minimum((c + r).astype(int) + 2, G)
        x, y, z = np.ix_(ax[lo[0]:hi[0]], ax[lo[1]:hi[1]], ax[lo[2]:hi[2]])
        occ[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] |= (x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2 <= r * r
    vals = np.zeros((G, G, G, C), np.float32)
    vals[occ] = rng.uniform(0.05, 1.0, (int(occ.sum()), C)).astype(np.float32)
    return vals


def camera_rays(shape, n: int, distance: float = 1.6, seed: int = 1):
    """n x n rays of a pinhole camera outside the grid looking at its centre: (origins (n*n, 3),
    unit directions (n*n, 3), near, far) in voxel units, [near, far] spanning the grid's bounding
    sphere along every ray."""
    shape = np.asarray(shape, np.float64)
    centre = (shape - 1) / 2
    radius = np.linalg.norm(shape) / 2
    rng = np.random.default_rng(seed)
    view = rng.normal(size=3)
    view /= np.linalg.norm(view)
    eye = centre - view * radius * distance
    up = np.cross(view, [0.0, 0.0, 1.0])
    up /= np.linalg.norm(up)
    right = np.cross(view, up)
    s = np.linspace(-1, 1, n) * np.tan(np.radians(25))
    u, v = np.meshgrid(s, s, indexing="ij")
    d = view[None, :] + u.reshape(-1, 1) * up[None, :] + v.reshape(-1, 1) * right[None, :]
    d /= np.linalg.norm(d, axis=1)[:, None]
    o = np.broadcast_to(eye, d.shape).copy()
    return o, d, radius * distance - radius, radius * distance + radius


def sample_points(o, d, near, far, samples: int) -> np.ndarray:
    """(n_rays * samples, 3) float64 sample points (midpoints of equal segments, as
    `graphics.sample_rays`)."""
    t = near + (np.arange(samples) + 0.5) * (far - near) / samples
    return (o[:, None, :] + t[None, :, None] * d[:, None, :]).reshape(-1, 3)
