"""IR -> textual LLVM IR (numba / xdsl style: one rule per node kind).

* Each `mut` variable gets one alloca in the entry block (LLVM's mem2reg/SROA promotes them to
  registers, so no phi construction is needed here); `let` variables are plain SSA values; `For`
  variables are a phi in the loop header.
* Structured `If`/`While`/`For` become basic blocks (labels ``if.then.N``, ``while.cond.N``,
  ``for.cond.N``...: the engine's size tiers count the loop headers by these names).
* Float comparisons are ordered except `ne` (unordered); float min/max are selects on an ordered
  compare (`a < b ? a : b`), not `llvm.minnum`, so NaN behaviour matches the interpreter.
* Memory is accessed by an inbounds GEP on the element type (opaque pointers).
* Two functions are emitted: ``<name>(params...) -> i32`` and ``<name>_packed(ptr block) -> i32``,
  which reads parameter k from 64-bit slot k of the block (pointers loaded as ``ptr`` — same bits
  as the i64 but without an inttoptr that would blind alias analysis; f64 by bitcast; narrower
  integers by trunc), calls ``<name>`` and returns its status.  Both keep external linkage so both
  stay callable by address.
* A first-tier module (`emit_module(fn, forward=True)`, `driver.tiering`) also defines the global
  ``<name>_next`` (a null pointer): its packed entry first loads it (atomic, monotonic) and, once the
  runtime has stored the optimised kernel's packed entry there, tail-calls that instead, so every
  caller holding the first tier's address (the native runner, a spatial entry, numba code, a
  PackedCall) runs the optimised code from its next call on.

The text is written directly rather than through llvmlite's IR builder: the builder and its
printer cost ~100 ms on a 4,000-line kernel (the spatial box query), a third of its cold compile;
these f-strings cost a few ms, and `import ctensor` need not import llvmlite.  Constants are
exact: integers in decimal (normalised to the signed range), floats as the hex of their double
bits (LLVM's exact form; an f32 constant as the double of its f32 value).
"""
from __future__ import annotations

import struct

from ..ir.errors import IRError
from ..ir.nodes import (Assign, Bin, Call, Cast, Cmp, Comment, Const, Eval, For, Function, If, Let,
                        Load, Read, Return, Select, Store, Un, While)
from ..ir.printer import format_stmt_header, mut_vars
from ..ir.types import F32, I1, PtrType
from ..ir.verify import verify

