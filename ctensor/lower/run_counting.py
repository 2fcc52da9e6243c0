"""The counting measure at a bound of an outer run-list level (paper §4.2, Fig. 5; issue 31).

A[x, i] with x outer, stored as a run list (SparseRunList, SparseInterval) above inner levels: a
point c of x counts for the inner coordinate i only where the partition of slice i is cut on both
sides of c.  Another access whose piece starts or stops at c cuts it for every i (its bounds in
`Context.pin_cuts`: OL, OR below); the run list's own bound at c cuts it only for the coordinates
stored by a run beside the bound, since a run that does not store i is the fill there, like a gap:

    weight(i) = (OL ∨ changesL(i)) ∧ (OR ∨ changesR(i))
    changesL(i) = run(c⁻) ≠ run(c) ∧ (stores(run(c⁻), i) ∨ stores(run(c), i))   (the right alike)

with run(p) the run holding the point p, or none, per run-list access (the reference
interpreter's `_isolated`).  A fill point where two open runs touch and a closed [c, c] run are
the cases where this differs between slices.

Where such a bound may lie at the point, the collapse locates the runs holding c⁻, c and c⁺
(`looplets.nodes.RunNeighbours`, a search of the fiber) and writes the body under
`MAYBE(weight, value)`; whether run k stores i is `PRESENT` of a probe access reading run k's child
fiber at the access's inner indices.  That weighted version of the body runs only where the
point is such a bound; the plain one elsewhere.  Not weighed, and still stopped with
STATUS_COUNT_AT_RUN_BOUND at such a point: an access that cannot locate its runs (a reversing
view of a SparseRunList), two run-list accesses at one index, one with a real inner index or
more than one inner index, a body below the point looping over other indices, or a point index
that is not the outermost loop (`MAX_LOCATED`, `MAX_INNER`: compile time), and the rare point where
another run-list access of the program has an empty fiber (no run to read a probe from).
"""
from __future__ import annotations

from dataclasses import replace
from functools import reduce

from ..extents import Extent, lim_eq
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I1, I64
from ..looplets.nodes import Fiber, FillLeaf
from .notation import Assign, Block, Call, Lit, Loop, Sieve, Val, map_accesses, walk_accesses
from .simplify import MAYBE, PRESENT, simplify
from .tile import SUFFIX as TILE_SUFFIX


# run-list accesses whose points are weighed per slice in one collapse: each reads the children of
# the runs beside the point through two probe accesses, whose inner steppers multiply the code of
# the merges below (a merge of k spike steppers has up to 2^k versions); with more, with a real
# index among the inner ones, or with more than MAX_INNER inner indices, the points are refused at
# run time (STATUS_COUNT_AT_RUN_BOUND)
MAX_LOCATED = 1
# inner levels below the run list: each is merged three times over (the access and two probes) in
# the weighted version; a nest of two sparse levels (SRL/BM/SLi) compiled in 10 s of CPU.  Nor
# may the body below the point loop over other indices, nor the point's index be inside another
# loop: the weighted version copies the body whole at every collapse site (a body with three more
# loops compiled in 32 s of CPU instead of 3; a run list at the third loop of five, in 17 s
# instead of 1.6: its collapse sites multiply with the versions of the loops outside)
MAX_INNER = 1


