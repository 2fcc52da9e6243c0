"""Nested reductions: the boolean measure under a non-idempotent ⊕, and the output's type.

Continuous paper §3.2.2 and §7.2 (Fig. 22, the genomic Count): in
`C[i] = (Q[i, x] & D[j, x]) * d(x, j; boolean, counting)` the boolean measure on x is a
disjunction (∨ over a non-empty extent) and the counting measure on j a sum: C[i] = ∑_j ∨_x, the
number of intervals j that overlap query i.  A boolean measure is meaningful under any ⊕ this way:
under an idempotent ⊕ (or, and, min, max, an idempotent `ct.Semiring`) ∨ and ⊕ agree on the
extent's one value and every index reduces with ⊕ (as before); under a non-idempotent one (+, a
user semiring) the boolean-measure indices reduce with ∨ *innermost* — a boolean temporary per
point of the other indices, started false, ∨-accumulated over the inner loops and ⊕-added into the
output with the other indices' measures after them (`lower.nest.nested_nest`).  So

* ∨ reads the expression's truth value (a number x as x != 0, NaN true), as `|` reads its operands;
* the boolean indices are the innermost loops; the default order puts them there when the tensors'
  storage order allows it, and an `order=` that does not is refused (as is a program whose
  storage order forbids it: D[x, j] with j counted and x boolean; store D[j, x]);
* the other reduction indices are integer or measured by Lebesgue or a user measure (a counting
  real index outside ∨ is not lowered: its pinpoints would be decided per inner coordinate).
"""
from __future__ import annotations

from ..errors import InvalidProgramError
from ..lower.ops import REDUCTIONS
from .measure import Measure
from .semiring import Semiring, idempotent


def inner_indices(op, measures: dict) -> frozenset:
    """The indices reduced by ∨ inside the others: the boolean-measure ones under a
    non-idempotent ⊕ (empty otherwise)."""
    if op == "=" or idempotent(op):
        return frozenset()
    return frozenset(i for i, m in measures.items() if m == "boolean")


def output_type(op, rk: str, measures: dict, kinds: dict, text: str):
    """(⊕, output kind, fill) for ⊕ = op over an expression of kind rk.  Raises
    InvalidProgramError for a nested reduction (module docstring) it does not lower."""
    inner = inner_indices(op, measures)
    if inner:
        rk = "bool"              # ∨ of the expression's truth value: what the outer ⊕ adds
        for i, m in measures.items():
            if i not in inner and m == "counting" and kinds[i] == "real":
                raise InvalidProgramError(
                    f"the counting measure on the real index {i!r} outside the ∨ over {sorted(inner)} in {text!r} "
                    "is not lowered (its pinpoints would be decided per inner coordinate)")
        measures = {i: m for i, m in measures.items() if i not in inner}
    if isinstance(op, Semiring):
        lengths = any(m == "lebesgue" or isinstance(m, Measure) for m in measures.values())
        out_kind = op.out_kind(rk, lengths)
    elif op == "+":
        if measures:
            out_kind = "float" if rk == "float" or any(m == "lebesgue" or isinstance(m, Measure)
                                                       for m in measures.values()) else "int"
        else:
            out_kind = rk
            if rk == "bool":
                op = "or"
    elif op in ("or", "and"):
        out_kind = "bool"
    else:
        out_kind = "float"
    fill = op.zero if isinstance(op, Semiring) else REDUCTIONS[op][0]
    fill = bool(fill) if out_kind == "bool" else (float(fill) if out_kind == "float" else int(fill))
    return op, out_kind, fill


def innermost(lay, order, inner: frozenset, text: str):
    """`lay(order)` -> (order, rhs), the loop order chosen or checked by `lang.program`, with the
    indices `inner` as its innermost loops.  Raises InvalidProgramError when `order=` puts another
    loop inside them, or when no order the tensors allow does."""
    got, rhs = lay(order)
    if not inner or set(got[len(got) - len(inner):]) == inner:
        return got, rhs
    why = (f"the boolean measure's indices {sorted(inner)} reduce with ∨ inside the other indices "
           f"(∑ over those of ∨ over these, in {text!r}), so they must be the innermost loops")
    if order is not None:
        raise InvalidProgramError(f"order={list(order)}: {why}; pass an order= ending with them")
    moved = [i for i in got if i not in inner] + [i for i in got if i in inner]
    try:
        return lay(moved)
    except InvalidProgramError as e:
        raise InvalidProgramError(f"{why}, but no loop order the tensors' storage order allows does ({e}); "
                                  "store the tensors with those indices last") from None
