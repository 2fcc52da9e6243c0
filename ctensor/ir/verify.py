"""Verifier of the IR: types, scoping and variable kinds.

`verify(fn)` raises `IRError` naming the function and the offending statement.  It is the contract
between the lowering and the backends: a verified function never makes the LLVM backend produce
invalid LLVM IR (which would abort the process inside the bundled LLVM).

Rules beyond plain typing:
* `let` variables (and `For` variables) are SSA: defined exactly once in the whole function, and
  visible only after their definition, inside the body that defines them.
* `mut` variables live for the whole function (one alloca each); one must be assigned
  (textually) before any read, and only `Assign` may write it.
* Parameters must be kind ``param`` and listed in ``fn.params``.
* Casts: int<->int (i1 zero-extends), int<->float (signed; i1 -> float is 0.0/1.0; float -> i1 is
  rejected: compare instead), float<->float, i64<->pointer, pointer<->pointer.
* i1 supports only and/or/xor/not, select, eq/ne; pointers to i1 are not allowed (numpy booleans
  are bytes: use i8).
"""
from __future__ import annotations

import numbers

from .errors import IRError
from .nodes import (EXTERNALS, Assign, Bin, Call, Cast, Cmp, Comment, Const, Eval, For, Function,
                    If, Let, Load, Read, Return, Select, Store, Un, Var, While)
from .printer import format_expr, format_stmt_header
from .types import F64, I1, I64, SCALARS, PtrType, ScalarType

ARITH_OPS = {"add", "sub", "mul", "div", "rem", "min", "max"}
BIT_OPS = {"and", "or", "xor"}
CMP_OPS = {"lt", "le", "gt", "ge", "eq", "ne"}
UN_OPS = {"neg", "not", "sqrt", "abs", "floor", "exp", "log", "nextup", "nextdown"}


def _is_scalar(t) -> bool:
    return isinstance(t, ScalarType) and SCALARS.get(t.name) == t


def valid_type(t) -> bool:
    """A scalar type of the IR, or a pointer to a non-i1 scalar."""
    return _is_scalar(t) or (isinstance(t, PtrType) and _is_scalar(t.elem) and t.elem != I1)


def cast_allowed(src, dst) -> bool:
    """Whether `Cast(dst, <expr of type src>)` is supported (see module docstring)."""
    if isinstance(src, PtrType) or isinstance(dst, PtrType):
        return (isinstance(src, PtrType) or src == I64) and (isinstance(dst, PtrType) or dst == I64)
    if src.is_float and dst == I1:
        return False
    return True


