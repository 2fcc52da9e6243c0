"""User-defined semirings: `semiring=ct.Semiring("max(a, b)", -inf, idempotent=True)`.

Continuous paper §3.2 (Fig. 3: a reduction integrates with a semiring addition ⊕ weighted by
semiring-valued measures) and §4.2 (step 2, "to support a custom semiring, users initialize the
output with the additive identity and define ⊕ and ⊗"); DESIGN.md §2.  ⊗ is written in the einsum
expression itself with the ordinary operators (for (max, min) bottleneck paths the user writes
`min(A[i, j], B[j, k])` and ⊕ = max), as for the built-in names ('(min,+)' is `A[x] + B[x]` under
⊕ = min), so a semiring here is ⊕ and its laws:

* `add`: ⊕ as an einsum expression of `a` and `b` (compiled into the kernel, not a Python
  callback), e.g. ``"max(a, b)"``, ``"a + b"``, ``"max(a, b) + log(1 + exp(-abs(a - b)))"``;
* `zero`: ⊕'s identity (a ⊕ zero = a), which is the output's fill value;
* `idempotent`: a ⊕ a = a, so a run of equal values counts once wherever its measure is non-zero
  (Lebesgue: positive length; counting: a pinpoint or a non-empty run of integer points);
* `annihilator`: z with a ⊕ z = z (None: none declared);
* `repeat`: a ⊕ ... ⊕ a "w times" as an expression of `a` and `w` (w a count of integer points,
  a Lebesgue length or a user measure's weight), e.g. ``"a * w"`` for + or ``"a + log(w)"`` for
  log-sum-exp.

The laws are taken as declared, exactly as for the built-in reductions: a write of `zero` is no
write, x ⊕ zero is x and x ⊕ z is z for the annihilator z (also at run time: the kernel's ⊕ tests
both before evaluating `add`, so `add` is evaluated only away from them — the log-sum-exp formula
above is NaN at (-inf, -inf)).  Without `idempotent` or `repeat`, a reduction that weighs a run
by a length (Lebesgue, a user measure) cannot be expressed and is refused; runs of n integer
points under the counting measure are enumerated (n applications of ⊕).  Under a non-idempotent
⊕ the boolean measure's indices reduce with ∨ innermost (`lang.nesting`).

Equal definitions (same expressions, up to spacing, same zero with its type, same laws) are equal
semirings and share compiled kernels; `name` is only for messages.

Not checked: that the laws hold (a ⊕ that is not associative and commutative, or a wrong zero,
gives answers that depend on how the tensors cut the axis), and int64 overflow inside `add` or
`repeat` on an int output (it wraps, as numpy does; the built-in + fails the kernel instead).
"""
from __future__ import annotations

import ast
import math
import numbers

from ..errors import InvalidProgramError
from ..lower.ops import RANK, REDUCTIONS
from .nodes import EAccess, ECall, EScalar


class Semiring:
    """⊕ of a continuous einsum, defined by the user (module docstring).

    add : str, an expression of `a` and `b` in the einsum expression language (+ - * / **,
        min max sqrt abs exp log, comparisons, `x if c else y`, & |).
    zero : bool, int or float (±inf allowed, NaN not): the identity, the output's fill.
    idempotent : bool; annihilator : number or None; repeat : str of `a` and `w`, or None;
    name : str or None, for messages.

    The output's kind is the widest of the expression's, `zero`'s and `add`'s (bool < int <
    float); float when `repeat` weighs by a length.  Raises TypeError for an argument of the wrong
    type, InvalidProgramError (naming the argument) for an expression that does not parse, reads a
    tensor or names anything but a, b (a, w for `repeat`)."""

    def __init__(self, add, zero, *, idempotent=False, annihilator=None, repeat=None, name=None):
        self.add = _expression(add, "add", {"a", "b"})
        self.zero = _constant(zero, "zero")
        if not isinstance(idempotent, bool):
            raise TypeError(f"ct.Semiring: idempotent= must be True or False, got {idempotent!r}")
        self.idempotent = idempotent
        self.annihilator = None if annihilator is None else _constant(annihilator, "annihilator")
        self.repeat = None if repeat is None else _expression(repeat, "repeat", {"a", "w"})
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ct.Semiring: name= must be a str, got {name!r}")
        self.name = name
        self.add_text = " ".join(add.split())
        self.repeat_text = None if repeat is None else " ".join(repeat.split())

    def key(self) -> tuple:
        """The definition (what a compiled kernel depends on): the parsed expressions, the zero and
        annihilator with their types, the idempotence; not the name."""
        typed = lambda v: None if v is None else (type(v).__name__, repr(v))   # noqa: E731 (0, 0.0, False differ)
        return ("Semiring", self.add, typed(self.zero), self.idempotent, typed(self.annihilator), self.repeat)

    def __eq__(self, other):
        return isinstance(other, Semiring) and other.key() == self.key()

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in (("idempotent", self.idempotent), ("annihilator", self.annihilator),
                                                      ("repeat", self.repeat_text), ("name", self.name))
                        if v not in (None, False))
        return f"ct.Semiring({self.add_text!r}, {self.zero!r}{extra})"

    def __str__(self):
        return self.name or f"⊕ = {self.add_text}"

    def out_kind(self, value_kind: str, lengths: bool) -> str:
        """The output's kind for an expression of kind `value_kind`; `lengths`: a Lebesgue or user
        measure weighs by a float through `repeat`."""
        from .walk import value_kind as kind_of
        k = max(value_kind, _kind(self.zero), key=RANK.get)
        if self.annihilator is not None:
            k = max(k, _kind(self.annihilator), key=RANK.get)
        while True:
            new = max(k, kind_of(self.add, {}, {"a": (None, k), "b": (None, k)}), key=RANK.get)
            if self.repeat is not None:
                w = "float" if lengths else "int"
                new = max(new, kind_of(self.repeat, {}, {"a": (None, new), "w": (None, w)}), key=RANK.get)
            if new == k:
                return k
            k = new


