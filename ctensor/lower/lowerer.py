"""The recursive lowerer (Finch `lower.jl`; digest §3.3).

`lower(ctx, node)` simplifies a statement and emits IR for it.  A `Loop` first unfurls every access
whose next index is the loop's index (outermost level first: row-major, DESIGN.md §2), then hands
the loop to the looplet pass of highest priority present (`ctensor.looplets.passes`), which emits
code and calls `lower` again on smaller loops.  A loop with no looplet left is collapsed by measure
(`collapse`): Lebesgue multiplies by the length with ε dropped, counting adds only on pinpoints,
idempotent reductions (or/min/max, the Boolean measure) apply once to a non-empty extent.
"""
from __future__ import annotations

from dataclasses import replace

from ..errors import InvalidProgramError
from ..extents import Extent, SymLimit
from ..ir import build as b
from ..ir import nodes as ir
from ..looplets.nodes import (Deferred, FillLeaf, Fiber, Hollow, Looplet, Run, Value)
from .notation import (Access, Assign, Block, Call, Count, Lit, Loop, ScalarOut, Sieve, Val, map_accesses,
                       map_assigns, subst_index, uses_index, walk_accesses, walk_assigns)
from .ops import REDUCTIONS, combine, convert, kind, to_ir
from .program_notation import notation
from .simplify import MAYBE, PRESENT, TRACKED, simplify
from .hoist import hoist_factors
from .run_counting import count_at_point
from .user_reduction import collapse_user, needs_points
from ..lang.semiring import describe
from .tile import cell_point, lower_piece


def lower(ctx, node):
    node = simplify(node)
    if node is None:
        return
    if isinstance(node, Block):
        for s in node.stmts:
            lower(ctx, s)
    elif isinstance(node, Sieve):
        # the guards of collapses (the counting measure's `length == 0`, Fig. 18-19) and nests
        ctx.if_(node.cond, lambda: lower(ctx, node.body), prove=True)
    elif isinstance(node, Assign):
        emit_assign(ctx, node)
    elif isinstance(node, Loop):
        node = hoist_factors(ctx, node)
        if isinstance(node, Sieve):
            lower(ctx, node)
        else:
            lower_loop(ctx, node)
    else:
        raise InvalidProgramError(f"cannot lower {node!r}")


def read_scalars(ctx, node):
    """Read the value of each 0-d input (`T[]`, a tensor that is only a leaf) before the program's
    loops, so the simplifier and the collapses see a value; no index ever unfurls it."""
    def f(acc):
        leaf = not acc.idxs and isinstance(acc.tns, Fiber) and getattr(acc.tns.level, "is_leaf", False)
        return read_value(ctx, acc.tns) if leaf else acc
    return map_accesses(node, f)


def at_index(acc, idx) -> bool:
    return isinstance(acc.tns, Looplet) and bool(acc.idxs) and acc.idxs[0] == idx


def resolve(ctx, acc: Access, new):
    """Replace an access's looplet by `new`: a looplet keeps the index; a leaf consumes it."""
    while isinstance(new, Deferred):
        new = new.make()
    if isinstance(new, Run) and isinstance(new.body, FillLeaf):
        new = new.body                           # a run of fill is the fill, whatever the extent
    if isinstance(new, Looplet):
        return replace(acc, tns=new)
    rest = acc.idxs[1:]
    if acc.tracked and (isinstance(new, (FillLeaf, Value)) or not rest):
        return Call(TRACKED, (_leaf_value(ctx, acc, new, rest), _presence(new)))
    return _leaf_value(ctx, acc, new, rest)


def _leaf_value(ctx, acc, new, rest):
    if isinstance(new, FillLeaf):
        return Lit(new.value)
    if isinstance(new, Value):
        return Val(new.expr, new.dtype)
    if isinstance(new, Fiber) and not rest:
        return read_value(ctx, new)
    return replace(acc, tns=new, idxs=rest)


def is_tracked(e) -> bool:
    """Is `e` what `resolve` returns for a tracked access at its leaf (`settle_presence` splits it)?"""
    return isinstance(e, Call) and e.op == TRACKED


