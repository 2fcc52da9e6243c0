"""Merging a revisited sparse output level: the freeze of an output written in several passes.

A kernel writes a sparse output fiber (SparseRunList runs, SparseList pinpoints or ids) in one pass
in increasing coordinate order.  A loop outside the output's last index that is not an output index
(a sum over ids, `C[x] = S[i, x] * d(i; counting)`, or over shifted copies, `C[x] = M[y] * A[x - y]
* d(y; counting)`) revisits the fiber, once per iteration, and the passes overlap.  Such a kernel is
compiled without the order check (`Kernel`, `merge_output=True`): each pass appends its entries
after the previous pass's, every fiber's entries stay contiguous (the loops outside the revisiting
one are the output's own indices), and this module combines them with the reduction ⊕:

* runs: the endpoints of every fiber's runs cut the axis into elementary segments (Limit order, so
  closedness is exact); each run ⊕-adds its value to the segments it covers through a segment tree
  (O(n log n) for n runs, vectorised per tree level with `ufunc.at`), the segments no run covers
  are dropped (the fill), and touching segments of equal value are coalesced, as the one-pass
  writer does;
* pinpoints / ids: entries at one coordinate are ⊕-reduced (`ufunc.reduceat` after a sort).

⊕ is a built-in reduction (+, or, and, min, max) as a numpy ufunc, or a user one (`ct.Semiring`)
evaluated with numpy (`runtime.reduce_np`).  This is the freeze
of a level whose writes arrive out of order (sorted and combined once, when the output is frozen),
applied to continuous runs; the einsum's values themselves are all computed by the kernel.  Exact:
integer sums by a running total (exact modulo 2**64 in any order), every other ⊕ per segment over
the runs covering it (a float running total would lose 3 under 1e20 + 3 - 1e20).
"""
from __future__ import annotations

import numpy as np

from ..formats.dense import Dense
from ..formats.element import Element, Pattern
from ..errors import FormatError
from ..formats.level import CLOSED, DefaultClosed
from ..formats.sparse_byte_map import SparseByteMap
from ..formats.sparse_interval import SparseInterval
from ..formats.sparse_list import SparseList
from ..formats.sparse_point import SparsePoint
from ..formats.sparse_run_list import SparseRunList

from .reduce_np import UFUNCS, reducer  # noqa: F401 (UFUNCS re-exported)


