"""Semirings and measures of the oracle (paper §3.2.1–3.2.2, §4.2 step 2; DESIGN.md §2).

Semirings (name: ⊕, identity = output fill):
  ``"+"``   (+, ×)  fill 0.0      ``"or"``  (∨, ∧)  fill False
  ``"min"`` ⊕=min   fill +inf     ``"max"`` ⊕=max   fill −inf
Default: ``"or"`` when the program reduces and every reduction index's measure is ``boolean``
(an int index without one in d(...) counts: it is not), else ``"+"``.

Measures, as weights of one elementary cell along one reduction axis:
  ``lebesgue``  real axis only: hi.v − lo.v with ε dropped (pinpoint 0, ray inf)
  ``counting``  1 on a pinpoint or an int coordinate, 0 on an interval of positive length
                (ctensor's convention, not the paper's ∞); inf on `OTHER`, the set of all
                (infinitely many) int coordinates that no piece uses.  This convention is not
                additive (count([a,b)) = 0 but count({a}) = 1), so on a real axis "pinpoint"
                means a pinpoint *Fig. 5 partition*, not a pinpoint elementary cell: the
                caller passes ``isolated`` (see `evaluate._isolated`)
  ``boolean``   1 on any non-empty cell (idempotent semirings only)

Contribution of one cell with expression value v and weights w1..wk:
  ``"+"``: 0 if some wi == 0 (measure-zero cell, whatever v is, even nan or inf) or v == 0
         (so 0 × ∞ = 0), else float(v) × Π wi.  With no reduction index it is v itself.
  idempotent (``or/min/max``): v (as bool for ``or``, float otherwise) iff every wi != 0, else
         nothing; the size of the weight does not matter since x ⊕ x = x.

User semirings (`UserSemiring`: a Python ⊕ add(a, b), its identity zero, idempotent, and
optionally repeat(a, w) = a ⊕ ... ⊕ a "w times"): a cell of value v and weights w1..wk adds
nothing if some wi == 0 or v == zero; else v if idempotent or W = Π wi == 1, else repeat(v, W),
else (no repeat) v ⊕-added W times when W is a finite integer (a run of int coordinates, `OTHER`
weighing the number of unused coordinates when the index's size is known), else ValueError.

Nested reductions (paper §3.2.2, §7.2 Count): under a non-idempotent ⊕ (``"+"`` or a user one)
the ``boolean`` indices reduce with ∨ first, per point of the other indices, and that truth value
is then ⊕-added with the other indices' weights (`evaluate._evaluate`): ∑_j ∨_x.
"""
from __future__ import annotations

import math

from .endpoints import is_pinpoint, length

class _OtherInts:
    """Partition cell of an int index standing for every int coordinate no piece uses."""

    def __repr__(self):
        return "OTHER"


OTHER = _OtherInts()


def _nan_min(a, b):
    return math.nan if math.isnan(a) or math.isnan(b) else min(a, b)


def _nan_max(a, b):
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


SEMIRINGS = {
    # name: (identity, ⊕, idempotent)
    "+": (0.0, lambda a, b: a + b, False),
    "or": (False, lambda a, b: a or b, True),
    "min": (math.inf, _nan_min, True),
    "max": (-math.inf, _nan_max, True),
}
MEASURES = ("lebesgue", "counting", "boolean")


class UserSemiring:
    """A user semiring for the oracle (module docstring); written apart from ``ct.Semiring``."""

    def __init__(self, add, zero, idempotent=False, repeat=None):
        self.add, self.zero, self.idempotent, self.repeat = add, zero, idempotent, repeat

    def __repr__(self):
        return f"UserSemiring(zero={self.zero!r}, idempotent={self.idempotent})"


def fill_of(semiring):
    return semiring.zero if isinstance(semiring, UserSemiring) else SEMIRINGS[semiring][0]


def add_of(semiring):
    return semiring.add if isinstance(semiring, UserSemiring) else SEMIRINGS[semiring][1]


def idempotent(semiring) -> bool:
    return semiring.idempotent if isinstance(semiring, UserSemiring) else SEMIRINGS[semiring][2]


def check_semiring(name, measures):
    """Resolve the default and check the semiring/measure combination; return the semiring."""
    ms = [m for _, m in measures]
    for m in ms:
        if m not in MEASURES and not callable(m):
            raise ValueError(f"unknown measure {m!r}; expected one of {MEASURES}")
    if name is None:
        name = "or" if ms and all(m == "boolean" for m in ms) else "+"
    if not isinstance(name, UserSemiring) and name not in SEMIRINGS:
        raise ValueError(f"unknown semiring {name!r}; expected one of {tuple(SEMIRINGS)} or a UserSemiring")
    return name


def weight(measure: str, kind: str, cell, isolated: bool = True) -> float:
    """Measure of one elementary cell (a Limit interval for real axes, int or OTHER for int axes);
    `isolated`: the Fig. 5 partition holding a pinpoint cell is that pinpoint along this axis."""
    if callable(measure):            # a user measure: f(lo, hi) of the cell's bounds, ε dropped
        if kind == "int":
            return math.inf if cell is OTHER else float(measure(cell, cell))
        return float(measure(cell[0][0], cell[1][0]))
    if kind == "int":
        if measure == "lebesgue":
            raise ValueError("the lebesgue measure is not defined on an int index")
        if measure == "counting" and cell is OTHER:
            return math.inf
        return 1.0
    if measure == "lebesgue":
        return length(cell)
    if measure == "counting":
        return 1.0 if is_pinpoint(cell) and isolated else 0.0
    return 1.0  # boolean: elementary cells are never empty


def contribution(semiring, value, weights, reduces: bool):
    """The ⊕-operand one cell adds to its output cell, or None when it adds nothing."""
    if isinstance(semiring, UserSemiring):
        return _user_contribution(semiring, value, weights, reduces)
    if semiring == "+":
        if not reduces:
            return value
        if any(w == 0 for w in weights):
            return None
        v = float(value)
        if v == 0:
            return 0.0
        for w in weights:
            v *= w
        return v
    if any(w == 0 for w in weights):
        return None
    return bool(value) if semiring == "or" else float(value)


def _user_contribution(sr, value, weights, reduces):
    if not reduces:
        return value
    if any(w == 0 for w in weights) or value == sr.zero:
        return None
    total = 1.0
    for w in weights:
        total *= w
    if sr.idempotent or total == 1:
        return value
    if sr.repeat is not None:
        return sr.repeat(value, total)
    if math.isfinite(total) and total == int(total):
        out = value
        for _ in range(int(total) - 1):
            out = sr.add(out, value)
        return out
    raise ValueError(f"a non-idempotent user semiring without repeat cannot weigh {value!r} by {total}")


def is_identity(semiring, value) -> bool:
    if isinstance(semiring, UserSemiring):
        return value == semiring.zero
    ident = SEMIRINGS[semiring][0]
    if semiring == "or":
        return value is False or value == 0
    return value == ident
