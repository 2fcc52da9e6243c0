"""`SparseRunList(child)`: many disjoint intervals per fiber — the continuous paper's Interval level.

Source: continuous paper §5.2 (Interval format, homogeneous vs heterogeneous closedness), Finch.jl
`sparse_rle_levels.jl` (ptr/left/right; unfurl at lines 590-680).  Buffers: `ptr` (npos+1),
`left`, `right` (float64 endpoints, sorted; interval k of a fiber ends strictly before interval
k+1 starts, under the Limit order).

* homogeneous (`closed` = 'left' | 'right' | 'both' | 'neither'): the ε of every endpoint is a
  compile-time constant; only the two float64 arrays are stored and loaded;
* heterogeneous (`closed=None`): two more int8 arrays `left_eps`, `right_eps` hold the ε of each
  endpoint (Limit endpoints).

Read looplets: Thunk → Sequence[Phase(stop = last right, Stepper(seek over `right`; chunk =
Sequence[Phase(stop = left − ε, Run(fill)), Phase(Run(child))]; next when the step ends at
right)), Phase(Run(fill))].  Write looplet: AcceptRun, recording the whole extent [s, t] of each
run whose child became dirty (outputs are always written heterogeneous; the runtime converts to
homogeneous when every endpoint has the same ε).
"""
from __future__ import annotations

import bisect
import math

import numpy as np

from ..errors import FormatError
from ..extents import Extent, SymLimit, lim_le
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F32, F64, I8, I64, PtrType
from ..limits import Limit
from ..looplets.nodes import (AcceptRun, FillLeaf, Fiber, PhaseSpec, Run, RunNeighbours,
                              Sequence, Stepper, Thunk)
from .affine import see
from .append import append_entry, fiber_writer
from .level import (DEFAULT_CLOSED, Level, as_array, check_no_nan, check_ptr, closed_eps, coord_suffix,
                    real_endpoints)
from .run_folds import RunFolds
from .sparse_list import prefix_sum


def endpoints_ok(lv, le, rv, re):
    """Vectorised Limit test left <= right."""
    return (lv < rv) | ((lv == rv) & (le <= re))


