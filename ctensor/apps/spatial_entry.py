"""The native CPython entry of a `PointIndex` single-query kernel (`ctensor.runtime.pyentry`): the
query's checks, the disk's bounding box and the clamp to the points' bounds as its prologue, the
index's `perm` applied to its ids.  `disk_box` / `disk_box_scalar` compute the same bounding box on
the Python path (arrays of discs, one disc), so the two paths agree to the bit.

Threads.  The entry holds the GIL from its first store into the argument block until it returns,
so its block (which the index gives no other caller) is never in use by two threads; except for a
query expected to return `RELEASE_AT` ids or more (the box's area, or the disk's, times the mean
density of points in their bounding box), whose kernel runs without the GIL so that other threads
run meanwhile.  While such a query runs, a second thread's query finds the entry busy and takes the
Python path (`ctensor.runtime.pyentry`, `release=`), with its own block.  Smaller queries run in
well under the ~5 µs a contended GIL hand-over can cost, so they keep it."""
from __future__ import annotations

import math

import numpy as np

from ..runtime.pyentry import native_entry, scalar_address

# A point the distance test accepts (fl(sqrt(fl(dx*dx) + fl(dy*dy))) <= r, dx = fl(x - ox)) has
# |x - ox| <= r * (1 + 3u) (u = 2**-53, the roundings of dx, dx*dx and sqrt), which can exceed
# ox + r by many ulps of ox + r when |ox + r| << r (ox = -88.6, r = 91.9: x = 3.3).  So the box is
# widened by r * 2**-50 = 8ur, then by two ulps for the roundings of the sums themselves.
DISK_PAD = 2.0 ** -50

# expected ids from which a single query runs its kernel without the GIL: the kernel then takes
# several µs (about 2-4 ns per id written, plus the cells visited), far above the ~0.1 µs of
# releasing and taking back an uncontended GIL
RELEASE_AT = 2048.0


def query_entry(call, radius: bool, bounds, perm, n: int):
    """The native entry of `call` (a box or radius single-query PackedCall whose `box` holds the
    query box's endpoint arrays x.left, x.right, y.left, y.right), or None when unavailable
    (CTENSOR_NATIVE_ENTRY=0, `native_entry`).  Its checks are the validations of
    `spatial_input.pair_arg` / `radius_arg` and `PointIndex.box` (any failure -> None -> the
    Python path raises), its stores `_disk_box_scalar` and `PointIndex._clip`.  `n` points."""
    ax, ay, bx, by = bounds
    area = (bx - ax) * (by - ay)
    # points per unit area; 0 (never release) for points on a line or a point, or an overflowed area
    density = n / area if 0 < area < math.inf else 0.0
    arg = lambda i: ("arg", i)
    if radius:
        ox, oy, r = arg(0), arg(1), arg(2)
        down = lambda e: ("nextdown", ("nextdown", e))                    # == `_disk_box_scalar`
        up = lambda e: ("nextup", ("nextup", e))
        pad = ("mul", r, ("const", DISK_PAD))
        x0, y0 = down(("sub", ("sub", ox, r), pad)), down(("sub", ("sub", oy, r), pad))
        x1, y1 = up(("add", ("add", ox, r), pad)), up(("add", ("add", oy, r), pad))
        checks = [("notnan", ox), ("notnan", oy), ("le", ("const", 0.0), r), ("finite", r)]
        scalars = [(scalar_address(call, s), e) for s, e in (("ox", ox), ("oy", oy), ("r", r))]
    else:
        x0, y0, x1, y1 = arg(0), arg(1), arg(2), arg(3)
        checks = [("notnan", x0), ("notnan", y0), ("notnan", x1), ("notnan", y1),
                  ("le", x0, x1), ("le", y0, y1)]
        scalars = []
    # call.box holds the endpoint arrays x.left, x.right, y.left, y.right (`PointIndex._new_call`)
    # `_clip`: a low end clamped into [a, nextup(b)], a high end into [nextdown(a), b]; a box
    # that misses the bounds comes out with lo > hi (no ids), one that meets them exact
    lo_end = lambda e, a, b: ("min", ("max", e, ("const", a)), ("const", math.nextafter(b, math.inf)))
    hi_end = lambda e, a, b: ("max", ("min", e, ("const", b)), ("const", math.nextafter(a, -math.inf)))
    ends = (lo_end(x0, ax, bx), hi_end(x1, ax, bx), lo_end(y0, ay, by), hi_end(y1, ay, by))
    stores = scalars + [(a.ctypes.data, e) for a, e in zip(call.box, ends)]
    if radius:
        expected = ("mul", ("mul", r, r), ("const", math.pi * density))
    else:
        side = lambda lo, hi: ("max", ("sub", hi, lo), ("const", 0.0))
        expected = ("mul", ("mul", side(ends[0], ends[1]), side(ends[2], ends[3])), ("const", density))
    return native_entry(call, 3 if radius else 4, stores, checks, perm=perm, keep=call.box,
                        release=("le", ("const", RELEASE_AT), expected))


def disk_box(ox, oy, r):
    """The bounding box of a disk, widened by DISK_PAD * r and two ulps on each side so that
    rounding in ox ± r or in the distance never cuts off a point the distance test accepts."""
    lo = lambda v: np.nextafter(np.nextafter(v, -np.inf), -np.inf)
    hi = lambda v: np.nextafter(np.nextafter(v, np.inf), np.inf)
    pad = r * DISK_PAD
    return lo(ox - r - pad), lo(oy - r - pad), hi(ox + r + pad), hi(oy + r + pad)


def disk_box_scalar(ox, oy, r):
    """`disk_box` for one disk, on Python floats (a numpy ufunc call on a scalar costs ~0.6 µs)."""
    up, down = math.inf, -math.inf
    nx = math.nextafter
    pad = r * DISK_PAD
    return (nx(nx(ox - r - pad, down), down), nx(nx(oy - r - pad, down), down),
            nx(nx(ox + r + pad, up), up), nx(nx(oy + r + pad, up), up))
