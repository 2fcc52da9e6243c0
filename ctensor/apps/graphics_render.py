"""Emission–absorption compositing of samples along rays (NeRF / Plenoxels volume rendering), the
step of `ctensor.apps.graphics.render` after the interpolation einsum.

For ray r with samples k = 0 .. S-1 (density σ_k >= 0, colour c_k, segment length δ_k):
α_k = 1 - exp(-σ_k δ_k), transmittance T_k = exp(-Σ_{j<k} σ_j δ_j), weight w_k = T_k α_k, and the
pixel is Σ_k w_k c_k + T_S · background.  This is a running (prefix) sum along each ray, not an
index sum, so it stays numpy; the work per sample is a few flops against the interpolation's
8 · C loads.
"""
from __future__ import annotations

import numpy as np


def composite(sigma: np.ndarray, colour: np.ndarray, delta: np.ndarray, background) -> np.ndarray:
    """sigma (R, S) densities (negative ones count as 0, Plenoxels' ReLU), colour (R, S, K), delta
    (R, S) segment lengths -> (R, K) float64 pixels over `background` (a scalar or (K,))."""
    tau = np.maximum(sigma, 0.0) * delta                   # optical depth of each segment
    # exclusive prefix sum along the ray: the depth in front of sample k
    front = np.cumsum(tau, axis=1) - tau
    weights = np.exp(-front) * -np.expm1(-tau)             # T_k * alpha_k, accurate for small tau
    rest = np.exp(-tau.sum(axis=1))                        # transmittance past the last sample
    return np.einsum("rs,rsk->rk", weights, colour) + rest[:, None] * np.asarray(background, np.float64)