def settle_presence(node):
    """Split the `TRACKED` nodes `resolve` left in a tree: `PRESENT` of one reads its presence,
    anything else its value."""
    def expr(e):
        if not isinstance(e, Call):
            return e
        if e.op == PRESENT and is_tracked(e.args[0]):
            return e.args[0].args[1]
        if is_tracked(e):
            return expr(e.args[0])
        return Call(e.op, tuple(expr(a) for a in e.args))
    return map_assigns(node, lambda a: a.with_(rhs=expr(a.rhs)))


def _presence(leaf):
    """What `PRESENT` of an access resolved to `leaf` reads: whether `leaf` is stored (not the fill)."""
    if isinstance(leaf, Fiber):          # a stored position (a Pattern leaf reads a FillLeaf(True))
        return Lit(True) if leaf.present is None else Val(leaf.present, "bool")
    return Lit(not isinstance(leaf, FillLeaf))


def read_value(ctx, fiber: Fiber):
    """The value of a leaf fiber: a literal for a fill, else the loaded value."""
    leaf = fiber.level.read_leaf(ctx, fiber.pos)
    return Lit(leaf.value) if isinstance(leaf, FillLeaf) else Val(leaf.expr, leaf.dtype)


def unfurl_accesses(ctx, loop: Loop):
    def f(acc):
        if acc.idxs and acc.idxs[0] == loop.idx and isinstance(acc.tns, (Fiber, Hollow)):
            t = acc.tns
            if isinstance(t, Fiber):
                union = getattr(t.level, "unfurl_union", None) if acc.union and t.cell is None else None
                lp = union(ctx, t.pos, present=t.present) if union is not None else None
                if lp is not None:
                    ctx.union_reads = True
                else:
                    lp = t.level.unfurl(ctx, t.pos, loop.ext, "read")
            else:
                lp = t.level.unfurl(ctx, t.pos, loop.ext, "update", t.dirty)
            return replace(acc, tns=lp)
        return acc
    return map_accesses(loop.body, f)


def lower_loop(ctx, loop: Loop):
    from ..looplets.passes import choose_pass
    body = unfurl_accesses(ctx, loop)
    loop = Loop(loop.idx, loop.ext, body)
    found = [a for a in walk_accesses(body) if at_index(a, loop.idx)]
    if not found:
        collapse(ctx, loop)
        return
    choose_pass(found)(ctx, loop)


def collapse(ctx, loop: Loop):
    """Lower a loop whose body no longer depends on its index (Finch `collapsed`, digest §4.3)."""
    idx, ext = loop.idx, loop.ext
    if uses_index(loop.body, idx):
        _collapse_index_value(ctx, loop)
        return
    for a in walk_accesses(loop.body):
        if a.idxs and a.idxs[0] == idx:
            raise InvalidProgramError(f"access {a.name}[{', '.join(a.idxs)}] could not be lowered at index {idx}")
    if not ext.continuous and ext.start is not ext.stop and \
            any(needs_points(a.op, a.measures.get(idx)) for a in walk_assigns(loop.body)):
        _enumerate(ctx, loop)      # a user ⊕ without idempotence or repeat: one ⊕ per point
        return
    cache, memo = {}, {"body": loop.body}       # memo: `run_counting.count_at_point`'s

    def weight(name, make):
        if name not in cache:
            cache[name] = ctx.let(make(), f"{idx}_{name}")
        return cache[name]

    def f(a: Assign):
        m = a.measures.get(idx)
        if m is None:
            return a                       # idx is an output index whose write took the whole run
        rest = {k: v for k, v in a.measures.items() if k != idx}
        a2 = a.with_(measures=rest)
        if not isinstance(a.op, str) and not (m == "counting" and ext.continuous):
            return collapse_user(ctx, a, a2, m, ext, weight)      # a `ct.Semiring`
        if not isinstance(m, str):                  # a user measure (`lang.measure.Measure`)
            w = weight("w", lambda: user_weight(ctx, m, ext))
            if a.op == "+":
                return a2.with_(rhs=Call("wmul", (Val(w, "float"), a.rhs)))
            return Sieve(b.lt(b.f64(0.0), w), a2)   # idempotent: once, where the weight is positive
        if a.op == "+":
            if m == "lebesgue":
                if not ext.continuous:
                    raise InvalidProgramError(f"Lebesgue measure on integer index {idx}: use counting")
                w = weight("len", ext.length)
                return a2.with_(rhs=Call("wmul", (Val(w, "float"), a.rhs)))
            if m == "counting":
                if ext.continuous:
                    return count_at_point(ctx, idx, ext, a2, b.land(ext.finite_pinpoint(), cell_point(ctx, idx, ext)),
                                          _pinned(ctx, idx, a2), memo)
                n = weight("count", ext.length)
                return a2.with_(rhs=Call("*", (Count(n, "int"), a.rhs)))
            raise InvalidProgramError("the boolean measure needs an idempotent reduction (or, min, max)")
        if m == "lebesgue":
            return Sieve(ext.positive_length(), a2)
        if m == "counting" and ext.continuous:
            return count_at_point(ctx, idx, ext, a2, b.land(ext.finite_pinpoint(), cell_point(ctx, idx, ext)),
                                  _pinned(ctx, idx, a2), memo)
        return a2                          # boolean measure: the extent is non-empty here

    # the loops of a tile loop's body run over this piece of it (`lower.tile`)
    body = map_assigns(loop.body, f)
    if memo.get("on") is not None:
        # a run list's own bound may lie at the point: the version weighed per slice runs there,
        # the plain one elsewhere (`lower.run_counting`); the flag is read again by `f`
        memo["weighted"] = True
        body = Block([Sieve(memo["on"], map_assigns(loop.body, f)), Sieve(b.lnot(memo["on"]), body)])
    lower_piece(ctx, body, idx, ext, lower)


