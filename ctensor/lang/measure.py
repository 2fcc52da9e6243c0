"""User measures: `d(x; m)` with `m=ct.Measure("hi**2 - lo**2")` passed by name.

Continuous paper §3.2 and §4.2 (Fig. 5, step 2): a reduction weighs the value of each partition by
a measure of it, μ: Interval → R; "users may also provide their own measure function over
intervals" (the Lebesgue measure is μ([a, b]) = b − a).  DESIGN.md §2: user measures are
functions of an extent.  The weight is an expression of the extent's bounds `lo` and `hi`, written
in the einsum expression language and compiled into the kernel.
"""
from __future__ import annotations

import ast

from ..errors import InvalidProgramError
from .nodes import ECall, EScalar
from .parser import _expr


class Measure:
    """A measure of the partitions of one reduction index, from its bounds.

    weight : str
        An einsum expression of `lo` and `hi`, the bounds of a partition along the index (floats
        on a real index, ints on an integer one, where a run of points [lo, hi] holds
        hi - lo + 1 of them).  Closedness is dropped, as for `lebesgue`: [a, b) and [a, b] weigh
        the same.  Operators: + - * / ** min max sqrt abs, comparisons, `a if c else b`; e.g.
        ``"hi**3 - lo**3"`` (the measure of density 3x²), ``"(hi - lo) * 2"``, ``"max(hi, 0) -
        max(lo, 0)"`` (length on the positive half-line), ``"(hi - lo + 1) * 2"`` on an integer
        index.  It must be a measure: non-negative and additive over adjacent partitions, and on
        a real index without point masses (a pinpoint weighs 0: use `counting` for those); none
        of this is checked, and otherwise the result depends on how the tensors happen to cut the
        axis (continuous paper Fig. 5).  Bounds are ±inf on an unbounded partition: a value of 0
        there contributes nothing whatever the weight (0 · inf = 0, as for `lebesgue`).

    Under ⊕ = + a partition contributes value × weight; under an idempotent ⊕ (or, and, min,
    max) its value, where the weight is > 0.  The output is float under +.

    Raises InvalidProgramError when `weight` does not parse or names anything but lo and hi;
    TypeError when it is not a str.
    """

    def __init__(self, weight: str):
        if not isinstance(weight, str):
            raise TypeError(f"ct.Measure(weight) takes an expression of lo and hi as a str, got {weight!r}")
        try:
            tree = ast.parse(weight.strip(), mode="eval").body
        except SyntaxError as e:
            raise InvalidProgramError(f"ct.Measure: cannot parse weight {weight!r}: {e.msg}") from None
        self.expr = _expr(tree, weight)
        names = sorted(_names(self.expr) - {"lo", "hi"})
        if names:
            raise InvalidProgramError(f"ct.Measure weight {weight!r} names {names[0]!r}; it may use only lo and hi "
                                      "(the bounds of a partition)")
        self.weight = " ".join(weight.split())

    def __repr__(self):
        return f"ct.Measure({self.weight!r})"

    def __eq__(self, other):
        return isinstance(other, Measure) and other.weight == self.weight

    def __hash__(self):
        return hash(("Measure", self.weight))


def _names(e) -> set:
    if isinstance(e, EScalar):
        return {e.name}
    if isinstance(e, ECall):
        return set().union(*(_names(a) for a in e.args))
    if hasattr(e, "tensor"):
        raise InvalidProgramError(f"ct.Measure weight reads a tensor ({e.tensor}); it is a function of lo and hi only")
    return set()
