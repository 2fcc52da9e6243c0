"""Smart constructors for IR expressions: build and fold in one step.

Every expression the lowering creates goes through these functions, so constant folding,
identities (x+0, x*1, min(x, +inf)), structural self-comparisons (x <= x) and boolean shortcuts
happen at construction time.  This is the compile-time prover of the lowering (Finch's
`prove`, digest §4.4): a guard that folds to a constant is decided at compile time, anything else
becomes a runtime check, so a weak fold costs speed, never correctness.
"""
from __future__ import annotations

import math

from .nodes import Bin, Cast, Cmp, Const, Load, Read, Select, Un
from .types import F32, F64, I1, I8, I32, I64, PtrType, ScalarType

TRUE = Const(True, I1)
FALSE = Const(False, I1)


def const(value, ty: ScalarType) -> Const:
    if ty is I1:
        return Const(bool(value), I1)
    if ty.is_float:
        return Const(float(value), ty)
    return Const(int(value), ty)


def is_const(e, value=None) -> bool:
    return isinstance(e, Const) and (value is None or e.value == value)


def _wrap(v: int, ty: ScalarType) -> int:
    bits = ty.bits
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _fold_bin(op, a, b, ty):
    if op == "add":
        r = a + b
    elif op == "sub":
        r = a - b
    elif op == "mul":
        r = a * b
    elif op == "min":
        r = min(a, b)
    elif op == "max":
        r = max(a, b)
    elif op == "and":
        r = a & b if ty is not I1 else (a and b)
    elif op == "or":
        r = a | b if ty is not I1 else (a or b)
    elif op == "xor":
        r = a ^ b if ty is not I1 else (a != b)
    else:
        return None
    if ty.is_float:
        return Const(float(r), ty)
    if ty is I1:
        return Const(bool(r), I1)
    return Const(_wrap(int(r), ty), ty)


def binop(op: str, a, b):
    ty = a.type
    if isinstance(a, Const) and isinstance(b, Const):
        folded = _fold_bin(op, a.value, b.value, ty)
        if folded is not None:
            return folded
    if op == "add":
        if is_const(b, 0) and not ty.is_float or is_const(b, 0.0) and ty.is_float:
            return a
        if is_const(a, 0):
            return b
    elif op == "sub":
        if is_const(b, 0):
            return a
        if a == b and not ty.is_float:
            return const(0, ty)
    elif op == "mul":
        if is_const(b, 1):
            return a
        if is_const(a, 1):
            return b
        if not ty.is_float and (is_const(a, 0) or is_const(b, 0)):
            return const(0, ty)
    elif op in ("min", "max"):
        if a == b:
            return a
        inf = math.inf if op == "min" else -math.inf
        if ty.is_float:
            if is_const(a, inf):
                return b
            if is_const(b, inf):
                return a
            if is_const(a, -inf) or is_const(b, -inf):
                return const(-inf, ty)
    elif op == "and" and ty is I1:
        if is_const(a, True):
            return b
        if is_const(b, True):
            return a
        if is_const(a, False) or is_const(b, False):
            return FALSE
        if a == b:
            return a
    elif op == "or" and ty is I1:
        if is_const(a, False):
            return b
        if is_const(b, False):
            return a
        if is_const(a, True) or is_const(b, True):
            return TRUE
        if a == b:
            return a
    return Bin(op, a, b)


def add(a, b):
    return binop("add", a, b)


def sub(a, b):
    return binop("sub", a, b)


def mul(a, b):
    return binop("mul", a, b)


def div(a, b):
    if isinstance(a, Const) and isinstance(b, Const) and a.type.is_float and b.value != 0:
        return Const(a.value / b.value, a.type)
    if is_const(b, 1):
        return a
    return Bin("div", a, b)


def minimum(a, b):
    return binop("min", a, b)


def maximum(a, b):
    return binop("max", a, b)


def minmax_values(op: str, a, b):
    """min/max of the einsum's values (`min(..)`, `max(..)`, the min/max reductions): a NaN operand
    propagates, as numpy's `np.minimum` and IEEE 754-2019 `minimum` do.  `binop`'s select
    `a < b ? a : b`, built for coordinates, keeps b when a is NaN, so a NaN `a` is tested first.
    Only the identity (+inf for min, -inf for max) folds away; the annihilating infinity does not
    (min(-inf, nan) is nan here; the notation-level simplifier folds annihilators, as for 0 * x)."""
    if not a.type.is_float:
        return binop(op, a, b)
    if isinstance(a, Const) and isinstance(b, Const):
        if a.value != a.value or b.value != b.value:
            return Const(math.nan, a.type)
        return binop(op, a, b)
    if a == b:
        return a
    identity = math.inf if op == "min" else -math.inf
    if is_const(a, identity):
        return b
    if is_const(b, identity):
        return a
    if isinstance(b, Const):
        a, b = b, a
    if isinstance(a, Const):          # a is not NaN: the select `a < b ? a : b` passes a NaN b through
        return Bin(op, a, b)
    return Select(Cmp("ne", a, a), a, Bin(op, a, b))


def land(a, b):
    return binop("and", a, b)


def lor(a, b):
    return binop("or", a, b)


