"""The frog render example (issue 29 item 5) on pyvista's real CT volume: its pixels equal a numpy
implementation of the same sampling, trilinear interpolation and compositing, and the PNG it writes
holds them.  Skipped without pyvista (the optional `graphics` extra)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyvista")
pytest.importorskip("matplotlib")

from ctensor.examples import render_frog as rf  # noqa: E402


@pytest.fixture(scope="module")
def frog():
    labels, spacing = rf.frog_labels()
    return labels, spacing, rf.frog_grid()[0]


def numpy_render(labels, spacing, size, samples, azimuth):
    """Sampling, trilinear interpolation (8 corner gathers of the labels' channel values) and
    front-to-back compositing (cumulative product of 1 - alpha), in numpy."""
    lut = rf.tissue_channels(np.arange(labels.max() + 1, dtype=labels.dtype)).astype(np.float64)
    o, d, near, far = rf.orbit_camera(labels.shape, spacing, size, azimuth)
    t = near + (np.arange(samples) + 0.5) * (far - near) / samples
    p = (o[:, None, :] + t[None, :, None] * d[:, None, :]).reshape(-1, 3)
    p = np.clip(p, -2.0, np.array(labels.shape) + 1.0)
    lo = np.floor(p).astype(np.int64)
    feat = np.zeros((len(p), 4))
    for corner in np.ndindex(2, 2, 2):
        c = lo + corner
        w = np.prod(np.where(corner, p - lo, 1 - (p - lo)), axis=1)
        ok = np.all((c >= 0) & (c < labels.shape), axis=1)
        feat[ok] += w[ok, None] * lut[labels[c[ok, 0], c[ok, 1], c[ok, 2]]]
    feat = feat.reshape(size * size, samples, 4)
    delta = (far - near) / samples * np.linalg.norm(d, axis=1)
    alpha = 1.0 - np.exp(-np.maximum(feat[..., 0], 0.0) * delta[:, None])
    trans = np.cumprod(np.concatenate([np.ones((len(alpha), 1)), 1.0 - alpha], axis=1), axis=1)
    rgb = np.einsum("rs,rsk->rk", trans[:, :-1] * alpha, feat[..., 1:]) + trans[:, -1:] * 1.0
    return np.clip(rgb.reshape(size, size, 3), 0.0, 1.0)


def test_frog_pixels_equal_numpy_compositing(frog):
    labels, spacing, grid = frog
    assert grid.shape == (500, 470, 136) and grid.occupied == int((labels != 0).sum())
    img = rf.render_frog(grid, spacing, size=40, samples=96, azimuth=60.0)
    want = numpy_render(labels, spacing, 40, 96, 60.0)
    np.testing.assert_allclose(img, want, atol=1e-9)
    assert (img < 0.9).any() and (img == 1.0).any()       # the frog in front of the background


def test_example_writes_the_png(frog, tmp_path, capsys):
    import matplotlib.pyplot as plt
    labels, spacing, _ = frog
    out = tmp_path / "frog.png"
    assert rf.main(["--out", str(out), "--size", "24", "--samples", "48"]) == 0
    assert "wrote" in capsys.readouterr().out
    png = plt.imread(str(out))[..., :3]
    want = numpy_render(labels, spacing, 24, 48, 30.0)
    assert png.shape == (24, 24, 3)
    assert np.abs(png - want).max() <= 1 / 255 + 1e-6          # 8-bit quantization
