"""Lowering a user-defined ⊕ (`ct.Semiring`, `lang.semiring`): its combine in IR and its collapse
of a run by measure.

The combine evaluates the `add` expression with `a` the accumulated value and `b` the new one, in
the output's kind, and applies the declared laws first: x ⊕ zero = x, zero ⊕ x = x, and x ⊕ z =
z ⊕ x = z for a declared annihilator z (so `add` only has to be right away from them).

A run of constant value v over extent e of reduction index i with measure m contributes (paper
§4.2 step 2, Fig. 18 for the built-in reductions):
* idempotent ⊕ (or a literal value that is the annihilator: z ⊕ z = z): v once where the weight of
  e is non-zero (Lebesgue: positive length; counting: a pinpoint of a real index or a non-empty
  run of integer points; a user measure: a positive weight; boolean: non-empty);
* otherwise `repeat(v, w)` with w the weight (a count of integer points, a length, a user weight),
  where it is non-zero; without `repeat`, a run of n integer points is enumerated (`needs_points`:
  n applications of ⊕) and a length cannot be expressed (refused by the front end,
  `lang.semiring.check_measures`).
The counting measure on a real index weighs a pinpoint 1, as for every reduction
(`lower.lowerer.collapse`).
"""
from __future__ import annotations

from ..errors import InvalidProgramError
from ..ir import build as b
from ..ir.types import F64, I1, I64
from ..lang.semiring import Semiring
from .notation import Call, Lit, Sieve, Val
from .ops import kind

_KIND = {I1: "bool", I64: "int", F64: "float"}


def _subst(e, env):
    """Notation of a semiring expression (parsed `lang.nodes`) with its names bound to notation
    expressions (env: name -> Lit / Val / any expression)."""
    from ..lang.nodes import ECall, ELit, EScalar
    if isinstance(e, ELit):
        return Lit(e.value)
    if isinstance(e, EScalar):
        return env[e.name]
    if isinstance(e, ECall):
        args = tuple(_subst(a, env) for a in e.args)
        if e.op in ("and", "or", "xor"):      # logical, as in the einsum (`lang.walk.logical`)
            args = tuple(a if kind(a) == "bool" else Call("ne", (a, Lit(0))) for a in args)
        return Call(e.op, args)
    raise InvalidProgramError(f"unsupported expression {e!r} in a semiring")


def combine_user(ctx, sr: Semiring, old, new):
    """IR of old ⊕ new (same type) for a user semiring (module docstring)."""
    from .ops import to_ir
    if ctx is None:
        raise InvalidProgramError(f"the reduction {sr} cannot be combined outside a kernel")
    k = _KIND[old.type]
    old, new = ctx.let(old, "acc"), ctx.let(new, "term")
    out = to_ir(ctx, _subst(sr.add, {"a": Val(old, k), "b": Val(new, k)}), k)
    zero = b.const(_as(sr.zero, k), old.type)
    out = b.select(b.eq(new, zero), old, b.select(b.eq(old, zero), new, out))
    if sr.annihilator is not None:
        z = b.const(_as(sr.annihilator, k), old.type)
        out = b.select(b.lor(b.eq(old, z), b.eq(new, z)), z, out)
    return out


def _as(v, k):
    return bool(v) if k == "bool" else int(v) if k == "int" else float(v)


def repeated(sr: Semiring, value, w):
    """The notation of value ⊕ ... ⊕ value, w times (`repeat`); `w` a notation expression."""
    return _subst(sr.repeat, {"a": value, "w": w})


def _once(sr: Semiring, rhs) -> bool:
    """Is one application of ⊕ the same as any positive number of them for this value?"""
    return sr.idempotent or isinstance(rhs, Lit) and sr.annihilator is not None and rhs.value == sr.annihilator


def needs_points(op, m) -> bool:
    """Must a run of integer points be enumerated for ⊕ = op under measure m (no idempotence, no
    repeat: each point is one application)?"""
    return isinstance(op, Semiring) and m == "counting" and not op.idempotent and op.repeat is None


def collapse_user(ctx, a, a2, m, ext, weight):
    """The assignment `a` (⊕ = a user semiring) collapsed over a run of its reduction index with
    measure m (not the counting measure on a real index: `lowerer.collapse` pins that one); `a2`
    is `a` without that measure; `weight(name, make)` binds a weight once per run."""
    from .lowerer import user_weight
    sr = a.op
    once = _once(sr, a.rhs)
    if not isinstance(m, str):                      # a user measure (`ct.Measure`)
        w = weight("w", lambda: user_weight(ctx, m, ext))
        return Sieve(b.lt(b.f64(0.0), w), a2 if once else a2.with_(rhs=_repeat(sr, a.rhs, Val(w, "float"), m)))
    if m == "lebesgue":
        if not ext.continuous:
            raise InvalidProgramError("Lebesgue measure on an integer index: use counting")
        if once:
            return Sieve(ext.positive_length(), a2)
        w = weight("len", ext.length)
        return Sieve(ext.positive_length(), a2.with_(rhs=_repeat(sr, a.rhs, Val(w, "float"), m)))
    if m == "counting":
        if once or ext.start is ext.stop:           # one point (an enumerated one, `needs_points`)
            return a2
        n = weight("count", ext.length)
        return a2.with_(rhs=_repeat(sr, a.rhs, Val(n, "int"), m))
    if once:                                        # boolean: the extent is non-empty here
        return a2
    raise InvalidProgramError(f"the boolean measure under the non-idempotent reduction {sr} reduces with ∨ "
                              "inside the others (`lang.nesting`); this assignment was not nested")


def _repeat(sr, rhs, w, m):
    if sr.repeat is None:
        raise InvalidProgramError(f"the reduction {sr} is not idempotent and declares no repeat=, so a run "
                                  f"weighed by the {m} measure cannot be reduced; pass repeat= (e.g. 'a * w')")
    # a run of `zero` adds nothing whatever its weight (zero ⊕ ... ⊕ zero = zero): `repeat` is not
    # asked, since 'a * w' at a stored 0.0 over an unbounded run is NaN (the fuzzer's mismatch)
    zero = Lit(sr.zero)
    return Call("ifelse", (Call("eq", (rhs, zero)), zero, repeated(sr, rhs, w)))
