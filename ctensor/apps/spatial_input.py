"""Argument checking of the spatial queries (`ctensor.apps.spatial`): points, query boxes, centres
and radii, with errors naming the argument and its first bad element."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import FormatError


def as_coords(points, name: str = "points") -> np.ndarray:
    """(n, 2) float64 coordinates of an (n, 2) array or a sequence/array of Shapely points.
    Raises FormatError (wrong shape, NaN or inf, naming the first bad entry) or TypeError."""
    try:
        arr = np.asarray(points) if not isinstance(points, np.ndarray) else points
    except ValueError as exc:                # ragged nested sequences
        raise FormatError(f"{name}: expected an (n, 2) array or Shapely points ({exc})") from None
    if arr.ndim == 1 and arr.size == 0:      # an empty sequence (of Shapely points): no points
        arr = np.zeros((0, 2))
    if arr.dtype == object:
        import shapely                       # only needed for geometry input
        geoms = arr.ravel()
        if not shapely.is_geometry(geoms).all():      # numbers in an object array
            try:
                arr = np.asarray(arr.tolist(), dtype=np.float64)
            except (TypeError, ValueError):
                k = int(np.flatnonzero(~shapely.is_geometry(geoms))[0])
                raise TypeError(f"{name}[{k}] is {geoms[k]!r}, neither a Shapely Point nor a pair of "
                                "numbers") from None
            return as_coords(arr, name)
        kinds = shapely.get_type_id(geoms)
        bad = np.flatnonzero(kinds != shapely.GeometryType.POINT)
        if bad.size:
            k = int(bad[0])
            raise TypeError(f"{name}[{k}] is {geoms[k]!r}, not a Shapely Point")
        empty = np.flatnonzero(shapely.is_empty(geoms))
        if empty.size:
            raise FormatError(f"{name}[{int(empty[0])}] is an empty Point")
        arr = shapely.get_coordinates(geoms)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected an (n, 2) numeric array or Shapely points, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise FormatError(f"{name}: expected shape (n, 2), got {arr.shape}")
    c = np.ascontiguousarray(arr, np.float64)
    bad = np.argwhere(~np.isfinite(c))
    if bad.size:
        i, j = bad[0]
        raise FormatError(f"{name}[{i}, {j}] = {c[i, j].item()!r} is not a finite coordinate")
    return c


def replay(v, items):
    """`v` again for the Python path after the native path unpacked it: the items it gave if `v`
    was an iterator (consumed by now), else `v` itself."""
    return items if iter(v) is v else v


def pair_arg(v, name):
    """(x, y) as Python floats: FormatError for not two items or a NaN, TypeError for an item that
    is not a number (strings included, as in the batched queries and `r`)."""
    try:
        a, b = v
    except (TypeError, ValueError):
        raise FormatError(f"{name}: expected two coordinates (x, y), got {v!r}") from None
    not_numbers = TypeError(f"{name}: expected two numbers (x, y), got {v!r}")
    if isinstance(a, (str, bytes)) or isinstance(b, (str, bytes)):     # float() would parse them
        raise not_numbers
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        raise not_numbers from None
    except OverflowError:
        raise FormatError(f"{name}: coordinates of {v!r} overflow a float64") from None
    if a != a or b != b:
        raise FormatError(f"{name} = {v!r} has a NaN coordinate")
    return a, b


def cell_points_arg(c):
    if isinstance(c, bool) or not isinstance(c, numbers.Real):
        raise TypeError(f"cell_points: expected a number, got {c!r}")
    if not 1 <= c < math.inf:
        raise FormatError(f"cell_points = {c!r} is not a finite number >= 1")
    return c


def radius_arg(r):
    if r is None or isinstance(r, (str, bytes, complex)):
        raise TypeError(f"r: expected a number, got {r!r}")
    try:
        r = float(r)
    except (TypeError, ValueError, OverflowError):
        raise FormatError(f"r: expected a number, got {r!r}") from None
    if not (0 <= r < math.inf):
        raise FormatError(f"r = {r!r} is not a finite radius >= 0")
    return r


def boxes_arg(v, name):
    a = np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind in "biuf" else None
    if a is None:
        raise TypeError(f"{name}: expected numbers, got {v!r}")
    if a.ndim != 2 or a.shape[1] != 2:
        raise FormatError(f"{name}: expected shape (m, 2), got {a.shape}")
    bad = np.argwhere(np.isnan(a))
    if bad.size:
        i, j = bad[0]
        raise FormatError(f"{name}[{i}, {j}] is NaN")
    return a


def radii_arg(r, m):
    """One radius per centre: a number (for all m) or m numbers, finite and >= 0, as float64 (m,).
    Raises TypeError (not numbers) or FormatError (wrong length, NaN, inf or negative, naming the
    first bad one)."""
    raw = np.asarray(r)
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"r: expected a number or {m} numbers, got dtype {raw.dtype}")
    rr = np.broadcast_to(raw.astype(np.float64), (m,)) if raw.ndim == 0 else raw.astype(np.float64)
    if rr.shape != (m,):
        raise FormatError(f"r: expected a number or {m} radii, got shape {rr.shape}")
    bad = np.flatnonzero(~(rr >= 0) | np.isinf(rr))
    if bad.size:
        raise FormatError(f"r[{int(bad[0])}] = {rr[bad[0]].item()!r} is not a finite radius >= 0")
    return rr