def user_weight(ctx, m, ext):
    """f64 IR: the weight of a user measure `m` (`ct.Measure`) on the extent, from its bounds
    (ε dropped; ints on an integer index)."""
    k = "float" if ext.continuous else "int"
    bounds = {"lo": Val(ext.start.v, k), "hi": Val(ext.stop.v, k)}
    e = notation(m.expr, None, bounds, {})
    return to_ir(ctx, e, "float")


def _pinned(ctx, idx, a: Assign):
    """The assignment at a pinpoint of real index `idx` under the counting measure, weighed 1 only
    for the inner coordinates where the point is a pinpoint of the slice (paper §4.2, Fig. 5).  A
    stored pinpoint of an outer level (`Access.pins`, tagged by `looplets.passes.spike_pass`) is
    one only where the access stores the inner coordinates too: P[x, j] with x outer, read at a j
    the point does not hold, is P's fill on both sides of x.  Unless the point is a pinpoint for
    every coordinate anyway (`Context.pin_test`: a leaf pinpoint there, or the other accesses'
    pieces isolate it, `looplets.pins`), the assignment is written where some tagged
    access stores a leaf (`PRESENT` of each tagged access), or nowhere when its fill makes the
    body a no-op (x * 0: then the weight does not matter)."""
    tagged = [t for t in walk_accesses(a.rhs) if idx in t.pins]
    sure = ctx.pin_test(idx)
    if not tagged or b.is_const(sure, True):
        return a
    fills = {id(t): getattr(getattr(t.tns, "level", None), "fill", None) for t in tagged}
    if None not in fills.values() and \
            simplify(a.with_(rhs=map_accesses(a.rhs, lambda t: Lit(fills[id(t)]) if id(t) in fills else t))) is None:
        return a
    # the presence is read through the tagged access itself: one cursor for its value and
    # its presence (a separate probe access doubled the cursors merged at every inner level)
    marked = {id(t): replace(t, tracked=True) for t in tagged}
    rhs = map_accesses(a.rhs, lambda t: marked.get(id(t), t))
    probes = [Call(PRESENT, (t,)) for t in marked.values()]
    present = probes if b.is_const(sure, False) else [Val(sure, "bool"), *probes]
    return a.with_(rhs=Call(MAYBE, (present[0] if len(present) == 1 else Call("or", tuple(present)), rhs)))


