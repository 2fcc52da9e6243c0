"""Limit endpoints and closed Limit intervals, as plain tuples (no ctensor import).

Source: continuous tensor paper §5.1 (Limit) and DESIGN.md §2 (closed extents everywhere).

* An endpoint is ``(value, eps)`` with eps in {-1, 0, +1}: ``(3.0, -1)`` is 3−ε.  Endpoints are
  ordered lexicographically on (value, eps), which is exactly Python's tuple order.
* An interval is a closed interval of endpoints ``(lo, hi)``; it is empty iff ``hi < lo``.
  ``[a, b)`` is ``((a, 0), (b, -1))``, ``(a, b]`` is ``((a, +1), (b, 0))``, a pinpoint is
  ``((a, 0), (a, 0))``.  Values may be ±inf.
* Canonical pieces use ``lo.eps`` in {0, +1} and ``hi.eps`` in {0, -1} (closed or open ends).
  For those, containment of a Limit point in the Limit order coincides with membership of the
  real set (v−ε means "a real just below v").  Other epsilons have no real-set meaning and are
  rejected by `check_piece_interval`.
* Elementary cells (paper Fig. 5, step 1b, per axis): finite breakpoints b1 < ... < bn split the
  line into ``((-inf,+1),(b1,-1))``, ``((b1,0),(b1,0))``, ``((b1,+1),(b2,-1))``, ...,
  ``((bn,+1),(inf,-1))``; with no breakpoint the only cell is ``((-inf,+1),(inf,-1))``.  Every
  canonical interval whose finite endpoint values are breakpoints is a union of these cells.
"""
from __future__ import annotations

import math
import numbers

INF = math.inf


def as_endpoint(x) -> tuple[float, int]:
    """Coerce a number, a ``(value, eps)`` tuple or an object with ``.value``/``.eps`` to an endpoint."""
    if hasattr(x, "value") and hasattr(x, "eps"):
        x = (x.value, x.eps)
    if isinstance(x, tuple):
        if len(x) != 2:
            raise ValueError(f"endpoint must be (value, eps), got {x!r}")
        v, e = x
        if isinstance(e, bool) or int(e) != e or int(e) not in (-1, 0, 1):
            raise ValueError(f"endpoint eps must be -1, 0 or +1, got {x!r}")
        e = int(e)
    else:
        v, e = x, 0
    v = float(v)
    if math.isnan(v):
        raise ValueError("endpoint value must not be NaN")
    return (v, e)


def is_interval_like(x) -> bool:
    """True for ``(lo, hi)`` where lo and hi are themselves endpoints (not a single Limit)."""
    return (isinstance(x, tuple) and len(x) == 2
            and not isinstance(x[0], numbers.Real) and not isinstance(x[1], numbers.Real))


def as_interval(x) -> tuple:
    """An interval ``(lo, hi)`` as is; a point (number or Limit) as the pinpoint ``(p, p)``."""
    if is_interval_like(x):
        return (as_endpoint(x[0]), as_endpoint(x[1]))
    p = as_endpoint(x)
    if p[1] == 0 and math.isinf(p[0]):
        raise ValueError(f"{x!r} is not a real point")
    return (p, p)


def interval(a, b, closed: str = "left") -> tuple:
    """Build the Limit interval of [a, b), (a, b], [a, b] or (a, b) (closed = left/right/both/neither)."""
    if closed not in ("left", "right", "both", "neither"):
        raise ValueError(f"closed must be left/right/both/neither, got {closed!r}")
    lo_e = 0 if closed in ("left", "both") else 1
    hi_e = 0 if closed in ("right", "both") else -1
    return ((float(a), lo_e), (float(b), hi_e))


def point(a) -> tuple:
    """The pinpoint interval [a, a]."""
    return ((float(a), 0), (float(a), 0))


def is_empty(iv) -> bool:
    lo, hi = iv
    return hi < lo


def is_pinpoint(iv) -> bool:
    return iv[0] == iv[1]


def contains(outer, inner) -> bool:
    """inner ⊆ outer (inner non-empty), in the Limit order."""
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def overlaps(a, b) -> bool:
    """The two closed Limit intervals intersect."""
    return max(a[0], b[0]) <= min(a[1], b[1])


def check_piece_interval(iv) -> tuple:
    """Validate and normalise a piece interval; raise ValueError if it is not canonical."""
    if not is_interval_like(iv):
        raise ValueError(f"real coordinate of a piece must be ((lo_v, lo_e), (hi_v, hi_e)), got {iv!r}")
    lo, hi = as_endpoint(iv[0]), as_endpoint(iv[1])
    if lo[1] == -1 or hi[1] == 1:
        raise ValueError(f"non-canonical epsilons in {iv!r}: lo.eps must be 0/+1 and hi.eps 0/-1")
    if lo == hi and math.isinf(lo[0]):
        raise ValueError(f"pinpoint at infinity {iv!r} is not a real point")
    return (lo, hi)


def length(iv) -> float:
    """Lebesgue length hi.v − lo.v with ε dropped (0 for a pinpoint, inf for a ray)."""
    if is_pinpoint(iv):
        return 0.0
    return iv[1][0] - iv[0][0]


def preimage(iv, scale: float, offset: float) -> tuple:
    """{x : scale*x + offset ∈ iv} for an interval iv of Limits (scale != 0)."""
    (lv, le), (hv, he) = iv
    if scale > 0:
        return (((lv - offset) / scale, le), ((hv - offset) / scale, he))
    return (((hv - offset) / scale, -he), ((lv - offset) / scale, -le))


def elementary_cells(breakpoints) -> list[tuple]:
    """Points and open gaps induced by the finite breakpoints, plus the two rays, in order."""
    bs = sorted({float(b) for b in breakpoints if math.isfinite(b)})
    if not bs:
        return [((-INF, 1), (INF, -1))]
    cells = [((-INF, 1), (bs[0], -1))]
    for i, b in enumerate(bs):
        cells.append(((b, 0), (b, 0)))
        nxt = bs[i + 1] if i + 1 < len(bs) else INF
        cells.append(((b, 1), (nxt, -1)))
    return cells


def probe_points(breakpoints) -> list[tuple[float, int]]:
    """Limit points hitting every elementary cell of the breakpoints: b−ε, b, b+ε for each b.

    Useful for differential tests: two piecewise-constant 1-D functions whose breakpoints are all
    in `breakpoints` are equal iff they agree on these points.
    """
    bs = sorted({float(b) for b in breakpoints if math.isfinite(b)})
    if not bs:
        return [(0.0, 0)]
    return [(b, e) for b in bs for e in (-1, 0, 1)]