def _constant(v, what):
    if isinstance(v, (bool, numbers.Integral, numbers.Real)) and not isinstance(v, complex):
        v = bool(v) if isinstance(v, bool) else int(v) if isinstance(v, numbers.Integral) else float(v)
        if isinstance(v, float) and math.isnan(v):
            raise InvalidProgramError(f"ct.Semiring: {what}= is NaN; it must be a number (±inf allowed) or a bool")
        if isinstance(v, int) and not isinstance(v, bool) and not -2 ** 63 <= v < 2 ** 63:
            raise InvalidProgramError(f"ct.Semiring: {what}={v} does not fit in a 64-bit integer")
        return v
    raise TypeError(f"ct.Semiring: {what}= must be a number or a bool, got {v!r}")


def _expression(text, what, allowed):
    from .parser import _expr
    if not isinstance(text, str):
        raise TypeError(f"ct.Semiring: {what}= must be an expression of {' and '.join(sorted(allowed))} as a str, "
                        f"got {text!r}")
    try:
        tree = ast.parse(" ".join(text.split()), mode="eval").body
        e = _expr(tree, text)
    except SyntaxError as exc:
        raise InvalidProgramError(f"ct.Semiring: cannot parse {what}={text!r}: {exc.msg}") from None
    except InvalidProgramError as exc:
        raise InvalidProgramError(f"ct.Semiring: {what}={text!r}: {exc}") from None
    names = sorted(_names(e, what, text) - allowed)
    if names:
        raise InvalidProgramError(f"ct.Semiring: {what}={text!r} names {names[0]!r}; it may use only "
                                  f"{' and '.join(sorted(allowed))}")
    return e


def _names(e, what, text) -> set:
    if isinstance(e, EScalar):
        return {e.name}
    if isinstance(e, EAccess):
        raise InvalidProgramError(f"ct.Semiring: {what}={text!r} reads a tensor ({e.tensor}); it is an expression "
                                  "of scalars only")
    if isinstance(e, ECall):
        return set().union(set(), *(_names(a, what, text) for a in e.args))
    return set()


def _kind(v) -> str:
    return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"


# --- the algebra of a reduction operator: a built-in name or a Semiring ---------------------------

def identity(op):
    """⊕'s identity (the output fill), or None for '=' (an overwrite)."""
    if isinstance(op, Semiring):
        return op.zero
    return REDUCTIONS.get(op, (None,))[0]


def idempotent(op) -> bool:
    if isinstance(op, Semiring):
        return op.idempotent
    return REDUCTIONS[op][1]


def describe(op) -> str:
    return str(op) if isinstance(op, Semiring) else repr(op)


def resolve(semiring, measures: dict, text: str):
    """The reduction operator of `semiring=` (None: 'or' when every measure is boolean, else '+';
    a name of `lower.ops.SEMIRINGS`; a `Semiring`), checked against the measures: a
    non-idempotent ⊕ without `repeat` cannot weigh a run by a length.  Raises InvalidProgramError
    (an unknown name, a weight that cannot be expressed), TypeError (another type)."""
    from ..lower.ops import SEMIRINGS
    from .measure import Measure
    if semiring is None:
        return "or" if measures and all(m == "boolean" for m in measures.values()) else "+"
    if isinstance(semiring, Semiring):
        if not semiring.idempotent and semiring.repeat is None:
            for i, m in measures.items():
                if m == "lebesgue" or isinstance(m, Measure):
                    raise InvalidProgramError(
                        f"the reduction {semiring} is not idempotent and declares no repeat=, so it cannot weigh "
                        f"the runs of {i!r} by the {m if isinstance(m, str) else repr(m)} measure in {text!r}: "
                        "pass repeat= (a ⊕ ... ⊕ a, w times, as an expression of a and w) or idempotent=True")
        return semiring
    if not isinstance(semiring, str):
        raise TypeError(f"semiring= must be a name such as '+', 'min' or '(min,+)', or a ct.Semiring, got {semiring!r}")
    if semiring not in SEMIRINGS:
        raise InvalidProgramError(f"unknown semiring {semiring!r}; use one of {sorted(set(SEMIRINGS))} or a ct.Semiring")
    return SEMIRINGS[semiring]


__all__ = ["Semiring", "identity", "idempotent", "describe", "resolve"]
