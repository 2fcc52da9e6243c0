"""Counting collapse of a stepper: a sum under the counting measure of a pinpoint level whose leaves
are all true is a difference of positions, found by two searches — no loop over the coordinates.

    for x in [a, b]: for j: out += S[x, j] * rest      (counting over x and j, rest free of x, j)
    ==>  out += (C(hi) - C(lo)) * rest

where lo/hi are the first stored coordinates >= a and > b, and C(q) is the number of leaves below
position q (for SparseList(SparseList(Pattern)) the child's ptr[q]).  This is how a sorted list of
interval starts answers "how many starts lie in [a, b]" in O(log n) (the genomics count of the
continuous paper §7.2, done by the compiler instead of a Grid tensor).  Searches gallop from a finger
kept across calls, so sorted queries cost O(1) each.
"""
from __future__ import annotations

from ..lower.notation import (
    Access,
    Assign,
    Call,
    Count,
    Loop,
    Sieve,
    uses_index,
    walk_accesses,
)
from ..lower.tile import is_piece


def operands(e, ops=("*",)):
    """The operands of a chain of the associative operators `ops` (a product by default)."""
    if isinstance(e, Call) and e.op in ops:
        out = []
        for a in e.args:
            out.extend(operands(a, ops))
        return out
    return [e]


def reduction_nest(loop: Loop):
    """(innermost statement, indices looped over, sieve conditions met on the way) of a loop nest;
    the sieves are kept by a collapse: they guard the inner loops (e.g. a non-empty shape).  The
    statement is None when an inner loop runs over a tile piece only (`lower.tile`): a collapse
    counting whole subtrees would ignore that restriction."""
    body, idxs, sieves = loop.body, [loop.idx], []
    while isinstance(body, (Loop, Sieve)):
        if isinstance(body, Loop):
            if is_piece(body.ext):
                return None, idxs, sieves
            idxs.append(body.idx)
        else:
            sieves.append(body.cond)
        body = body.body
    return body, idxs, sieves


def resieve(stmt, sieves):
    for c in reversed(sieves):
        stmt = Sieve(c, stmt)
    return stmt


def free_of(e, idxs) -> bool:
    if any(uses_index(e, i) for i in idxs):
        return False
    return not any(set(a.idxs) & set(idxs) for a in walk_accesses(e))


def try_count_collapse(ctx, loop: Loop, acc: Access) -> bool:
    """Emit the collapse and return True when `loop` has the shape above; emit nothing otherwise."""
    count = getattr(acc.tns, "count", None)
    if count is None:
        return False
    body, idxs, sieves = reduction_nest(loop)
    if not isinstance(body, Assign) or body.op != "+" or tuple(acc.idxs) != tuple(idxs):
        return False
    if any(body.measures.get(i) != "counting" for i in idxs):
        return False
    factors = operands(body.rhs)
    if sum(f is acc for f in factors) != 1 or any(f is not acc and not free_of(f, idxs) for f in factors):
        return False
    n = count(ctx, loop.ext)
    rhs = Count(n, "int")      # the count times the first factor is checked for int64 overflow
    for f in factors:
        if f is not acc:
            rhs = Call("*", (rhs, f))
    stmt = body.with_(rhs=rhs, measures={k: v for k, v in body.measures.items() if k not in idxs})
    from ..lower.lowerer import lower
    lower(ctx, resieve(stmt, sieves))
    return True
