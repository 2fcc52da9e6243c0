"""The z3 queries of program validity: quantifier-free, one solver call per question, with
counterexamples (digest §3.6; replaces the ∀∃∀ query of continuous paper Fig. 7, see digest
§3.2, §3.5 for its errata and cost).

Symbolic partition (Fig. 7 step 1): two points `a`, `b` of loop-index values share every piece
parameter — per access dimension e(idx) either `e == p` (point pieces) or `lo <= e <= hi` (interval
pieces), and `v == q_v` per pinned index; scalars are free reals shared by both points.  A
partition is convex, so it is an axis-aligned box iff it is closed under single-coordinate swaps:

* box check:      P(a) ∧ P(b) ∧ ∨_k ¬P(a with a_k := b_k)         unsat ⇔ every partition is a box
* pinned check:   P(a) ∧ P(b) ∧ ∨_{v in term} a_v ≠ b_v            unsat ⇔ the term's indices are fixed
* constant check: P(a) ∧ P(b) ∧ term(a) ≠ term(b)                  unsat ⇔ the term is constant

(non-box and non-constant are allowed only where a partition is a single point or empty, which
these queries accept by construction).  The first two are QF_LRA (QF_NRA with scalar
coefficients); the constant check of a nonlinear term is QF_NRA (z3's nlsat).

Every query runs under a deterministic resource limit (`RLIMIT`, digest §3.7: answers do not
depend on machine load); `unknown` is reported as such, never as valid.  z3 contexts are not
thread-safe: every z3 object (here and in `guard_smt`) is created, used and freed under one lock,
`z3_locked()`; a z3 object that outlives it (freed later by another thread) races the next
query's calls into the same context (issue 31 (d): segfaults and hangs in z3).
"""
from __future__ import annotations

import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction

import z3

from ..lang.nodes import ECall, EIndex, ELit, EScalar
from .pattern import Pattern, term_indices

# Per query (z3 counts resources from the start of each check).  The paper's examples, 3- and 4-
# index masked convolutions, scalar coefficients and the radius search take 300-2,500 units; a hard
# nonlinear query exhausts 200,000 in ~0.2 s on the 2-core dev box (2,000,000 took 40 s: NRA
# effort is far from linear in the limit)
RLIMIT = 200_000
_LOCK = threading.Lock()


@contextmanager
def z3_locked():
    """Hold the z3 lock.  The caller frees its z3 objects before leaving the block; an exception
    leaving it has its traceback's frames cleared first, so the z3 objects they hold are freed
    under the lock too, not whenever the exception is dropped."""
    with _LOCK:
        try:
            yield
        except BaseException as e:
            traceback.clear_frames(e.__traceback__)
            raise


@dataclass(frozen=True)
class Failure:
    """A counterexample in canonical names (see pattern.py); rendered by validity.py."""
    kind: str                       # 'box' | 'term'
    a: dict                         # index -> value (strings of exact numbers)
    b: dict
    pieces: dict                    # (access, dim) -> ('point', p) | ('interval', lo, hi)
    scalars: dict                   # scalar -> value
    axis: str | None = None         # box: the swapped index
    access: int | None = None       # box: the access whose dimension rejects the swapped point
    dim: int | None = None
    value_at_swap: str | None = None
    term: int | None = None         # term: which index term
    term_values: tuple | None = None  # term: its two values (None if z3 cannot express it)


@dataclass(frozen=True)
class Outcome:
    status: str                     # 'valid' | 'invalid' | 'unknown'
    failure: Failure | None = None
    reason: str = ""                # for 'unknown': what z3 said
    queries: int = 0
    stats: dict = field(default_factory=dict)


class _Unsupported(Exception):
    pass


def _val(v) -> z3.ArithRef:
    if isinstance(v, bool):
        return z3.RealVal(int(v))
    f = Fraction(v)                 # exact: the float's own binary value
    return z3.RealVal(f"{f.numerator}/{f.denominator}")


