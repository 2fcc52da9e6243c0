"""Random tensors for the fuzzer: explicit level nests of every format, and the constructors.

A tensor is drawn from a *spec*, a list of level kinds outermost first, one per mode, then a leaf
(`LEAVES`); the spec is what the summary prints, so a failure names its formats.  Integer modes
take the shape of the index they are read by (`programs.INT_SHAPES`), so tensors joined on an
integer index agree on its extent.  Coordinates lie on a small integer grid (plus halves), so
pieces touch, share endpoints, degenerate to pinpoints and coincide across tensors.

Only the public constructors are used (level classes, `ct.Tensor`, `ct.intervals`, `ct.points`,
`ct.box`, `ct.interval_set`): the fuzzer shares no code with the compiler.
"""
from __future__ import annotations

import math

import numpy as np

import ctensor as ct

CLOSED = ["left", "right", "both", "neither"]
EPS_OF = {"left": (0, -1), "right": (1, 0), "both": (0, 0), "neither": (1, -1)}
VALUES = [1.0, 2.0, -1.5, 0.5, 3.0, 0.0, -2.0]

INT_LEVELS = ["D", "SLi", "SPi", "SIi", "BM"]
# UC/UCr: UnitCells (dense / through a row index); UG: a UniformGrid above SLr (outermost only)
REAL_LEVELS = ["SLr", "SPr", "SI", "SRL", "SRLh", "UC", "UCr", "UG"]
LEAVES = ["Ef", "Ef", "Ei", "Eb", "E32", "P", "Ef1"]


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def leaf(rng, kind, n):
    """A leaf holding n values: float, int64, bool, float32, Pattern, float with fill 1."""
    vals = np.array([_pick(rng, VALUES) for _ in range(n)], float)
    if kind == "Ef":
        return ct.Element(0.0, val=vals)
    if kind == "Ef1":
        return ct.Element(1.0, val=vals)
    if kind == "Ei":
        return ct.Element(0, val=vals.round().astype(np.int64))
    if kind == "Eb":
        return ct.Element(False, val=rng.random(n) < 0.7)
    if kind == "E32":
        return ct.Element(0.0, val=vals.astype(np.float32), dtype=np.float32)
    if kind == "P":
        return ct.Pattern()
    raise ValueError(kind)


def runs(rng, closed, hetero, allow_inf=True):
    """Disjoint runs of one fiber: (left, right, left_eps, right_eps); touching runs, pinpoint runs
    [a, a] (closed both), ±inf ends."""
    pts = sorted(set(rng.integers(-3, 5, size=int(rng.integers(0, 7))).tolist()))
    pts = [float(p) for p in pts]
    if allow_inf and pts and rng.random() < 0.25:
        pts[0] = -math.inf
    if allow_inf and len(pts) > 1 and rng.random() < 0.25:
        pts[-1] = math.inf
    L, R, LE, RE = [], [], [], []
    k = 0
    while k < len(pts):
        c = _pick(rng, CLOSED) if hetero else closed
        le, re = EPS_OF[c]
        if (hetero or closed == "both") and math.isfinite(pts[k]) and rng.random() < 0.15:
            a = b = pts[k]                                   # a pinpoint run
            le = re = 0
            step = 0                                         # the next run may start (open) at a
        elif k + 1 < len(pts) and rng.random() < 0.7:
            a, b = pts[k], pts[k + 1]
            step = 1 if rng.random() < 0.6 else 2            # 1: the next run may touch this one
        else:
            k += 1
            continue
        if L and (R[-1], RE[-1]) >= (a, le):                  # would overlap the previous run
            k += 1
            continue
        L.append(a), R.append(b), LE.append(le), RE.append(re)
        k += step
    return L, R, LE, RE


