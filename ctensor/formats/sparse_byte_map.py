"""`SparseByteMap(child, shape)`: integer ids in any write order, with a byte table per fiber.

Source: Finch paper §3 and Finch.jl `sparse_bytemap_levels.jl` (buffers ptr, tbl, srt).  Child
position of (p, i) is p*shape + i, as for Dense: the child holds npos*shape slots and `tbl` (one
byte per slot) says which are stored.  The stored ids of fiber p are idx[ptr[p]:ptr[p+1]], sorted.

Why it exists: a SparseList output must be written in increasing id order (an appending writer),
so `Out[id]` written from a loop over space (`Out[id] = P[x, y, id] * B[x, y] * d(x, y; ...)`)
visits ids out of order.  A byte map takes writes in any order and any number of times: a write
to a slot not yet in `tbl` marks it and appends p*shape + i to a list; freeze sorts that list
(Finch sorts `srt` the same way), which the runtime does after the call
(`runtime.output_format.rebuild_output`), so the cost is the entries written, not the shape.
Declaring a fiber clears its shape bytes of `tbl` and its child slots, like a Dense level.

Read looplets: those of a SparseList over `idx` (stepper with galloping seek), with the child
read at p*shape + idx[q].
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I1, I8, I64, PtrType
from ..looplets.nodes import Deferred, Fiber, Hollow, Lookup, Thunk
from .level import Level, as_array, as_shape, check_coords, check_ptr, check_sorted_fibers
from .sparse_list import VSparseList


class SparseByteMap(Level):
    """Sparse integer level with random-order writes.

    Parameters
    ----------
    child : Level
        Holds npos*shape slots (slot p*shape + i for id i of fiber p); unstored slots hold the fill.
    shape : int, optional
        Ids lie in the closed [0, shape-1].  May be omitted for an output format (``out=``), where
        the shape comes from the program's other tensors.
    ptr : int64 array (npos+1), optional — fiber p owns idx[ptr[p]:ptr[p+1]]
    idx : int64 array, optional — the stored ids, strictly increasing within a fiber
    tbl : bool array (npos*shape), optional — tbl[p*shape + i] is True iff id i of fiber p is
        stored.  Give ptr and idx, or tbl, or all three; the missing ones are derived.

    Raises FormatError (at validation) when the shape is missing, ptr/idx are malformed (as for
    SparseList), an id is outside [0, shape-1], tbl has the wrong length, or tbl disagrees with
    idx (naming the first slot that differs).
    """

    coord = "int"
    pinpoints = True

    def __init__(self, child: Level, shape=None, ptr=None, idx=None, tbl=None):
        self.child, self.shape = child, as_shape(shape, "SparseByteMap")
        self.ptr = None if ptr is None else as_array(ptr, "ptr", np.int64)
        self.idx = None if idx is None else as_array(idx, "idx", np.int64)
        self.tbl = None if tbl is None else as_array(tbl, "tbl").astype(np.bool_, copy=False)
        if (self.ptr is None) != (self.idx is None):
            raise FormatError("SparseByteMap: ptr and idx go together (or give tbl alone)")
        self._derive()

    def _derive(self, npos=None):
        """The buffers not given, from the others, at construction (npos = len(tbl) / shape, or
        len(ptr) - 1) and again in `validate` (which knows npos): a tensor built with
        validate=False must hold all three (a kernel reading a missing ptr would dereference null).
        Malformed buffers are left for `validate` to name."""
        n = self.shape
        if n is None:
            return
        if self.ptr is None and self.tbl is not None and self.tbl.ndim == 1:
            if npos is None and (not n or self.tbl.size % n):
                return
            npos = self.tbl.size // n if npos is None else npos
            if self.tbl.size == npos * n:      # its set slots, in (fiber, id) order
                q = np.flatnonzero(self.tbl)
                self.ptr = np.searchsorted(q, np.arange(npos + 1, dtype=np.int64) * n).astype(np.int64)
                self.idx = q - np.repeat(np.arange(npos, dtype=np.int64) * n, np.diff(self.ptr))
        elif self.tbl is None and self.ptr is not None and self.ptr.size >= 1:
            nnz = self.idx.size
            ok = self.ptr[0] == 0 and self.ptr[-1] == nnz and (np.diff(self.ptr) >= 0).all() \
                and (nnz == 0 or (self.idx.min() >= 0 and self.idx.max() < n))
            if ok:
                tbl = np.zeros((self.ptr.size - 1) * n, np.bool_)
                tbl[self.slots(self.ptr.size - 1)] = True
                self.tbl = tbl

    def format_key(self):
        return ("SparseByteMap", self.child.format_key())

    def format_str(self):
        return f"SparseByteMap({self.child.format_str()})"

    def empty(self):
        return SparseByteMap(self.child.empty(), self.shape)

    def has_data(self):
        return (self.ptr is not None or self.tbl is not None) and self.child.has_data()

    def child_count(self, npos):
        return npos * self.shape

    def arrays(self):
        return [self.shape, self.ptr, self.idx, self.tbl] + self.child.arrays()

    def validate(self, npos, name):
        if self.shape is None:
            raise FormatError(f"{name}: SparseByteMap level has no shape")
        if self.ptr is None and self.tbl is None:
            raise FormatError(f"{name}: SparseByteMap has no data (give ptr and idx, or tbl)")
        n = npos * self.shape
        if self.tbl is not None and self.tbl.shape != (n,):
            raise FormatError(f"{name}.tbl: expected {n} entries ({npos} fibers x shape {self.shape}), "
                              f"got {self.tbl.shape[0]}")
        self._derive(npos)
        check_ptr(self.ptr, npos, len(self.idx), name)
        check_coords(self.idx, "int", self.shape, name)
        check_sorted_fibers(self.idx, self.ptr, name, "id")
        want = np.zeros(n, np.bool_)          # tbl agrees with idx (derived from it or given)
        want[self.slots(npos)] = True
        diff = np.flatnonzero(want != self.tbl)
        if diff.size:
            s = int(diff[0])
            raise FormatError(f"{name}.tbl[{s}] = {bool(self.tbl[s])} but id {s % self.shape} of fiber "
                              f"{s // self.shape} is {'' if want[s] else 'not '}in idx")
        self.child.validate(self.child_count(npos), name)

    def slots(self, npos):
        """The child slot p*shape + idx[k] of every stored entry k."""
        fiber = np.repeat(np.arange(npos, dtype=np.int64), np.diff(self.ptr))
        return fiber * self.shape + self.idx

    def eval(self, pos, coords):
        i = coords[0]
        if not (isinstance(i, int) and 0 <= i < self.shape):
            raise IndexError(f"index {i!r} out of range for SparseByteMap level of shape {self.shape}")
        q = pos * self.shape + i
        return self.child.eval(q, coords[1:]) if self.tbl[q] else self.fill

    def pieces(self, pos):
        for k in range(int(self.ptr[pos]), int(self.ptr[pos + 1])):
            i = int(self.idx[k])
            for rest, v in self.child.pieces(pos * self.shape + i):
                yield (i,) + rest, v

    def virtualize(self, ctx, name, mode="read"):
        return VSparseByteMap(ctx, self, name, mode)


class VSparseByteMap(VSparseList):
    """Reads as a SparseList whose child slot is p*shape + idx[q]; writes through the table."""

    def __init__(self, ctx, lvl: SparseByteMap, name, mode):
        if mode == "read":
            super().__init__(ctx, lvl, name, mode)
            self.tbl = ir.Read(ctx.param(name + "_tbl", PtrType(I8), ("read", lvl, "tbl")))
            return
        from ..lower.context import GrowBuffer
        self.lvl, self.name, self.mode, self.fill = lvl, name, mode, lvl.fill
        self.coord, self.cty = "int", I64
        self.shape = ir.Read(ctx.param(name + "_shape", I64, ("shape", lvl, "shape")))
        self.tblbuf = GrowBuffer(ctx, name + "_tbl", I8, lvl, "tbl")
        # the slots p*shape + i in write order (Finch's srt), sorted by the runtime at freeze
        self.srtbuf = GrowBuffer(ctx, name + "_srt", I64, lvl, "srt")
        self.cntbuf = GrowBuffer(ctx, name + "_count", I64, lvl, "count")
        self.child = lvl.child.virtualize(ctx, name + "c", mode)

    def child_pos(self, ctx, pos, q):
        return ctx.let(b.add(b.mul(pos, self.shape), b.load(self.idx, q)), self.name + "_slot")

    # per-fiber leaf counts need contiguous child slots (the union protocol is for real axes only)
    leaf_count = None

    def unfurl_union(self, ctx, pos, reverse=False, present=None):
        """In a ⊕-chain read by the union protocol (`lower.nest._union_level`): by id, as a Dense
        level, so the chain has no cursor per term over ids (one per term would give a code path per
        combination of present ids).  An unstored slot's child may hold anything: its fiber is
        handed out with `present` false (and'ed with the parent's), so the union protocol reads it
        as empty."""
        base = ctx.let(b.mul(pos, self.shape), self.name + "_base")

        def entry(ctx, j):
            q = ctx.let(b.add(base, j.v), self.name + "_q")
            here = b.ne(b.load(self.tbl, q), b.const(0, I8))
            return Fiber(self.child, q, present=ctx.let(here if present is None else b.land(present, here)))
        return Lookup(entry)

    # ---------------------------------------------------------------- write
    def declare(self, ctx, npos):
        self.nnz = ctx.mut(I64, b.i64(0), self.name + "_nnz")
        self.cntbuf.ensure(ctx, b.i64(1))
        self._clear(ctx, b.i64(0), ctx.let(ctx.checked_mul(npos, self.shape)))
        self.child.declare(ctx, ctx.let(b.mul(npos, self.shape)))

    def assemble(self, ctx, start, stop):
        end = ctx.let(ctx.checked_mul(b.add(stop, b.i64(1)), self.shape))
        self._clear(ctx, b.mul(start, self.shape), end)
        self.child.assemble(ctx, b.mul(start, self.shape), b.sub(end, b.i64(1)))

    def _clear(self, ctx, lo, hi):
        """tbl[lo:hi] = 0: the fibers' ids are not stored (LLVM turns the loop into memset)."""
        self.tblbuf.ensure(ctx, hi)
        k = ir.Var(ctx.fresh("k"), I64, "let")
        ctx.emit(ir.For(k, lo, hi, [ir.Store(self.tblbuf.data, ir.Read(k), b.const(0, I8))]))

    def freeze(self, ctx, npos):
        ctx.emit(ir.Store(self.cntbuf.data, b.i64(0), ir.Read(self.nnz)))
        self.child.freeze(ctx, ctx.let(b.mul(npos, self.shape)))

    def _unfurl_write(self, ctx, pos, ext, parent_dirty):
        base = ctx.let(b.mul(pos, self.shape), self.name + "_base")

        def entry(ctx, j):
            slot = {}

            def pre(ctx):
                slot["q"] = ctx.let(b.add(base, j.v), self.name + "_q")
                slot["dirty"] = ctx.mut(I1, b.FALSE, self.name + "_dirty")

            def post(ctx):
                # branch-free: the slot is appended (a store past nnz is dead) and counted only when
                # written now and not stored before
                q, d = slot["q"], ir.Read(slot["dirty"])
                was = ctx.let(b.ne(b.load(self.tblbuf.data, q), b.const(0, I8)), self.name + "_was")
                new = ctx.let(b.land(d, b.lnot(was)), self.name + "_new")
                n = ctx.let(ir.Read(self.nnz), self.name + "_n")
                self.srtbuf.ensure(ctx, b.add(n, b.i64(1)))
                ctx.emit(ir.Store(self.srtbuf.data, n, q))
                ctx.emit(ir.Store(self.tblbuf.data, q, b.cast(I8, b.lor(d, was))))
                ctx.assign(self.nnz, b.add(n, b.cast(I64, new)))
                if parent_dirty is not None:
                    ctx.assign(parent_dirty, b.lor(ir.Read(parent_dirty), d))
            return Thunk(Deferred(lambda: Hollow(self.child, slot["q"], slot["dirty"])), preamble=pre, epilogue=post)
        return Lookup(entry)
