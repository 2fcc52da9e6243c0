"""LLVM IR of a native CPython entry point (`runtime.pyentry`): one METH_FASTCALL function

    PyObject *entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs)

whose `self` is a numpy int64 array of context slots (layout `SLOT`, then one slot per store
target, then one per float constant).  Every address the function uses is loaded from a slot, so
the IR depends only on the prologue's shape and the output kind, never on the process.

With a `release` condition the entry runs its kernel without the GIL when the condition holds
(PyEval_SaveThread / PyEval_RestoreThread around the call).  Its argument block is then guarded by
the `busy` slot, read and written only while the GIL is held (the GIL orders those accesses):
an entry that finds it set returns None at once (its caller takes the Python path, which packs a
block of its own), otherwise it sets it before its first store into the block and clears it on
every exit after that.
"""
from __future__ import annotations

from llvmlite import ir

from ..codegen.llvm_emit import _next_float
from .pyentry_slots import BASE, CAPI, SLOT

PTR, I64, I32, I8, F64 = ir.PointerType(), ir.IntType(64), ir.IntType(32), ir.IntType(8), ir.DoubleType()
_VECTORCALL_ARGUMENTS_OFFSET = 1 << 63
_SIGS = {"PyFloat_AsDouble": (F64, [PTR]), "PyErr_Occurred": (PTR, []), "PyErr_Clear": (ir.VoidType(), []),
         "Py_IncRef": (ir.VoidType(), [PTR]), "Py_DecRef": (ir.VoidType(), [PTR]),
         "PyLong_FromSsize_t": (PTR, [I64]), "PyObject_Vectorcall": (PTR, [PTR, PTR, I64, PTR]),
         "PyFloat_FromDouble": (PTR, [F64]), "PyLong_FromLongLong": (PTR, [I64]),
         "PyBool_FromLong": (PTR, [I64]), "PyEval_SaveThread": (PTR, []),
         "PyEval_RestoreThread": (ir.VoidType(), [PTR]), "kernel": (I32, [PTR])}


def emit_entry(nargs, stores, checks, consts, output, perm_bits, data_offset, release=None) -> tuple[str, str]:
    """(LLVM IR text, function name) of the entry; see `runtime.pyentry.native_entry` for the
    arguments (stores, checks and `release` already validated, constants as ("const", slot))."""
    del consts                      # loaded from their slots: only where they start matters
    return str(_Emitter(nargs, stores, checks, output, perm_bits, data_offset, release).module), BASE