def build(rng, spec, npos, shapes, closed):
    """The level nest of `spec` (outermost first, then a leaf kind) holding `npos` fibers;
    `shapes`: the extent of each int mode, in order; `closed`: the closedness of homogeneous real
    interval levels."""
    kind, rest = spec[0], spec[1:]
    if kind in LEAVES:
        return leaf(rng, kind, npos)
    if kind in INT_LEVELS:
        n, shapes = shapes[0], shapes[1:]
    if kind == "D":
        return ct.Dense(build(rng, rest, npos * n, shapes, closed), n)
    if kind == "BM":
        tbl = rng.random(npos * n) < 0.5
        child = build(rng, rest, npos * n, shapes, closed)     # positions p*n + i
        return ct.SparseByteMap(child, n, tbl=tbl) if rng.random() < 0.5 else \
            ct.SparseByteMap(child, n, *_ptr_idx(tbl, npos, n))
    if kind in ("SLi", "SLr"):
        ptr, idx = [0], []
        for _ in range(npos):
            if kind == "SLi":
                ids = sorted(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False).tolist())
            else:
                off = 0.5 if rng.random() < 0.3 else 0.0
                ids = sorted(set((rng.integers(-3, 5, size=int(rng.integers(0, 4))) + off).tolist()))
            idx += ids
            ptr.append(len(idx))
        child = build(rng, rest, len(idx), shapes, closed)
        if kind == "SLi":
            return ct.SparseList(child, np.array(ptr), np.array(idx, dtype=np.int64), shape=n)
        return ct.SparseList(child, np.array(ptr), np.array(idx, dtype=float))
    if kind == "SPi":
        return ct.SparsePoint(build(rng, rest, npos, shapes, closed), rng.integers(0, n, size=npos).astype(np.int64),
                              shape=n)
    if kind == "SPr":
        return ct.SparsePoint(build(rng, rest, npos, shapes, closed), rng.integers(-3, 5, size=npos).astype(float))
    if kind == "SI":
        lo = rng.integers(-3, 5, size=npos).astype(float)
        hi = lo + rng.integers(0 if closed == "both" else 1, 4, size=npos)
        if npos and rng.random() < 0.2:
            lo[int(rng.integers(npos))] = -math.inf
        if npos and rng.random() < 0.2:
            hi[int(rng.integers(npos))] = math.inf
        return ct.SparseInterval(build(rng, rest, npos, shapes, closed), lo, hi, closed)
    if kind == "SIi":
        lo = rng.integers(0, n, size=npos)
        hi = np.minimum(lo + rng.integers(0, 3, size=npos), n)
        return ct.SparseInterval(build(rng, rest, npos, shapes, closed), lo.astype(np.int64), hi.astype(np.int64),
                                 "left", shape=n)
    if kind in ("SRL", "SRLh"):
        ptr, L, R, LE, RE = [0], [], [], [], []
        for _ in range(npos):
            l, r, le, re = runs(rng, closed, kind == "SRLh")
            L += l
            R += r
            LE += le
            RE += re
            ptr.append(len(L))
        child = build(rng, rest, len(L), shapes, closed)
        if kind == "SRL":
            return ct.SparseRunList(child, np.array(ptr), np.array(L, float), np.array(R, float), closed)
        return ct.SparseRunList(child, np.array(ptr), np.array(L, float), np.array(R, float), None,
                                np.array(LE, np.int8), np.array(RE, np.int8))
    if kind in ("UC", "UCr"):
        n = int(rng.integers(1, 4))
        if kind == "UC":
            return ct.UnitCells(build(rng, rest, npos * n, shapes, closed), n)
        rows = np.full(npos * n, -1)
        occ = np.flatnonzero(rng.random(npos * n) < 0.6)
        rows[occ] = rng.permutation(len(occ))
        if len(occ) > 1 and rng.random() < 0.3:
            rows[occ[0]] = rows[occ[1]]                    # a row shared by two cells
        nrows = int(rows.max()) + 1 if len(occ) else 0
        dtype = np.int32 if rng.random() < 0.5 else np.int64
        return ct.UnitCells(build(rng, rest, nrows, shapes, closed), n, rows.astype(dtype))
    if kind == "UG":                     # outermost only: cells of [-3, 5), pinpoints in each cell
        edges = np.array(sorted(set([-3.0, 5.0] + rng.integers(-2, 5, size=2).tolist())), float)
        nc = len(edges) - 1
        ptr, idx = [0], []
        for _ in range(npos * nc):
            c = (len(ptr) - 1) % nc
            lo, hi = edges[c], edges[c + 1]
            cand = [v for v in np.arange(lo, hi, 0.5) if lo <= v < hi]
            k = int(rng.integers(0, 3))
            idx += sorted(rng.choice(cand, size=min(k, len(cand)), replace=False).tolist())
            ptr.append(len(idx))
        # rest[0] is the SLr this grid bins (`random_spec`): built here, cell by cell
        child = ct.SparseList(build(rng, rest[1:], len(idx), shapes, closed), np.array(ptr), np.array(idx, float))
        return ct.UniformGrid(child, edges)
    raise ValueError(kind)


