"""The loop nest of an einsum, with loop fission of a sum under an additive reduction.

`for i: for x, j: C[i] += A*S - B*E` becomes `for i: {for x, j: C[i] += A*S; for x, j: C[i] += -1*B*E}`
when every output mode is random-access (Dense, or a scalar), so both nests may write the same
output position, and the reduction is + with either
- integers and counting measures: it distributes over the terms exactly (no rounding, no
  infinities; `lower.program_notation.counting_additive` checks the pinpoints), or
- floats and Lebesgue measures on the real indices: exact up to rounding while every term's
  integral is finite.  Terms can cancel pointwise on an unbounded run (1 + -1 over (-inf, 0) is 0,
  split it is inf - inf), so the caller (`runtime.kernel.Kernel`) recomputes a non-finite result
  without fission.
Each term then lowers on its own: a term whose loop is a single counting stepper collapses to a
position difference (`ctensor.looplets.count`), and the code grows linearly in the terms instead
of with every combination of their cursors' states.
"""
from __future__ import annotations

from .notation import Assign, Block, Call, Lit, Loop, Sieve


def sum_terms(e) -> list:
    """Split an expression into additive terms; a subtracted term is multiplied by -1."""
    if isinstance(e, Call) and e.op == "+" and len(e.args) == 2:
        return sum_terms(e.args[0]) + sum_terms(e.args[1])
    if isinstance(e, Call) and e.op == "-" and len(e.args) == 2:
        return sum_terms(e.args[0]) + [Call("*", (Lit(-1), t)) for t in sum_terms(e.args[1])]
    return [e]


def loop_nest(order, extents, out_idxs, lhs, op, rhs, measures, fissionable: bool):
    """Loops over `order` (outermost first) around `lhs op= rhs`; integer loops are guarded by a
    non-empty test of their extent.  extents: index -> Extent.  fissionable: the sum may be split
    (see the module docstring)."""
    def wrap(idxs, stmt):
        for i in reversed(idxs):
            ext = extents[i]
            stmt = Loop(i, ext, stmt)
            if not ext.continuous:
                stmt = Sieve(ext.nonempty(), stmt)
        return stmt

    p = 0
    while p < len(order) and order[p] in out_idxs:
        p += 1
    terms = sum_terms(rhs) if op == "+" and fissionable and p < len(order) else [rhs]
    if len(terms) == 1:
        return wrap(order, Assign(lhs, op, rhs, dict(measures)))
    inner = Block([wrap(order[p:], Assign(lhs, op, t, dict(measures))) for t in terms])
    return wrap(order[:p], inner)
