"""Diagonal accesses `B[x, x]` (paper Fig. 2 grammar: an access lists index expressions, an index
may repeat).  The loop order lowers both dimensions at the loop of x (`program._lowering`): the
outer level is unfurled first, and inside each of its pieces the child fiber is read at x again,
so `B[x, x]` is the function x -> B(x, x), cut where either level cuts.

What is not lowered: the counting measure on a real diagonal index where the access's fill does
not make the term a no-op (a factor with fill 0, under a reduction whose identity is 0).  There a
stored pinpoint c of the outer level is a pinpoint of x -> B(x, x) only if the child stores c too,
and the spike tagging that decides this per inner coordinate (`looplets.pins`) assumes the inner
levels are read at other indices: refused rather than answered wrong.
"""
from __future__ import annotations

from ..errors import InvalidProgramError
from .nodes import EAccess, product_factors


def diagonal_indices(acc: EAccess) -> set:
    """Indices read alone (plainly or through an affine map: B[x, 2*x]) by two or more dimensions
    of `acc`."""
    alone = [d.terms[0][1] for d in acc.dims if len(d.terms) == 1]
    return {i for i in alone if alone.count(i) > 1}


def check_diagonal(rhs, accs, kinds, measures, tensors, text, op):
    """Refuse a real diagonal index under the counting measure unless each diagonal access is a
    factor of the product whose fill is 0 / False and 0 is ⊕'s identity (so its fill points add
    nothing: under max a fill point would add 0)."""
    from .semiring import identity
    factors = product_factors(rhs)
    zero_adds_nothing = identity(op) in (0, False)
    for acc in accs:
        diag = diagonal_indices(acc)
        if diag and any(getattr(lv, "tile", False) for lv in tensors[acc.tensor].levels()):
            raise InvalidProgramError(
                f"{acc} in {text!r}: a diagonal read of a tensor stored under UniformGrid levels is not lowered "
                f"(the tile loops bin each mode once); store {acc.tensor} without grid levels for this program")
        for i in diag:
            if kinds.get(i) != "real" or measures.get(i) != "counting":
                continue
            fill = getattr(tensors[acc.tensor].levels()[-1], "fill", None)
            if not any(f is acc for f in factors) or fill not in (0, False) or not zero_adds_nothing:
                raise InvalidProgramError(
                    f"{acc} in {text!r}: a diagonal access on real index {i!r} under the counting measure is "
                    f"lowered only as a factor of the product with fill 0 under a reduction whose identity is 0 "
                    f"(not lowered: whether a stored point of {acc.tensor}'s outer level is a pinpoint of the "
                    f"diagonal depends on its child storing it)")