def _ptr_idx(tbl, npos, n):
    q = np.flatnonzero(tbl)
    return np.searchsorted(q, np.arange(npos + 1) * n), q % n


def pointlike_modes(desc: str, ndim: int) -> list:
    """Per mode of a tensor described by `desc` (`nest` or a constructor): does it store
    pinpoints (SparseList / SparsePoint of reals, points) rather than intervals?"""
    if desc.startswith("points"):
        return [True] * ndim
    if "/" in desc or desc.split("[")[0] in LEAVES:
        modes = [k for k in desc.split("[")[0].split("/") if k not in LEAVES and k != "UG"]
        return [k in ("SLr", "SPr") for k in modes]
    return [False] * ndim


def random_spec(rng, kinds):
    """A level spec for modes of the given kinds ('int'/'real', outermost first)."""
    spec = []
    for m, kind in enumerate(kinds):
        if kind == "int":
            spec.append(_pick(rng, INT_LEVELS))
        else:
            k = _pick(rng, REAL_LEVELS)
            if k == "UG":
                spec += ["UG", "SLr"] if m == 0 else ["SLr"]
            else:
                spec.append(k)
    spec.append(_pick(rng, LEAVES))
    return spec


def nest(rng, spec, shapes):
    closed = _pick(rng, CLOSED)
    return ct.Tensor(build(rng, spec, 1, list(shapes), closed)), f"{'/'.join(spec)}[{closed}]"


# ------------------------------------------------------------------------------ constructors
def intervals(rng):
    """ct.intervals: homogeneous or per-interval closedness, ±inf, pinpoints, fills, dtypes."""
    hetero = rng.random() < 0.4
    closed = _pick(rng, CLOSED)
    L, R, LE, RE = runs(rng, closed, hetero)
    cl = [{v: k for k, v in EPS_OF.items()}[(a, b)] for a, b in zip(LE, RE)]
    n = len(L)
    kind = _pick(rng, ["f", "f", "i", "b", "f32", "fill"])
    vals = np.array([_pick(rng, VALUES) for _ in range(n)], float)
    fill = 0.0
    if kind == "b":
        vals = None
    elif kind == "i":
        vals, fill = vals.round().astype(np.int64), 0
    elif kind == "f32":
        vals = vals.astype(np.float32)
    elif kind == "fill":
        fill = _pick(rng, [1.0, -1.0, 0.5])
    homog = not hetero and len(set(cl)) <= 1
    # a UniformGrid above the runs (`ct.intervals(..., grid=)`, each run listed in every cell it
    # meets), where the runs are finite (a grid refuses ±inf ends); the function is the same
    grid = int(rng.integers(1, 4)) if n and np.isfinite(L).all() and np.isfinite(R).all() \
        and rng.random() < 0.25 else None
    t = ct.intervals(L, R, values=vals, closed=(cl[0] if cl else closed) if homog else cl, fill=fill, grid=grid)
    return t, f"intervals[{'hetero' if not homog else closed},{kind},n={n}" + (f",grid={grid}]" if grid else "]")


def points(rng, d, n):
    c = rng.integers(-2, 4, size=(n, d)).astype(float)
    if n and rng.random() < 0.4:
        c[:, int(rng.integers(d))] += 0.5
    grid = None if rng.random() < 0.6 else int(rng.integers(1, 4))
    return ct.points(c, grid=grid), f"points[d={d},n={n},grid={grid}]"


def box(rng, d):
    closed = _pick(rng, CLOSED)
    lo = rng.integers(-2, 3, size=d).astype(float)
    hi = lo + rng.integers(0 if closed == "both" else 1, 4, size=d)
    if rng.random() < 0.3:
        lo[int(rng.integers(d))] = -math.inf
    if rng.random() < 0.3:
        hi[int(rng.integers(d))] = math.inf
    return ct.box(lo, hi, closed=closed), f"box[d={d},{closed}]"


def interval_set(rng, n_ids):
    closed = _pick(rng, CLOSED)
    s = rng.integers(-2, 4, size=n_ids).astype(float)
    e = s + rng.integers(0 if closed == "both" else 1, 4, size=n_ids)
    if n_ids and rng.random() < 0.3:
        s[0] = -math.inf
    return ct.interval_set(s, e, closed=closed), f"interval_set[{closed},n={n_ids}]"
