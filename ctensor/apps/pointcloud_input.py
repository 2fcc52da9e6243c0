"""Argument checking of the point-cloud operations (`ctensor.apps.pointcloud`): errors name the
argument and its first offending element."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import FormatError

FLOATS = (np.float32, np.float64)


def array_arg(v, name: str, ndim: int, cols: int | None = None) -> np.ndarray:
    """`v` as a numeric array of `ndim` dimensions (and `cols` columns): TypeError for a non-numeric
    array, FormatError for a wrong shape or a NaN/inf entry (the first one, by index)."""
    try:
        arr = np.asarray(v)
    except ValueError as exc:                 # ragged nested sequences
        raise FormatError(f"{name}: expected a {ndim}-d numeric array ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    if arr.ndim != ndim or (cols is not None and arr.shape[1] != cols):
        want = f"(n, {cols})" if cols is not None else f"{ndim} dimensions"
        raise FormatError(f"{name}: expected shape {want}, got {arr.shape}")
    # a finite sum means every value is finite (a NaN or inf makes it NaN or inf): one reduction, no
    # temporary; a sum that overflows from finite values is sorted out by the exact test
    if arr.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            total = arr.sum()
    if arr.dtype.kind == "f" and not (np.isfinite(total) or np.isfinite(arr).all()):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            k = tuple(int(i) for i in bad[0])
            raise FormatError(f"{name}[{', '.join(map(str, k))}] = {arr[k].item()!r} is not finite")
    return arr


def coords_arg(v, name: str) -> np.ndarray:
    """(n, 3) float64 coordinates (C order)."""
    return np.ascontiguousarray(array_arg(v, name, 2, 3), np.float64)


def length_arg(v, name: str) -> float:
    """A finite number >= 0 (a radius or an influence distance), as a Python float."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {v!r}")
    x = float(v)
    if not math.isfinite(x) or x < 0:
        raise FormatError(f"{name} = {v!r}: expected a finite number >= 0")
    return x


def out_dtype(*arrays) -> type:
    """float32 when every array is float32, else float64 (the compiled code computes in float64)."""
    return np.float32 if all(a.dtype == np.float32 for a in arrays) else np.float64


def layer_args(points, features, kernel_points, weights, radius, sigma, queries, points_checked=False):
    """The checked arguments of `kpconv`: (points, features, kernel_points, weights, radius, sigma,
    queries) as float64 arrays and floats, plus the result dtype.  points_checked: `points` are an
    index's coordinates, checked when it was built."""
    pts = points if points_checked else coords_arg(points, "points")
    feats = array_arg(features, "features", 2)
    if feats.shape[0] != pts.shape[0]:
        raise FormatError(f"features has {feats.shape[0]} rows but points has {pts.shape[0]}: one feature "
                          "row per point")
    kps = coords_arg(kernel_points, "kernel_points")
    w = array_arg(weights, "weights", 3)
    if w.shape[0] != kps.shape[0] or w.shape[1] != feats.shape[1]:
        raise FormatError(f"weights has shape {w.shape}; expected (K, C_in, C_out) = ({kps.shape[0]}, "
                          f"{feats.shape[1]}, C_out) from kernel_points {kps.shape} and features {feats.shape}")
    dtype = out_dtype(feats, w)
    r = length_arg(radius, "radius")
    s = length_arg(sigma, "sigma")
    if s == 0:
        raise FormatError("sigma = 0: the influence 1 - |d| / sigma needs sigma > 0")
    q = pts if queries is None else coords_arg(queries, "queries")
    return pts, np.ascontiguousarray(feats, np.float64), kps, np.ascontiguousarray(w, np.float64), r, s, q, dtype
