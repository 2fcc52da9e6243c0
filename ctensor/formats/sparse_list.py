"""`SparseList(child)`: sorted coordinates per fiber — integer ids or real pinpoints.

Source: Finch paper §3 (SparseList), continuous paper §5.2 (Pinpoint level), Finch.jl
`sparse_list_levels.jl`.  Buffers: `ptr` (npos+1, int64) and `idx` (sorted, strictly increasing
within a fiber; int64 for integer coordinates, float64 for real pinpoints).

Read looplets: Thunk → Walk(Stepper, Sequence[Phase(stop = last idx, Stepper(chunk = Spike(fill,
child))), Phase(Run(fill))]); seek gallops over `idx`; on a whole grid cell the Walk visits the
positions alone.  Write looplets: Lookup of an appending writer that
commits a coordinate only when its child became dirty (Finch digest §1.4); on a continuous index the
Lookup is only valid on pinpoints, which the lowering checks.
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from ..errors import FormatError
from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F32, F64, I64, PtrType
from ..limits import Limit
from ..looplets.nodes import (FillLeaf, Fiber, Lookup, PhaseSpec, Run, Sequence, Spike,
                              Stepper, Thunk, Walk)
from .affine import INT_BOTTOM, see
from .append import append_entry, fiber_writer
from .level import Level, as_array, as_shape, check_coords, check_ptr, check_sorted_fibers, coord_suffix, real_coords


class SparseList(Level):
    """Sorted-coordinate level (pinpoints on a real axis, or sparse integer ids).

    Parameters
    ----------
    child : Level
    ptr : int64 array (npos+1), optional — fiber p owns entries ptr[p]..ptr[p+1]-1
    idx : array, optional — coordinates; float64 for a real axis (a float32 array is kept without a
        copy and read widened to float64), integers for an integer axis
    shape : int, optional — for an integer axis, coordinates lie in [0, shape-1]
    real : bool, optional — force the axis kind (default: real unless `shape` is given or idx is
        an integer array)
    """

    pinpoints = True

    def __init__(self, child: Level, ptr=None, idx=None, shape=None, real=None):
        self.child = child
        self.real_given = real is not None      # `real=` chosen by the caller, not defaulted
        if real is None:
            real = shape is None and (idx is None or np.asarray(idx).dtype.kind == "f")
        self.coord = "real" if real else "int"
        self.shape = as_shape(shape, "SparseList")
        self.ptr = None if ptr is None else as_array(ptr, "ptr", np.int64)
        self.idx = real_coords(idx, "idx") if real else (None if idx is None else as_array(idx, "idx", np.int64))

    def format_key(self):
        return ("SparseList", self.coord, self.child.format_key()) + coord_suffix(self.idx)

    def format_str(self):
        return f"SparseList({self.child.format_str()})"

    def empty(self):
        lvl = SparseList(self.child.empty(), shape=self.shape, real=self.coord == "real")
        lvl.real_given = self.real_given
        return lvl

    def has_data(self):
        return self.ptr is not None and self.child.has_data()

    def child_count(self, npos):
        return int(self.ptr[npos]) if npos else 0

    def arrays(self):
        extra = [self.shape if self.shape is not None else 0] if self.coord == "int" else []
        return extra + [self.ptr, self.idx] + self.child.arrays()

    def validate(self, npos, name):
        if self.ptr is None or self.idx is None:
            raise FormatError(f"{name}: SparseList has no data")
        check_ptr(self.ptr, npos, len(self.idx), name)
        check_coords(self.idx, self.coord, self.shape, name)
        check_sorted_fibers(self.idx, self.ptr, name)
        self.child.validate(self.child_count(npos), name)

    def eval(self, pos, coords):
        x = coords[0]
        lo, hi = int(self.ptr[pos]), int(self.ptr[pos + 1])
        if isinstance(x, Limit):
            if x.eps != 0:
                return self.fill
            x = x.value
        k = bisect.bisect_left(self.idx, x, lo, hi)
        if k < hi and self.idx[k] == x:
            return self.child.eval(k, coords[1:])
        return self.fill

    def pieces(self, pos):
        for k in range(int(self.ptr[pos]), int(self.ptr[pos + 1])):
            c = self.idx[k].item()
            c = (Limit(c), Limit(c)) if self.coord == "real" else c
            for rest, v in self.child.pieces(k):
                yield (c,) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        return VSparseList(ctx, self, name, mode)


class VSparseList:
    is_leaf = False

    def __init__(self, ctx, lvl: SparseList, name, mode):
        self.lvl, self.name, self.mode, self.fill = lvl, name, mode, lvl.fill
        self.coord = lvl.coord
        self.cty = F64 if lvl.coord == "real" else I64
        if lvl.coord == "int":
            self.shape = ir.Read(ctx.param(name + "_shape", I64, ("shape", lvl, "shape")))
        if mode == "read":
            self.ptr = ir.Read(ctx.param(name + "_ptr", PtrType(I64), ("read", lvl, "ptr")))
            single = lvl.idx is not None and lvl.idx.dtype == np.float32
            self.idx = ir.Read(ctx.param(name + "_idx", PtrType(F32 if single else self.cty), ("read", lvl, "idx")))
        else:
            from ..lower.context import GrowBuffer
            self.ptrbuf = GrowBuffer(ctx, name + "_ptr", I64, lvl, "ptr")
            self.idxbuf = GrowBuffer(ctx, name + "_idx", self.cty, lvl, "idx")
        self.child = lvl.child.virtualize(ctx, name + "c", mode)

    def extent(self):
        if self.coord == "real":
            return Extent.real()
        return Extent.integer(b.i64(0), b.sub(self.shape, b.i64(1)))

    view = None          # a CoordView when read through an affine index (`formats.affine`)

    def _lim(self, c):   # a stored coordinate in the loop's frame; validated: pinpoints are finite
        return see(self, SymLimit(c, b.i8(0), True), True)

    def _bottom(self):
        """A coordinate before every coordinate of the loop's frame: an empty fiber's last one."""
        if self.coord == "real":
            return -math.inf
        return -1 if self.view is None else INT_BOTTOM

    # ---------------------------------------------------------------- positions
    def _finger(self, ctx, role):
        """A search finger per role (seek, lo, hi), kept across unfurls of this level."""
        fingers = self.__dict__.setdefault("_fingers", {})
        if role not in fingers:
            fingers[role] = ctx.top_mut(I64, b.i64(0), f"{self.name}_finger_{role}")
        return fingers[role]

    def _countable(self):
        return self.mode == "read" and self.fill in (0, False) and getattr(self.child, "leaf_count", None) is not None

    @property
    def leaf_count(self):
        """f(ctx, pos): number of leaves stored below position `pos` of this level (every fiber
        before it), or None when the leaves are not all true."""
        if not self._countable():
            return None
        return lambda ctx, pos: self.child.leaf_count(ctx, ctx.let(b.load(self.ptr, pos), self.name + "_at"))

    def union_readable(self) -> bool:
        return self.mode == "read" and self.coord == "real" and getattr(self.child, "is_leaf", False)

    def unfurl_union(self, ctx, pos, reverse=False, present=None):
        """A fiber of real pinpoints as alternating gap and point chunks of runtime values
        (`formats.run_union`), or None (integer coordinates, a child that is not a leaf).
        `reverse`: seen through a view with a < 0, walked from the last point.  `present`: see
        `looplets.nodes.Fiber`."""
        if not self.union_readable():
            return None
        from .run_union import unfurl_union
        at = lambda k: self._lim(b.load_wide(self.idx, k))
        return unfurl_union(self, ctx, pos, at, at, reverse=reverse, present=present)

    def child_pos(self, ctx, pos, q):
        """The child slot of entry q of fiber pos (SparseByteMap: pos*shape + idx[q])."""
        return q

    # ---------------------------------------------------------------- read
    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        if mode != "read":
            return self._unfurl_write(ctx, pos, ext, dirty)
        st = {}
        n = self.name

        def preamble(ctx):
            st["q"] = ctx.mut(I64, b.load(self.ptr, pos), n + "_q")
            st["q_stop"] = ctx.let(b.load(self.ptr, b.add(pos, b.i64(1))), n + "_q_stop")
            last = ctx.mut(self.cty, b.const(self._bottom(), self.cty), n + "_last")
            ctx.if_(b.lt(ir.Read(st["q"]), st["q_stop"]),
                    lambda: ctx.assign(last, self._lim(b.load_wide(self.idx, b.sub(st["q_stop"], b.i64(1)))).v))
            # an empty fiber's last coordinate (-inf, or -1 for integers) is before every start
            st["last"] = SymLimit(ctx.let(ir.Read(last), n + "_last"), b.i8(0))

        def seek(ctx, e):
            q = st["q"]
            if self.coord == "int" and self.view is None and b.is_const(e.start.v) and e.start.v.value <= 0:
                return          # integer coordinates are validated >= 0: already there

            def search():
                key = lambda k: lim_le(e.start, self._lim(b.load_wide(self.idx, k)))
                ctx.assign(q, ctx.search_near(key, ir.Read(q), st["q_stop"], self._finger(ctx, "seek"), n + "_s"))
            inrange = b.lt(ir.Read(q), st["q_stop"])
            ctx.if_(inrange, lambda: ctx.if_(b.lnot(lim_le(e.start, self._lim(b.load_wide(self.idx, ir.Read(q))))),
                                             search))

        def span(ctx, e):
            """Positions [lo, hi) of the coordinates in e: two finger searches from the cursor."""
            at = lambda k: self._lim(b.load_wide(self.idx, k))
            q0 = ctx.let(ir.Read(st["q"]), n + "_q0")
            lo = ctx.search_near(lambda k: lim_le(e.start, at(k)), q0, st["q_stop"], self._finger(ctx, "lo"), n + "_lo")
            hi = ctx.search_near(lambda k: b.lnot(lim_le(at(k), e.stop)), lo, st["q_stop"],
                                 self._finger(ctx, "hi"), n + "_hi")
            return lo, hi

        def count(ctx, e):
            """Leaves stored at coordinates in e: a position difference over `span`."""
            lo, hi = span(ctx, e)
            return ctx.let(b.sub(self.child.leaf_count(ctx, hi), self.child.leaf_count(ctx, lo)), n + "_count")

        def extremum(ctx, e, which):
            """Is a leaf stored at a coordinate in e, and the first/last such coordinate: `span`, then
            (for a child whose fibers may be empty) a skip over empty subtrees."""
            lo, hi = span(ctx, e)
            k = ctx.mut(I64, lo if which == "first" else b.sub(hi, b.i64(1)), n + "_ext")
            if self.child.is_leaf:
                found = ctx.let(b.lt(lo, hi), n + "_found")
            else:
                cnt = self.child.leaf_count
                found = ctx.let(b.lt(cnt(ctx, lo), cnt(ctx, hi)), n + "_found")
                # skip stored coordinates with no leaf below; `found` bounds the walk inside [lo, hi)
                empty = lambda q: b.eq(cnt(ctx, b.add(q, b.i64(1))), cnt(ctx, q))
                step = b.i64(1 if which == "first" else -1)
                ctx.if_(found, lambda: ctx._probe_loop(
                    n + "_skip", lambda: ir.Read(k), lambda q: b.land(b.le(lo, q), b.lt(q, hi)), empty,
                    lambda q: ctx.assign(k, b.add(q, step))))
            c = ctx.mut(self.cty, b.const(0, self.cty), n + "_extc")
            ctx.if_(found, lambda: ctx.assign(c, self._lim(b.load_wide(self.idx, ir.Read(k))).v))
            return found, ctx.let(ir.Read(c), n + "_extremum")

        def step_preamble(ctx):
            st["qv"] = ctx.let(ir.Read(st["q"]), n + "_qv")
            st["c"] = ctx.let(b.load_wide(self.idx, st["qv"]), n + "_c")
            st["slot"] = self.child_pos(ctx, pos, st["qv"])

        def nxt(ctx, full):
            ctx.assign(st["q"], b.add(ir.Read(st["q"]), b.cast(I64, full)))

        stepper = Stepper(seek=seek, preamble=step_preamble,
                          stop=lambda ctx: self._lim(st["c"]),
                          chunk=lambda ctx: Spike(FillLeaf(self.fill), Fiber(self.child, st["slot"])),
                          next=nxt, stop_eps=0, count=count if self.leaf_count is not None else None,
                          extremum=extremum if self.leaf_count is not None else None,
                          spikes=True, fill=self.fill, last=lambda: st["last"],
                          more=lambda ctx: b.lt(ir.Read(st["q"]), st["q_stop"]))
        body = lambda: Sequence([PhaseSpec(body=lambda ctx, e: stepper, stop=lambda ctx, e: st["last"]),
                                 PhaseSpec(body=lambda ctx, e: Run(FillLeaf(self.fill)))])
        return Thunk(Walk(stepper, body), preamble=preamble)

    def unfurl_reversed(self, ctx, pos, ext):
        from .reverse import reversed_sparse_list
        return reversed_sparse_list(self, ctx, pos)

    # ---------------------------------------------------------------- write
    def declare(self, ctx, npos):
        self.qos = ctx.mut(I64, b.i64(0), self.name + "_qos")
        # one fiber (the output's root level): its entries are slots 0..qos-1, so the fiber's
        # count is written once at freeze instead of being updated in memory at every unfurl
        self._one_fiber = b.is_const(npos) and npos.value == 1
        if self._one_fiber:   # the last coordinate appended, kept in a register for the order check
            bottom = -math.inf if self.coord == "real" else -2**63
            self._last = ctx.mut(self.cty, b.const(bottom, self.cty), self.name + "_last")
        self.assemble(ctx, b.i64(0), b.sub(npos, b.i64(1)))
        ctx.emit(ir.Store(self.ptrbuf.data, b.i64(0), b.i64(0)))
        self.child.declare(ctx, b.i64(0))     # sparse children grow as entries are appended

    def assemble(self, ctx, start, stop):
        self.ptrbuf.ensure(ctx, b.add(stop, b.i64(2)))
        k = ir.Var(ctx.fresh("k"), I64, "let")
        ctx.emit(ir.For(k, b.add(start, b.i64(1)), b.add(stop, b.i64(2)), [ir.Store(self.ptrbuf.data, ir.Read(k), b.i64(0))]))

    def freeze(self, ctx, npos):
        if getattr(self, "_one_fiber", False):
            ctx.emit(ir.Store(self.ptrbuf.data, b.i64(1), ir.Read(self.qos)))
        prefix_sum(ctx, self.ptrbuf.data, npos)
        self.child.freeze(ctx, ctx.let(b.load(self.ptrbuf.data, npos)))

    def _unfurl_write(self, ctx, pos, ext, parent_dirty):
        def point(ctx, j):
            return append_entry(self, self.name, [self.idxbuf], [j.v], parent_dirty,
                                out_of_order=lambda ctx, p: b.le(j.v, b.load(self.idxbuf.data, p)),
                                first=lambda: st["first"])
        st = {}
        if self._one_fiber:
            return Lookup(lambda ctx, j: append_entry(self, self.name, [self.idxbuf], [j.v], parent_dirty,
                                                      order=(self._last, j.v)))
        return fiber_writer(self, pos, Lookup(point), self.ptrbuf, st)


def prefix_sum(ctx, ptr, npos):
    """ptr[k+1] += ptr[k] for k in 0..npos-1: counts -> offsets (Finch freeze)."""
    k = ir.Var(ctx.fresh("k"), I64, "let")
    kk = ir.Read(k)
    body = [ir.Store(ptr, b.add(kk, b.i64(1)),
                     b.add(b.load(ptr, b.add(kk, b.i64(1))), b.load(ptr, kk)))]
    ctx.emit(ir.Store(ptr, b.i64(0), b.i64(0)))
    ctx.emit(ir.For(k, b.i64(0), npos, body))