def count_at_point(ctx, idx: str, ext: Extent, a: Assign, point, pinned: Assign, memo: dict):
    """The assignment `a` (idx's measure dropped) at the extent `ext` of real index `idx` under the
    counting measure, where `point` (i1) says the extent is a point that counts and `pinned` is
    the assignment there with weight 1 for every coordinate (or as `lowerer._pinned` decided).
    `memo` is shared by the assignments of one collapse: the runs are located once, and
    `memo['on']` (set here) says where the weighted version must run; the collapse then maps its
    body again with `memo['weighted']` set, and this returns the weighted assignment.  Both
    versions are whole loop nests, so the plain one reads no probe."""
    plain = Sieve(point, pinned)
    if ctx.pin_sure.get(idx) is not None:
        return plain    # a spike's tail: `looplets.pins` decided (stored pinpoints of outer levels)
    names = ctx.run_levels.get(idx, set())
    if not names:
        return plain
    unlocated = set(ctx.run_unlocated.get(idx, set()))
    located = {key: reg for key, reg in ctx.run_around.get(idx, {}).items() if key[0] not in unlocated}
    # a probe with a real index inside would cut that index's partition where the program's
    # tensors do not (its runs' bounds), and be taken there for the access itself
    inner_real = any(ctx.index_kinds.get(i) == "real" for key in located for i in key[1])
    deep = any(len(key[1]) > MAX_INNER for key in located) or \
        any(set(_loop_indices(memo.get("body"))) - set(key[1]) for key in located) or \
        not _outermost(ctx.loop_order, idx)
    if len(located) > MAX_LOCATED or inner_real or deep:
        unlocated |= {key[0] for key in located}
        located = {}
    if len(located) == 1 and not unlocated and _noop_on_fill(a, names):
        # one run list: where it stores i at c, a side it bounds at c changes for i (the run there
        # stores i) and a side it does not bound is cut by another access; elsewhere it reads its
        # fill, where the body does nothing
        return plain
    cuts = ctx.pin_cuts.get(idx, [])
    c = ext.start

    def at_c(side, which):
        return reduce(b.lor, [lim_eq(lim, c) for name, s, lim in cuts if s in side and which(name)], b.FALSE)
    others_l = at_c(("start",), lambda n: n not in names)
    others_r = at_c(("stop",), lambda n: n not in names)
    others = b.land(others_l, others_r)
    fp = ext.finite_pinpoint()
    stuck = at_c(("start", "stop"), lambda n: n in unlocated)
    if not b.is_const(stuck, False) and not memo.get("weighted"):     # once per collapse
        ctx.fail_if(b.land(fp, b.land(stuck, b.lnot(others))), ir.STATUS_COUNT_AT_RUN_BOUND)
    own = at_c(("start", "stop"), lambda n: n in {k[0] for k in located})
    if b.is_const(own, False) or not located:
        return plain
    if "runs" not in memo:
        memo["runs"] = _locate(ctx, idx, c, ext, located, b.land(fp, b.land(own, b.lnot(others))))
    on, found = memo["runs"]
    if found is None:
        return plain
    memo["on"] = on
    if not memo.get("weighted"):
        return plain
    rhs, left, right = a.rhs, [], []
    for acc, nb, got in found:
        rhs, here = _present_here(rhs, acc, nb, got[1])
        left.append(_changes(acc, nb, got[0], got[1], here))
        right.append(_changes(acc, nb, got[2], got[1], here))
    weight = Call("and", (_or([Val(ctx.let(others_l, idx + "_ol"), "bool"), *left]),
                          _or([Val(ctx.let(others_r, idx + "_or"), "bool"), *right])))
    return Sieve(point, a.with_(rhs=Call(MAYBE, (weight, rhs))))


def _outermost(order, idx) -> bool:
    """Is `idx` the outermost loop, but for the tile loops of a grid (`lower.tile`) around it?"""
    before = order[:order.index(idx)] if idx in order else ()
    return all(i.endswith(TILE_SUFFIX) for i in before)


def _loop_indices(node):
    """The indices of the loops in a statement tree (the collapse's body)."""
    if isinstance(node, Loop):
        yield node.idx
        yield from _loop_indices(node.body)
    elif isinstance(node, Sieve):
        yield from _loop_indices(node.body)
    elif isinstance(node, Block):
        for st in node.stmts:
            yield from _loop_indices(st)


