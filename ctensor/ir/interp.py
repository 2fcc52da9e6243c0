"""Reference interpreter of the IR, for tests: slow, strict, and faithful to the LLVM backend.

`run(fn, args)` executes `fn` and returns its i32 status.  Arguments: numpy 1-D contiguous arrays
for pointer parameters (dtype must match: i8 <-> int8/bool/uint8, i32, i64, f32, f64; None or 0
for a null pointer), Python numbers for scalars.  The function is compiled once into Python
closures (cached on the Function object's id for the duration of a call only).

Semantics follow the LLVM backend exactly: integers wrap at their width, `div`/`rem` are signed
and truncate toward zero, floats are numpy float64/float32 scalars, float min/max are
``a < b ? a : b`` / ``a > b ? a : b`` (NaN picks b), float comparisons are ordered except ``ne``.
Undefined behaviour in LLVM raises `InterpError` here instead of silently "working": loads and
stores out of bounds, integer division by zero or overflow, float -> int casts of NaN/inf or
out-of-range values, reading a `mut` variable never assigned, `realloc`/`free` of memory that did
not come from `realloc`.  Both arms of a `select` are evaluated (LLVM executes both loads).

Addresses.  Pointers are numpy arrays.  ``Cast(i64, p)`` yields the real address
``p.ctypes.data``; ``Cast(ptr<T>, a)`` resolves `a` through `HANDLES` (address -> array, for
arrays made by `realloc`/`malloc`) or the argument arrays of the current run, viewed as T.  `realloc` returns a fresh,
larger array (old prefix copied, the rest filled with the byte 0xCD so that reading unwritten
memory shows up), registered in `HANDLES`.  A kernel that publishes a grown buffer by storing its
address into an i64 cell therefore works unchanged: the caller gets the array back with
`resolve(address)` and drops it with `release(address)`.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import InterpError
from .nodes import (Assign, Bin, Call, Cast, Cmp, Comment, Const, Eval, For, Function, If, Let,
                    Load, Read, Return, Select, Store, Un, While)
from .build import next_float
from .printer import format_stmt_header
from .types import I1, PtrType

HANDLES: dict[int, np.ndarray] = {}   # address -> array made by realloc/malloc (kept alive here)
_OWNED: set[int] = set()              # addresses of arrays created by realloc/malloc (freeable)

_DTYPES = {"i8": np.int8, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}
_POISON = 0xCD


def _wrap(v: int, t) -> int:
    if t == I1:
        return v & 1
    m = 1 << t.bits
    v &= m - 1
    return v - m if v >= m >> 1 else v


def _check_signed(v: int, t, what: str) -> int:
    if not -(1 << (t.bits - 1)) <= v < (1 << (t.bits - 1)):
        raise InterpError(f"{what}: result {v} overflows {t} (undefined in LLVM)")
    return v


def resolve(address: int) -> np.ndarray:
    """The array registered under `address` (made by realloc or `malloc`)."""
    try:
        return HANDLES[address]
    except KeyError:
        raise InterpError(f"unknown address {address:#x}") from None


def release(address: int) -> None:
    """Forget the array registered under `address` (the interpreter analogue of `free`)."""
    HANDLES.pop(address, None)
    _OWNED.discard(address)


def malloc(n: int, dtype) -> int:
    """Allocate an array the interpreted kernel may `realloc`/`free`; returns its address."""
    a = np.zeros(max(int(n), 1), dtype=dtype)[: int(n)]
    HANDLES[a.ctypes.data] = a
    _OWNED.add(a.ctypes.data)
    return a.ctypes.data


def _addr(arr) -> int:
    return 0 if arr is None else arr.ctypes.data


def _view(arr, t: PtrType):
    if arr is None:
        return None
    dt = np.dtype(_DTYPES[t.elem.name])
    if arr.dtype == dt:
        return arr
    if arr.nbytes % dt.itemsize:
        raise InterpError(f"cannot view a {arr.nbytes}-byte buffer as {t}")
    return arr.view(dt)


# ---------------------------------------------------------------- expressions -> closures

def _int_bin(op, t):
    def div(a, b):
        if b == 0:
            raise InterpError("integer division by zero")
        q = abs(a) // abs(b)
        return _check_signed(-q if (a < 0) != (b < 0) else q, t, "div")

    def rem(a, b):
        div(a, b)  # same undefined cases as div
        return a - b * (-(abs(a) // abs(b)) if (a < 0) != (b < 0) else abs(a) // abs(b))

    table = {"add": lambda a, b: _wrap(a + b, t), "sub": lambda a, b: _wrap(a - b, t),
             "mul": lambda a, b: _wrap(a * b, t), "div": div, "rem": rem,
             "min": lambda a, b: a if a < b else b, "max": lambda a, b: a if a > b else b,
             "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}
    return table[op]


_FLOAT_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
              "div": lambda a, b: a / b, "rem": np.fmod, "pow": lambda a, b: _pow(a, b),
              "min": lambda a, b: a if a < b else b, "max": lambda a, b: a if a > b else b}


def _pow(a, b):
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(a), np.float64(b)))


_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _cast_fn(ctx, src, dst):
    if isinstance(dst, PtrType):
        if isinstance(src, PtrType):
            return lambda p: _view(p, dst)
        return lambda a: _view(ctx.from_address(a), dst)
    if isinstance(src, PtrType):
        return ctx.to_address
    if dst.is_float:
        f = _DTYPES[dst.name]
        return lambda v: f(v)
    if src.is_float:
        def f2i(v):
            if not math.isfinite(v):
                raise InterpError(f"cast of {v} to {dst} (poison in LLVM)")
            return _check_signed(int(v), dst, "float -> int cast")
        return f2i
    return lambda v: _wrap(v, dst)


class _Ctx:
    """Per-run state: argument arrays by address, and the closures of the function."""

    def __init__(self):
        self.by_address: dict[int, np.ndarray] = {}

    def to_address(self, arr) -> int:
        # every pointer is an argument (known by address for this run) or came from realloc
        # (already in HANDLES), or a view of one of those with the same address: nothing to
        # register, and argument arrays are not kept alive after the run
        return _addr(arr)

    def from_address(self, a: int):
        if a == 0:
            return None
        if a in HANDLES:
            return HANDLES[a]
        if a in self.by_address:
            return self.by_address[a]
        raise InterpError(f"integer {a:#x} is not the address of a known array")

    def realloc(self, p, nbytes, t: PtrType):
        if p is not None and p.ctypes.data not in _OWNED:
            raise InterpError("realloc of memory that was not obtained from realloc/malloc")
        if nbytes < 0:
            raise InterpError(f"realloc to a negative size {nbytes}")
        raw = np.full(max(nbytes, 1), _POISON, dtype=np.uint8)[:nbytes]
        if p is not None:
            keep = min(p.nbytes, nbytes)
            raw[:keep] = p.view(np.uint8)[:keep]
            release(p.ctypes.data)
        arr = raw[: nbytes - nbytes % np.dtype(_DTYPES[t.elem.name]).itemsize].view(_DTYPES[t.elem.name])
        HANDLES[arr.ctypes.data] = arr
        _OWNED.add(arr.ctypes.data)
        return arr

    def free(self, p):
        if p is None:
            return None
        if p.ctypes.data not in _OWNED:
            raise InterpError("free of memory that was not obtained from realloc/malloc")
        release(p.ctypes.data)
        return None

    # each compiled expression is a function env -> value
    def expr(self, e):
        if isinstance(e, Const):
            t = e.type
            v = _DTYPES[t.name](e.value) if t.is_float else (int(bool(e.value)) if t == I1 else int(e.value))
            return lambda env: v
        if isinstance(e, Read):
            var = e.var

            def read(env):
                try:
                    return env[var]
                except KeyError:
                    raise InterpError(f"%{var.name} read before it was assigned") from None
            return read
        if isinstance(e, Bin):
            t = e.a.type
            op = _FLOAT_BIN[e.op] if t.is_float else _int_bin(e.op, t)
            fa, fb = self.expr(e.a), self.expr(e.b)
            return lambda env: op(fa(env), fb(env))
        if isinstance(e, Cmp):
            op, fa, fb = _CMP[e.op], self.expr(e.a), self.expr(e.b)
            if isinstance(e.a.type, PtrType):  # pointers compare by address
                return lambda env: int(op(_addr(fa(env)), _addr(fb(env))))
            return lambda env: int(bool(op(fa(env), fb(env))))
        if isinstance(e, Un):
            t, fa = e.type, self.expr(e.a)
            if t.is_float:
                op = {"neg": lambda a: -a, "sqrt": np.sqrt, "abs": np.abs, "floor": np.floor,
                      "exp": np.exp, "log": np.log,
                      "nextup": lambda a: next_float(float(a), True),
                      "nextdown": lambda a: next_float(float(a), False)}[e.op]
            else:
                op = {"neg": lambda a: _wrap(-a, t), "not": lambda a: _wrap(~a, t),
                      "abs": lambda a: _wrap(abs(a), t)}[e.op]
            return lambda env: op(fa(env))
        if isinstance(e, Select):
            fc, fa, fb = self.expr(e.cond), self.expr(e.a), self.expr(e.b)

            def select(env):
                c, a, b = fc(env), fa(env), fb(env)  # both arms run, as in LLVM
                return a if c else b
            return select
        if isinstance(e, Cast):
            f, fa = _cast_fn(self, e.a.type, e.to), self.expr(e.a)
            return lambda env: f(fa(env))
        if isinstance(e, Load):
            fp, fi = self.expr(e.ptr), self.expr(e.index)
            conv = (lambda x: x) if e.type.is_float else int

            def load(env):
                p, i = fp(env), fi(env)
                if p is None or not 0 <= i < p.shape[0]:
                    raise InterpError(f"load out of bounds: index {i}, length "
                                      f"{None if p is None else p.shape[0]}")
                return conv(p[i])
            return load
        if isinstance(e, Call):
            fargs = [self.expr(a) for a in e.args]
            if e.fn == "realloc":
                t = e.args[0].type
                return lambda env: self.realloc(fargs[0](env), fargs[1](env), t)
            if e.fn == "free":
                return lambda env: self.free(fargs[0](env))
        raise InterpError(f"cannot interpret expression {e!r} (run verify first)")

    # each compiled statement list is a function env -> None; Return raises _Return
    def block(self, stmts):
        fs = [self.stmt(s) for s in stmts if not isinstance(s, Comment)]

        def run_block(env):
            for f in fs:
                f(env)
        return run_block

    def stmt(self, s):
        f = self._stmt(s)

        def located(env):  # attach the statement to errors, innermost first
            try:
                f(env)
            except InterpError as err:
                if not getattr(err, "located", False):
                    err.args = (f"{err.args[0]} in `{format_stmt_header(s)}`",)
                    err.located = True
                raise
        return located

    def _stmt(self, s):
        if isinstance(s, (Let, Assign)):
            var, fv = s.var, self.expr(s.value)

            def bind(env):
                env[var] = fv(env)
            return bind
        if isinstance(s, Store):
            fp, fi, fv = self.expr(s.ptr), self.expr(s.index), self.expr(s.value)

            def store(env):
                p, i, v = fp(env), fi(env), fv(env)
                if p is None or not 0 <= i < p.shape[0]:
                    raise InterpError(f"store out of bounds: index {i}, length "
                                      f"{None if p is None else p.shape[0]}")
                p[i] = v
            return store
        if isinstance(s, If):
            fc, ft, fe = self.expr(s.cond), self.block(s.then), self.block(s.orelse)
            return lambda env: ft(env) if fc(env) else fe(env)
        if isinstance(s, While):
            fc, fb = self.expr(s.cond), self.block(s.body)

            def loop(env):
                while fc(env):
                    fb(env)
            return loop
        if isinstance(s, For):
            var, flo, fhi, fb = s.var, self.expr(s.lo), self.expr(s.hi), self.block(s.body)

            def for_(env):
                for i in range(flo(env), fhi(env)):  # bounds evaluated once, as in codegen
                    env[var] = i
                    fb(env)
            return for_
        if isinstance(s, Return):
            status = s.status

            def ret(env):
                raise _Return(status)
            return ret
        if isinstance(s, Eval):
            fe = self.expr(s.expr)
            return lambda env: fe(env) and None
        raise InterpError(f"cannot interpret statement {s!r} (run verify first)")


class _Return(Exception):
    def __init__(self, status):
        self.status = status


def _arg(ctx: _Ctx, p, a):
    t = p.type
    if isinstance(t, PtrType):
        if a is None or (isinstance(a, (int, np.integer)) and not isinstance(a, bool)):
            return ctx.from_address(int(a or 0))
        if not isinstance(a, np.ndarray) or a.ndim != 1 or not a.flags.c_contiguous:
            raise TypeError(f"argument %{p.name}: expected a contiguous 1-D numpy array")
        if a.dtype in (np.bool_, np.uint8):
            a = a.view(np.int8)
        if a.dtype != np.dtype(_DTYPES[t.elem.name]):
            raise TypeError(f"argument %{p.name}: dtype {a.dtype} does not match {t}")
        ctx.by_address.setdefault(a.ctypes.data, a)
        return a
    if t.is_float:
        return _DTYPES[t.name](a)
    return _wrap(int(a), t)


def run(fn: Function, args: list) -> int:
    """Interpret `fn` on `args` (one per parameter); return its status."""
    if len(args) != len(fn.params):
        raise TypeError(f"{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
    ctx = _Ctx()
    env = {p: _arg(ctx, p, a) for p, a in zip(fn.params, args)}
    body = ctx.block(fn.body)
    with np.errstate(all="ignore"):
        try:
            body(env)
        except _Return as r:
            return r.status
    return 0


__all__ = ["run", "HANDLES", "resolve", "release", "malloc", "InterpError"]
