"""Keyword arguments of `ct.compile` / `ct.einsum` / a kernel call: tensors, scalars, user measures."""
from __future__ import annotations

from ..errors import FormatError, InvalidProgramError
from ..formats.element import kind_of_value
from ..formats.tensor import Tensor
from ..lang.measure import Measure
from ..lang.program import accesses, scalar_names


def scalar_kind(name, v) -> str:
    """'bool', 'int' or 'float' for a scalar argument (the kinds of leaf values,
    `formats.element.kind_of_value`); TypeError for anything else."""
    try:
        return kind_of_value(v)
    except FormatError:
        raise TypeError(f"argument {name!r} must be a ct.Tensor, a number or a ct.Measure, "
                        f"got {type(v).__name__}") from None


def split_args(kwargs):
    """(tensors, scalars) of the keyword arguments, scalars as name -> (value, kind); user measures
    (`ct.Measure`) are skipped (`user_measures`).  Raises TypeError for any other argument."""
    tensors, scalars = {}, {}
    for k, v in kwargs.items():
        if isinstance(v, Measure):
            continue
        if isinstance(v, Tensor):
            tensors[k] = v
            continue
        kind = scalar_kind(k, v)
        scalars[k] = ({"bool": bool, "int": int, "float": float}[kind](v), kind)
    return tensors, scalars


def user_measures(kwargs) -> dict:
    """The `ct.Measure` keyword arguments: name -> Measure (named in d(...))."""
    return {k: v for k, v in kwargs.items() if isinstance(v, Measure)}


def read_args(es, plan, tensors, scalars):
    """The tensors and scalars the program reads (others are ignored, at compile time and in calls:
    the kernel neither records nor requires them).  A scalar named like a loop index would be
    ignored too (the index wins), which is refused: InvalidProgramError."""
    clash = sorted(set(scalars) & set(plan.kinds))
    if clash:
        raise InvalidProgramError(f"{clash[0]!r} is a loop index of {es.text!r}; it cannot also be passed "
                                  f"as a scalar ({clash[0]}={scalars[clash[0]][0]!r})")
    read = {a.tensor for a in accesses(es.rhs)} | set(scalar_names(plan.rhs))
    return ({k: v for k, v in tensors.items() if k in read}, {k: v for k, v in scalars.items() if k in read})
