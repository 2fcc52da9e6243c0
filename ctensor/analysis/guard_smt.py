"""z3 encoding of canonical guard terms (`guard_terms.Canon`) and the implication check.

The encoding is faithful to the generated code on every input the kernel can see:

* i1 → Bool; integers → Int (only ε arithmetic — `add`/`sub` on i8, which never leaves [-3, 3] —
  is interpreted; every other integer operation is opaque, because i64 wraps); i8 leaves (ε loaded
  or kept in a cursor, stored booleans) lie in [-1, 1].
* f64 → a pair (real, is-NaN).  Comparisons follow LLVM: `lt le gt ge eq` are ordered (false on
  NaN), `ne` unordered; `min`/`max` are `a < b ? a : b` / `a > b ? a : b` as codegen emits them
  (llvm_emit.py), so NaN propagates exactly as at run time.  ±inf are two reals `ninf < pinf`
  below/above every finite constant of the query and bounding every non-NaN value: comparisons,
  min, max and select only see order, and any float assignment maps into such a model, so an
  unsat answer holds for float64 too.  Float arithmetic is opaque (rounding).
* A Limit is (value, ε) with ε ∈ {-1, 0, 1} compared lexicographically: the lowering writes that
  order out with these operators (`extents.lim_le`), so it needs no special case here.

`Query.unsat(literals)` asks z3 whether facts ∧ literals is unsat (literals: guard parts or their
negations, as check assumptions), under a deterministic resource limit (digest §3.7): True
(proved), False (a counterexample exists) or None (z3 gave up — the caller keeps the guard).
"""
from __future__ import annotations

from fractions import Fraction

import z3

from .guard_terms import Canon

# per check; the Fig. 19 proofs take ~2,000-8,000 units, a refuted guard about as much
RLIMIT = 60_000
_FLOATS = ("f64", "f32")
_INTS = ("i8", "i32", "i64")


_OPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "="}


def _real(v: float) -> str:
    f = Fraction(v)
    num = f"{abs(f.numerator)}.0" if f.denominator == 1 else f"(/ {abs(f.numerator)}.0 {f.denominator}.0)"
    return f"(- {num})" if f.numerator < 0 else num


def _int(v: int) -> str:
    return f"(- {-v})" if v < 0 else str(v)


def _rel(op, x, y) -> str:
    return f"(not (= {x} {y}))" if op == "ne" else f"({_OPS[op]} {x} {y})"


