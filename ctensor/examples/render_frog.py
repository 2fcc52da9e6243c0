"""Volume rendering of a real CT scan with `ctensor.apps.graphics` (continuous paper §7.3).

    python -m ctensor.examples.render_frog --out frog.png

Data: `frog_tissues.vti`, a segmented CT scan of a frog (500 x 470 x 136 voxels, spacing
1 x 1 x 1.5, 26 tissue labels, 3.6 % of the voxels non-zero) shipped inside the pyvista wheel and
read through pyvista (the optional `graphics` extra: pip install "ctensor[graphics]").  Every
labelled voxel is occupied; its channels are (density, red, green, blue) looked up from its tissue
label.  The camera orbits the volume's centre; each pixel's ray is sampled, the samples are
interpolated by the compiled einsum `graphics.INTERPOLATE`, and composited front to back.  The
picture is written with matplotlib.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from ..apps import graphics


def frog_labels():
    """(labels (X, Y, Z) uint8, spacing (3,) float64) of pyvista's frog_tissues.vti."""
    import pyvista
    path = os.path.join(os.path.dirname(pyvista.__file__), "examples", "frog_tissues.vti")
    vol = pyvista.read(path)
    labels = np.asarray(vol.point_data[vol.array_names[0]]).reshape(vol.dimensions, order="F")
    return labels, np.asarray(vol.spacing, np.float64)


def tissue_channels(labels: np.ndarray) -> np.ndarray:
    """(X, Y, Z, 4) float32 voxel values: density 0.08 per voxel unit for every tissue (0.02 for
    label 1, the skin, so the inside shows), colours from matplotlib's tab20 by label; 0 outside."""
    from matplotlib import colormaps
    n = int(labels.max()) + 1
    lut = np.zeros((n, 4), np.float32)
    lut[1:, 0] = 0.08
    lut[1, 0] = 0.02
    lut[1:, 1:] = colormaps["tab20"](np.arange(1, n) % 20)[:, :3]
    return lut[labels]


def orbit_camera(shape, spacing, size: int, azimuth: float = 30.0, elevation: float = 20.0,
                 fov: float = 30.0):
    """size x size rays of a pinhole camera orbiting the volume centre, in voxel coordinates:
    (origins, directions, near, far).  World coordinates are voxel index * spacing; directions
    are unit vectors in world space divided by the spacing, so t is a world distance."""
    extent = (np.asarray(shape) - 1) * spacing
    centre = extent / 2
    radius = np.linalg.norm(extent) / 2
    az, el = np.radians(azimuth), np.radians(elevation)
    view = -np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
    dist = radius / np.sin(np.radians(fov) / 2)
    eye = centre - view * dist
    right = np.cross(view, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, view)
    s = np.tan(np.radians(fov) / 2) * np.linspace(1, -1, size)
    v, u = np.meshgrid(s, -s, indexing="ij")                 # image rows top to bottom
    d = view + u.reshape(-1, 1) * right + v.reshape(-1, 1) * up
    d /= np.linalg.norm(d, axis=1)[:, None]
    return np.broadcast_to(eye / spacing, d.shape).copy(), d / spacing, dist - radius, dist + radius


def frog_grid():
    """(VoxelGrid of the frog: the labelled voxels, channels `tissue_channels`; spacing (3,))."""
    labels, spacing = frog_labels()
    return graphics.voxel_grid(tissue_channels(labels), occupied=labels != 0), spacing


def render_frog(grid, spacing, size: int = 256, samples: int = 192, azimuth: float = 30.0, workers: int = 1):
    """The (size, size, 3) float64 image in [0, 1] of `grid` over a white background."""
    o, d, near, far = orbit_camera(grid.shape, spacing, size, azimuth)
    rgb = graphics.render(grid, o, d, near, far, samples, density=0, colour=(1, 2, 3), background=1.0,
                          workers=workers)
    return np.clip(rgb.reshape(size, size, 3), 0.0, 1.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ctensor.examples.render_frog", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="frog.png", help="PNG file to write (default frog.png)")
    ap.add_argument("--size", type=int, default=256, help="image width and height in pixels")
    ap.add_argument("--samples", type=int, default=192, help="samples per ray")
    ap.add_argument("--azimuth", type=float, default=30.0, help="camera azimuth in degrees")
    ap.add_argument("--workers", type=int, default=1, help="threads (-1: every core)")
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t0 = time.perf_counter()
    grid, spacing = frog_grid()
    t1 = time.perf_counter()
    img = render_frog(grid, spacing, args.size, args.samples, args.azimuth, args.workers)
    t2 = time.perf_counter()
    plt.imsave(args.out, img)
    print(f"{grid}\nloaded in {t1 - t0:.2f} s; rendered {args.size}x{args.size} rays x {args.samples} samples "
          f"in {t2 - t1:.2f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