class SparseRunList(Level):
    """Interval level over a real axis.

    Parameters
    ----------
    child : Level
    ptr : int64 array (npos+1), optional
    left, right : float64 arrays, optional — interval endpoints (both float32: kept without a copy
        and read widened to float64)
    closed : {'left', 'right', 'both', 'neither'} or None, default 'left'
        Homogeneous closedness ('left' = [a, b)), or None for per-endpoint `left_eps`/`right_eps`.
        As an output format (`out=`): left at the default, the result is stored homogeneous when
        every endpoint has the same closedness and heterogeneous otherwise; given explicitly, the
        result is stored in exactly that closedness (None: always heterogeneous), and a result
        with another closedness raises FormatError naming its first such interval.
    left_eps, right_eps : int8 arrays in {-1, 0, +1}, only when closed is None.
    """

    coord = "real"

    def __init__(self, child: Level, ptr=None, left=None, right=None, closed=DEFAULT_CLOSED,
                 left_eps=None, right_eps=None):
        self.child = child
        self.closed = closed
        if closed is not None:
            closed_eps(closed)
            if left_eps is not None or right_eps is not None:
                raise FormatError(f"SparseRunList: left_eps/right_eps give each endpoint its own closedness "
                                  f"and need closed=None; with closed={closed!r} every interval has that one")
        self.ptr = None if ptr is None else as_array(ptr, "ptr", np.int64)
        self.left, self.right = real_endpoints(left, right)
        self.left_eps = None if left_eps is None else as_array(left_eps, "left_eps", np.int8)
        self.right_eps = None if right_eps is None else as_array(right_eps, "right_eps", np.int8)

    @classmethod
    def frozen(cls, child, ptr, left, right, closed, left_eps=None, right_eps=None) -> "SparseRunList":
        """A level over canonical arrays of the right dtypes that ctensor built itself (a kernel's
        output, `runtime.output_format`): no conversion or check."""
        lv = cls.__new__(cls)
        lv.child, lv.closed, lv.ptr, lv.left, lv.right = child, closed, ptr, left, right
        lv.left_eps, lv.right_eps = left_eps, right_eps
        return lv

    # ---- structure
    def format_key(self):
        return ("SparseRunList", self.closed, self.child.format_key()) + coord_suffix(self.left)

    def format_str(self):
        c = "" if self.closed == "left" else f", closed={self.closed!r}"
        return f"SparseRunList({self.child.format_str()}{c})"

    def empty(self):
        return SparseRunList(self.child.empty(), closed=self.closed)

    def has_data(self):
        return self.ptr is not None and self.child.has_data()

    def child_count(self, npos):
        return int(self.ptr[npos]) if npos else 0

    def arrays(self):
        eps = [self.left_eps, self.right_eps] if self.closed is None else []
        return [self.ptr, self.left, self.right] + eps + self.child.arrays()

    def eps_arrays(self):
        """(left ε, right ε) as arrays (broadcast constants for a homogeneous level)."""
        if self.closed is None:
            return self.left_eps, self.right_eps
        le, re = closed_eps(self.closed)
        n = len(self.left)
        return np.full(n, le, np.int8), np.full(n, re, np.int8)

    def validate(self, npos, name):
        if self.ptr is None or self.left is None or self.right is None:
            raise FormatError(f"{name}: SparseRunList has no data")
        n = len(self.left)
        if len(self.right) != n:
            raise FormatError(f"{name}: left has {n} endpoints but right has {len(self.right)}")
        check_ptr(self.ptr, npos, n, name)
        check_no_nan(self.left, f"{name}.left")
        check_no_nan(self.right, f"{name}.right")
        if self.closed is None:
            for a, nm in ((self.left_eps, "left_eps"), (self.right_eps, "right_eps")):
                if a is None or len(a) != n:
                    raise FormatError(f"{name}.{nm}: expected {n} values")
                lo, hi = (0, 1) if nm == "left_eps" else (-1, 0)
                bad = np.flatnonzero((a < lo) | (a > hi))
                if bad.size:
                    raise FormatError(f"{name}.{nm}[{int(bad[0])}] = {a[bad[0]].item()} is not {lo} or {hi} "
                                      "(a closed or open endpoint)")
        le, re = self.eps_arrays()
        bad = np.flatnonzero(~endpoints_ok(self.left, le, self.right, re))
        if bad.size:
            k = int(bad[0])
            raise FormatError(f"{name}: interval {k} is empty or reversed (start {self.left[k].item()!r} > end {self.right[k].item()!r})")
        bad = np.flatnonzero(np.isposinf(self.left) | np.isneginf(self.right))
        if bad.size:
            raise FormatError(f"{name}: interval {int(bad[0])} starts at +inf or ends at -inf")
        # disjoint and sorted inside each fiber: right[k] < left[k+1] (Limit order)
        ok = ~endpoints_ok(self.left[1:], le[1:], self.right[:-1], re[:-1])
        starts = np.zeros(n, bool)
        starts[self.ptr[:-1][self.ptr[:-1] < n]] = True   # first interval of a fiber: no predecessor
        bad = np.flatnonzero(~ok & ~starts[1:])
        if bad.size:
            k = int(bad[0]) + 1
            raise FormatError(f"{name}: interval {k} [{self.left[k].item()!r}, {self.right[k].item()!r}] overlaps or precedes "
                              f"interval {k - 1} [{self.left[k - 1].item()!r}, {self.right[k - 1].item()!r}] "
                              "(intervals of a fiber must be sorted and disjoint)")
        self.child.validate(self.child_count(npos), name)

    # ---- runtime access
    def _limits(self, k):
        le, re = (self.left_eps[k], self.right_eps[k]) if self.closed is None else closed_eps(self.closed)
        return Limit(self.left[k].item(), int(le)), Limit(self.right[k].item(), int(re))

    def eval(self, pos, coords):
        x = Limit.of(coords[0])
        lo, hi = int(self.ptr[pos]), int(self.ptr[pos + 1])
        k = bisect.bisect_left(self.right, x.value, lo, hi)  # first right >= x.value
        while k < hi:
            left, right = self._limits(k)
            if right < x:
                k += 1
                continue
            if left <= x:
                return self.child.eval(k, coords[1:])
            break
        return self.fill

    def pieces(self, pos):
        for k in range(int(self.ptr[pos]), int(self.ptr[pos + 1])):
            for rest, v in self.child.pieces(k):
                yield (self._limits(k),) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        return VSparseRunList(ctx, self, name, mode)


