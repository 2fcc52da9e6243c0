"""Argument checking of the graphics operations (`ctensor.apps.graphics`): voxel values, occupancy,
points, rays, and scalar options, with errors naming the argument and its first bad element."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import FormatError


def _array(x, name: str) -> np.ndarray:
    try:
        return x if isinstance(x, np.ndarray) else np.asarray(x)
    except ValueError as exc:            # ragged nested sequences
        raise FormatError(f"{name}: not a rectangular array ({exc})") from None


def _first_bad(ok: np.ndarray, a: np.ndarray, name: str, what: str, first: int = 0):
    if ok.all():                    # the common case: no index search over the whole array
        return
    bad = np.argwhere(~ok)
    if bad.size:
        idx = tuple(int(i) for i in bad[0])
        shown = (idx[0] + first,) + idx[1:]
        raise FormatError(f"{name}[{', '.join(map(str, shown))}] = {a[idx].item()!r} {what}")


def real_array(x, name: str, shape: tuple) -> np.ndarray:
    """A finite float64 array of `shape` (None entries: any size).  TypeError for a non-numeric
    dtype (bool and complex included); FormatError for another shape or NaN/inf, naming the first
    offending element."""
    a = _array(x, name)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, a.shape)):
        want = "(" + ", ".join("n" if s is None else str(s) for s in shape) + ")"
        raise FormatError(f"{name}: expected shape {want}, got {a.shape}")
    a = np.ascontiguousarray(a, np.float64)
    # the sum of finite values is finite unless it overflows: one pass with no temporary (a
    # NaN/inf makes it NaN/inf), the element search only then (half the time of isfinite().all()
    # on 25 M coordinates)
    with np.errstate(over="ignore", invalid="ignore"):
        total = a.sum()
    if not np.isfinite(total):
        _first_bad(np.isfinite(a), a, name, "is not finite")
    return a


def point_rows(x, name: str) -> np.ndarray:
    """(M, 3) float64 points, not yet checked for NaN/inf (`finite_rows` checks each chunk as the
    interpolation reads it: one pass over the points from memory, not two).  Kept as given —
    no copy — when float64 with C-contiguous rows or contiguous columns (Fortran order, whose
    columns the kernel then reads in place); anything else becomes a C-contiguous float64 copy.
    TypeError / FormatError as `real_array`."""
    a = _array(x, name)
    if a.dtype.kind not in "iuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim != 2 or a.shape[1] != 3:
        raise FormatError(f"{name}: expected shape (n, 3), got {a.shape}")
    if a.dtype != np.float64 or not (a.flags.c_contiguous or a.flags.f_contiguous):
        a = np.asarray(a, np.float64, order="F" if a.flags.f_contiguous else "C")
        a = a if a.flags.c_contiguous or a.flags.f_contiguous else np.ascontiguousarray(a)
    return a


def finite_rows(a: np.ndarray, name: str, first: int):
    """FormatError naming the first NaN/inf of `a`, rows `first`.. of argument `name`; a sum of
    finite values is finite unless it overflows, so one pass with no temporary decides."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.add.reduce(a, axis=None))
    if not math.isfinite(total):
        _first_bad(np.isfinite(a), a, name, "is not finite", first)


def voxel_values(values) -> np.ndarray:
    """values (X, Y, Z, C) float32 or float64 numpy array.  TypeError (not an ndarray, other
    dtype), FormatError (ndim, empty channel axis)."""
    if not isinstance(values, np.ndarray):
        raise TypeError(f"values: expected a numpy array (X, Y, Z, C) of float32 or float64, got {type(values).__name__}")
    if values.dtype not in (np.float32, np.float64):
        raise TypeError(f"values: expected float32 or float64, got dtype {values.dtype}")
    if values.ndim != 4:
        raise FormatError(f"values: expected shape (X, Y, Z, C), got {values.shape}")
    if values.shape[3] < 1:
        raise FormatError("values: needs at least one channel (C >= 1)")
    return values


def occupancy(occupied, values: np.ndarray) -> np.ndarray:
    """occupied (X, Y, Z) bool, default: a voxel with a non-zero value in any channel."""
    if occupied is None:
        return (values != 0).any(axis=3)
    occ = _array(occupied, "occupied")
    if occ.dtype != np.bool_:
        raise TypeError(f"occupied: expected a bool array, got dtype {occ.dtype}")
    if occ.shape != values.shape[:3]:
        raise FormatError(f"occupied: expected shape {values.shape[:3]} (the voxels of values), got {occ.shape}")
    return occ


def positive_int(v, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}: expected a positive int, got {v!r}")
    if v < 1:
        raise ValueError(f"{name}: expected a positive int, got {v}")
    return int(v)


def per_ray(v, name: str, n: int) -> np.ndarray:
    """A finite scalar or (n,) array of per-ray values, as (n,) float64."""
    a = _array(v, name)
    return real_array(np.broadcast_to(a, (n,)) if a.ndim == 0 else a, name, (n,))


def channel(v, name: str, channels: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}: expected a channel number (int), got {v!r}")
    if not 0 <= v < channels:
        raise ValueError(f"{name}: channel {v} is not in 0 .. {channels - 1} (the grid has {channels} channels)")
    return int(v)
