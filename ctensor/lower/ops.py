"""Scalar operators: value kinds, reduction operators (semirings) and conversion to IR.

Kinds are 'bool' < 'int' < 'float'; arithmetic promotes to the larger kind, `*` of two bools is
their conjunction, `/` and `sqrt` are float.  A semiring here names the reduction ⊕ and its
identity (= the output's fill value, DESIGN.md §2); operators inside the expression keep their
ordinary meaning.
"""
from __future__ import annotations

import math

from ..errors import InvalidProgramError
from ..ir import nodes as ir
from ..ir import build as b
from ..ir.types import F64, I1, I64
from .notation import Call, Count, Idx, Lit, Val

RANK = {"bool": 0, "int": 1, "float": 2}
ARITH = {"+", "-", "*", "/", "**", "min", "max"}
LOGIC = {"and", "or", "xor"}
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}

# reduction operators: identity (fill of the output) and whether x ⊕ x = x
REDUCTIONS = {
    "+": (0, False),
    "or": (False, True),
    "and": (True, True),
    "min": (math.inf, True),
    "max": (-math.inf, True),
}
SEMIRINGS = {"+": "+", "sum": "+", "plus": "+", "or": "or", "any": "or", "and": "and", "all": "and",
             "min": "min", "max": "max",
             "(+,*)": "+", "(or,and)": "or", "(min,+)": "min", "(max,*)": "max", "(min,max)": "min",
             "(min,*)": "min", "(max,+)": "max"}


def lit_kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    return "float"


def kind(node) -> str:
    if isinstance(node, Lit):
        return lit_kind(node.value)
    if isinstance(node, (Val, Idx)):
        return node.dtype
    if isinstance(node, Call):
        ks = [kind(a) for a in node.args]
        op = node.op
        if op == "ifelse":
            return max(ks[1:], key=RANK.get)
        if op == "maybe":                  # (present, value): `lower.simplify.MAYBE`
            return ks[1]
        if op == "coalesce":
            return max(ks, key=RANK.get)
        if op in COMPARE or op == "not":
            return "bool"
        if op in ("/", "sqrt", "exp", "log", "wmul") or op == "**" and not small_power(node.args[1]):
            return "float"
        if op == "*" and all(k == "bool" for k in ks):
            return "bool"
        if op in ("+", "-", "neg") and all(k == "bool" for k in ks):
            return "int"
        if op == "abs":
            return ks[0] if ks[0] != "bool" else "int"
        return max(ks, key=RANK.get)
    raise InvalidProgramError(f"cannot type expression {node!r}")


def small_power(exp) -> bool:
    """Is `exp` an exponent `**` computes by repeated multiplication in the base's kind (an int
    literal 0..16)?  Any other exponent is llvm.pow in float."""
    value = getattr(exp, "value", None)
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 16


def convert(e, frm: str, to: str):
    """IR value of kind `frm` as kind `to`."""
    if frm == to:
        return e
    if frm == "bool":
        e = b.cast(I64, e)
        frm = "int"
        if to == "int":
            return e
    if to == "float":
        return b.cast(F64, e)
    if to == "bool":
        return b.ne(e, b.const(0, e.type))
    if to == "int":
        return b.cast(I64, e)
    raise InvalidProgramError(f"cannot convert {frm} to {to}")


def ir_lit(value, k: str):
    return b.const(value, {"bool": I1, "int": I64, "float": F64}[k])


def to_ir(ctx, node, want: str | None = None):
    """Lower a fully resolved expression to an IR expression of kind `want` (default: its own)."""
    k = kind(node)
    if isinstance(node, Lit):
        e = ir_lit(node.value, k)
    elif isinstance(node, Val):
        e = node.expr
    elif isinstance(node, Call):
        e = _call(ctx, node, k)
    elif isinstance(node, Idx):
        raise InvalidProgramError(f"the value of index {node.name!r} is used where its extent is not a single "
                                  "point; expressions of indices are valid only on pinpoints (paper §4.3)")
    else:
        raise InvalidProgramError(f"access {getattr(node, 'name', node)!r} could not be lowered to a value "
                                  "(are all its indices bound by loops?)")
    return convert(e, k, want) if want else e


