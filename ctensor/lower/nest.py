"""The loop nest of an einsum, with loop fission of a sum under an additive reduction.

`for i: for x, j: C[i] += A*S - B*E` becomes `for i: {for x, j: C[i] += A*S; for x, j: C[i] += -1*B*E}`
when every output mode is random-access (Dense, or a scalar), so both nests may write the same
output position, and the reduction is + with either
- integers and counting measures: it distributes over the terms exactly (no rounding, no
  infinities; `lower.program_notation.counting_additive` checks the pinpoints), or
- floats and Lebesgue or counting measures on the real indices (counting: pinned as for
  integers): exact up to rounding while every term's integral is finite.  Terms can cancel
  pointwise on an unbounded run (1 + -1 over (-inf, 0) is 0, split it is inf - inf), so the
  caller (`runtime.kernel.Kernel`) recomputes a non-finite result without fission.
Products distribute over sums first (`expanded_terms`: `A*(P0 + P1)` is `A*P0 + A*P1`).
Each term then lowers on its own: a term whose loop is a single counting stepper collapses to a
position difference (`ctensor.looplets.count`), and the code grows linearly in the terms instead
of with every combination of their cursors' states.

A long ⊕-chain (+/-, or, min, max) of tensor accesses reads them by the union protocol
(`mark_unions`, `ctensor.formats.run_union`): one loop, code linear in the terms.  One pass over
k unions of runs read the usual way has a case for every combination of "in a run / in a gap" of
the k cursors, 2**k code paths (k = 6 took seconds to compile).  A pointwise ⊕ whose terms are
not all read that way (`C[x] = A[x]*B[x] + D[x]*E[x] + …`, no reduction index) splits instead,
at the loop of the output's last index: its fiber is written once per term, and the runtime
⊕-merges the passes (`runtime.merge_output`) — exact for or/min/max, and for + up to the order
of the float additions.
"""
from __future__ import annotations

from dataclasses import replace

from ..formats.affine import VAffine
from ..formats.dense import Dense
from ..formats.sparse_byte_map import SparseByteMap
from ..formats.sparse_list import SparseList
from ..formats.sparse_run_list import SparseRunList
from .notation import Access, Assign, Block, Call, Lit, Loop, Sieve, Val, map_accesses, walk_accesses

# a ⊕-chain with this many tensor accesses reads them by the union protocol (`formats.run_union`)
UNION_MIN = 4
_FAMILY = {"+": "+", "-": "+", "or": "or", "min": "min", "max": "max"}


def sum_terms(e) -> list:
    """Split an expression into additive terms; a subtracted term is multiplied by -1."""
    if isinstance(e, Call) and e.op == "+" and len(e.args) == 2:
        return sum_terms(e.args[0]) + sum_terms(e.args[1])
    if isinstance(e, Call) and e.op == "-" and len(e.args) == 2:
        return sum_terms(e.args[0]) + [Call("*", (Lit(-1), t)) for t in sum_terms(e.args[1])]
    return [e]


# a product of sums expands into at most this many terms for fission (`expanded_terms`)
EXPAND_MAX = 32


def expanded_terms(e) -> list:
    """The additive terms of e with products distributed over sums (`A*(B - C)` -> A*B, -1*A*C),
    for a sum split into one nest per term; `sum_terms(e)` when that makes more than EXPAND_MAX
    terms.  `lower.program_notation.counting_additive` expands the parsed program alike."""
    def go(e):
        if isinstance(e, Call) and e.op in ("+", "-") and len(e.args) == 2:
            a, c = go(e.args[0]), go(e.args[1])
            return None if a is None or c is None else \
                a + (c if e.op == "+" else [Call("*", (Lit(-1), t)) for t in c])
        if isinstance(e, Call) and e.op == "*":
            out = [None]
            for arg in e.args:
                ts = go(arg)
                if ts is None or len(out) * len(ts) > EXPAND_MAX:
                    return None
                out = [t if p is None else Call("*", (p, t)) for p in out for t in ts]
            return out
        return [e]
    terms = go(e)
    return sum_terms(e) if terms is None else terms