def _noop_on_fill(a: Assign, names) -> bool:
    """Is the body a no-op where every run-list access reads its fill?"""
    present = [t for t in walk_accesses(a.rhs) if t.name in names and isinstance(t.tns, (FillLeaf, Fiber))]
    fills = {id(t): t.tns.value if isinstance(t.tns, FillLeaf) else getattr(t.tns.level, "fill", None)
             for t in present}
    if not present or None in fills.values():
        return False
    return simplify(a.with_(rhs=map_accesses(a.rhs, lambda t: Lit(fills[id(t)]) if id(t) in fills else t))) is None


def _locate(ctx, idx, c, ext, located, cond):
    """Emit the search for the runs holding c⁻, c, c⁺ of every located access where `cond` holds;
    returns (i1: the weighted version runs, [(access, RunNeighbours, [(exists, run)] * 3)])."""
    regs = list(located.values())
    ok = reduce(b.land, [nb.nonempty(ctx) for _, nb in regs], b.TRUE)
    # another run list's empty fiber has no run to probe: refused there (rare: see the docstring)
    ctx.fail_if(b.land(cond, b.lnot(ok)), ir.STATUS_COUNT_AT_RUN_BOUND)
    on = ctx.let(b.land(cond, ok), idx + "_at_runs")
    if b.is_const(on, False):
        return on, None
    points = (ext.minus_unit(c), c, ext.plus_unit(c))
    # initialised at the kernel's entry: this code may sit in a guard that is if-converted to
    # selects (`Context.guard`), where a mutable declared here would read itself
    slots = [[(ctx.top_mut(I1, b.FALSE, f"{acc.name}_in{j}"), ctx.top_mut(I64, b.i64(0), f"{acc.name}_run{j}"))
              for j in range(3)] for acc, _ in regs]

    def search():
        for (acc, nb), row in zip(regs, slots):
            for p, (ex, k) in zip(points, row):
                e, q = nb.locate(ctx, p)
                ctx.assign(ex, e)
                ctx.assign(k, q)
    ctx.if_(on, search)
    found = []
    for (acc, nb), row in zip(regs, slots):
        got = [(ctx.let(ir.Read(ex), f"{acc.name}_in{j}"), ctx.let(ir.Read(k), f"{acc.name}_run{j}"))
               for j, (ex, k) in enumerate(row)]
        found.append((acc, nb, got))
    return on, found


def _present_here(rhs, acc, nb, at):
    """(rhs, notation of 'the run holding c stores the inner coordinates being read').  The access
    itself reads that run's child where it is a Fiber in `rhs` (the extent lies in the run): it is
    marked tracked and its presence read, one cursor for both (as `lowerer._pinned` does); where it
    is not (a gap, or simplified away), a probe reads the located run."""
    key = tuple(acc.idxs[1:])
    mine = [t for t in walk_accesses(rhs) if t.name == acc.name and tuple(t.idxs) == key and isinstance(t.tns, Fiber)]
    if len(mine) == 1:
        marked = replace(mine[0], tracked=True)
        rhs = map_accesses(rhs, lambda t: marked if t is mine[0] else t)
        return rhs, Call(PRESENT, (marked,))
    exists, k = at
    return rhs, Call("and", (Val(exists, "bool"), Call(PRESENT, (_probe(acc, nb, k),))))


def _changes(acc, nb, side, at, here):
    """Notation of 'the access changes piece between the point of `side` (c⁻ or c⁺) and c for the
    inner coordinates being read': the runs there differ and one of them stores them."""
    (e0, k0), (e1, k1) = side, at
    differ = b.lor(b.ne(e0, e1), b.land(b.land(e0, e1), b.ne(k0, k1)))
    there = Call("and", (Val(e0, "bool"), Call(PRESENT, (_probe(acc, nb, k0),))))
    return Call("and", (Val(differ, "bool"), _or([there, here])))


def _probe(acc, nb, k):
    """An access reading run k's child fiber at the access's inner indices, for its presence."""
    return replace(acc, tns=nb.fiber(k), idxs=tuple(acc.idxs[1:]), tracked=True, pins=frozenset(), union=False)


def _or(terms):
    return terms[0] if len(terms) == 1 else Call("or", tuple(terms))