def _collapse_index_value(ctx, loop: Loop):
    """The body reads the index's value: on a continuous extent it must be a pinpoint (checked at
    run time unless proved); on an integer extent the points are enumerated."""
    idx, ext = loop.idx, loop.ext
    if ext.continuous:
        assigns = list(walk_assigns(loop.body))
        if assigns and all(a.measures.get(idx) == "counting" for a in assigns) \
                and not any(uses_index(a, idx) for a in walk_accesses(loop.body)):
            # the counting measure weighs an interval of positive length 0 (it counts finite
            # pinpoints only, `collapse`): the index value is needed only where it is one value.
            # Not when an access is shifted by the index (a Toeplitz A[x + y] in a loop inside):
            # there the partitions inside this extent may still be pinpoints in it
            body = subst_index(loop.body, idx, Val(ext.start.v, "float"))
            lower(ctx, Sieve(ext.finite_pinpoint(), Loop(idx, Extent(ext.start, ext.start, True), body)))
            return
        pin = ctx.pinpoint_test(ext)
        if b.is_const(pin, False):
            ops = sorted({describe(a.op) for a in walk_assigns(loop.body)})
            raise InvalidProgramError(
                f"the value of index {idx!r} is used on an interval of positive length: between the "
                f"pinpoints that should mask it, the body is not a no-op under reduction {'/'.join(ops)} "
                f"(a fill that does not annihilate, e.g. 0 under min or max); not supported yet — use "
                f"semiring '+' or a mask whose fill annihilates")
        ctx.fail_if(b.lnot(pin), ir.STATUS_INDEX_ON_INTERVAL)
        body = subst_index(loop.body, idx, Val(ext.start.v, "float"))
        lower(ctx, Loop(idx, Extent(ext.start, ext.start, True), body))
        return
    _enumerate(ctx, loop, subst=True)


def _enumerate(ctx, loop: Loop, subst=False):
    """Lower the body once per point of an integer extent (`subst`: with the index's value)."""
    idx, ext = loop.idx, loop.ext
    j = ir.Var(ctx.fresh(idx), ext.start.v.type, "let")
    point = SymLimit(ir.Read(j), b.i8(0))
    with ctx.block() as inner:
        body = subst_index(loop.body, idx, Val(ir.Read(j), "int")) if subst else loop.body
        lower(ctx, Loop(idx, Extent(point, point, False), body))
    ctx.emit(ir.For(j, ext.start.v, b.add(ext.stop.v, b.i64(1)), inner))


def emit_assign(ctx, a: Assign):
    if a.measures:
        raise InvalidProgramError(f"reduction indices {sorted(a.measures)} were never looped over")
    if isinstance(a.rhs, Call) and a.rhs.op == MAYBE:      # a value or missing: written where present
        present, value = a.rhs.args
        ctx.if_(to_ir(ctx, present, "bool"), lambda: emit_assign(ctx, a.with_(rhs=value)))
        return
    lhs = a.lhs
    if isinstance(lhs, Access) and isinstance(lhs.tns, ScalarOut):
        var = lhs.tns.var
        rhs = to_ir(ctx, a.rhs, lhs.tns.kind)
        ctx.assign(var, combine(a.op, ir.Read(var), rhs, ctx))
        return
    if isinstance(lhs, Access) and isinstance(lhs.tns, Hollow) and not lhs.idxs:
        h = lhs.tns
        rhs = to_ir(ctx, a.rhs, h.level.kind)
        if hasattr(h.level, "write_dirty"):          # the leaf decides whether the entry exists
            h.level.write_dirty(ctx, h.pos, a.op, rhs, h.dirty)
            return
        h.level.write_leaf(ctx, h.pos, a.op, rhs)
        if h.dirty is not None:
            # union reads hand out their gaps' fill as runtime values: writing the fill (⊕'s
            # identity, `check_output_format`) changes nothing, so it makes no entry
            ctx.assign(h.dirty, b.lor(ir.Read(h.dirty), b.ne(rhs, b.const(h.level.fill, rhs.type)))
                       if ctx.union_reads else b.TRUE)
        return
    raise InvalidProgramError(f"output {getattr(lhs, 'name', lhs)} could not be lowered to a write")


__all__ = ["lower", "resolve", "at_index", "collapse", "emit_assign", "Extent", "REDUCTIONS",
           "kind", "convert", "Lit"]