def reduction_terms(e, op) -> list:
    """The terms the top-level ⊕ of an expression combines, for the reduction op: `a + b` and
    `a - b` (as a + -1*b) for +, `a | b` for or, `min(a, b, ..)` for min, `max(..)` for max."""
    if op == "+":
        return sum_terms(e)
    if op in ("or", "min", "max") and isinstance(e, Call) and e.op == op:
        return [t for a in e.args for t in reduction_terms(a, op)]
    return [e]


def loop_nest(order, extents, lhs, op, rhs, measures, terms=None, split_at=None):
    """Loops over `order` (outermost first) around `lhs op= rhs`; integer loops are guarded by a
    non-empty test of their extent.  extents: index -> Extent.  terms, split_at: `lhs op= t` for
    each term t in its own nest of the loops order[split_at:] (see the module docstring); None or
    one term: no split."""
    def wrap(idxs, stmt):
        return _wrap(idxs, stmt, extents)

    if split_at is None or terms is None or len(terms) < 2:
        return wrap(order, Assign(lhs, op, rhs, dict(measures)))
    inner = Block([wrap(order[split_at:], Assign(lhs, op, t, dict(measures))) for t in terms])
    return wrap(order[:split_at], inner)


def _wrap(idxs, stmt, extents):
    for i in reversed(idxs):
        ext = extents[i]
        stmt = Loop(i, ext, stmt)
        if not ext.continuous:
            stmt = Sieve(ext.nonempty(), stmt)
    return stmt


def nested_nest(order, extents, lhs, op, rhs, measures, inner, any_, false_adds_nothing):
    """`lhs op= (∨ over the indices `inner` of rhs)` weighed by the other measures (`lang.nesting`:
    ∑_j ∨_x): the indices `inner` are the innermost loops of `order`; per point of the others the
    boolean temporary `any_` (an Access of a `ScalarOut`) is set false, ∨-accumulated by the inner
    loops, then ⊕-added into lhs, where the collapse of the outer loops weighs it.
    `false_adds_nothing`: false (0) is ⊕'s identity, so the add is made only where `any_` is true
    (`MAYBE`): an output entry is written for the points that have one, as in a single nest."""
    from .simplify import MAYBE
    outer = [i for i in order if i not in inner]
    hit = Val(_read(any_.tns.var), "bool")
    body = Block([Assign(any_, "=", Lit(False), {}),
                  _wrap(order[len(outer):], Assign(any_, "or", rhs, {i: m for i, m in measures.items() if i in inner}),
                        extents),
                  Assign(lhs, op, Call(MAYBE, (hit, hit)) if false_adds_nothing else hit,
                         {i: m for i, m in measures.items() if i not in inner})])
    return _wrap(outer, body, extents)


def _read(var):
    from ..ir import nodes as ir
    return ir.Read(var)


def _operand(t):
    """The one non-constant operand under functions of it and constants (`-T[x]`, `2 * T[x]`,
    the truthiness test `T[x] != 0` of `|`): its fill still makes no cursor state to combine."""
    while isinstance(t, Call):
        live = [a for a in t.args if not isinstance(a, (Lit, Val))]
        if len(live) != 1:
            break
        t = live[0]
    return t


def mark_unions(rhs):
    """Mark the accesses that are terms of a long chain of +/-, or, min or max (`UNION_MIN` or
    more, possibly under functions of them and constants, `_operand`): the chain does not
    annihilate their fills, so sparse skipping gains nothing there, and reading them by the union
    protocol keeps the code linear in the terms.  The level decides whether it can
    (`unfurl_union`)."""
    marked = set()

    def chain(e, fam):
        if isinstance(e, Call) and _FAMILY.get(e.op) == fam:
            return [t for a in e.args for t in chain(a, fam)]
        return [e]

    def visit(e):
        if not isinstance(e, Call):
            return
        fam = _FAMILY.get(e.op)
        terms = chain(e, fam) if fam else list(e.args)
        accs = [_operand(t) for t in terms]
        accs = [a for a in accs if isinstance(a, Access) and a.idxs]
        if fam and len(accs) >= UNION_MIN:
            marked.update(id(a) for a in accs)
        for t in terms:
            visit(_operand(t))
    visit(rhs)
    return map_accesses(rhs, lambda a: replace(a, union=True) if id(a) in marked else a)


