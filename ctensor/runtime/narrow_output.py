"""Outputs in the one-entry-per-fiber formats: `SparsePoint` (one pinpoint or id per fiber) and
`SparseInterval` (one interval per fiber).

A kernel writes such an output level as its many-entry sibling (`SparsePoint` as a `SparseList`,
`SparseInterval` as a `SparseRunList`, an integer one as a `SparseList` of ids whose fiber must
be one range of consecutive ids of one value: the same appending writer, buffers `ptr` and coordinates;
`VSparsePoint`/`VSparseInterval` have no writer of their own).  After the call, this module keeps
the coordinates and drops `ptr` once it has checked that every fiber holds exactly the one entry
the format stores: a fiber with two entries (two pinpoints, or two runs whose values differ or that
do not touch) raises `ctensor.FormatError` naming the output, the fiber (with its ids when every
level above is Dense) and its first two entries — never a dropped piece.  An empty fiber is stored
only where the format can say "nothing here" without changing the tensor:

* an integer `SparsePoint` over an `Element` leaf first drops written ids holding the fill (a
  Dense input's zeros), and an empty fiber stores id 0 with the fill value (on an integer axis
  every id is a point, stored or not, so the value function and every measure are unchanged);
* a real `SparsePoint`/`SparseInterval` cannot: a stored point or interval cuts the partition
  that `counting` sums over (continuous paper §4.2, Fig. 5), so an empty fiber raises FormatError
  (use `SparseList` / `SparseRunList`).

Closedness of a `SparseInterval` output: left at the default, the runs' one closedness (finite
endpoints; ±inf take the level's); given explicitly, exactly that one; otherwise FormatError
naming the first interval.  Source: Finch paper §3 (freeze), Finch.jl `sparse_point_levels.jl`,
`sparse_interval_levels.jl`; continuous paper §5.2.
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..formats.dense import Dense
from ..formats.element import Element, Pattern
from ..formats.level import CLOSED, DefaultClosed
from ..formats.sparse_interval import SparseInterval
from ..formats.sparse_point import SparsePoint


def fiber_name(out: str, p: int, shapes) -> str:
    """'C's fiber p', with the ids of the fiber (C[2, 1, :]) when every level above is Dense
    (`shapes`: their shapes, or None)."""
    if shapes:
        ids = np.unravel_index(p, tuple(shapes))
        return f"{out}'s fiber {p} ({out}[{', '.join(str(int(i)) for i in ids)}, :])"
    return f"{out}'s fiber {p}"


def _one_per_fiber(ptr, out, fmt, shapes, describe):
    """Raise FormatError at the first fiber of `ptr` holding more than one entry."""
    many = np.flatnonzero(np.diff(ptr) > 1)
    if many.size:
        p = int(many[0])
        q, n = int(ptr[p]), int(ptr[p + 1] - ptr[p])
        more = ", ..." if n > 2 else ""
        raise FormatError(f"out= {fmt.format_str()}: {fiber_name(out, p, shapes)} holds {n} "
                          f"entries ({describe(q)}, {describe(q + 1)}{more}), but {type(fmt).__name__} stores one "
                          f"per fiber; use {'SparseList' if isinstance(fmt, SparsePoint) else 'SparseRunList'}")


def _empty_fibers(ptr, out, fmt, shapes):
    """Raise FormatError at the first empty fiber (a real axis cannot store 'nothing here')."""
    empty = np.flatnonzero(np.diff(ptr) == 0)
    if empty.size:
        p = int(empty[0])
        alt = "SparseList" if isinstance(fmt, SparsePoint) else "SparseRunList"
        raise FormatError(f"out= {fmt.format_str()}: {fiber_name(out, p, shapes)} is empty (the fill everywhere), "
                          f"but {type(fmt).__name__} over a real axis stores exactly one entry per fiber and a "
                          f"stored one would cut the partition a counting measure sums over; use {alt}")


def to_sparse_point(fmt: SparsePoint, written, out: str, shapes=None) -> SparsePoint:
    """The SparsePoint output from the SparseList `written` by the kernel (same buffers)."""
    ptr, idx, child = written.ptr, written.idx, written.child
    if fmt.coord == "int":
        ptr, idx, child = _drop_fill_ids(ptr, idx, child)
    _one_per_fiber(ptr, out, fmt, shapes, lambda q: repr(idx[q].item()))
    counts = np.diff(ptr)
    if (counts == 0).any():
        if fmt.coord == "real" or not isinstance(child, Element) or fmt.shape == 0:
            _empty_fibers(ptr, out, fmt, shapes)
        # integer axis: an empty fiber stores id 0 holding the fill (the same tensor, see module doc)
        has = counts == 1
        full_idx = np.zeros(len(counts), np.int64)
        full_idx[has] = idx[ptr[:-1][has]]
        val = np.full(len(counts), child.fill, child.val.dtype)
        val[has] = child.val[ptr[:-1][has]]
        idx, child = full_idx, child.frozen(val)
    return SparsePoint(child, idx=idx, shape=fmt.shape)


def _drop_fill_ids(ptr, idx, child):
    """A written id holding the fill (a Dense input's zero) is no entry on an integer axis: the
    (ptr, idx, child) without them."""
    if not isinstance(child, Element) or not (child.val == child.fill).any():
        return ptr, idx, child
    keep = child.val != child.fill
    fib = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))[keep]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(fib, minlength=len(ptr) - 1))]).astype(np.int64)
    return ptr, idx[keep], child.frozen(child.val[keep])


def to_int_interval(fmt: SparseInterval, written, out: str, shapes=None) -> SparseInterval:
    """The integer SparseInterval output from the id SparseList `written` by the kernel: each
    fiber's ids must be consecutive and hold one value (its child slot holds one value for the
    whole range); an empty fiber is the empty range, holding the fill."""
    ptr, idx, child = _drop_fill_ids(written.ptr, written.idx, written.child)
    if not isinstance(child, (Element, Pattern)):
        raise FormatError(f"out= {fmt.format_str()}: an integer SparseInterval output needs an Element or "
                          f"Pattern child (one value per range), got {child.format_str()}")
    npos = len(ptr) - 1
    fib = np.repeat(np.arange(npos), np.diff(ptr))
    same = fib[1:] == fib[:-1]
    gap = same & (idx[1:] != idx[:-1] + 1)
    if isinstance(child, Element):
        gap |= same & (child.val[1:] != child.val[:-1])
    bad = np.flatnonzero(gap)
    if bad.size:
        k = int(bad[0])
        what = "ids" if idx[k + 1] != idx[k] + 1 else "values"
        vals = "" if isinstance(child, Pattern) else f" (values {child.val[k].item()!r}, {child.val[k + 1].item()!r})"
        raise FormatError(f"out= {fmt.format_str()}: {fiber_name(out, int(fib[k]), shapes)} holds ids "
                          f"{int(idx[k])} and {int(idx[k + 1])}{vals}, but an integer SparseInterval stores one "
                          f"range of consecutive ids of one value per fiber ({what} differ); use SparseList")
    counts = np.diff(ptr)
    has = counts > 0
    lo = np.zeros(npos, np.int64)
    lo[has] = idx[ptr[:-1][has]]
    hi = lo - 1                                     # inclusive; the empty range where nothing is stored
    hi[has] = idx[ptr[1:][has] - 1]
    le, re = CLOSED[fmt.closed]
    if isinstance(child, Element):
        val = np.full(npos, child.fill, child.val.dtype)
        val[has] = child.val[ptr[:-1][has]]
        child = child.frozen(val)
    return SparseInterval(child, left=lo - le, right=hi - re, closed=fmt.closed, shape=fmt.shape)


def to_sparse_interval(fmt: SparseInterval, written, out: str, shapes=None) -> SparseInterval:
    """The SparseInterval output from the heterogeneous SparseRunList `written` by the kernel."""
    ptr = written.ptr
    _one_per_fiber(ptr, out, fmt, shapes, lambda q: _run_text(written, q))
    _empty_fibers(ptr, out, fmt, shapes)
    le, re = written.left_eps, written.right_eps
    fl, fr = np.isfinite(written.left), np.isfinite(written.right)
    closed = fmt.closed
    if isinstance(closed, DefaultClosed):
        # the one closedness of the finite endpoints (a side with none takes 'left''s)
        a = int(le[fl][0]) if fl.any() else 0
        c = int(re[fr][0]) if fr.any() else (-1 if a == 0 else 0)
        closed = next((n for n, ends in CLOSED.items() if ends == (a, c)), "left")
    a, c = CLOSED[closed]
    bad = np.flatnonzero((fl & (le != a)) | (fr & (re != c)))
    if bad.size:
        k = int(bad[0])
        p = int(np.searchsorted(ptr, k, side="right") - 1)
        how = "its runs have several closednesses" if isinstance(fmt.closed, DefaultClosed) else \
            f"closed={closed!r} was asked for"
        raise FormatError(f"out= {fmt.format_str()}: {fiber_name(out, p, shapes)} holds {_run_text(written, k)}, "
                          f"but a SparseInterval has one closedness and {how}; use SparseRunList(closed=None)")
    return SparseInterval(written.child, left=written.left, right=written.right, closed=closed)


def _run_text(lvl, k) -> str:
    if k >= len(lvl.left):
        return "..."
    lb, rb = "[(" [int(lvl.left_eps[k] > 0)], "])"[int(lvl.right_eps[k] < 0)]
    return f"{lb}{lvl.left[k].item()!r}, {lvl.right[k].item()!r}{rb}"


def dense_shapes(fmt, depth, shape_of):
    """The shapes of the levels above `depth` when they are all Dense (for `fiber_name`), else None."""
    above = fmt.levels()[:depth]
    if all(isinstance(lv, Dense) for lv in above):
        return [shape_of(d) for d in range(depth)]
    return None