_LLTYPE = {"i1": "i1", "i8": "i8", "i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
_INT_BIN = {"add": "add", "sub": "sub", "mul": "mul", "div": "sdiv", "rem": "srem",
            "and": "and", "or": "or", "xor": "xor"}
_FLOAT_BIN = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv", "rem": "frem"}
_ICMP = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_FCMP = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
_MINMAX = {"min": "lt", "max": "gt"}   # min = a < b ? a : b ; max = a > b ? a : b
_INTRINSIC = {"sqrt": "llvm.sqrt", "abs": "llvm.fabs", "floor": "llvm.floor", "exp": "llvm.exp",
              "log": "llvm.log"}
_EXTERNAL = {"realloc": "declare ptr @realloc(ptr, i64) #0", "free": "declare void @free(ptr) #0"}


def lltype(t) -> str:
    """LLVM type (text) of an IR type."""
    return "ptr" if isinstance(t, PtrType) else _LLTYPE[t.name]


def _float_text(value: float, t) -> str:
    if t == F32:
        value = struct.unpack("<f", struct.pack("<f", value))[0]   # the f32 value, widened exactly
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _const(c: Const) -> str:
    t = c.type
    if t.is_float:
        return _float_text(float(c.value), t)
    if t == I1:
        return "true" if c.value else "false"
    v = int(c.value) & ((1 << t.bits) - 1)        # normalise to the signed range
    return str(v - (1 << t.bits) if v >> (t.bits - 1) else v)


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\5C").replace('"', "\\22") + '"'


class _Emitter:
    def __init__(self, fn: Function):
        self.fn = fn
        # blocks in creation order, as llvmlite's builder laid them out (the layout LLVM starts
        # from; filling order instead measured 5-10% slower spatial kernels)
        self.blocks: dict = {"entry": []}
        self.lines: list = self.blocks["entry"]   # the block being filled
        self.vals: dict = {}      # param/let Var -> operand text
        self.slots: dict = {}     # mut Var -> alloca name
        self.n = 0                # suffix of every value and label
        self.block = "entry"      # the block being filled
        self.declares: dict = {}  # external / intrinsic name -> declaration

    # ------------------------------------------------------------ helpers
    def tmp(self, rhs: str, name: str | None = None) -> str:
        self.n += 1
        reg = f"%{_quote(f'{name}.{self.n}')}" if name else f"%t{self.n}"
        self.lines.append(f"  {reg} = {rhs}")
        return reg

    def label(self, kind: str) -> str:
        self.n += 1              # one counter for labels and values: they share a namespace
        name = f"{kind}.{self.n}"
        self.blocks[name] = []
        return name

    def start(self, label: str):
        self.lines = self.blocks[label]
        self.block = label

    def br(self, label: str):
        self.lines.append(f"  br label %{label}")

    def cbr(self, cond: str, then: str, orelse: str):
        self.lines.append(f"  br i1 {cond}, label %{then}, label %{orelse}")

    # ------------------------------------------------------------ expressions
    def expr(self, e, name: str | None = None) -> str:
        """Operand text of `e` (a register or a constant); `name` names its instruction."""
        if isinstance(e, Const):
            return _const(e)
        if isinstance(e, Read):
            v = e.var
            if v.kind == "mut":
                return self.tmp(f"load {lltype(v.type)}, ptr {self.slots[v]}", name or v.name)
            return self.vals[v]
        if isinstance(e, Bin):
            x, y, t = self.expr(e.a), self.expr(e.b), e.a.type
            ty = lltype(t)
            if e.op in _MINMAX:
                c = self.compare(_MINMAX[e.op], x, y, t)
                return self.tmp(f"select i1 {c}, {ty} {x}, {ty} {y}", name)
            if e.op == "pow":
                intrinsic = f"llvm.pow.{'f64' if t.bits == 64 else 'f32'}"
                self.declares[intrinsic] = f"declare {ty} @{intrinsic}({ty}, {ty})"
                return self.tmp(f"call {ty} @{intrinsic}({ty} {x}, {ty} {y})", name)
            op = (_FLOAT_BIN if t.is_float else _INT_BIN)[e.op]
            return self.tmp(f"{op} {ty} {x}, {y}", name)
        if isinstance(e, Cmp):
            return self.compare(e.op, self.expr(e.a), self.expr(e.b), e.a.type, name)
        if isinstance(e, Un):
            return self.unary(e.op, self.expr(e.a), e.a.type, name)
        if isinstance(e, Select):
            c, x, y = self.expr(e.cond), self.expr(e.a), self.expr(e.b)
            ty = lltype(e.a.type)
            return self.tmp(f"select i1 {c}, {ty} {x}, {ty} {y}", name)
        if isinstance(e, Cast):
            return self.cast(self.expr(e.a), e.a.type, e.to, name)
        if isinstance(e, Load):
            elem = e.ptr.type.elem
            addr = self.gep(self.expr(e.ptr), self.expr(e.index), e.index.type, elem)
            return self.tmp(f"load {lltype(elem)}, ptr {addr}, align {max(elem.bits // 8, 1)}", name)
        if isinstance(e, Call):
            if e.fn not in _EXTERNAL:
                raise IRError(f"unknown external function {e.fn!r}")
            self.declares[e.fn] = _EXTERNAL[e.fn]
            args = ", ".join(f"{lltype(a.type)} {self.expr(a)}" for a in e.args)
            if e.ret is None:
                self.lines.append(f"  call void @{e.fn}({args})")
                return ""
            return self.tmp(f"call {lltype(e.ret)} @{e.fn}({args})", name)
        raise IRError(f"cannot emit expression {e!r}")

    def compare(self, op, x, y, t, name=None) -> str:
        if isinstance(t, PtrType) or not t.is_float:
            return self.tmp(f"icmp {_ICMP[op]} {lltype(t)} {x}, {y}", name)
        return self.tmp(f"fcmp {_FCMP[op]} {lltype(t)} {x}, {y}", name)

    def unary(self, op, x, t, name=None) -> str:
        ty = lltype(t)
        if op == "neg":
            return self.tmp(f"fneg {ty} {x}" if t.is_float else f"sub {ty} 0, {x}", name)
        if op == "not":
            return self.tmp(f"xor {ty} {x}, {'true' if t == I1 else -1}", name)
        if op in ("nextup", "nextdown"):
            return self.next_float(x, t, op == "nextup", name)
        if op == "abs" and not t.is_float:
            neg = self.tmp(f"sub {ty} 0, {x}")
            c = self.tmp(f"icmp slt {ty} {x}, 0")
            return self.tmp(f"select i1 {c}, {ty} {neg}, {ty} {x}", name)
        intrinsic = f"{_INTRINSIC[op]}.{'f64' if t.bits == 64 else 'f32'}"
        self.declares[intrinsic] = f"declare {ty} @{intrinsic}({ty})"   # attributes: LLVM's own
        return self.tmp(f"call {ty} @{intrinsic}({ty} {x})", name)

    def next_float(self, x, t, up: bool, name=None) -> str:
        """The adjacent float (ir.build.next_float) by integer steps on the bits: a positive
        float's successor is bits + 1, a negative one's bits - 1; ±0 steps to the smallest
        subnormal.  Past ±inf the bits become a NaN pattern, as next_float specifies."""
        ty, ity = lltype(t), f"i{t.bits}"
        if not up:                                   # nextdown(x) = -nextup(-x)
            return self.tmp(f"fneg {ty} {self.next_float(self.tmp(f'fneg {ty} {x}'), t, True)}", name)
        bits = self.tmp(f"bitcast {ty} {x} to {ity}")
        pos = self.tmp(f"icmp sge {ity} {bits}, 0")
        step = self.tmp(f"select i1 {pos}, {ity} 1, {ity} -1")
        moved = self.tmp(f"bitcast {ity} {self.tmp(f'add {ity} {bits}, {step}')} to {ty}")
        zero = self.tmp(f"fcmp oeq {ty} {x}, {_float_text(0.0, t)}")
        tiny = 5e-324 if t.bits == 64 else 1.401298464324817e-45     # the smallest subnormal
        return self.tmp(f"select i1 {zero}, {ty} {_float_text(tiny, t)}, {ty} {moved}", name)

    def gep(self, p, i, itype, elem) -> str:
        # inbounds: generated code only indexes inside its buffers (DESIGN §2)
        return self.tmp(f"getelementptr inbounds {lltype(elem)}, ptr {p}, {lltype(itype)} {i}")

    def cast(self, x, src, dst, name=None) -> str:
        ty, sty = lltype(dst), lltype(src)
        if isinstance(dst, PtrType):
            return x if isinstance(src, PtrType) else self.tmp(f"inttoptr {sty} {x} to ptr", name)
        if isinstance(src, PtrType):
            return self.tmp(f"ptrtoint ptr {x} to {ty}", name)
        if src.is_float and dst.is_float:
            if src == dst:
                return x
            return self.tmp(f"{'fpext' if dst.bits > src.bits else 'fptrunc'} {sty} {x} to {ty}", name)
        if src.is_float:
            return self.tmp(f"fptosi {sty} {x} to {ty}", name)
        if dst.is_float:
            return self.tmp(f"{'uitofp' if src == I1 else 'sitofp'} {sty} {x} to {ty}", name)
        if dst.bits == src.bits:
            return x
        if dst.bits < src.bits:
            return self.tmp(f"trunc {sty} {x} to {ty}", name)
        return self.tmp(f"{'zext' if src == I1 else 'sext'} {sty} {x} to {ty}", name)

    # ------------------------------------------------------------ statements
    def body(self, stmts):
        for s in stmts:
            try:
                self.stmt(s)
            except IRError:
                raise
            except Exception as err:  # numba-style error context: name the statement
                raise IRError(f"{self.fn.name}: cannot emit `{format_stmt_header(s)}`: "
                              f"{type(err).__name__}: {err}") from err

    def stmt(self, s):
        if isinstance(s, Let):
            self.vals[s.var] = self.expr(s.value, s.var.name)
        elif isinstance(s, Assign):
            v = self.expr(s.value)
            self.lines.append(f"  store {lltype(s.var.type)} {v}, ptr {self.slots[s.var]}")
        elif isinstance(s, Store):
            elem = s.ptr.type.elem
            addr = self.gep(self.expr(s.ptr), self.expr(s.index), s.index.type, elem)
            v = self.expr(s.value)
            self.lines.append(f"  store {lltype(elem)} {v}, ptr {addr}, align {max(elem.bits // 8, 1)}")
        elif isinstance(s, If):
            cond = self.expr(s.cond)
            then, merge = self.label("if.then"), self.label("if.end")
            orelse = self.label("if.else") if s.orelse else merge
            self.cbr(cond, then, orelse)
            for blk, body in ((then, s.then), (orelse, s.orelse)):
                if blk != merge:   # an empty then-branch still needs its terminator
                    self.start(blk)
                    self.body(body)
                    self.br(merge)
            self.start(merge)
        elif isinstance(s, While):
            head, body, end = self.label("while.cond"), self.label("while.body"), self.label("while.end")
            self.br(head)
            self.start(head)
            self.cbr(self.expr(s.cond), body, end)
            self.start(body)
            self.body(s.body)
            self.br(head)
            self.start(end)
        elif isinstance(s, For):
            lo, hi = self.expr(s.lo), self.expr(s.hi)     # bounds evaluated once
            pre = self.block
            head, body, end = self.label("for.cond"), self.label("for.body"), self.label("for.end")
            self.br(head)
            self.start(head)
            self.n += 1
            i = f"%{_quote(f'{s.var.name}.{self.n}')}"
            phi_block, phi_at = self.lines, len(self.lines)
            self.lines.append(None)                       # the phi, once the latch is known
            self.vals[s.var] = i
            self.cbr(self.tmp(f"icmp slt i64 {i}, {hi}"), body, end)
            self.start(body)
            self.body(s.body)
            # i < hi <= INT64_MAX, so i + 1 cannot overflow: nsw helps trip-count analysis
            nxt = self.tmp(f"add nsw i64 {i}, 1")
            phi_block[phi_at] = f"  {i} = phi i64 [ {lo}, %{pre} ], [ {nxt}, %{self.block} ]"
            self.br(head)
            self.start(end)
        elif isinstance(s, Return):
            self.lines.append(f"  ret i32 {s.status}")
            self.start(self.label("after.return"))   # unreachable; keeps later code valid
        elif isinstance(s, Eval):
            self.expr(s.expr)
        elif isinstance(s, Comment):
            pass
        else:
            raise IRError(f"cannot emit statement {s!r}")

    def emit(self) -> str:
        fn = self.fn
        params = []
        for p in fn.params:
            reg = f"%{_quote(p.name)}"
            self.vals[p] = reg
            # inputs are only read and outputs live in kernel-allocated buffers and private
            # argument cells, so no memory written through one pointer is reached through
            # another: LLVM may keep loads of input buffers across output stores
            params.append(f"ptr noalias {reg}" if isinstance(p.type, PtrType) else f"{lltype(p.type)} {reg}")
        for v in mut_vars(fn.body):  # all allocas first, in the entry block, for mem2reg
            self.n += 1
            slot = self.slots[v] = f"%{_quote(f'{v.name}.slot.{self.n}')}"
            self.lines.append(f"  {slot} = alloca {lltype(v.type)}")
        self.body(fn.body)
        self.lines.append("  ret i32 0")    # falling off the end (or the unreachable after-return block)
        head = f"define i32 @{_quote(fn.name)}({', '.join(params)}) #0 {{"
        out = [head]
        for label, lines in self.blocks.items():
            out.append(f"{label}:")
            out += lines
        out.append("}")
        return "\n".join(out)


def _emit_packed(fn: Function, forward: bool = False) -> str:
    lines = [f"define i32 @{_quote(fn.name + '_packed')}(ptr %args) #0 {{", "entry:"]
    if forward:
        nxt = _quote(fn.name + "_next")
        lines += [f"  %next = load atomic ptr, ptr @{nxt} monotonic, align 8",
                  "  %forward = icmp ne ptr %next, null",
                  "  br i1 %forward, label %tier2, label %tier1",
                  "tier2:",
                  "  %moved = tail call i32 %next(ptr %args)",
                  "  ret i32 %moved",
                  "tier1:"]
    args = []
    for k, p in enumerate(fn.params):
        t, slot = p.type, f"%slot.{k}"
        lines.append(f"  {slot} = getelementptr inbounds i64, ptr %args, i64 {k}")
        if isinstance(t, PtrType):
            lines.append(f"  %a.{k} = load ptr, ptr {slot}, align 8")
            args.append(f"ptr %a.{k}")
            continue
        lines.append(f"  %raw.{k} = load i64, ptr {slot}, align 8")
        ty = lltype(t)
        if t.bits == 64 and not t.is_float:
            args.append(f"i64 %raw.{k}")
            continue
        if t.bits == 64:
            lines.append(f"  %a.{k} = bitcast i64 %raw.{k} to {ty}")
        elif t.is_float:
            lines.append(f"  %n.{k} = trunc i64 %raw.{k} to i{t.bits}")
            lines.append(f"  %a.{k} = bitcast i{t.bits} %n.{k} to {ty}")
        else:
            lines.append(f"  %a.{k} = trunc i64 %raw.{k} to {ty}")
        args.append(f"{ty} %a.{k}")
    lines.append(f"  %status = call i32 @{_quote(fn.name)}({', '.join(args)})")
    lines += ["  ret i32 %status", "}"]
    return "\n".join(lines)


def emit_module(fn: Function, forward: bool = False) -> str:
    """Verify `fn` (raises `ctensor.ir.IRError` if it is not well formed) and return the LLVM IR
    text of a module defining ``fn.name`` and ``fn.name + '_packed'`` (module docstring); with
    `forward`, also the global ``fn.name + '_next'`` the packed entry forwards through."""
    verify(fn)
    em = _Emitter(fn)
    body = em.emit()
    glob = [f"@{_quote(fn.name + '_next')} = global ptr null, align 8"] if forward else []
    parts = [f"; ModuleID = {_quote(fn.name)}", *glob, body, _emit_packed(fn, forward), *em.declares.values(),
             "attributes #0 = { nounwind }"]
    return "\n\n".join(parts) + "\n"


def _next_float(b, x, up: bool):
    """`next_float` for llvmlite's IR builder `b` (runtime.pyentry_emit builds its entry with it):
    the same bit steps as `_Emitter.next_float`."""
    from llvmlite import ir
    i64 = ir.IntType(64)
    if not up:                                   # nextdown(x) = -nextup(-x)
        return b.fneg(_next_float(b, b.fneg(x), True))
    bits = b.bitcast(x, i64)
    step = b.select(b.icmp_signed(">=", bits, ir.Constant(i64, 0)), ir.Constant(i64, 1), ir.Constant(i64, -1))
    moved = b.bitcast(b.add(bits, step), x.type)
    zero = b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0))
    return b.select(zero, ir.Constant(x.type, 5e-324), moved)


__all__ = ["emit_module", "lltype"]