def lnot(a):
    if isinstance(a, Const):
        return Const(not a.value, I1) if a.type is I1 else Const(~a.value, a.type)
    if isinstance(a, Un) and a.op == "not":
        return a.a
    if isinstance(a, Cmp):
        flip = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
        if not a.a.type.is_float:  # for floats, !(a<b) is not (a>=b) under NaN
            return Cmp(flip[a.op], a.a, a.b)
    return Un("not", a)


_PYCMP = {"lt": lambda x, y: x < y, "le": lambda x, y: x <= y, "gt": lambda x, y: x > y,
          "ge": lambda x, y: x >= y, "eq": lambda x, y: x == y, "ne": lambda x, y: x != y}


def _may_be_nan(x) -> bool:
    """Can this float expression be NaN by construction?  nextup/nextdown are NaN past ±inf (that is
    what makes the Limit comparisons built on them exact), so folds that hold only for non-NaN
    operands must not fire on them."""
    if isinstance(x, Un):
        return x.op in ("nextup", "nextdown") or _may_be_nan(x.a)
    if isinstance(x, Select):             # the shape lim_le builds: select(ε test, v, nextup(v))
        return _may_be_nan(x.a) or _may_be_nan(x.b)
    return isinstance(x, Const) and x.value != x.value


def cmp(op: str, a, b):
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(bool(_PYCMP[op](a.value, b.value)), I1)
    if a.type.is_float and (_may_be_nan(a) or _may_be_nan(b)):
        return Cmp(op, a, b)
    if a == b:
        return Const(op in ("le", "ge", "eq"), I1)
    if a.type.is_float:
        # comparisons against infinities that hold for every non-NaN value
        if op == "le" and (is_const(a, -math.inf) or is_const(b, math.inf)):
            return TRUE
        if op == "ge" and (is_const(a, math.inf) or is_const(b, -math.inf)):
            return TRUE
        if op == "lt" and (is_const(b, -math.inf) or is_const(a, math.inf)):
            return FALSE
        if op == "gt" and (is_const(a, -math.inf) or is_const(b, math.inf)):
            return FALSE
    return Cmp(op, a, b)


def cmp_values(op: str, a, b):
    """A comparison of the einsum's values (`==`, `<`, ...): IEEE, NaN unordered and unequal to
    itself, so float operands fold only when both are constants — a runtime scalar or a stored
    value may be NaN (`(A[x] + c) == (A[x] + c)` with c = nan is false), which `cmp`, built for
    coordinates and Limits (never NaN but by nextup/nextdown), would fold to true."""
    if a.type.is_float and not (isinstance(a, Const) and isinstance(b, Const)):
        return Cmp(op, a, b)
    return cmp(op, a, b)


def lt(a, b):
    return cmp("lt", a, b)


def le(a, b):
    return cmp("le", a, b)


def eq(a, b):
    return cmp("eq", a, b)


def ne(a, b):
    return cmp("ne", a, b)


def select(c, a, b):
    if is_const(c, True):
        return a
    if is_const(c, False):
        return b
    if a == b:
        return a
    return Select(c, a, b)


def cast(ty: ScalarType, a):
    if a.type == ty:
        return a
    if isinstance(a, Const) and not isinstance(ty, PtrType):
        return const(a.value, ty)
    return Cast(ty, a)


def load(ptr, index):
    if isinstance(index, int):
        index = Const(index, I64)
    return Load(ptr, cast(I64, index))


def load_wide(ptr, index):
    """A load widened to float64 when the buffer holds float32 (real coordinates stored in single
    precision: every comparison and shift is done in float64, exactly)."""
    v = load(ptr, index)
    return cast(F64, v) if v.type == F32 else v


def neg(a):
    if isinstance(a, Const):
        return Const(-a.value, a.type)
    return Un("neg", a)


def sqrt(a):
    if isinstance(a, Const) and a.value >= 0:
        return Const(math.sqrt(a.value), a.type)
    return Un("sqrt", a)


def next_float(v: float, up: bool) -> float:
    """The adjacent double above (up) or below v; NaN past +inf/-inf, so `x <= nextdown(v)` is exactly
    `x < v` for every non-NaN x, v (and `nextup(v) <= x` is `v < x`)."""
    if v != v or v == (math.inf if up else -math.inf):
        return math.nan
    return math.nextafter(v, math.inf if up else -math.inf)


def nextup(a):
    if isinstance(a, Const):
        return Const(next_float(a.value, True), a.type)
    return Un("nextup", a)


def nextdown(a):
    if isinstance(a, Const):
        return Const(next_float(a.value, False), a.type)
    return Un("nextdown", a)


def i64(v) -> Const:
    return Const(int(v), I64)


def f64(v) -> Const:
    return Const(float(v), F64)


def i8(v) -> Const:
    return Const(int(v), I8)


__all__ = ["const", "is_const", "binop", "add", "sub", "mul", "div", "minimum", "maximum", "land",
           "lor", "lnot", "cmp", "lt", "le", "eq", "ne", "select", "cast", "load", "neg", "sqrt", "nextup", "nextdown",
           "i64", "f64", "i8", "TRUE", "FALSE", "Read", "I1", "I8", "I32", "I64", "F32", "F64"]