class _Emitter:
    def __init__(self, nargs, stores, checks, output, perm_bits, data_offset, release=None):
        self.module = m = ir.Module(name=BASE)
        fn = ir.Function(m, ir.FunctionType(PTR, [PTR, PTR, I64]), name=BASE)
        self.fn, (selfobj, args, n) = fn, fn.args
        self.b = b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.none_block = fn.append_basic_block("return_none")
        self.null_block = fn.append_basic_block("return_null")
        self.ret_none, self.ret_null = self.none_block, self.null_block
        self.guarded = False        # past the busy flag: every exit clears it (`exit`)
        self.vals, self.memo = [], {}
        self.const_base = len(SLOT) + len(stores)
        self.argv = b.alloca(PTR, ir.Constant(I64, 3), name="argv")         # vectorcall arguments
        self.ctx = b.load(b.gep(selfobj, [ir.Constant(I64, data_offset)], source_etype=I8), typ=PTR,
                          name="ctx")
        self.branch_ok(b.icmp_signed("==", n, ir.Constant(I64, nargs)), "nargs_ok")
        for i in range(nargs):
            self.vals.append(self.convert(b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=PTR), typ=PTR), i))
        for c in checks:
            self.branch_ok(self.cond(c), "check_ok")
        values = [self.expr(e) for _, e in stores]
        if release is not None:
            released = self.cond(release)
            self.branch_ok(b.icmp_signed("==", self.slot(SLOT["busy"], I64), ir.Constant(I64, 0)), "not_busy")
            self.set_busy(1)
            self.guarded = True
            self.none_block, self.null_block = self.exit(self.none_block, "none"), self.exit(self.null_block, "null")
        for j, v in enumerate(values):              # every store after every read of an argument
            b.store(v, self.slot(len(SLOT) + j, PTR), align=8)
        if release is None:
            status = self.capi("kernel", [self.slot(SLOT["block"], PTR)])
        else:
            status = self.kernel_released(released)
        self.branch_ok(b.icmp_signed("==", status, ir.Constant(I32, 0)), "kernel_ok")
        if output == "ids":
            self.ids(perm_bits, data_offset)
        else:
            self.scalar(output)
        self.returns()

    # ------------------------------------------------------------------ GIL release
    def set_busy(self, v):
        self.b.store(ir.Constant(I64, v), self.b.gep(self.ctx, [ir.Constant(I64, SLOT["busy"])], source_etype=I64),
                     align=8)

    def exit(self, target, name):
        """A block that clears the busy flag and goes to `target`."""
        blk = self.fn.append_basic_block(f"{name}_clear_busy")
        here = self.b.block
        self.b.position_at_end(blk)
        self.set_busy(0)
        self.b.branch(target)
        self.b.position_at_end(here)
        return blk

    def kernel_released(self, released):
        """status = kernel(block), without the GIL when `released` (an i1) holds."""
        b = self.b
        block = self.slot(SLOT["block"], PTR)
        with b.if_else(released) as (then, otherwise):
            with then:
                state = self.capi("PyEval_SaveThread", [])
                s1 = self.capi("kernel", [block])
                self.capi("PyEval_RestoreThread", [state])
                then_block = b.block
            with otherwise:
                s2 = self.capi("kernel", [block])
                else_block = b.block
        status = b.phi(I32, name="status")
        status.add_incoming(s1, then_block)
        status.add_incoming(s2, else_block)
        return status

    def ret(self, value):
        if self.guarded:
            self.set_busy(0)
        self.b.ret(value)

    # ------------------------------------------------------------------ helpers
    def slot(self, k, typ):
        return self.b.load(self.b.gep(self.ctx, [ir.Constant(I64, k)], source_etype=I64), typ=typ, align=8)

    def capi(self, name, args):
        ret, params = _SIGS[name]
        return self.b.call(_Callee(self.slot(SLOT[name], PTR), ir.FunctionType(ret, params)), args)

    def branch_ok(self, cond, name, fail=None):
        ok = self.fn.append_basic_block(name)
        self.b.cbranch(cond, ok, fail or self.none_block)
        self.b.position_at_end(ok)

    def convert(self, obj, i):
        """PyFloat_AsDouble(obj); -1.0 with an error set -> clear it, return None."""
        b = self.b
        d = self.capi("PyFloat_AsDouble", [obj])
        maybe = self.fn.append_basic_block(f"arg{i}_maybe_error")
        ok = self.fn.append_basic_block(f"arg{i}_ok")
        b.cbranch(b.fcmp_ordered("==", d, ir.Constant(F64, -1.0)), maybe, ok)
        b.position_at_end(maybe)
        err = self.capi("PyErr_Occurred", [])
        clear = self.fn.append_basic_block(f"arg{i}_error")
        b.cbranch(b.icmp_unsigned("==", b.ptrtoint(err, I64), ir.Constant(I64, 0)), ok, clear)
        b.position_at_end(clear)
        self.capi("PyErr_Clear", [])
        b.branch(self.none_block)
        b.position_at_end(ok)
        return d

    def expr(self, e):
        if e in self.memo:
            return self.memo[e]
        b, op = self.b, e[0]
        if op == "arg":
            v = self.vals[e[1]]
        elif op == "const":
            v = self.slot(self.const_base + e[1], F64)
        elif op in ("add", "sub", "mul"):
            v = getattr(b, "f" + op)(self.expr(e[1]), self.expr(e[2]))
        elif op in ("min", "max"):                    # Python's min(a, b) / max(a, b): keep a unless b wins
            x, y = self.expr(e[1]), self.expr(e[2])
            v = b.select(b.fcmp_ordered("<" if op == "min" else ">", y, x), y, x)
        else:                                         # math.nextafter(x, ±inf): ±inf and NaN stay put
            x, up = self.expr(e[1]), op == "nextup"
            stay = b.fcmp_unordered("==", x, ir.Constant(F64, float("inf") if up else float("-inf")))
            v = b.select(stay, x, _next_float(b, x, up))
        self.memo[e] = v
        return v

    def cond(self, c):
        b = self.b
        if c[0] in ("le", "lt"):
            return b.fcmp_ordered("<=" if c[0] == "le" else "<", self.expr(c[1]), self.expr(c[2]))
        x = self.expr(c[1])
        if c[0] == "notnan":
            return b.fcmp_ordered("==", x, x)
        fabs = self.module.declare_intrinsic("llvm.fabs", [F64])
        return b.fcmp_ordered("<", b.call(fabs, [x]), ir.Constant(F64, float("inf")))

    # ------------------------------------------------------------------ outputs
    def scalar(self, kind):
        b, cell = self.b, self.slot(SLOT["out"], PTR)
        if kind == "float":
            res = self.capi("PyFloat_FromDouble", [b.load(cell, typ=F64, align=8)])
        elif kind == "int":
            res = self.capi("PyLong_FromLongLong", [b.load(cell, typ=I64, align=8)])
        else:
            flag = b.icmp_unsigned("!=", b.load(cell, typ=I8, align=1), ir.Constant(I8, 0))
            res = self.capi("PyBool_FromLong", [b.zext(flag, I64)])
        self.ret(res)         # NULL (an exception) if the allocation failed

    def ids(self, perm_bits, data_offset):
        """ptr[start:stop] of the cells -> int64 array of perm[idx[k]], every bound checked."""
        b, zero, one = self.b, ir.Constant(I64, 0), ir.Constant(I64, 1)
        cell = lambda name, k: b.load(b.gep(self.slot(SLOT[name], PTR), [ir.Constant(I64, k)],
                                            source_etype=I64), typ=I64 if k else PTR, align=8)
        ptr, ptr_cap = cell("out", 0), cell("out", 1)
        self.branch_ok(b.and_(b.icmp_unsigned("!=", b.ptrtoint(ptr, I64), zero),
                              b.icmp_signed(">=", ptr_cap, ir.Constant(I64, 2))), "ptr_ok")
        start = b.load(ptr, typ=I64, align=8)
        stop = b.load(b.gep(ptr, [one], source_etype=I64), typ=I64, align=8)
        idx, idx_cap = cell("idx", 0), cell("idx", 1)
        count = b.sub(stop, start, name="count")
        in_cap = b.and_(b.icmp_unsigned("<=", start, stop), b.icmp_unsigned("<=", stop, idx_cap))
        has_buf = b.or_(b.icmp_signed("==", count, zero), b.icmp_unsigned("!=", b.ptrtoint(idx, I64), zero))
        self.branch_ok(b.and_(in_cap, has_buf), "idx_ok")
        # out = np.empty(count, int64) through vectorcall (slot 0 of argv is the offset slot)
        n = self.capi("PyLong_FromSsize_t", [count])
        self.branch_ok(b.icmp_unsigned("!=", b.ptrtoint(n, I64), zero), "count_ok", self.null_block)
        a1 = b.gep(self.argv, [one], source_etype=PTR)
        a2 = b.gep(self.argv, [ir.Constant(I64, 2)], source_etype=PTR)
        b.store(n, a1)
        b.store(self.slot(SLOT["dtype"], PTR), a2)
        nargsf = ir.Constant(I64, 2 | _VECTORCALL_ARGUMENTS_OFFSET)
        arr = self.capi("PyObject_Vectorcall", [self.slot(SLOT["empty"], PTR), a1, nargsf, ir.Constant(PTR, None)])
        self.capi("Py_DecRef", [n])
        self.branch_ok(b.icmp_unsigned("!=", b.ptrtoint(arr, I64), zero), "array_ok", self.null_block)
        data = b.load(b.gep(arr, [ir.Constant(I64, data_offset)], source_etype=I8), typ=PTR, align=8)
        bound = self.slot(SLOT["bound"], I64)
        perm = self.slot(SLOT["perm"], PTR) if perm_bits else None
        # for k in range(count): r = idx[start + k]; out[k] = perm[r < bound ? r : 0]; bad |= r >= bound
        # (unsigned) — no exit inside, so LLVM vectorizes it (gathers); any bad id: None afterwards.
        # bound >= 1: an entry is built for non-empty indexes only, so perm[0] is a valid load
        head, body, done = (self.fn.append_basic_block(s) for s in ("fill", "fill_body", "filled"))
        bad_block = self.fn.append_basic_block("bad_id")
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64, name="k")
        bad = b.phi(ir.IntType(1), name="bad")
        k.add_incoming(zero, pre)
        bad.add_incoming(ir.Constant(ir.IntType(1), 0), pre)
        b.cbranch(b.icmp_signed("<", k, count), body, done)
        b.position_at_end(body)
        r = b.load(b.gep(idx, [b.add(start, k)], source_etype=I64), typ=I64, align=8)
        ok = b.icmp_unsigned("<", r, bound)
        if perm is not None:
            et = ir.IntType(perm_bits)
            v = b.load(b.gep(perm, [b.select(ok, r, zero)], source_etype=et), typ=et, align=perm_bits // 8)
            r = b.sext(v, I64) if perm_bits < 64 else v
        b.store(r, b.gep(data, [k], source_etype=I64), align=8)
        k.add_incoming(b.add(k, one), body)
        bad.add_incoming(b.or_(bad, b.not_(ok)), body)
        b.branch(head)
        b.position_at_end(done)
        fine = self.fn.append_basic_block("ids_ok")
        b.cbranch(bad, bad_block, fine)
        b.position_at_end(bad_block)
        self.capi("Py_DecRef", [arr])
        b.branch(self.none_block)
        b.position_at_end(fine)
        self.ret(arr)

    def returns(self):
        b = self.b
        b.position_at_end(self.ret_none)
        none = self.slot(SLOT["None"], PTR)
        self.capi("Py_IncRef", [none])
        b.ret(none)
        b.position_at_end(self.ret_null)
        b.ret(ir.Constant(PTR, None))



class _Callee:
    """A function pointer held in a `ptr` value, with the signature `IRBuilder.call` reads off its
    callee (an indirect call through an opaque pointer)."""

    def __init__(self, ptr, fnty):
        self.ptr, self.function_type = ptr, fnty

    def get_reference(self):
        return self.ptr.get_reference()
