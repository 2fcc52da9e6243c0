"""IR -> llvmlite module (numba / xdsl style).

* Each `mut` variable gets one alloca in the entry block (LLVM's mem2reg/SROA promotes them to
  registers, so no phi construction is needed here); `let` variables are plain SSA values; `For`
  variables are a phi in the loop header.
* Structured `If`/`While`/`For` become basic blocks; ops map to builder calls by table.
* Float comparisons are ordered except `ne` (unordered); float min/max are selects on an ordered
  compare (`a < b ? a : b`), not `llvm.minnum`, so NaN behaviour matches the interpreter.
* Memory is accessed by an inbounds GEP on the element type (opaque pointers).
* Two functions are emitted: ``<name>(params...) -> i32`` and ``<name>_packed(ptr block) -> i32``,
  which reads parameter k from 64-bit slot k of the block (pointers loaded as ``ptr`` — same bits
  as the i64 but without an inttoptr that would blind alias analysis; f64 by bitcast; narrower
  integers by trunc), calls ``<name>`` and returns its status.  Both keep external linkage so both
  stay callable by address; O3 inlines the first into the second.
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.errors import IRError
from ..ir.nodes import (Assign, Bin, Call, Cast, Cmp, Comment, Const, Eval, For, Function, If, Let,
                        Load, Read, Return, Select, Store, Un, While)
from ..ir.printer import format_stmt_header, mut_vars
from ..ir.types import I1, PtrType
from ..ir.verify import verify

I32_T = ir.IntType(32)
I64_T = ir.IntType(64)
PTR_T = ir.PointerType()
_SCALAR = {"i1": ir.IntType(1), "i8": ir.IntType(8), "i32": I32_T, "i64": I64_T,
           "f32": ir.FloatType(), "f64": ir.DoubleType()}

_INT_BIN = {"add": "add", "sub": "sub", "mul": "mul", "div": "sdiv", "rem": "srem",
            "and": "and_", "or": "or_", "xor": "xor"}
_FLOAT_BIN = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv", "rem": "frem"}
_CMP_SYM = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_MINMAX = {"min": "<", "max": ">"}   # min = a < b ? a : b ; max = a > b ? a : b
_INTRINSIC = {"sqrt": "llvm.sqrt", "abs": "llvm.fabs", "floor": "llvm.floor"}


def _next_float(b, x, up: bool):
    """The adjacent double (ir.build.next_float) by integer steps on the bits: a positive double's
    successor is bits + 1, a negative one's bits - 1; ±0 steps to the smallest subnormal.  Past
    ±inf the bits become a NaN pattern, as next_float specifies."""
    i64 = ir.IntType(64)
    if not up:                                   # nextdown(x) = -nextup(-x)
        return b.fneg(_next_float(b, b.fneg(x), True))
    bits = b.bitcast(x, i64)
    step = b.select(b.icmp_signed(">=", bits, ir.Constant(i64, 0)), ir.Constant(i64, 1), ir.Constant(i64, -1))
    moved = b.bitcast(b.add(bits, step), x.type)
    zero = b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0))
    return b.select(zero, ir.Constant(x.type, 5e-324), moved)


def lltype(t) -> ir.Type:
    """llvmlite type of an IR type."""
    return PTR_T if isinstance(t, PtrType) else _SCALAR[t.name]


def _const(c: Const) -> ir.Constant:
    t = c.type
    if t.is_float:
        return ir.Constant(_SCALAR[t.name], float(c.value))
    if t == I1:
        return ir.Constant(_SCALAR["i1"], int(bool(c.value)))
    v = int(c.value) & ((1 << t.bits) - 1)        # normalise to the signed range
    return ir.Constant(_SCALAR[t.name], v - (1 << t.bits) if v >> (t.bits - 1) else v)


class _Emitter:
    def __init__(self, fn: Function, module: ir.Module):
        self.fn, self.module = fn, module
        self.vals: dict = {}    # param/let Var -> SSA value
        self.slots: dict = {}   # mut Var -> alloca
        self.named: set = set()  # ids of instructions already renamed after a let

    # ------------------------------------------------------------ expressions
    def expr(self, e) -> ir.Value:
        b = self.b
        if isinstance(e, Const):
            return _const(e)
        if isinstance(e, Read):
            v = e.var
            if v.kind == "mut":
                return b.load(self.slots[v], name=v.name, typ=lltype(v.type))
            return self.vals[v]
        if isinstance(e, Bin):
            x, y, t = self.expr(e.a), self.expr(e.b), e.a.type
            if e.op in _MINMAX:
                sym = _MINMAX[e.op]
                c = b.fcmp_ordered(sym, x, y) if t.is_float else b.icmp_signed(sym, x, y)
                return b.select(c, x, y)
            return getattr(b, (_FLOAT_BIN if t.is_float else _INT_BIN)[e.op])(x, y)
        if isinstance(e, Cmp):
            x, y, sym = self.expr(e.a), self.expr(e.b), _CMP_SYM[e.op]
            t = e.a.type
            if isinstance(t, PtrType) or not t.is_float:
                return b.icmp_signed(sym, x, y)
            if e.op == "ne":
                return b.fcmp_unordered(sym, x, y)
            return b.fcmp_ordered(sym, x, y)
        if isinstance(e, Un):
            x, t = self.expr(e.a), e.a.type
            if e.op == "neg":
                return b.fneg(x) if t.is_float else b.neg(x)
            if e.op == "not":
                return b.not_(x)
            if e.op in ("nextup", "nextdown"):
                return _next_float(b, x, e.op == "nextup")
            if e.op == "abs" and not t.is_float:
                return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
            return b.call(self.module.declare_intrinsic(_INTRINSIC[e.op], [x.type]), [x])
        if isinstance(e, Select):
            c, x, y = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
            return b.select(c, x, y)
        if isinstance(e, Cast):
            return self.cast(self.expr(e.a), e.a.type, e.to)
        if isinstance(e, Load):
            elem = e.ptr.type.elem
            addr = self.gep(self.expr(e.ptr), self.expr(e.index), elem)
            return b.load(addr, typ=lltype(elem), align=max(elem.bits // 8, 1))
        if isinstance(e, Call):
            return b.call(self.external(e.fn), [self.expr(a) for a in e.args])
        raise IRError(f"cannot emit expression {e!r}")

    def gep(self, p, i, elem):
        # inbounds: generated code only indexes inside its buffers (DESIGN §2)
        return self.b.gep(p, [i], inbounds=True, source_etype=lltype(elem))

    def cast(self, x, src, dst):
        b, ty = self.b, lltype(dst)
        if isinstance(dst, PtrType):
            return x if isinstance(src, PtrType) else b.inttoptr(x, ty)
        if isinstance(src, PtrType):
            return b.ptrtoint(x, ty)
        if src.is_float and dst.is_float:
            return x if src == dst else (b.fpext(x, ty) if dst.bits > src.bits else b.fptrunc(x, ty))
        if src.is_float:
            return b.fptosi(x, ty)
        if dst.is_float:
            return b.uitofp(x, ty) if src == I1 else b.sitofp(x, ty)
        if dst.bits == src.bits:
            return x
        if dst.bits < src.bits:
            return b.trunc(x, ty)
        return b.zext(x, ty) if src == I1 else b.sext(x, ty)

    def external(self, name: str) -> ir.Function:
        if name in self.module.globals:
            return self.module.globals[name]
        fnty = {"realloc": ir.FunctionType(PTR_T, [PTR_T, I64_T]),
                "free": ir.FunctionType(ir.VoidType(), [PTR_T])}[name]
        f = ir.Function(self.module, fnty, name=name)
        f.attributes.add("nounwind")
        return f

    # ------------------------------------------------------------ statements
    def block(self, stmts):
        for s in stmts:
            try:
                self.stmt(s)
            except IRError:
                raise
            except Exception as err:  # numba-style error context: name the statement
                raise IRError(f"{self.fn.name}: cannot emit `{format_stmt_header(s)}`: "
                              f"{type(err).__name__}: {err}") from err

    def new_block(self, name):
        return self.llfn.append_basic_block(name)

    def stmt(self, s):
        b = self.b
        if isinstance(s, Let):
            v = self.expr(s.value)
            if isinstance(v, ir.Instruction) and id(v) not in self.named:  # readable LLVM IR
                v.name = s.var.name
                self.named.add(id(v))
            self.vals[s.var] = v
        elif isinstance(s, Assign):
            b.store(self.expr(s.value), self.slots[s.var])
        elif isinstance(s, Store):
            elem = s.ptr.type.elem
            addr = self.gep(self.expr(s.ptr), self.expr(s.index), elem)
            b.store(self.expr(s.value), addr, align=max(elem.bits // 8, 1))
        elif isinstance(s, If):
            cond = self.expr(s.cond)
            then, merge = self.new_block("if.then"), self.new_block("if.end")
            orelse = self.new_block("if.else") if s.orelse else merge
            b.cbranch(cond, then, orelse)
            for blk, body in ((then, s.then), (orelse, s.orelse)):
                if blk is not merge:  # an empty then-branch still needs its terminator
                    b.position_at_end(blk)
                    self.block(body)
                    b.branch(merge)
            b.position_at_end(merge)
        elif isinstance(s, While):
            head, body, end = (self.new_block(n) for n in ("while.cond", "while.body", "while.end"))
            b.branch(head)
            b.position_at_end(head)
            b.cbranch(self.expr(s.cond), body, end)
            b.position_at_end(body)
            self.block(s.body)
            b.branch(head)
            b.position_at_end(end)
        elif isinstance(s, For):
            lo, hi = self.expr(s.lo), self.expr(s.hi)     # bounds evaluated once
            pre = b.block
            head, body, end = (self.new_block(n) for n in ("for.cond", "for.body", "for.end"))
            b.branch(head)
            b.position_at_end(head)
            i = b.phi(I64_T, name=s.var.name)
            i.add_incoming(lo, pre)
            self.vals[s.var] = i
            b.cbranch(b.icmp_signed("<", i, hi), body, end)
            b.position_at_end(body)
            self.block(s.body)
            # i < hi <= INT64_MAX, so i + 1 cannot overflow: nsw helps trip-count analysis
            i.add_incoming(b.add(i, ir.Constant(I64_T, 1), flags=["nsw"]), b.block)
            b.branch(head)
            b.position_at_end(end)
        elif isinstance(s, Return):
            b.ret(ir.Constant(I32_T, s.status))
            b.position_at_end(self.new_block("after.return"))  # unreachable; keeps later code valid
        elif isinstance(s, Eval):
            self.expr(s.expr)
        elif isinstance(s, Comment):
            pass
        else:
            raise IRError(f"cannot emit statement {s!r}")

    def emit(self) -> ir.Function:
        fn = self.fn
        fnty = ir.FunctionType(I32_T, [lltype(p.type) for p in fn.params])
        self.llfn = ir.Function(self.module, fnty, name=fn.name)
        self.llfn.attributes.add("nounwind")
        for arg, p in zip(self.llfn.args, fn.params):
            arg.name = p.name
            self.vals[p] = arg
            if isinstance(p.type, PtrType):
                # inputs are only read and outputs live in kernel-allocated buffers and private
                # argument cells, so no memory written through one pointer is reached through
                # another: LLVM may keep loads of input buffers across output stores
                arg.add_attribute("noalias")
        self.b = ir.IRBuilder(self.new_block("entry"))
        for v in mut_vars(fn.body):  # all allocas first, in the entry block, for mem2reg
            self.slots[v] = self.b.alloca(lltype(v.type), name=v.name + ".slot")
        self.block(fn.body)
        if not self.b.block.is_terminated:
            self.b.ret(ir.Constant(I32_T, 0))
        return self.llfn


def _emit_packed(module: ir.Module, fn: Function, target: ir.Function) -> ir.Function:
    packed = ir.Function(module, ir.FunctionType(I32_T, [PTR_T]), name=fn.name + "_packed")
    packed.attributes.add("nounwind")
    block = packed.args[0]
    block.name = "args"
    b = ir.IRBuilder(packed.append_basic_block("entry"))
    args = []
    for k, p in enumerate(fn.params):
        slot = b.gep(block, [ir.Constant(I64_T, k)], inbounds=True, source_etype=I64_T)
        t = p.type
        if isinstance(t, PtrType):
            args.append(b.load(slot, name=p.name, typ=PTR_T, align=8))
            continue
        raw = b.load(slot, name=p.name + ".bits", typ=I64_T, align=8)
        if t.is_float:
            bits = raw if t.bits == 64 else b.trunc(raw, I32_T)
            args.append(b.bitcast(bits, lltype(t), name=p.name))
        else:
            args.append(raw if t.bits == 64 else b.trunc(raw, lltype(t), name=p.name))
    b.ret(b.call(target, args))
    return packed


def emit_module(fn: Function) -> ir.Module:
    """Verify `fn` and emit an llvmlite module holding ``fn.name`` and ``fn.name + '_packed'``."""
    verify(fn)
    module = ir.Module(name=fn.name)
    target = _Emitter(fn, module).emit()
    _emit_packed(module, fn, target)
    return module


__all__ = ["emit_module", "lltype"]