def _call(ctx, node, k):
    op, args = node.op, node.args
    if op == "wmul":
        # measure weight × value with 0·∞ = 0, so a zero value over an unbounded run adds nothing
        w = to_ir(ctx, args[0], "float")
        if kind(args[1]) == "bool":
            return b.select(to_ir(ctx, args[1]), w, b.f64(0.0))
        # and a measure-zero run (a pinpoint [a, a]) adds nothing, even where its value is inf or nan
        x = ctx.let(to_ir(ctx, args[1], "float"), "val")
        return b.select(b.lor(b.eq(x, b.f64(0.0)), b.eq(w, b.f64(0.0))), b.f64(0.0), b.mul(w, x))
    if op == "ifelse":
        c, x, y = args
        return b.select(to_ir(ctx, c, "bool"), to_ir(ctx, x, k), to_ir(ctx, y, k))
    if op == "coalesce":           # resolved values are never missing (simplify drops those)
        return to_ir(ctx, args[0], k)
    if op in COMPARE:
        ak = max((kind(a) for a in args), key=RANK.get)
        if ak == "bool" and op not in ("eq", "ne"):
            ak = "int"             # i1 has no order: compare truth values as 0/1
        x, y = (to_ir(ctx, a, ak) for a in args)
        return b.cmp_values(op, x, y)
    if op == "not":
        return b.lnot(to_ir(ctx, args[0], "bool"))
    if op in LOGIC:
        ak = "bool" if all(kind(a) == "bool" for a in args) else "int"
        xs = [to_ir(ctx, a, ak) for a in args]
        out = xs[0]
        for x in xs[1:]:
            out = b.binop(op, out, x)
        return out
    if op == "neg":
        return b.neg(to_ir(ctx, args[0], k))
    if op in ("sqrt", "abs"):
        return ir.Un(op, to_ir(ctx, args[0], k))
    if op in ("exp", "log"):                  # llvm.exp / llvm.log: log(0) = -inf, log(x < 0) = NaN
        return ir.Un(op, to_ir(ctx, args[0], "float"))
    if op == "**":
        base, exp = args
        if not (isinstance(exp, Lit) and small_power(exp)):
            # any other exponent (a runtime count or length: `repeat="a ** w"`): llvm.pow in float
            return convert(ir.Bin("pow", to_ir(ctx, base, "float"), to_ir(ctx, exp, "float")), "float", k)
        x = ctx.let(to_ir(ctx, base, k), "pow")
        out = ir_lit(1, k)
        for _ in range(exp.value):
            out = b.mul(out, x)
        return out
    if op == "*" and k == "int" and len(args) == 2 and isinstance(args[0], Count):
        # count of int coordinates × value: an int64 product that overflows fails the kernel
        return checked_mul(ctx, to_ir(ctx, args[0], "int"), to_ir(ctx, args[1], "int"))
    if op == "*" and k == "bool":
        return b.land(to_ir(ctx, args[0], "bool"), to_ir(ctx, args[1], "bool"))
    name = {"+": "add", "-": "sub", "*": "mul", "/": "div", "min": "min", "max": "max"}[op]
    if k == "bool" and name in ("min", "max"):
        name = "and" if name == "min" else "or"      # min/max of truth values
    xs = [to_ir(ctx, a, k) for a in args]
    out = xs[0]
    for x in xs[1:]:
        if name == "div":
            out = b.div(out, x)
        elif name in ("min", "max"):
            out = b.minmax_values(name, out, x)
        else:
            out = b.binop(name, out, x)
    return out


def combine(op: str, old, new, ctx=None):
    """old ⊕ new for a reduction operator (both IR values of the same type).  With `ctx`, an int64
    `+` that overflows makes the kernel return STATUS_INT_OVERFLOW (a wrapped sum is a wrong
    answer); without it (a merge of values already checked) it wraps."""
    if op == "=":
        return new
    if not isinstance(op, str):            # a `ct.Semiring`
        from .user_reduction import combine_user
        return combine_user(ctx, op, old, new)
    if op == "+":
        if ctx is not None and old.type == I64:
            return checked_add(ctx, old, new)
        return b.add(old, new)
    if op in ("min", "max"):
        return b.minmax_values(op, old, new)
    if op in ("or", "and"):
        return b.binop(op, old, new)
    raise InvalidProgramError(f"unknown reduction operator {op!r}")


def checked_add(ctx, x, y):
    """int64 x + y whose overflow fails the kernel with STATUS_INT_OVERFLOW after the loop nest:
    the wrapped sum r has the sign of neither operand exactly when ((x ^ r) & (y ^ r)) < 0
    (Hacker's Delight §2-13); that sign is ORed into `Context.overflow_flag`."""
    x, y = ctx.let(x, "acc"), ctx.let(y, "term")
    r = ctx.let(b.add(x, y), "sum")
    flag = ctx.overflow_flag()
    ctx.assign(flag, b.binop("or", ir.Read(flag), b.binop("and", b.binop("xor", x, r), b.binop("xor", y, r))))
    return r


def checked_mul(ctx, n, y):
    """int64 n * y for a count n >= 0 of int coordinates (the counting weight of a run), failing
    with STATUS_INT_OVERFLOW when the product leaves int64: y > INT64_MAX / n or y < INT64_MIN / n
    (signed division truncates toward zero, which makes both tests exact)."""
    if b.is_const(n, 1):
        return y
    n, y = ctx.let(n, "count"), ctx.let(y, "term")
    big = b.lt(b.i64(0), n)
    d = ctx.let(b.select(big, n, b.i64(1)), "den")
    out = b.lor(b.lt(b.div(b.i64(2 ** 63 - 1), d), y), b.lt(y, b.div(b.i64(-2 ** 63), d)))
    ctx.fail_if(b.land(big, out), ir.STATUS_INT_OVERFLOW)
    return b.mul(n, y)