class VSparseRunList(RunFolds):
    is_leaf = False
    coord = "real"

    def __init__(self, ctx, lvl: SparseRunList, name, mode):
        self.lvl, self.name, self.mode, self.fill = lvl, name, mode, lvl.fill
        self.closed = lvl.closed if mode == "read" else None
        P = lambda nm, ty: ir.Read(ctx.param(f"{name}_{nm}", PtrType(ty), ("read", lvl, nm)))
        if mode == "read":
            ety = F32 if coord_suffix(lvl.left) else F64
            self.ptr, self.left, self.right = P("ptr", I64), P("left", ety), P("right", ety)
            if self.closed is None:
                self.left_eps, self.right_eps = P("left_eps", I8), P("right_eps", I8)
        else:
            from ..lower.context import GrowBuffer
            self.bufs = {nm: GrowBuffer(ctx, f"{name}_{nm}", ty, lvl, nm)
                         for nm, ty in (("ptr", I64), ("left", F64), ("right", F64), ("left_eps", I8), ("right_eps", I8))}
        self.child = lvl.child.virtualize(ctx, name + "c", mode)

    view = None          # a CoordView when read through an affine index (`formats.affine`)

    def extent(self):
        return Extent.real()

    def _left(self, k):
        if self.closed is None:
            return SymLimit(b.load_wide(self.left, k), b.load(self.left_eps, k))
        return SymLimit(b.load_wide(self.left, k), b.i8(closed_eps(self.closed)[0]))

    def _right(self, k):   # validated: a right endpoint is never -inf
        if self.closed is None:
            return SymLimit(b.load_wide(self.right, k), b.load(self.right_eps, k), True)
        return SymLimit(b.load_wide(self.right, k), b.i8(closed_eps(self.closed)[1]), True)

    def _bind(self, ctx, lim: SymLimit, hint):
        return SymLimit(ctx.let(lim.v, hint), ctx.let(lim.e, hint + "_e"), lim.finite)

    # ---------------------------------------------------------------- read
    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        if mode != "read":
            return self._unfurl_write(ctx, pos, ext, dirty)
        st, n = {}, self.name

        def preamble(ctx):
            st["q"] = ctx.mut(I64, b.load(self.ptr, pos), n + "_q")
            st["q_stop"] = ctx.let(b.load(self.ptr, b.add(pos, b.i64(1))), n + "_q_stop")
            nonempty = ctx.let(b.lt(ir.Read(st["q"]), st["q_stop"]), n + "_nonempty")
            # an empty fiber's last stop is -inf (with the level's right ε, at most 0), which sorts
            # before every extent start (>= -inf + ε), so its stepper phase is empty
            if self.closed is None:
                last = ctx.mut(F64, b.f64(-math.inf), n + "_last")
                laste = ctx.mut(I8, b.i8(0), n + "_last_e")

                def load_last():
                    r = see(self, self._right(b.sub(st["q_stop"], b.i64(1))))
                    ctx.assign(last, r.v)
                    ctx.assign(laste, r.e)
                ctx.if_(nonempty, load_last)
                st["last"] = SymLimit(ctx.let(ir.Read(last), n + "_last"), ctx.let(ir.Read(laste), n + "_last_e"))
            else:
                last = ctx.mut(F64, b.f64(-math.inf), n + "_last")
                ctx.if_(nonempty, lambda: ctx.assign(last, see(self, self._right(b.sub(st["q_stop"], b.i64(1)))).v))
                st["last"] = SymLimit(ctx.let(ir.Read(last), n + "_last"), b.i8(closed_eps(self.closed)[1]))

        def seek(ctx, e):
            q = st["q"]

            def search():
                key = lambda k: lim_le(e.start, see(self, self._right(k)))
                ctx.assign(q, ctx.search_first_ge(key, ir.Read(q), st["q_stop"], n + "_s"))
            ctx.if_(b.lt(ir.Read(q), st["q_stop"]),
                    lambda: ctx.if_(b.lnot(lim_le(e.start, see(self, self._right(ir.Read(q))))), search))

        def step_preamble(ctx):
            qv = st["qv"] = ctx.let(ir.Read(st["q"]), n + "_qv")
            st["l"] = self._bind(ctx, see(self, self._left(qv)), n + "_l")
            st["r"] = self._bind(ctx, see(self, self._right(qv)), n + "_r")

        def chunk(ctx):
            e = Extent.real()
            return Sequence([PhaseSpec(body=lambda ctx, ext: Run(FillLeaf(self.fill)),
                                       stop=lambda ctx, ext: e.minus_unit(st["l"])),
                             PhaseSpec(body=lambda ctx, ext: Run(Fiber(self.child, st["qv"])))])

        def nxt(ctx, full):
            ctx.assign(st["q"], b.add(ir.Read(st["q"]), b.cast(I64, full)))

        stop_eps = None if self.closed is None else closed_eps(self.closed)[1]
        stepper = Stepper(seek=seek, preamble=step_preamble, stop=lambda ctx: st["r"], chunk=chunk, next=nxt,
                          stop_eps=stop_eps)
        body = Sequence([PhaseSpec(body=lambda ctx, e: stepper, stop=lambda ctx, e: st["last"]),
                         PhaseSpec(body=lambda ctx, e: Run(FillLeaf(self.fill)))])
        return Thunk(body, preamble=preamble, around=self._neighbours(pos))

    def _neighbours(self, pos):
        """The runs around a point (`RunNeighbours`): a search over the fiber's right endpoints,
        independent of the stepper's cursor (the point may lie in a phase after it)."""
        n = self.name
        q0 = lambda: b.load(self.ptr, pos)
        q1 = lambda: b.load(self.ptr, b.add(pos, b.i64(1)))

        def locate(ctx, p):
            lo, hi = ctx.let(q0(), n + "_nb_lo"), ctx.let(q1(), n + "_nb_hi")
            k = ctx.search_first_ge(lambda k: lim_le(p, see(self, self._right(k))), lo, hi, n + "_nb")
            k = ctx.let(b.minimum(k, b.sub(hi, b.i64(1))), n + "_nb_k")
            inside = b.land(lim_le(see(self, self._left(k)), p), lim_le(p, see(self, self._right(k))))
            return ctx.let(inside, n + "_nb_in"), k
        return RunNeighbours(lambda ctx: b.lt(q0(), q1()), locate, lambda k: Fiber(self.child, k))

    def union_readable(self) -> bool:
        return self.mode == "read" and getattr(self.child, "is_leaf", False)

    def unfurl_union(self, ctx, pos, reverse=False, present=None):
        """The fiber as alternating gap and run chunks of runtime values (`formats.run_union`), or
        None when the child is not a leaf.  `reverse`: seen through a view with a < 0, where run
        k is [x(right_k), x(left_k)] (`formats.reverse`).  `present`: see `looplets.nodes.Fiber`."""
        if not self.union_readable():
            return None
        from .run_union import unfurl_union
        if reverse:       # a left endpoint is never +inf (validated): its image is above -inf
            return unfurl_union(self, ctx, pos, lambda k: see(self, self._right(k), False),
                                lambda k: see(self, self._left(k), True), reverse=True, present=present)
        return unfurl_union(self, ctx, pos, lambda k: see(self, self._left(k)), lambda k: see(self, self._right(k)),
                            present=present)

    def unfurl_reversed(self, ctx, pos, ext):
        from .reverse import reversed_sparse_run_list
        return reversed_sparse_run_list(self, ctx, pos)

    # ---------------------------------------------------------------- write
    def declare(self, ctx, npos):
        self.qos = ctx.mut(I64, b.i64(0), self.name + "_qos")
        # one fiber (the output's root level): its entries are slots 0..qos-1, so its count is
        # written once at freeze, not added to ptr[1] in memory at every unfurl (`fiber_writer`)
        self._one_fiber = b.is_const(npos) and npos.value == 1
        # the last committed run, in registers (`run_folds`)
        self._last = tuple(ctx.mut(self.bufs[n].elem, b.const(0, self.bufs[n].elem), f"{self.name}_last_{n}")
                           for n in self._RUN)
        self.assemble(ctx, b.i64(0), b.sub(npos, b.i64(1)))
        ctx.emit(ir.Store(self.bufs["ptr"].data, b.i64(0), b.i64(0)))
        self.child.declare(ctx, b.i64(0))     # sparse children grow as entries are appended

    def assemble(self, ctx, start, stop):
        ptr = self.bufs["ptr"]
        ptr.ensure(ctx, b.add(stop, b.i64(2)))
        k = ir.Var(ctx.fresh("k"), I64, "let")
        ctx.emit(ir.For(k, b.add(start, b.i64(1)), b.add(stop, b.i64(2)), [ir.Store(ptr.data, ir.Read(k), b.i64(0))]))

    def freeze(self, ctx, npos):
        if self._one_fiber:
            ctx.emit(ir.Store(self.bufs["ptr"].data, b.i64(1), ir.Read(self.qos)))
        prefix_sum(ctx, self.bufs["ptr"].data, npos)
        self.child.freeze(ctx, ctx.let(b.load(self.bufs["ptr"].data, npos)))

    _RUN = ("left", "left_eps", "right", "right_eps")

    def _unfurl_write(self, ctx, pos, ext, parent_dirty):
        st = {"first": b.i64(0)} if self._one_fiber else {}     # one fiber: every slot is its own
        last = self._last

        def accept(ctx, e):   # the whole run [e.start, e.stop] is one entry
            return append_entry(self, self.name, [self.bufs[n] for n in self._RUN],
                                [e.start.v, e.start.e, e.stop.v, e.stop.e], parent_dirty,
                                coalesce=lambda ctx, q: self._coalesce(ctx, q, e, st["first"]),
                                out_of_order=lambda ctx, p: lim_le(e.start, self._stored_right()),
                                first=lambda: st["first"],
                                fold=(lambda ctx, q: self._fold(ctx, q, e, st["first"]))
                                if ctx.fold_overlaps and not ctx.unordered_output else None,
                                last=last)
        if self._one_fiber:
            return AcceptRun(accept)
        return fiber_writer(self, pos, AcceptRun(accept), self.bufs["ptr"], st)
