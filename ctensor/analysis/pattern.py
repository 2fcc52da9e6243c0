"""The access pattern of a program: everything program validity depends on, nothing more.

Continuous paper §4.3 / Fig. 7; digest §3.2, §3.6.  Validity depends on the *pattern*, not the
data: per access dimension its affine index expression and whether its effectual pieces are points
or intervals; which loop indices are pinned (one value per partition); and the index expressions
used outside tensor accesses.  Scalars enter only as symbols, so one verdict holds for every value
of them.

* A dimension's effectual pieces are **points** when its level stores pinpoints
  (`Level.pinpoints`: SparseList, SparsePoint, Dense) *and* the access is a **guard**: the
  right-hand side evaluates to the output's fill (the identity of ⊕) wherever the access holds its
  fill value, so the gaps between stored points are not effectual.  Otherwise they are intervals
  (a gap is an interval; a point is a degenerate interval, so this over-approximates safely).
* An index is **pinned** when every effectual partition has one value of it: integer modes are
  discrete (each integer is its own partition), and the counting measure over a real index only
  counts pinpoints (the lowering sieves on `finite_pinpoint`, `lower/lowerer.py::collapse`).
* **Index terms** are the maximal subexpressions that read loop indices and no tensor, e.g.
  `(x - ox)**2 + (y - oy)**2 <= r**2`; they must be constant on each effectual partition.

`build_pattern` returns the pattern with canonical (alpha-renamed) names — indices `i0, i1, ...`,
scalars `s0, s1, ...` in order of first appearance — so it serves directly as the verdict cache key,
and a `Names` map back to this program's names for error messages.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from ..lang.affine import coef_poly, const_poly
from ..lang.nodes import EAccess, ECall, EIndex, ELit, EScalar
from ..lang.program import accesses
from ..lang.semiring import identity
from ..lower.simplify import ANNIHILATORS


@dataclass(frozen=True)
class Dim:
    """One access dimension in canonical names: sum(coef_i * index_i) + const, each polynomial a
    sorted tuple of (monomial of scalar names, number)."""
    shape: str              # 'point' | 'interval'
    coefs: tuple            # ((index, poly), ...)
    const: tuple            # poly

    @property
    def indices(self) -> tuple:
        return tuple(i for i, _ in self.coefs)


@dataclass(frozen=True)
class Pattern:
    accesses: tuple         # per access (in order of appearance): tuple of Dim
    indices: tuple          # canonical loop indices i0, i1, ...
    pinned: tuple           # sorted canonical indices with one value per partition
    terms: tuple            # index terms outside accesses, canonical E-trees

    @property
    def key(self):
        return (self.accesses, self.indices, self.pinned, self.terms)


@dataclass
class Names:
    """This program's names for the canonical ones of its `Pattern` (not part of the key)."""
    index: dict             # canonical index -> name
    scalar: dict            # canonical scalar -> name
    accesses: list          # per access ordinal: the bound EAccess (its text is as written)
    terms: list             # per term ordinal: the E-tree in this program's names
    why_pinned: dict        # canonical index -> reason


# ----------------------------------------------------------------------------- effectual pieces
_UNKNOWN = object()
_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
         # ** as the kernel computes it: a float power is llvm.pow (NaN, not a complex number, for a
         # negative base: ValueError here, read as unknown)
         "**": lambda a, b: a ** b if isinstance(b, int) and b >= 0 else math.pow(a, b),
         "min": min, "max": max, "lt": operator.lt, "le": operator.le,
         "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
         "neg": operator.neg, "not": operator.not_, "abs": abs, "sqrt": math.sqrt,
         "exp": math.exp, "log": lambda v: -math.inf if v == 0 else math.log(v),
         "and": lambda a, b: a and b, "or": lambda a, b: a or b, "xor": operator.xor}


def _at_fill(e, target: EAccess, fill, term=None) -> tuple:
    """(value or _UNKNOWN, reads `term`) of `e` where `target` holds `fill` and everything else is
    unknown: its value, and whether it still depends on the index term `term` (a subexpression of
    e) there.  The annihilators are the lowering simplifier's (`lower/simplify.py`), so "not
    effectual" and "not read" here mean dropped there."""
    if e is term:
        return _UNKNOWN, True
    if isinstance(e, EAccess):
        return (fill if e == target else _UNKNOWN), False
    if isinstance(e, ELit):
        return e.value, False
    if not isinstance(e, ECall):
        return _UNKNOWN, False
    args = [_at_fill(a, target, fill, term) for a in e.args]
    vals = [v for v, _ in args]
    if e.op == "ifelse":             # `a if c else b` (masked values): the taken branch
        c, a, b = vals
        if c is not _UNKNOWN:
            return args[1] if c else args[2]
        if a is not _UNKNOWN and a == b and type(a) is type(b):
            return a, False
        return _UNKNOWN, any(r for _, r in args)
    for v in vals:
        if v is not _UNKNOWN and any(v == z for z in ANNIHILATORS.get(e.op, ())):
            return v, False
    reads = any(r for _, r in args)
    if any(v is _UNKNOWN for v in vals) or e.op not in _FOLD:
        return _UNKNOWN, reads
    try:
        return _FOLD[e.op](*vals), reads
    except (ArithmeticError, ValueError, TypeError):
        return _UNKNOWN, reads


