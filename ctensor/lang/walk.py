"""Walks over a parsed einsum's right-hand side (`lang.nodes`): its accesses and scalar names,
the binding of loop indices, the value kind (bool / int / float) of a subexpression, and the
logical reading of `& | ^`."""
from __future__ import annotations

from ..lower.ops import RANK, small_power
from .affine import scalar_names as dim_scalar_names
from .nodes import EAccess, ECall, EIndex, ELit, EScalar


def accesses(e):
    if isinstance(e, EAccess):
        yield e
    elif isinstance(e, ECall):
        for a in e.args:
            yield from accesses(a)


def scalar_names(e):
    """Scalar names read by an expression, including those in access dimensions (A[a*x + c])."""
    if isinstance(e, EScalar):
        yield e.name
    elif isinstance(e, ECall):
        for a in e.args:
            yield from scalar_names(a)
    elif isinstance(e, EAccess):
        for d in e.dims:
            yield from dim_scalar_names(d)


def bind_indices(e, kinds):
    """Names that are loop indices denote index values (EIndex), not scalars."""
    if isinstance(e, EScalar) and e.name in kinds:
        return EIndex(e.name)
    if isinstance(e, ECall):
        return ECall(e.op, tuple(bind_indices(a, kinds) for a in e.args))
    return e


def value_kind(e, tensors, scalars, kinds=None) -> str:
    if isinstance(e, ELit):
        v = e.value
        return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"
    if isinstance(e, EScalar):
        return scalars[e.name][1]
    if isinstance(e, EAccess):
        return tensors[e.tensor].leaf_kind
    if isinstance(e, EIndex):
        return "int" if kinds and kinds.get(e.name) == "int" else "float"
    ks = [value_kind(a, tensors, scalars, kinds) for a in e.args]
    if e.op == "ifelse":
        return max(ks[1:], key=RANK.get)
    if e.op in ("lt", "le", "gt", "ge", "eq", "ne", "not"):
        return "bool"
    if e.op in ("/", "sqrt", "exp", "log") or e.op == "**" and not small_power(e.args[1]):
        return "float"
    if e.op == "*" and all(k == "bool" for k in ks):
        return "bool"
    if e.op in ("+", "-", "neg") and all(k == "bool" for k in ks):
        return "int"
    return max(ks, key=RANK.get)


def logical(e, tensors, scalars, kinds):
    """`& | ^` (and `and`/`or`) are logical, as the paper's `&&`: a non-bool operand stands for
    its truth value (`x != 0`), so they never act bitwise on integers or truncate floats."""
    if not isinstance(e, ECall):
        return e
    args = tuple(logical(a, tensors, scalars, kinds) for a in e.args)
    if e.op in ("and", "or", "xor"):
        args = tuple(a if value_kind(a, tensors, scalars, kinds) == "bool" else ECall("ne", (a, ELit(0)))
                     for a in args)
    return ECall(e.op, args)


__all__ = ["accesses", "bind_indices", "logical", "scalar_names", "value_kind"]