class _Verifier:
    def __init__(self, fn: Function):
        self.fn = fn
        self.params = {id(p) for p in fn.params}
        self.scopes: list[set] = [set()]
        self.lets_ever: set = set()     # SSA: a let is defined once in the whole function
        self.assigned: set = set()      # mut vars assigned so far (program order)
        self.stmt = None

    def fail(self, msg: str):
        where = f" in `{format_stmt_header(self.stmt)}`" if self.stmt is not None else ""
        raise IRError(f"{self.fn.name}: {msg}{where}")

    # ------------------------------------------------------------ expressions
    def expr(self, e, allow_void: bool = False):
        """Check `e`, return its type."""
        if isinstance(e, Const):
            return self.const(e)
        if isinstance(e, Read):
            return self.read(e.var)
        if isinstance(e, Bin):
            ta, tb = self.expr(e.a), self.expr(e.b)
            if ta != tb:
                self.fail(f"operands of {e.op} have different types {ta} and {tb}: {format_expr(e)}")
            if e.op in ARITH_OPS:
                if not _is_scalar(ta) or ta == I1:
                    self.fail(f"{e.op} needs numeric operands, not {ta}")
            elif e.op == "pow":
                if not _is_scalar(ta) or not ta.is_float:
                    self.fail(f"pow needs float operands, not {ta}")
            elif e.op in BIT_OPS:
                if not _is_scalar(ta) or ta.is_float:
                    self.fail(f"{e.op} needs integer or i1 operands, not {ta}")
            else:
                self.fail(f"unknown binary op {e.op!r}")
            return ta
        if isinstance(e, Cmp):
            ta, tb = self.expr(e.a), self.expr(e.b)
            if e.op not in CMP_OPS:
                self.fail(f"unknown comparison {e.op!r}")
            if ta != tb:
                self.fail(f"operands of {e.op} have different types {ta} and {tb}: {format_expr(e)}")
            if (isinstance(ta, PtrType) or ta == I1) and e.op not in ("eq", "ne"):
                self.fail(f"{e.op} is not defined on {ta} (only eq/ne)")
            return I1
        if isinstance(e, Un):
            t = self.expr(e.a)
            if e.op not in UN_OPS:
                self.fail(f"unknown unary op {e.op!r}")
            ok = {"neg": _is_scalar(t) and t != I1, "not": _is_scalar(t) and t.is_int,
                  "abs": _is_scalar(t) and t != I1,
                  "sqrt": _is_scalar(t) and t.is_float, "floor": _is_scalar(t) and t.is_float,
                  "exp": _is_scalar(t) and t.is_float, "log": _is_scalar(t) and t.is_float,
                  "nextup": t == F64, "nextdown": t == F64}
            if not ok[e.op]:
                self.fail(f"{e.op} is not defined on {t}")
            return t
        if isinstance(e, Select):
            tc, ta, tb = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
            if tc != I1:
                self.fail(f"select condition has type {tc}, not i1")
            if ta != tb:
                self.fail(f"select arms have different types {ta} and {tb}")
            return ta
        if isinstance(e, Cast):
            t = self.expr(e.a)
            if not valid_type(e.to):
                self.fail(f"cast to invalid type {e.to!r}")
            if not cast_allowed(t, e.to):
                self.fail(f"unsupported cast from {t} to {e.to}")
            return e.to
        if isinstance(e, Load):
            tp, ti = self.expr(e.ptr), self.expr(e.index)
            if not isinstance(tp, PtrType):
                self.fail(f"load from a non-pointer of type {tp}")
            if ti != I64:
                self.fail(f"load index has type {ti}, not i64")
            return tp.elem
        if isinstance(e, Call):
            return self.call(e, allow_void)
        self.fail(f"not an expression: {e!r}")

    def const(self, e: Const):
        t = e.type
        if not _is_scalar(t):
            self.fail(f"constant of invalid type {t!r}")
        v = e.value
        if t.is_float:
            if not isinstance(v, numbers.Real) or isinstance(v, bool):
                self.fail(f"float constant {v!r} is not a number")
        elif t == I1:
            if isinstance(v, float) or v not in (0, 1):
                self.fail(f"i1 constant {v!r} is not a boolean")
        elif not isinstance(v, numbers.Integral) or not -(1 << (t.bits - 1)) <= v < (1 << t.bits):
            self.fail(f"constant {v!r} does not fit {t}")
        return t

    def read(self, v):
        if not isinstance(v, Var):
            self.fail(f"read of a non-variable {v!r}")
        if v.kind == "param":
            if id(v) not in self.params:
                self.fail(f"%{v.name} is not a parameter of {self.fn.name}")
        elif v.kind == "let":
            if not any(id(v) in s for s in self.scopes):
                self.fail(f"%{v.name} is read before its definition or outside its scope")
        elif v.kind == "mut":
            if id(v) not in self.assigned:
                self.fail(f"mut %{v.name} is read before it is assigned")
        else:
            self.fail(f"%{v.name} has unknown kind {v.kind!r}")
        return v.type

    def call(self, e: Call, allow_void: bool):
        if e.fn not in EXTERNALS:
            self.fail(f"unknown external function {e.fn!r}")
        ptypes, ret = EXTERNALS[e.fn]
        if len(e.args) != len(ptypes):
            self.fail(f"{e.fn} takes {len(ptypes)} arguments, got {len(e.args)}")
        targs = [self.expr(a) for a in e.args]
        for k, (want, got) in enumerate(zip(ptypes, targs)):
            if want == "ptr" and not isinstance(got, PtrType) or want != "ptr" and SCALARS[want] != got:
                self.fail(f"argument {k} of {e.fn} has type {got}, expected {want}")
        expect = None if ret == "void" else targs[0] if ret == "ptr" else SCALARS[ret]
        if e.ret != expect:
            self.fail(f"{e.fn} returns {expect}, but the call says {e.ret}")
        if expect is None and not allow_void:
            self.fail(f"void call {e.fn} used as a value")
        return expect

    # ------------------------------------------------------------ statements
    def define(self, v, what: str):
        if not isinstance(v, Var) or v.kind != "let":
            self.fail(f"{what} defines %{getattr(v, 'name', v)} which is not a 'let' variable")
        if not valid_type(v.type):
            self.fail(f"%{v.name} has invalid type {v.type!r}")
        if id(v) in self.lets_ever:
            self.fail(f"let %{v.name} is defined twice")
        self.lets_ever.add(id(v))
        self.scopes[-1].add(id(v))

    def body(self, stmts):
        self.scopes.append(set())
        for s in stmts:
            self.statement(s)
        self.scopes.pop()

    def statement(self, s):
        self.stmt = s
        if isinstance(s, Let):
            t = self.expr(s.value)
            if t != s.var.type:
                self.fail(f"value of type {t} bound to %{s.var.name}: {s.var.type}")
            self.define(s.var, "let")
        elif isinstance(s, Assign):
            v = s.var
            if not isinstance(v, Var) or v.kind != "mut":
                self.fail(f"assignment to %{getattr(v, 'name', v)}, which is not a 'mut' variable")
            if not valid_type(v.type):
                self.fail(f"%{v.name} has invalid type {v.type!r}")
            t = self.expr(s.value)
            if t != v.type:
                self.fail(f"value of type {t} assigned to %{v.name}: {v.type}")
            self.assigned.add(id(v))
        elif isinstance(s, Store):
            tp, ti, tv = self.expr(s.ptr), self.expr(s.index), self.expr(s.value)
            if not isinstance(tp, PtrType):
                self.fail(f"store to a non-pointer of type {tp}")
            if ti != I64:
                self.fail(f"store index has type {ti}, not i64")
            if tv != tp.elem:
                self.fail(f"stored value has type {tv}, pointer holds {tp.elem}")
        elif isinstance(s, If):
            if self.expr(s.cond) != I1:
                self.fail("if condition is not i1")
            self.body(s.then)
            self.stmt = s
            self.body(s.orelse)
        elif isinstance(s, While):
            if self.expr(s.cond) != I1:
                self.fail("while condition is not i1")
            self.body(s.body)
        elif isinstance(s, For):
            if self.expr(s.lo) != I64 or self.expr(s.hi) != I64:
                self.fail("for bounds must be i64")
            if getattr(s.var, "type", None) != I64:
                self.fail("for variable must be i64")
            self.scopes.append(set())
            self.define(s.var, "for")
            self.body(s.body)
            self.scopes.pop()
        elif isinstance(s, Return):
            if not isinstance(s.status, int) or not -(1 << 31) <= s.status < (1 << 31):
                self.fail(f"return status {s.status!r} is not an i32")
        elif isinstance(s, Eval):
            self.expr(s.expr, allow_void=True)
        elif isinstance(s, Comment):
            if not isinstance(s.text, str):
                self.fail("comment text is not a string")
        else:
            self.fail(f"not a statement: {s!r}")

    def run(self):
        names = set()
        for p in self.fn.params:
            if not isinstance(p, Var) or p.kind != "param":
                self.fail(f"parameter {p!r} is not a Var of kind 'param'")
            if not valid_type(p.type):
                self.fail(f"parameter %{p.name} has invalid type {p.type!r}")
            if p.name in names:
                self.fail(f"two parameters are named %{p.name}")
            names.add(p.name)
        if len(self.params) != len(self.fn.params):
            self.fail("a parameter is listed twice")
        self.body(self.fn.body)


def verify(fn: Function) -> None:
    """Raise `IRError` if `fn` is ill-formed; return None otherwise."""
    if not isinstance(fn, Function):
        raise IRError(f"not a Function: {fn!r}")
    _Verifier(fn).run()


__all__ = ["verify", "valid_type", "cast_allowed", "IRError"]
