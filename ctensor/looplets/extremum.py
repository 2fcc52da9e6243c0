"""Extremum collapse of a stepper: a min (or max) reduction of a value monotone in the index, masked
by a pinpoint level whose leaves are all true, is the value at the first (or last) stored coordinate
of the extent — found by a search, no loop over the coordinates.

    for x in [a, b]: for j: out min= (f(x) if (S[x, j] & rest) else inf)    (counting/boolean over x, j)
    ==>  if S stores a leaf at some x in [a, b]:  out min= (f(c) if rest else inf)

with f non-decreasing in x and c the first such coordinate (the last one for a non-increasing f, and
the other way round for max); `rest` and f are free of j, `rest` is free of x.  This is the (min,+)
nearest-neighbour step: "the first data start at or after the query end" (bedtools `closest`, the
continuous paper §7.2) in O(log n) per query, done by the compiler instead of a hand-written search.
Only stored coordinates whose subtree holds a leaf count: a level with empty child fibers is skipped
over by the level's `extremum` (see `SparseList`).
"""
from __future__ import annotations

from ..lower.notation import (Access, Assign, Call, Idx, Lit, Loop, Sieve, Val, subst_index, uses_index,
                              walk_accesses)
from ..lower.ops import REDUCTIONS
from .count import free_of, operands, reduction_nest, resieve


def monotone(e, idx):
    """+1 if e is non-decreasing in index idx, -1 if non-increasing, 0 if free of it, None if unknown."""
    if not uses_index(e, idx):
        return 0
    if isinstance(e, Idx):
        return 1
    if not isinstance(e, Call):
        return None
    signs = [monotone(a, idx) for a in e.args]
    if None in signs:
        return None
    if e.op == "-" and len(signs) == 2:
        signs = [signs[0], -signs[1]]
    elif e.op == "neg":
        signs = [-signs[0]]
    elif e.op == "*":
        consts = [a for a in e.args if isinstance(a, Lit) and not isinstance(a.value, bool)]
        if len(e.args) != 2 or len(consts) != 1 or consts[0].value == 0:
            return None
        s = max(signs, key=abs)
        return s if consts[0].value > 0 else -s
    elif e.op not in ("+", "min", "max"):
        return None
    nz = {s for s in signs if s}
    return nz.pop() if len(nz) == 1 else None


def try_extremum_collapse(ctx, loop: Loop, acc: Access) -> bool:
    """Emit the collapse and return True when `loop` has the shape above; emit nothing otherwise."""
    extremum = getattr(acc.tns, "extremum", None)
    if extremum is None:
        return False
    body, idxs, sieves = reduction_nest(loop)
    if not isinstance(body, Assign) or body.op not in ("min", "max") or tuple(acc.idxs) != tuple(idxs):
        return False
    if any(body.measures.get(i) not in ("counting", "boolean") for i in idxs):
        return False
    ident = REDUCTIONS[body.op][0]
    rhs = body.rhs
    if not (isinstance(rhs, Call) and rhs.op == "ifelse" and isinstance(rhs.args[2], Lit)
            and rhs.args[2].value == ident):
        return False
    cond, val = rhs.args[0], rhs.args[1]
    conds = operands(cond, ("and", "*"))
    if sum(c is acc for c in conds) != 1 or any(c is not acc and not free_of(c, idxs) for c in conds):
        return False
    if not free_of(val, idxs[1:]) or any(loop.idx in a.idxs for a in walk_accesses(val)):
        return False
    mono = monotone(val, loop.idx)
    if mono is None:
        return False
    which = "first" if (mono >= 0) == (body.op == "min") else "last"
    found, coord = extremum(ctx, loop.ext, which)
    dtype = "float" if loop.ext.continuous else "int"
    rest = [c for c in conds if c is not acc]
    stmt = body.with_(rhs=val, measures={k: v for k, v in body.measures.items() if k not in idxs})
    stmt = subst_index(stmt, loop.idx, Val(coord, dtype))
    if rest:
        mask = rest[0]
        for c in rest[1:]:
            mask = Call("and", (mask, c))
        stmt = stmt.with_(rhs=Call("ifelse", (mask, stmt.rhs, Lit(ident))))
    from ..lower.lowerer import lower
    lower(ctx, resieve(Sieve(found, stmt), sieves))
    return True