class Query:
    """The facts of one guard, encoded once as SMT-LIB text (z3's Python term builders cost ~50 µs
    a node; one parse costs less than the whole query); `implies` may be asked several times."""

    def __init__(self, canon: Canon, facts: list, goals: list):
        self.c = canon
        self.val: list = []              # node -> SMT-LIB term (str), (real, nan) pair, or None
        self.decl: list = ["(declare-const ninf Real)", "(declare-const pinf Real)"]
        self.side: list = ["(< ninf pinf)"]
        for k, n in enumerate(canon.nodes):
            self.val.append(self._share(k, self._node(k, n)))
        text = self.decl + [f"(assert {x})" for x in self.side] + [f"(assert {self.val[f]})" for f in facts]
        for g in dict.fromkeys(goals):   # g{k} <=> node k, so each question is a check under assumptions
            text += [f"(declare-const g{g} Bool)", f"(assert (= g{g} {self.val[g]}))"]
        self.s = z3.SimpleSolver()       # no preprocessing tactics: ~40% faster on these queries
        self.s.set("rlimit", RLIMIT)
        self.s.from_string("\n".join(text))
        self.lit = {g: z3.Bool(f"g{g}") for g in goals}
        self.checks = 0

    # ------------------------------------------------------------------ encoding
    def _share(self, k, x):
        """Name a compound term once (define-fun), so a DAG stays a DAG in the text."""
        if isinstance(x, tuple):
            return tuple(self._share1(f"{p}{k}", t, s) for p, t, s in (("dr", x[0], "Real"), ("dn", x[1], "Bool")))
        if isinstance(x, str):
            return self._share1(f"d{k}", x, "Int" if self.c.node_type(k) in _INTS else "Bool")
        return x

    def _share1(self, name, term, sort):
        if not term.startswith("(") or term.startswith("(- "):
            return term                               # a name or a literal
        self.decl.append(f"(define-fun {name} () {sort} {term})")
        return name

    def _fresh(self, k, ty):
        if ty in _FLOATS:
            self.decl += [f"(declare-const r{k} Real)", f"(declare-const nan{k} Bool)"]
            self.side.append(f"(or nan{k} (and (<= ninf r{k}) (<= r{k} pinf)))")
            return (f"r{k}", f"nan{k}")
        if ty in _INTS:
            self.decl.append(f"(declare-const i{k} Int)")
            return f"i{k}"
        if ty == "i1":
            self.decl.append(f"(declare-const b{k} Bool)")
            return f"b{k}"
        return None                                   # pointers: only ever inside opaque nodes

    def _node(self, k, n):
        tag = n[0]
        if tag == "const":
            ty, v = n[1], n[2]
            if ty in _FLOATS:
                if v != v:
                    self.decl.append(f"(declare-const r{k} Real)")
                    return (f"r{k}", "true")
                if v == float("inf"):
                    return ("pinf", "false")
                if v == float("-inf"):
                    return ("ninf", "false")
                r = _real(v)
                self.side += [f"(< ninf {r})", f"(< {r} pinf)"]
                return (r, "false")
            if ty == "i1":
                return "true" if v else "false"
            return _int(int(v))
        if tag == "leaf":
            x = self._fresh(k, n[1])
            if n[1] == "i8":
                self.side.append(f"(and (<= (- 1) {x}) (<= {x} 1))")
            return x
        if tag in ("load", "opaque"):
            return self._fresh(k, n[1])
        v = self.val
        if tag == "cmp":
            op, a, b = n[1], v[n[2]], v[n[3]]
            ty = self.c.node_type(n[2])
            if (ty in _FLOATS) != (self.c.node_type(n[3]) in _FLOATS):
                # a float compared with an integer term (seen through a let whose definition has
                # another type: fuzz seed 0 program 71, an int user measure under min): the
                # pair encoding would read the Int term's name as (real, nan) and z3 would reject
                # the text; an unconstrained Bool is sound (nothing is proved from it)
                return self._fresh(k, "i1")
            if ty in _FLOATS:
                (ra, na), (rb, nb) = a, b
                if op == "ne":
                    return f"(or {na} {nb} (not (= {ra} {rb})))"
                return f"(and (not {na}) (not {nb}) {_rel(op, ra, rb)})"
            if a is None or b is None or ty == "i1" and op not in ("eq", "ne"):
                return self._fresh(k, "i1")
            return _rel(op, a, b)
        if tag == "bool":
            return f"({n[1]} {v[n[2]]} {v[n[3]]})"
        if tag == "not":
            return f"(not {v[n[1]]})"
        if tag == "ite":
            return self._ite(n[1], v[n[2]], v[n[3]], v[n[4]], k)
        if tag == "minmax":
            op, ty, a, b = n[1], n[2], v[n[3]], v[n[4]]
            rel = "<" if op == "min" else ">"
            if ty in _FLOATS:
                c = f"(and (not {a[1]}) (not {b[1]}) ({rel} {a[0]} {b[0]}))"
            elif a is None or b is None:
                return self._fresh(k, ty)
            else:
                c = f"({rel} {a} {b})"
            return self._ite(ty, c, a, b, k)
        if tag == "eps":
            return f"({'+' if n[1] == 'add' else '-'} {v[n[2]]} {v[n[3]]})"
        if tag == "b2i":
            return f"(ite {v[n[2]]} 1 0)"
        raise AssertionError(tag)

    def _ite(self, ty, c, a, b, k):
        if ty in _FLOATS:
            return (f"(ite {c} {a[0]} {b[0]})", f"(ite {c} {a[1]} {b[1]})")
        if a is None or b is None:
            return self._fresh(k, ty)
        return f"(ite {c} {a} {b})"

    # ------------------------------------------------------------------ questions
    def unsat(self, lits) -> bool | None:
        """Is facts ∧ lits unsat?  lits: (goal node, polarity) pairs.  True = proved (unsat),
        False = a model exists, None = z3 gave up (resource limit)."""
        self.checks += 1
        r = self.s.check(*[self.lit[g] if pos else z3.Not(self.lit[g]) for g, pos in lits])
        return True if r == z3.unsat else (False if r == z3.sat else None)
