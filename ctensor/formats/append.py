"""The appending writer shared by sparse output levels (Finch digest §1.4).

An entry is appended at slot `qos` of the level: the slot's buffers are grown, the child slot is
assembled (filled with the fill value) and the child is written through a `Hollow` subfiber with a
fresh dirty flag.  Only if something was written is the entry committed — `qos` advanced past it —
and the parent told that this fiber is dirty too.  Without coalescing the slot's coordinates are
stored either way (past `qos` they are dead), so the commit has no branch on the flag.
"""
from __future__ import annotations

from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I1, I64
from ..looplets.nodes import Deferred, Hollow, Thunk


def append_entry(vlevel, name: str, bufs: list, coords: list, parent_dirty, coalesce=None,
                 out_of_order=None, first=None, order=None, fold=None, last=None) -> Thunk:
    """bufs: GrowBuffers holding the entry's coordinates; coords: IR values stored into them.

    Order check (an entry must come after the fiber's previous one, else STATUS_OUTPUT_ORDER), left
    out when `ctx.unordered_output` (a revisited output, merged by the runtime):
    out_of_order(ctx, p) -> i1 compares with the entry at slot p, checked when first() <= p; or
    order = (var, coord): a mutable variable holding the fiber's last committed coordinate (a
    register, no load), which must stay below `coord`.

    coalesce(ctx, q) -> (i1, action), optional: when the condition holds, the entry written at
    slot q is folded into the previous one by `action(ctx)` instead of being committed.

    fold(ctx, q) -> (i1, action), optional, with coalesce: when the condition holds, the entry
    overlaps the previous one, which `action(ctx)` extends, before any order check (an idempotent
    ⊕ of equal values over a revisited output: `Context.fold_overlaps`).

    last, optional, with coalesce: mutable variables, one per coordinate, assigned the coordinates
    of each committed entry (so they hold the entry at slot qos - 1; coalesce's and fold's actions
    keep them up to date when they change that entry)."""
    slot = {}

    def pre(ctx):
        q = slot["q"] = ctx.let(ir.Read(vlevel.qos), name + "_slot")
        for buf in bufs:
            buf.ensure(ctx, b.add(q, b.i64(1)))
        vlevel.child.assemble(ctx, q, q)
        slot["dirty"] = ctx.mut(I1, b.FALSE, name + "_dirty")

    def check_order(ctx, d):
        """Fail (STATUS_OUTPUT_ORDER) when the entry, committed if d, does not follow the fiber's
        previous one; branch-free apart from the failure itself."""
        q = slot["q"]
        if ctx.unordered_output:        # passes merged at freeze (`runtime.merge_output`)
            return
        if order is not None:
            var, c = order
            ctx.fail_if(b.select(d, b.le(c, ir.Read(var)), b.FALSE), ir.STATUS_OUTPUT_ORDER)
            ctx.assign(var, b.select(d, c, ir.Read(var)))
        elif out_of_order is not None:
            p = ctx.let(b.sub(q, b.i64(1)), name + "_last_slot")
            # slot max(p, 0) < q + 1 lies in the buffer; its value matters only when first <= p
            later = b.select(b.le(first(), p), out_of_order(ctx, b.maximum(p, b.i64(0))), b.FALSE)
            ctx.fail_if(b.select(d, later, b.FALSE), ir.STATUS_OUTPUT_ORDER)

    def post(ctx):
        q, d = slot["q"], ir.Read(slot["dirty"])
        if coalesce is None:
            # the slot is always stored (pre grew the buffers) and committed by advancing qos only
            # if dirty: no branch on dirty, so a test that sets it compiles to selects
            for buf, val in zip(bufs, coords):
                ctx.emit(ir.Store(buf.data, q, val))
            check_order(ctx, d)
            if parent_dirty is not None:
                ctx.assign(parent_dirty, b.lor(ir.Read(parent_dirty), d))
            ctx.assign(vlevel.qos, b.select(d, b.add(q, b.i64(1)), ir.Read(vlevel.qos)))
            return

        def store():
            for buf, val in zip(bufs, coords):
                ctx.emit(ir.Store(buf.data, q, val))
            for var, val in zip(last or (), coords):
                ctx.assign(var, val)
            ctx.assign(vlevel.qos, b.add(q, b.i64(1)))

        def ordered():
            check_order(ctx, b.TRUE)
            cond, action = coalesce(ctx, q)
            ctx.if_(cond, lambda: action(ctx), store)

        def commit():
            if parent_dirty is not None:
                ctx.assign(parent_dirty, b.TRUE)
            if fold is None:
                return ordered()
            cond, action = fold(ctx, q)
            ctx.if_(cond, lambda: action(ctx), ordered)
        ctx.if_(d, commit)

    return Thunk(Deferred(lambda: Hollow(vlevel.child, slot["q"], slot["dirty"])), preamble=pre, epilogue=post)


def fiber_writer(vlevel, pos, body, ptr_buf, state=None) -> Thunk:
    """Wrap a fiber's write looplet: remember where the fiber starts, add its entry count to
    ptr[pos+1] afterwards (turned into offsets by `freeze`).  Adding, not storing: a fiber is
    unfurled again for every iteration of a loop between its index and its parent's (Out[i, j]
    written under `for i, s, j`), and the appends of all those unfurls belong to it."""
    st = {} if state is None else state   # state["begin"]: the fiber's first slot in this unfurl

    def preamble(ctx):
        st["begin"] = ctx.let(ir.Read(vlevel.qos), vlevel.name + "_begin")
        # entries of this fiber appended by earlier unfurls sit just before `begin`
        done = b.load(ptr_buf.data, b.add(pos, b.i64(1)))
        st["first"] = ctx.let(b.sub(st["begin"], done), vlevel.name + "_first")

    def epilogue(ctx):
        slot = ctx.let(b.add(pos, b.i64(1)), vlevel.name + "_slot_end")
        added = ctx.let(b.sub(ir.Read(vlevel.qos), st["begin"]), vlevel.name + "_added")
        ctx.emit(ir.Store(ptr_buf.data, slot, b.add(b.load(ptr_buf.data, slot), added)))
        # the entries of fiber p must follow those of every fiber before it (freeze turns counts
        # into offsets): a fiber appended to after a later one (O[j, k] with j visited 2, 0, 1
        # through a sparse input) would be read back with another fiber's entries
        if getattr(vlevel, "_last_fiber", None) is None:
            vlevel._last_fiber = ctx.top_mut(I64, b.i64(-1), vlevel.name + "_last_fiber")
        last, some = vlevel._last_fiber, ctx.let(b.lt(b.i64(0), added), vlevel.name + "_some")
        ctx.fail_if(b.land(some, b.lt(pos, ir.Read(last))), ir.STATUS_FIBER_ORDER)
        ctx.assign(last, b.select(some, pos, ir.Read(last)))

    return Thunk(body, preamble=preamble, epilogue=epilogue)
