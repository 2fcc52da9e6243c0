"""Real point clouds for the KPConv case study (continuous paper §7.4): points sampled on the
surfaces of the meshes that ship inside the pyvista wheel (`pyvista/examples/*.ply`), as the
paper's ModelNet40 protocol samples its CAD meshes (10k-20k points per shape).

    pip install "ctensor[pointcloud]"      # pyvista
    python -m ctensor.examples.pointclouds

`sample_mesh(name, n, seed)` draws n points uniformly by area on the mesh's triangles (numpy);
`paper_radius(points, neighbours)` is the radius that gives about that many neighbours per point
(the median over a sample, measured with scipy's cKDTree when installed, else estimated from the
mean spacing).
"""
from __future__ import annotations

import os

import numpy as np

MESHES = ("airplane", "ant", "nut")


def mesh_path(name: str) -> str:
    """The path of pyvista's example mesh `name` (.ply inside the wheel).  ImportError without pyvista."""
    import pyvista
    path = os.path.join(os.path.dirname(pyvista.__file__), "examples", f"{name}.ply")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: not in this pyvista wheel (meshes: {', '.join(MESHES)})")
    return path


def sample_mesh(name: str, n: int, seed: int = 0) -> np.ndarray:
    """(n, 3) float64 points uniform by area on the triangles of pyvista's mesh `name`."""
    import pyvista
    mesh = pyvista.read(mesh_path(name)).triangulate()
    tri = mesh.faces.reshape(-1, 4)[:, 1:]
    v = np.asarray(mesh.points, np.float64)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    rng = np.random.default_rng(seed)
    t = rng.choice(len(tri), size=n, p=area / area.sum())
    u, w = rng.random(n), rng.random(n)
    flip = u + w > 1                      # fold the unit square onto the triangle
    u[flip], w[flip] = 1 - u[flip], 1 - w[flip]
    return a[t] + u[:, None] * (b[t] - a[t]) + w[:, None] * (c[t] - a[t])


def paper_radius(points: np.ndarray, neighbours: int = 30, sample: int = 500, seed: int = 0) -> float:
    """A radius giving about `neighbours` neighbours per point (median over `sample` points)."""
    from scipy.spatial import cKDTree
    rng = np.random.default_rng(seed)
    probe = points[rng.choice(len(points), size=min(sample, len(points)), replace=False)]
    d, _ = cKDTree(points).query(probe, k=neighbours)
    return float(np.median(d[:, -1]))


def main():
    import time
    import ctensor.apps.pointcloud as pc
    rng = np.random.default_rng(0)
    for name in MESHES:
        pts = sample_mesh(name, 10_000)
        r = paper_radius(pts)
        kp = rng.uniform(-r / 2, r / 2, (15, 3))
        f, w = rng.standard_normal((len(pts), 32)), rng.standard_normal((15, 32, 32))
        pc.kpconv(pts, f, kp, w, r, r / 2.5)
        t0 = time.perf_counter()
        out = pc.kpconv(pts, f, kp, w, r, r / 2.5)
        ptr, _ = pc.radius_neighbors(pts, pts, r)
        print(f"{name}: {len(pts)} points, radius {r:.4g} ({np.diff(ptr).mean():.1f} neighbours), "
              f"kpconv C=32 in {1e3 * (time.perf_counter() - t0):.1f} ms, |out| {np.abs(out).mean():.3f}")


if __name__ == "__main__":
    main()
