"""Expression nodes of the continuous einsum and their pointwise meaning (paper Fig. 3).

An expression is a tree of `Const`, `Access` (tensor read through affine indices), `IndexRef`
(a bare index used as a value) and `Op` nodes.  `eval_expr` evaluates it on one cell of the
partition, given the constant value of every access there.

Operator meaning (scalar, IEEE-754 double arithmetic, no Python exceptions):
  ``+ - * / **``, unary ``-``, ``sqrt``, ``abs``, ``exp``, ``log``      on floats (bools count as 0/1); x/0 = ±inf or nan
  ``& |``, ``and or``, ``not``                        logical, on the truth value of the operands
  ``< <= > >= == !=`` (chains allowed)               comparisons -> bool
  ``min(a, b, ..)``, ``max(a, b, ..)``                NaN propagates; bool if all args are bool
  ``a if c else b``                                   only the taken branch is evaluated (missing if c is)
  ``coalesce(a, b, ..)``                              the first operand that is not missing

``MISSING`` is what a permissive access (``A[~(i + 1)]``) reads outside its tensor's declared
integer extent (Finch: out-of-bounds reads give ``missing``).  It propagates through every
operator except ``coalesce`` — but an annihilator wins: ``0 * missing`` is 0, ``false & missing``
is false, ``min(-inf, missing)`` is -inf (the compiler's simplifier folds annihilators of the
fill before anything is known to be missing).  A cell whose value is missing contributes nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Const:
    value: float | bool


@dataclass(frozen=True)
class IndexRef:
    """A bare index used as a value: only meaningful on pinpoint or int cells (paper §4.3 (2))."""
    name: str


class _Missing:
    def __repr__(self):
        return "missing"


MISSING = _Missing()


@dataclass(frozen=True)
class Affine:
    """One access dimension: ``sum(scale * var for var, scale in terms) + offset``, read
    permissively (out-of-extent reads are ``MISSING``) when ``permissive``.  ``var``/``scale`` are
    the single term's (``var`` None for a constant dimension, or for an index sum)."""
    terms: tuple = ()         # ((var, scale), ...), scales non-zero
    offset: float = 0.0
    permissive: bool = False

    @property
    def var(self):
        return self.terms[0][0] if len(self.terms) == 1 else None

    @property
    def scale(self) -> float:
        return self.terms[0][1] if len(self.terms) == 1 else 1.0

    @property
    def vars(self) -> tuple:
        return tuple(v for v, _ in self.terms)


@dataclass(frozen=True)
class Access:
    tensor: str
    dims: tuple  # of Affine


@dataclass(frozen=True)
class Op:
    op: str
    args: tuple


def _f(x) -> np.float64:
    return np.float64(float(x))


def _num(fn):
    def run(*xs):
        with np.errstate(all="ignore"):
            return float(fn(*[_f(x) for x in xs]))
    return run


def _minmax(pick):
    def run(*xs):
        if any(not isinstance(x, bool) and math.isnan(x) for x in xs):
            return math.nan
        out = pick(xs)
        return out if all(isinstance(x, bool) for x in xs) else float(out)
    return run


OPS = {
    "add": _num(np.add), "sub": _num(np.subtract), "mul": _num(np.multiply),
    "div": _num(np.divide), "pow": _num(np.power), "neg": _num(np.negative),
    "pos": _num(lambda x: x), "sqrt": _num(np.sqrt), "abs": _num(np.abs),
    "exp": _num(np.exp), "log": _num(np.log),
    "and": lambda a, b: bool(a) and bool(b), "or": lambda a, b: bool(a) or bool(b),
    "not": lambda a: not bool(a),
    "lt": lambda a, b: float(a) < float(b), "le": lambda a, b: float(a) <= float(b),
    "gt": lambda a, b: float(a) > float(b), "ge": lambda a, b: float(a) >= float(b),
    "eq": lambda a, b: float(a) == float(b), "ne": lambda a, b: float(a) != float(b),
    "min": _minmax(min), "max": _minmax(max),
}
# the values that decide an operator whatever its other operands are (also over MISSING)
ANNIHILATORS = {"mul": (0.0,), "and": (False,), "or": (True,), "min": (-math.inf,), "max": (math.inf,)}


def _annihilates(op, x) -> bool:
    if x is MISSING or isinstance(x, float) and math.isnan(x):
        return False
    if op in ("and", "or"):
        return bool(x) == ANNIHILATORS[op][0]
    return op in ANNIHILATORS and float(x) == ANNIHILATORS[op][0]


def apply_op(op, xs):
    """Operator `op` on evaluated operands, with the MISSING rules of the module doc."""
    if op == "coalesce":
        return next((x for x in xs if x is not MISSING), MISSING)
    if any(x is MISSING for x in xs):
        hit = next((x for x in xs if x is not MISSING and _annihilates(op, x)), None)
        if hit is None:
            return MISSING
        return hit if op != "mul" else 0.0
    return OPS[op](*xs)


def walk(node):
    """All nodes of the tree, pre-order."""
    yield node
    if isinstance(node, Op):
        for a in node.args:
            yield from walk(a)


def eval_expr(node, access_value, index_value):
    """Evaluate `node`; `access_value(Access)` and `index_value(name)` supply the leaves."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Access):
        return access_value(node)
    if isinstance(node, IndexRef):
        return index_value(node.name)
    if isinstance(node, Op) and node.op == "ifelse":
        c, a, b = node.args
        c = eval_expr(c, access_value, index_value)
        return MISSING if c is MISSING else eval_expr(a if c else b, access_value, index_value)
    if isinstance(node, Op):
        return apply_op(node.op, [eval_expr(a, access_value, index_value) for a in node.args])
    raise TypeError(f"not an expression node: {node!r}")