def mark_all_unions(rhs, tensors):
    """Mark every union-readable access (`_union_level`) of an expression that mixes UNION_MIN or
    more of them under operators that do not all annihilate (`A*B + B*C + ...` under a counting or
    boolean measure or a max semiring, which no split into per-term passes applies to): merged one
    cursor state against another, the code grew exponentially in the accesses (3 products: 5 s to
    compile, 4: a minute).  Read by the union protocol, each is one stepper of runtime-valued chunks
    and the code is linear; what is lost is the skipping of a factor's gaps where another factor is
    zero.  A product (or &) chain whose factors are such accesses with fill 0, or free of them, is
    left alone: its fills annihilate, so it merges without that growth.  Other
    accesses (Dense vectors, id levels, intervals sets) make no such state and are not counted."""
    accs = [a for a in walk_accesses(rhs) if a.idxs and not a.union and _union_level(a, tensors)]
    if len(accs) < UNION_MIN or _product_chain(rhs, {id(a) for a in accs}, tensors):
        return rhs
    ids = {id(a) for a in accs}
    return map_accesses(rhs, lambda a: replace(a, union=True) if id(a) in ids else a)


def _product_chain(e, ids, tensors) -> bool:
    """Is `e` a chain of * or & whose fills annihilate: each factor holding one of the accesses
    `ids` is that access, of a tensor whose fill is 0 (or False)?  (`T + 6` or a fill of 1 does not
    annihilate: a product of such factors grew exponentially too.)"""
    if not isinstance(e, Call) or e.op not in ("*", "and"):
        return False
    todo = [e]
    while todo:
        t = todo.pop()
        if isinstance(t, Call) and t.op == e.op:
            todo.extend(t.args)
        elif any(id(a) in ids for a in walk_accesses(t)) and not (
                isinstance(t, Access) and id(t) in ids and tensors[t.name].fill == 0):
            return False
    return True


def _union_level(a, tensors) -> bool:
    """Can access `a` be read by the union protocol: its tensor's levels are Dense or SparseByteMap
    (read by id, `VSparseByteMap.unfurl_union`) down to a SparseRunList or a SparseList of real
    pinpoints holding the leaf, read plainly or with an affine map on that last, real, mode only
    (`VAffine.unfurl_union`)?"""
    modes = tensors[a.name].modes()
    lvl = getattr(a.tns, "level", None)
    if isinstance(lvl, VAffine) and any(d != len(modes) - 1 for d, m in lvl.maps.items() if not m.identity):
        return False
    last = modes[-1]
    return all(isinstance(m, (Dense, SparseByteMap)) for m in modes[:-1]) and getattr(last.child, "is_leaf", False) \
        and (isinstance(last, SparseRunList) or isinstance(last, SparseList) and last.coord == "real")


def union_read(term, tensors) -> bool:
    """Will this term of a ⊕-chain lower with no cursor state of its own to combine: no tensor
    access (a literal, a scalar), or an access marked by `mark_unions` whose levels are Dense or
    SparseByteMap down to a SparseRunList or a SparseList of real pinpoints holding the leaf
    (`_union_level`)?
    A chain of such terms compiles to linear code in one pass, so it is not
    split (`runtime.kernel`)."""
    accs = list(walk_accesses(term))
    if not accs:
        return True
    a = accs[0]
    term = _operand(term)
    return len(accs) == 1 and a is term and a.union and _union_level(a, tensors)