def _ranks(keys) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, rank, first): a lexicographic sort of the rows of the key columns (the last column
    primary, as `np.lexsort`), each row's rank among the distinct rows, and for each rank the
    position in `order` of its first row."""
    keys = [k for k in keys if len(k) and (k != k[0]).any()] or keys[-1:]   # constant columns order nothing
    order = np.argsort(keys[0], kind="stable") if len(keys) == 1 else np.lexsort(keys)
    new = np.ones(len(order), bool)
    if len(order) > 1:
        same = np.ones(len(order) - 1, bool)
        for k in keys:
            s = k[order]
            same &= s[1:] == s[:-1]
        new[1:] = ~same
    rank = np.empty(len(order), np.int64)
    rank[order] = np.cumsum(new) - 1
    return order, rank, np.flatnonzero(new)


def merge_runs(ptr, left, left_eps, right, right_eps, val, op):
    """Merge the runs of each fiber (`ptr`, the four endpoint arrays; `val` the leaf values, None for
    a Pattern leaf) into disjoint sorted runs whose value is the ⊕ of the runs covering them.
    Returns (ptr, left, left_eps, right, right_eps, val) with int8 ε arrays (left ε in {0, 1},
    right ε in {-1, 0})."""
    npos, n = len(ptr) - 1, len(left)
    if n == 0:
        return ptr, left, left_eps, right, right_eps, val
    # boundary keys (fiber, value, ε): a run [L, R] covers the Limits in [start key, end key), with
    # start key = L and end key = the successor of R, (R.value, R.ε + 1)
    swept = _swept(left, left_eps, right, right_eps) if npos == 1 else None
    if swept is not None and val is None:
        return _sweep_union(left, right, *swept[:2])
    if swept is not None and not swept[2]:
        swept = None                                   # ends out of order: the keys are sorted
    if swept is not None and op == "+" and val.dtype.kind in "iub":
        return _sweep_merge(left, right, *swept[:2], val)
    if swept is not None:
        uv, ue, a, z = _sweep_keys(left, right, *swept[:2])
        uf = np.zeros(len(uv), np.int64)
    else:
        fib = np.repeat(np.arange(npos, dtype=np.int64), np.diff(ptr))
        kv = np.concatenate([left, right])
        ke = np.concatenate([left_eps, right_eps + np.int8(1)]).astype(np.int8)
        kf = np.concatenate([fib, fib])
        order, rank, first = _ranks([ke, kv, kf])
        first = order[first]                           # a row holding each distinct key, by rank
        uv, ue, uf = kv[first], ke[first], kf[first]
        a, z = rank[:n], rank[n:]                      # run k covers segments a[k] .. z[k]-1
    nseg = len(uv) - 1                                 # segment j = [key j, key j+1)
    # how many runs cover each segment: +1 where a run starts, -1 after it ends
    starts, ends = np.bincount(a, minlength=nseg + 1), np.bincount(z, minlength=nseg + 1)
    covered = np.cumsum(starts - ends)[:nseg] > 0     # nseg >= 1: a run's end key follows its start key
    # ±inf are not points of the real line: a pass whose run is closed there would leave a
    # zero-length segment [-inf, -inf] where the passes over the open line (a term without that
    # run, a literal) do not reach
    covered &= ~(np.isinf(uv[:-1]) & (uv[1:] == uv[:-1]))
    if val is None:
        seg_val = None
    elif op == "+" and val.dtype.kind in "iub":
        # integers: a running total of +v at a run's first segment, -v after its last, is exact
        # (int64 addition is associative, even modulo 2**64); floats need the tree (no cancellation)
        delta = np.zeros(nseg + 1, np.int64)
        np.add.at(delta, a, val.astype(np.int64))
        np.subtract.at(delta, z, val.astype(np.int64))
        seg_val = np.cumsum(delta)[:nseg].astype(val.dtype)
    else:
        seg_val = _range_reduce(a, z, val, nseg, op)
    keep = np.flatnonzero(covered)
    # coalesce: a kept segment continues the previous kept one when it is the next segment of the same
    # fiber with an equal value (touching, by construction of the segments)
    cont = np.zeros(len(keep), bool)
    if len(keep) > 1:
        cont[1:] = (keep[1:] == keep[:-1] + 1) & (uf[keep[1:]] == uf[keep[:-1]])
        if seg_val is not None:
            cont[1:] &= seg_val[keep[1:]] == seg_val[keep[:-1]]
    heads = keep[~cont]
    tails = np.append(keep[np.flatnonzero(~cont)[1:] - 1], keep[-1:]) if len(keep) else keep
    out_fib = uf[heads]
    new_ptr = np.concatenate([[0], np.cumsum(np.bincount(out_fib, minlength=npos))]).astype(np.int64)
    return (new_ptr, uv[heads].copy(), ue[heads].astype(np.int8), uv[tails + 1].copy(),
            (ue[tails + 1] - 1).astype(np.int8), None if seg_val is None else seg_val[heads].copy())


def _swept(left, left_eps, right, right_eps):
    """(left ε, right ε, ends in order) when one fiber's runs are the passes of a sweep: starts in
    order, finite, one closedness per side (a union or depth track over intervals in start order);
    None otherwise."""
    a0, c0 = left_eps[0], right_eps[0]
    # starts in order and finite from the first; the ends finite when their maximum is
    if not np.isfinite(left[0]) or (left[1:] < left[:-1]).any() or not np.isfinite(right.max()) \
            or (left_eps != a0).any() or (right_eps != c0).any():
        return None
    return a0, c0, not (right[1:] < right[:-1]).any()


def _sweep_union(left, right, a0, c0):
    """`merge_runs` of a sweep (`_swept`) for a Pattern leaf, in one pass without sorting: with
    the starts in order, the union breaks after run k exactly where the next start key lies beyond
    the reach (the greatest end key so far, `maximum.accumulate`): a greater value, or the same
    value when the start's ε is above the end key's (`(a, v)` then `(v, b)`: v is not covered).
    Heads and tails are taken by boolean masks (a third of the time of flatnonzero + np.r_ +
    integer takes on 100k runs)."""
    n = len(left)
    reach = np.maximum.accumulate(right)
    tail = np.empty(n, bool)                 # run k ends a maximal run of the union
    np.greater(left[1:], reach[:-1], out=tail[:-1])
    if a0 > c0 + 1:
        tail[:-1] |= left[1:] == reach[:-1]
    tail[-1] = True
    head = np.empty(n, bool)
    head[0] = True
    head[1:] = tail[:-1]
    starts, ends = left[head], reach[tail]
    m = len(starts)
    return (np.array([0, m], np.int64), starts, np.full(m, a0, np.int8), ends,
            np.full(m, c0, np.int8), None)


def _sweep_events(left, right, a0, c0):
    """The 2n boundary keys of a sweep's runs in key order by merging the two sorted lists: a stable
    sort of the two halves (numpy's timsort finds the two runs and merges them in one pass).  On
    equal values the half listed first comes first, so an end key (R, c0 + 1) follows the start
    keys (L, a0) of its value unless a0 is above its ε.  Returns (order, values in key order, is a
    start, first event of a distinct key)."""
    n = len(left)
    ends_first = a0 > c0 + 1
    kv = np.concatenate([right, left] if ends_first else [left, right])
    order = np.argsort(kv, kind="stable")
    mv = kv[order]
    is_start = order >= n if ends_first else order < n
    new = np.empty(2 * n, bool)
    new[0] = True
    np.not_equal(mv[1:], mv[:-1], out=new[1:])
    if a0 != c0 + 1:
        new[1:] |= is_start[1:] != is_start[:-1]
    return order, mv, is_start, new


def _sweep_keys(left, right, a0, c0):
    """`merge_runs`' distinct keys (values, ε) and each run's first and past-last key rank, for a
    sweep (`_swept`), without sorting 2n keys."""
    n = len(left)
    order, mv, is_start, new = _sweep_events(left, right, a0, c0)
    rank = np.empty(2 * n, np.int64)
    rank[order] = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    ue = np.where(is_start[first], a0, np.int8(c0 + 1)).astype(np.int8)
    lo, hi = (n, 0) if a0 > c0 + 1 else (0, n)          # where the starts' and ends' ranks are
    return mv[first], ue, rank[lo:lo + n], rank[hi:hi + n]


def _sweep_merge(left, right, a0, c0, val):
    """`merge_runs` of a sweep (`_swept`) for a Pattern leaf (val None) or integer + in one pass
    over the merged keys: the running count (and sum) after each key gives its segment, covered
    segments of equal value coalesce.  Same answer as the general merge (tests check it)."""
    n = len(left)
    order, mv, is_start, new = _sweep_events(left, right, a0, c0)
    last = np.flatnonzero(np.append(new[1:], True))     # last event of each distinct key
    sign = np.where(is_start, 1, -1)
    count = np.cumsum(sign)[last]                       # runs covering the segment after each key
    eps = np.where(is_start[last], a0, np.int8(c0 + 1)).astype(np.int8)
    cov = count > 0
    same = np.empty(len(last), bool)                    # covered segment j continues segment j - 1
    same[0] = False
    same[1:] = cov[:-1] & cov[1:]
    if val is not None:
        w = val.astype(np.int64)[order % n]
        total = np.cumsum(np.where(is_start, w, -w))[last]
        same[1:] &= total[1:] == total[:-1]
    heads = np.flatnonzero(cov & ~same)
    tails = np.flatnonzero(cov & ~np.append(same[1:], False)) + 1   # the key after a run's last segment
    out_val = None if val is None else total[heads].astype(val.dtype)
    return (np.array([0, len(heads)], np.int64), mv[last[heads]], eps[heads], mv[last[tails]],
            (eps[tails] - 1).astype(np.int8), out_val)


def _range_reduce(a, z, val, nseg, op):
    """seg[j] = ⊕ of val[k] over the k with a[k] <= j < z[k], by a segment tree: each range is ⊕-added
    into its O(log nseg) canonical nodes (bottom-up, vectorised over the ranges), then every node is
    pushed down into its children; ⊕ is associative and commutative."""
    ufunc = reducer(op)
    size = 1
    while size < max(nseg, 1):
        size *= 2
    tree = np.full(2 * size, _identity(op, val.dtype), val.dtype)
    lo, hi, v = a + size, z + size, val
    while len(lo):
        live = lo < hi
        lo, hi, v = lo[live], hi[live], v[live]
        odd = (lo & 1) == 1
        ufunc.at(tree, lo[odd], v[odd])
        lo = lo + odd
        odd = (hi & 1) == 1
        hi = hi - odd
        ufunc.at(tree, hi[odd], v[odd])
        lo, hi = lo >> 1, hi >> 1
    node = 1
    while node < size:                      # level by level, parents before children
        parents = np.arange(node, 2 * node)
        tree[2 * parents] = ufunc(tree[2 * parents], tree[parents])
        tree[2 * parents + 1] = ufunc(tree[2 * parents + 1], tree[parents])
        node *= 2
    return tree[size:size + nseg]


def merge_points(ptr, idx, val, op):
    """Merge each fiber's entries (`idx` coordinates, int or float; `val` leaf values or None for a
    Pattern leaf) into sorted distinct coordinates, entries at one coordinate ⊕-reduced.
    Returns (ptr, idx, val)."""
    npos = len(ptr) - 1
    fib = np.repeat(np.arange(npos, dtype=np.int64), np.diff(ptr))
    order, _, first = _ranks([idx, fib])                 # first: starts of equal-key groups in order
    if len(order) == 0:
        return ptr, idx, val
    new_idx = idx[order][first]
    new_fib = fib[order][first]
    new_ptr = np.concatenate([[0], np.cumsum(np.bincount(new_fib, minlength=npos))]).astype(np.int64)
    new_val = None if val is None else reducer(op).reduceat(val[order], first).astype(val.dtype, copy=False)
    return new_ptr, new_idx, new_val


def _identity(op, dtype):
    """The identity of ⊕ in `dtype` (min over int64 starts from its largest value, over bool from True)."""
    if not isinstance(op, str):
        return reducer(op).identity(dtype)
    if op not in ("min", "max"):
        return UFUNCS[op].identity
    if dtype == np.bool_:
        return op == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if op == "min" else info.min
    return np.inf if op == "min" else -np.inf


def unmergeable(out_fmt, plan) -> str | None:
    """Why a revisited output of this format cannot be merged (None when it can): the revisited
    level must be the last, a SparseRunList or SparseList under Dense or SparseByteMap levels only
    (random access: a fiber's passes append to its own child slots), over an
    Element (whose fill `output_format.check_output_format` made ⊕'s identity) or a Pattern; and
    every loop that revisits it must run inside the loops of the other output indices, so that
    each fiber's passes are contiguous in its buffers."""
    if out_fmt is None:          # (every reduction of lower.ops.SEMIRINGS is in UFUNCS)
        return "a scalar output has no coordinates to merge"
    modes, leaf = out_fmt.modes(), out_fmt.levels()[-1]
    if not all(isinstance(lv, (Dense, SparseByteMap)) for lv in modes[:-1]) \
            or not isinstance(modes[-1], (SparseList, SparseRunList, SparsePoint, SparseInterval)):
        return "only the last output level may be sparse"
    if not isinstance(leaf, (Element, Pattern)) or modes[-1].child is not leaf:
        return "the sparse output level must hold the leaf"
    out_idxs = plan.einsum.out_idxs
    order = list(plan.order)
    last = order.index(out_idxs[-1])
    outer_out = [order.index(i) for i in out_idxs[:-1]]
    revisiting = [k for k in range(last) if order[k] not in out_idxs]
    if revisiting and outer_out and max(outer_out) > min(revisiting):
        return (f"the loop over {order[min(revisiting)]!r} runs outside the output index "
                f"{order[max(outer_out)]!r}; pass order= with the output indices first")
    return None


def revisited(out_fmt, plan) -> bool:
    """Does a loop outside the output's last index that is not an output index revisit its last
    level (so that a kernel compiled without `merge_output` may stop with STATUS_OUTPUT_ORDER),
    with an output the runtime can merge (`unmergeable`)?"""
    if out_fmt is None or unmergeable(out_fmt, plan) is not None:
        return False
    out_idxs, order = plan.einsum.out_idxs, list(plan.order)
    return any(i not in out_idxs for i in order[:order.index(out_idxs[-1])])


def merge_level(lvl, op):
    """The merged copy of a revisited output level (see `unmergeable`), built by the runtime."""
    leaf = lvl.child
    val = leaf.val if isinstance(leaf, Element) else None
    rebuilt = (lambda v: Element(leaf.fill, val=v, dtype=leaf.val.dtype)) if val is not None else (lambda v: leaf)
    if isinstance(lvl, SparseList):
        ptr, idx, v = merge_points(lvl.ptr, lvl.idx, val, op)
        return SparseList(rebuilt(v), ptr, idx, shape=lvl.shape, real=lvl.coord == "real")
    ptr, left, le, right, re, v = merge_runs(lvl.ptr, lvl.left, lvl.left_eps, lvl.right, lvl.right_eps, val, op)
    return SparseRunList(rebuilt(v), ptr, left, right, None, le, re)


def store_closed(lvl: SparseRunList, closed) -> SparseRunList:
    """A heterogeneous output run list stored in the closedness its out= level asks for: left at the
    default (`DefaultClosed`), homogeneous when every finite endpoint has the same closedness; None,
    as is; 'left' | 'right' | 'both' | 'neither', homogeneous, or FormatError naming the first
    interval with other finite endpoints.  ±inf are not points of the real line, so the ε of an
    infinite endpoint is free: it takes the level's closedness."""
    le, re = lvl.left_eps, lvl.right_eps
    if closed is None:
        return lvl
    # one ε a side over all endpoints (the usual case: two int8 reductions a side) settles it
    # without masking out the infinite endpoints (2M runs: ~0.3 ms against ~7)
    a, c = _one_value(le), _one_value(re)
    if isinstance(closed, DefaultClosed):
        if a is False or c is False:
            fl, fr = np.isfinite(lvl.left), np.isfinite(lvl.right)
            a, c = _one_value(le[fl]), _one_value(re[fr])
            if a is False or c is False:
                return lvl
        else:           # every finite endpoint has the one ε, if there is one
            a, c = (a if _any_finite(lvl.left) else None), (c if _any_finite(lvl.right) else None)
        a = 0 if a is None else a               # no finite endpoint on that side: [ and ) as default
        c = (-1 if a == 0 else 0) if c is None else c
        closed = next((n for n, ends in CLOSED.items() if ends == (a, c)), None)
        if closed is None:
            return lvl
    elif a is False or c is False or (a, c) != CLOSED[closed]:       # (False == 0 in Python)
        a, c = CLOSED[closed]
        fl, fr = np.isfinite(lvl.left), np.isfinite(lvl.right)
        bad = np.flatnonzero((fl & (le != a)) | (fr & (re != c)))
        if bad.size:
            k = int(bad[0])
            text = f"{'[('[int(le[k] > 0)]}{float(lvl.left[k])!r}, {float(lvl.right[k])!r}{'])'[int(re[k] < 0)]}"
            raise FormatError(f"out= SparseRunList(closed={closed!r}) cannot hold the result: its interval {k} "
                              f"is {text}; use closed=None (Limit endpoints) or leave closed unset")
    return SparseRunList.frozen(lvl.child, lvl.ptr, lvl.left, lvl.right, closed)


def _any_finite(x: np.ndarray) -> bool:
    """Is some value of x finite?  (Its first two, which usually are, before the whole array.)"""
    return bool(np.isfinite(x[:2]).any()) or bool(np.isfinite(x).any())


def _one_value(eps: np.ndarray):
    """The one value of an int8 array (an int), None when it is empty, False when it has several."""
    if not eps.size:
        return None
    lo, hi = int(eps.min()), int(eps.max())
    return lo if lo == hi else False
