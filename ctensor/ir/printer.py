"""Text form of the IR: a tiny structured language, deterministic and stable for golden tests.

    func dot(%a: ptr<f64>, %b: ptr<f64>, %n: i64, %out: ptr<f64>) -> i32 {
      mut %acc: f64
      %acc = 0.0
      for %i in [0, %n) {
        let %x: f64 = load %a[%i]
        %acc = %acc + (%x * (load %b[%i]))
      }
      store %out[0] = %acc
      return 0
    }

Conventions: variables print as ``%name``; i64 and f64 constants print bare (``3``, ``0.5``), other
types carry a suffix (``3:i8``, ``1.5:f32``); nested binary operators and comparisons are always
parenthesised, so no precedence table is needed to read the output; ``mut`` variables are declared
at the top of the body in order of first appearance.  The printer never fails on ill-formed IR
(unknown ops print as calls), because the verifier uses it in its error messages.
"""
from __future__ import annotations

import math

from .nodes import (Assign, Bin, Call, Cast, Cmp, Comment, Const, Eval, For, Function, If, Let,
                    Load, Read, Return, Select, Store, Un, Var, While)
from .types import F64, I1, I64

_BIN_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%",
            "and": "&", "or": "|", "xor": "^"}
_CMP_SYM = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_UN_SYM = {"neg": "-", "not": "!"}
INDENT = "  "


def _type(t) -> str:
    return repr(t)


def _const(c: Const) -> str:
    v, t = c.value, c.type
    if t == I1:
        return "true" if v else "false"
    if getattr(t, "is_float", False):
        v = float(v)
        if math.isnan(v):
            s = "nan"
        elif math.isinf(v):
            s = "inf" if v > 0 else "-inf"
        else:
            s = repr(v)
        return s if t == F64 else f"{s}:{_type(t)}"
    return str(v) if t == I64 else f"{v}:{_type(t)}"


def _var(v) -> str:
    return f"%{v.name}" if isinstance(v, Var) else f"<not a Var: {v!r}>"


def _fmt(e, nested: bool) -> str:
    # `nested`: the expression is an operand of an infix operator, so infix forms get parentheses.
    if isinstance(e, Const):
        return _const(e)
    if isinstance(e, Read):
        return _var(e.var)
    if isinstance(e, Bin):
        if e.op in _BIN_SYM:
            s = f"{_fmt(e.a, True)} {_BIN_SYM[e.op]} {_fmt(e.b, True)}"
            return f"({s})" if nested else s
        return f"{e.op}({_fmt(e.a, False)}, {_fmt(e.b, False)})"
    if isinstance(e, Cmp):
        sym = _CMP_SYM.get(e.op, e.op)
        s = f"{_fmt(e.a, True)} {sym} {_fmt(e.b, True)}"
        return f"({s})" if nested else s
    if isinstance(e, Un):
        if e.op in _UN_SYM:
            return f"{_UN_SYM[e.op]}{_fmt(e.a, True)}"
        return f"{e.op}({_fmt(e.a, False)})"
    if isinstance(e, Select):
        return f"select({_fmt(e.cond, False)}, {_fmt(e.a, False)}, {_fmt(e.b, False)})"
    if isinstance(e, Cast):
        return f"cast<{_type(e.to)}>({_fmt(e.a, False)})"
    if isinstance(e, Load):
        s = f"load {_fmt(e.ptr, True)}[{_fmt(e.index, False)}]"
        return f"({s})" if nested else s
    if isinstance(e, Call):
        args = ", ".join(_fmt(a, False) for a in e.args)
        return f"{e.fn}({args})"
    return f"<not an expression: {e!r}>"


def format_expr(e) -> str:
    """Text of one expression (top level, no outer parentheses)."""
    return _fmt(e, False)


def format_stmt_header(s) -> str:
    """One-line summary of a statement (compound statements: their header only).  Used in error
    messages of the verifier and the interpreter."""
    if isinstance(s, Let):
        return f"let {_var(s.var)}: {_type(s.var.type)} = {format_expr(s.value)}"
    if isinstance(s, Assign):
        return f"{_var(s.var)} = {format_expr(s.value)}"
    if isinstance(s, Store):
        return f"store {_fmt(s.ptr, True)}[{format_expr(s.index)}] = {format_expr(s.value)}"
    if isinstance(s, If):
        return f"if ({format_expr(s.cond)})"
    if isinstance(s, While):
        return f"while ({format_expr(s.cond)})"
    if isinstance(s, For):
        return f"for {_var(s.var)} in [{format_expr(s.lo)}, {format_expr(s.hi)})"
    if isinstance(s, Return):
        return f"return {s.status}"
    if isinstance(s, Eval):
        return format_expr(s.expr)
    if isinstance(s, Comment):
        return "# " + s.text.replace("\n", " ")
    return f"<not a statement: {s!r}>"


def _stmts(body, depth: int, out: list) -> None:
    pad = INDENT * depth
    for s in body:
        if isinstance(s, Comment):
            out.extend(f"{pad}# {line}" for line in s.text.splitlines() or [""])
        elif isinstance(s, If):
            out.append(f"{pad}if ({format_expr(s.cond)}) {{")
            _stmts(s.then, depth + 1, out)
            if s.orelse:
                out.append(f"{pad}}} else {{")
                _stmts(s.orelse, depth + 1, out)
            out.append(pad + "}")
        elif isinstance(s, (While, For)):
            out.append(f"{pad}{format_stmt_header(s)} {{")
            _stmts(s.body, depth + 1, out)
            out.append(pad + "}")
        else:
            out.append(pad + format_stmt_header(s))


def mut_vars(body) -> list:
    """The `mut` variables assigned anywhere in `body`, in order of first appearance (codegen
    gives each one alloca; the printer declares them)."""
    seen: dict = {}

    def walk(stmts):
        for s in stmts:
            if isinstance(s, Assign):
                seen.setdefault(id(s.var), s.var)
            elif isinstance(s, If):
                walk(s.then)
                walk(s.orelse)
            elif isinstance(s, (While, For)):
                walk(s.body)

    walk(body)
    return list(seen.values())


def format_function(fn: Function) -> str:
    """Text of a whole function; ends with a newline."""
    params = ", ".join(f"{_var(p)}: {_type(p.type)}" for p in fn.params)
    out = [f"func {fn.name}({params}) -> i32 {{"]
    out.extend(f"{INDENT}mut {_var(v)}: {_type(v.type)}" for v in mut_vars(fn.body))
    _stmts(fn.body, 1, out)
    out.append("}")
    return "\n".join(out) + "\n"


__all__ = ["format_function", "format_expr", "format_stmt_header", "mut_vars"]
