"""Test helpers: convert ctensor tensors to the oracle's PieceTensor and compare results."""
from __future__ import annotations

import math


import ctensor as ct
from ctensor.limits import Limit

try:
    from tests.oracle import PieceTensor, evaluate, probe_points
except ImportError:  # running from inside tests/
    from oracle import PieceTensor, evaluate, probe_points


def to_pieces(t: ct.Tensor) -> PieceTensor:
    dims = tuple(l.coord for l in t.modes())
    pieces = []
    for coords, v in t.pieces():
        cs = []
        for kind, c in zip(dims, coords):
            if kind == "int":
                cs.append(int(c))
            else:
                lo, hi = c
                cs.append(((lo.value, lo.eps), (hi.value, hi.eps)))
        pieces.append((tuple(cs), v))
    shape = tuple(getattr(l, "shape", None) if l.coord == "int" else None for l in t.modes())
    return PieceTensor(dims, pieces, t.fill, shape)


def oracle(text, semiring=None, measures=None, all_orders=None, **args):
    """The reference interpreter on ct tensors; `measures`: user measures by name, as Python
    functions f(lo, hi) (an implementation independent of the compiled ct.Measure); `all_orders`:
    see `tests.oracle.evaluate`."""
    tensors = {k: to_pieces(v) for k, v in args.items() if isinstance(v, ct.Tensor)}
    scalars = {k: v for k, v in args.items() if not isinstance(v, (ct.Tensor, ct.Measure))}
    return evaluate(text, tensors, scalars or None, semiring, measures, all_orders=all_orders)


def close(a, b, tol=1e-9):
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    a, b = float(a), float(b)
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def breakpoints_1d(*tensors):
    bs = set()
    for t in tensors:
        for coords, _ in t.pieces():
            for c in coords:
                if isinstance(c, tuple):
                    for lim in c:
                        if math.isfinite(lim.value):
                            bs.add(lim.value)
    return sorted(bs)


def probes(bs):
    """Limit points around every breakpoint, midpoints between them and far points."""
    pts = [Limit(v, e) for v, e in probe_points(bs)] if bs else []
    pts += [Limit((a + b) / 2) for a, b in zip(bs, bs[1:])]
    pts += [Limit(-1e12), Limit(1e12)]
    if bs:
        pts += [Limit(bs[0] - 1.0), Limit(bs[-1] + 1.0)]
    return pts


CLOSED = ["left", "right", "both", "neither"]


def draw_runs(draw, max_size, allow_inf=True, coord=float):
    """The piece layout of a random 1-D interval tensor, for hypothesis strategies: breakpoints on
    a small integer grid (mapped through the monotone `coord`; so pieces touch, share endpoints and
    degenerate), optionally -inf / +inf at the ends, and runs between consecutive breakpoints.
    Returns (pts, hetero, closed, starts, ends, cl): cl holds each run's closedness (random when
    hetero, else `closed`)."""
    from hypothesis import strategies as st
    pts = sorted(draw(st.sets(st.integers(-6, 12), max_size=max_size)))
    pts = [coord(p) for p in pts]
    if allow_inf and pts and draw(st.booleans()):
        pts[0] = -math.inf
    if allow_inf and len(pts) > 1 and draw(st.booleans()):
        pts[-1] = math.inf
    hetero = draw(st.booleans())
    closed = draw(st.sampled_from(CLOSED))
    starts, ends, cl = [], [], []
    k = 0
    while k + 1 < len(pts):
        if draw(st.booleans()):
            cl.append(draw(st.sampled_from(CLOSED)) if hetero else closed)
            starts.append(pts[k])
            ends.append(pts[k + 1])
            k += draw(st.sampled_from([1, 2]))     # 1: the next run may touch this one
        else:
            k += 1
    return pts, hetero, closed, starts, ends, cl