class _Encoder:
    def __init__(self, p: Pattern):
        self.p = p
        self.pt = {s: {i: z3.Real(f"{i}_{s}") for i in p.indices} for s in "ab"}
        self.scalars: dict = {}
        self.params: dict = {}       # (access, dim) -> tuple of z3 reals
        for k, dims in enumerate(p.accesses):
            for d, dim in enumerate(dims):
                names = ("p",) if dim.shape == "point" else ("lo", "hi")
                self.params[(k, d)] = tuple(z3.Real(f"{n}_{k}_{d}") for n in names)
        self.pins = {i: z3.Real(f"q_{i}") for i in p.pinned}
        # a dimension reading one index is lowered at it, and the kernel refuses a zero scale there
        # at run time (STATUS_BAD_AFFINE; runtime scales exist on real modes only): no partition
        # of a = 0 is ever evaluated, so a counterexample needing it is not one
        self.facts = [self.poly(coef) != 0 for dims in p.accesses for d in dims if len(d.coefs) == 1
                      for _, coef in d.coefs if any(mono for mono, _ in coef)]

    def scalar(self, name):
        if name not in self.scalars:
            self.scalars[name] = z3.Real(name)
        return self.scalars[name]

    def poly(self, poly) -> z3.ArithRef:
        out = z3.RealVal(0)
        for mono, c in poly:
            t = _val(c)
            for n in mono:
                t = t * self.scalar(n)
            out = out + t
        return out

    def dim_value(self, dim, point) -> z3.ArithRef:
        out = self.poly(dim.const)
        for i, coef in dim.coefs:
            out = out + self.poly(coef) * point[i]
        return out

    def dim_holds(self, k, d, point):
        dim = self.p.accesses[k][d]
        e, ps = self.dim_value(dim, point), self.params[(k, d)]
        return e == ps[0] if dim.shape == "point" else z3.And(ps[0] <= e, e <= ps[1])

    def partition(self, point):
        cs = [self.dim_holds(k, d, point) for k, dims in enumerate(self.p.accesses) for d in range(len(dims))]
        cs += [point[i] == q for i, q in self.pins.items()]
        return z3.And(cs)

    # index terms -> z3 (Real or Bool); raises _Unsupported for what z3 cannot say exactly
    def term(self, e, point, side):
        if isinstance(e, ELit):
            if isinstance(e.value, bool):
                return z3.BoolVal(e.value)
            if not isinstance(e.value, (int, float)) or e.value != e.value or abs(e.value) == float("inf"):
                raise _Unsupported(repr(e.value))
            return _val(e.value)
        if isinstance(e, EIndex):
            return point[e.name]
        if isinstance(e, EScalar):
            return self.scalar(e.name)
        if not isinstance(e, ECall):
            raise _Unsupported(type(e).__name__)
        args = [self.term(a, point, side) for a in e.args]
        op = e.op
        num = lambda x: z3.If(x, z3.RealVal(1), z3.RealVal(0)) if z3.is_bool(x) else x
        boolean = lambda x: x if z3.is_bool(x) else x != 0
        if op in ("+", "-", "*", "/"):
            x, y = num(args[0]), num(args[1])
            return {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
        if op == "**":
            exp = e.args[1]
            if not (isinstance(exp, ELit) and isinstance(exp.value, int) and 0 <= exp.value <= 8):
                raise _Unsupported("power with an exponent that is not a small integer")
            out = z3.RealVal(1)
            for _ in range(exp.value):
                out = out * num(args[0])
            return out
        if op == "neg":
            return -num(args[0])
        if op in ("min", "max"):
            x, y = num(args[0]), num(args[1])
            return z3.If(x <= y, x, y) if op == "min" else z3.If(x >= y, x, y)
        if op == "abs":
            x = num(args[0])
            return z3.If(x >= 0, x, -x)
        if op == "sqrt":
            r = z3.FreshReal("sqrt")
            side.append(z3.And(r >= 0, r * r == num(args[0])))
            return r
        if op in ("lt", "le", "gt", "ge", "eq", "ne"):
            x, y = num(args[0]), num(args[1])
            return {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]
        if op in ("and", "or", "xor") and all(z3.is_bool(a) for a in args):
            return {"and": z3.And, "or": z3.Or, "xor": z3.Xor}[op](*args)
        if op == "not" and z3.is_bool(args[0]):
            return z3.Not(args[0])
        if op == "ifelse":
            c, x, y = args
            if z3.is_bool(x) != z3.is_bool(y):
                x, y = num(x), num(y)
            return z3.If(boolean(c), x, y)
        raise _Unsupported(f"operator {op!r}")


def _num_text(v) -> str:
    if z3.is_rational_value(v):
        f = Fraction(v.numerator_as_long(), v.denominator_as_long())
        return str(f.numerator) if f.denominator == 1 else f"{float(f):.6g}"
    if z3.is_algebraic_value(v):
        return f"{float(v.approx(8).as_fraction()):.6g}"
    if z3.is_true(v) or z3.is_false(v):
        return str(z3.is_true(v))
    return str(v)


def _solve(s: z3.Solver):
    s.set("rlimit", RLIMIT)
    r = s.check()
    return r, (s.model() if r == z3.sat else None), (s.reason_unknown() if r == z3.unknown else "")


def _failure_base(enc: _Encoder, m, kind, **kw) -> Failure:
    ev = lambda x: _num_text(m.eval(x, model_completion=True))
    pieces = {}
    for (k, d), ps in enc.params.items():
        pieces[(k, d)] = (enc.p.accesses[k][d].shape,) + tuple(ev(x) for x in ps)
    return Failure(kind, {i: ev(x) for i, x in enc.pt["a"].items()}, {i: ev(x) for i, x in enc.pt["b"].items()},
                   pieces, {n: ev(x) for n, x in enc.scalars.items()}, **kw)


def solve(p: Pattern) -> Outcome:
    """Decide validity of an access pattern with z3 (box check, then per index term the pinned and
    constant checks).  Returns an Outcome; never raises for an invalid or undecided program."""
    with z3_locked():
        return _solve_locked(p)      # its frame, and every z3 object in it, ends under the lock


def _solve_locked(p: Pattern) -> Outcome:
    enc = _Encoder(p)
    a, b = enc.pt["a"], enc.pt["b"]
    pa, pb = enc.partition(a), enc.partition(b)
    queries = 0
    free = [i for i in p.indices if i not in enc.pins]
    if any(len(d.coefs) > 1 for dims in p.accesses for d in dims) and free:
        s = z3.Solver()
        swaps = {i: {**a, i: b[i]} for i in free}
        s.add(pa, pb, z3.Or([z3.Not(enc.partition(sw)) for sw in swaps.values()]), *enc.facts)
        r, m, why = _solve(s)
        queries += 1
        if r == z3.unknown:
            return Outcome("unknown", reason=f"box check: {why}", queries=queries)
        if r == z3.sat:
            for i, sw in swaps.items():
                if z3.is_false(m.eval(enc.partition(sw), model_completion=True)):
                    for k, dims in enumerate(p.accesses):
                        for d in range(len(dims)):
                            if z3.is_false(m.eval(enc.dim_holds(k, d, sw), model_completion=True)):
                                v = _num_text(m.eval(enc.dim_value(dims[d], sw), model_completion=True))
                                return Outcome("invalid", _failure_base(enc, m, "box", axis=i, access=k, dim=d,
                                                                        value_at_swap=v), queries=queries)
            raise AssertionError("z3 model violates no swapped constraint")  # pragma: no cover
    for t, term in enumerate(p.terms):
        idxs = [i for i in term_indices(term) if i not in enc.pins]
        if not idxs:
            continue
        s = z3.Solver()
        s.add(pa, pb, z3.Or([a[i] != b[i] for i in idxs]), *enc.facts)
        r, m, why = _solve(s)
        queries += 1
        if r == z3.unsat:
            continue                  # the term's indices have one value per partition
        if r == z3.unknown:
            return Outcome("unknown", reason=f"pinned check of term {t}: {why}", queries=queries)
        side: list = []
        try:
            ta, tb = enc.term(term, a, side), enc.term(term, b, side)
        except _Unsupported:
            # z3 cannot express the term: the indices vary, so refuse (the paper's rule: index
            # expressions outside accesses only on pinpoint partitions)
            return Outcome("invalid", _failure_base(enc, m, "term", term=t), queries=queries)
        s = z3.Solver()
        s.add(pa, pb, ta != tb, *side, *enc.facts)
        r, m2, why = _solve(s)
        queries += 1
        if r == z3.unknown:
            return Outcome("unknown", reason=f"constant check of term {t}: {why}", queries=queries)
        if r == z3.sat:
            vals = tuple(_num_text(m2.eval(x, model_completion=True)) for x in (ta, tb))
            return Outcome("invalid", _failure_base(enc, m2, "term", term=t, term_values=vals), queries=queries)
    return Outcome("valid", queries=queries)