def is_guard(rhs, acc: EAccess, fill, op: str) -> bool:
    """True when the right-hand side is the output fill (⊕'s identity) wherever `acc` is its fill."""
    v = _at_fill(rhs, acc, fill)[0]
    return v is not _UNKNOWN and not (isinstance(v, float) and math.isnan(v)) and v == identity(op)


def guards_term(rhs, acc: EAccess, fill, term) -> bool:
    """True when the right-hand side does not read the index term `term` (a subexpression of it)
    wherever `acc` is its fill: `x` in `Q[x] * x + A[x]` is read only where Q is stored."""
    return not _at_fill(rhs, acc, fill, term)[1]


# ------------------------------------------------------------------------------- index terms
def _reads_index(e) -> bool:
    if isinstance(e, EIndex):
        return True
    return isinstance(e, ECall) and any(_reads_index(a) for a in e.args)


def _reads_tensor(e) -> bool:
    if isinstance(e, EAccess):
        return True
    return isinstance(e, ECall) and any(_reads_tensor(a) for a in e.args)


def index_terms(e) -> list:
    """Maximal subexpressions that read a loop index and no tensor."""
    if not _reads_index(e):
        return []
    if not _reads_tensor(e):
        return [e]
    return [t for a in e.args for t in index_terms(a)] if isinstance(e, ECall) else []


# --------------------------------------------------------------------------------- building
class _Renamer:
    def __init__(self):
        self.index: dict = {}
        self.scalar: dict = {}

    def idx(self, name):
        return self.index.setdefault(name, f"i{len(self.index)}")

    def sc(self, name):
        return self.scalar.setdefault(name, f"s{len(self.scalar)}")

    def poly(self, p: dict) -> tuple:
        return tuple(sorted((tuple(sorted(self.sc(n) for n in m)), c) for m, c in p.items()))

    def tree(self, e):
        if isinstance(e, EIndex):
            return EIndex(self.idx(e.name))
        if isinstance(e, EScalar):
            return EScalar(self.sc(e.name))
        if isinstance(e, ECall):
            return ECall(e.op, tuple(self.tree(a) for a in e.args))
        return e


def build_pattern(rhs, tensors: dict, kinds: dict, measures: dict, op: str, term=None):
    """(Pattern, Names) of a bound right-hand side (`lang.program.front_end`).  With `term` (one of
    its index terms): the pattern of that term alone, where the pieces of an access that drops it
    at its fill (`guards_term`) are points too, as the term is read only where the access is
    stored (a sum `Q[x] * x + A[x]`: x is read on Q's pinpoints only)."""
    rn = _Renamer()
    accs = list(accesses(rhs))
    canon_accs = []
    for acc in accs:
        t = tensors[acc.tensor]
        lvls = t.modes()
        guard = is_guard(rhs, acc, t.fill, op) or term is not None and guards_term(rhs, acc, t.fill, term)
        dims = []
        for d, lvl in zip(acc.dims, lvls):
            coefs = tuple((rn.idx(i), rn.poly(c)) for i, c in coef_poly(d).items())
            shape = "point" if guard and getattr(lvl, "pinpoints", False) else "interval"
            dims.append(Dim(shape, coefs, rn.poly(const_poly(d))))
        canon_accs.append(tuple(dims))
    terms = index_terms(rhs) if term is None else [term]
    canon_terms = tuple(rn.tree(t) for t in terms)
    why = {}
    for name, kind in kinds.items():
        if kind == "int":
            why[rn.idx(name)] = "integer index (discrete)"
        elif measures.get(name) == "counting":
            why[rn.idx(name)] = "counting measure (only pinpoints count)"
    for name in kinds:                   # indices of no access cannot pass make_plan; be total anyway
        rn.idx(name)
    pattern = Pattern(tuple(canon_accs), tuple(rn.index.values()), tuple(sorted(why)), canon_terms)
    names = Names({c: n for n, c in rn.index.items()}, {c: n for n, c in rn.scalar.items()},
                  accs, terms, why)
    return pattern, names


def syntactically_valid(p: Pattern) -> bool:
    """The fast path (digest §3.6): every dimension reads exactly one index, so each partition is
    an intersection of per-index intervals — a box — and every index read outside accesses is
    pinned, or read by a point dimension with a non-zero literal coefficient (x = (p - c)/k is then
    one value).  True means valid without asking z3; False means "ask z3"."""
    if any(len(d.coefs) != 1 for dims in p.accesses for d in dims):
        return False
    fixed = set(p.pinned)
    for dims in p.accesses:
        for d in dims:
            (i, coef), = d.coefs
            if d.shape == "point" and len(coef) == 1 and coef[0][0] == () and coef[0][1] != 0:
                fixed.add(i)
    return all(_indices_of(t) <= fixed for t in p.terms)


def _indices_of(e) -> set:
    if isinstance(e, EIndex):
        return {e.name}
    if isinstance(e, ECall):
        return set().union(*(_indices_of(a) for a in e.args))
    return set()


def term_indices(e) -> list:
    return sorted(_indices_of(e))
