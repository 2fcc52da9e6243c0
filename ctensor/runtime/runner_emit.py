"""LLVM IR of the native runner (`runtime.runner`): one METH_FASTCALL function

    PyObject *run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)

shared by every kernel: its `self` is a numpy int64 array of context slots (`runner.SLOT`, then
two per cell: the block slot of its pointer and the cell's own slot; then two per grown output
cell: the cell's slot and its element size), so the code depends on nothing of a kernel or of
the process and is compiled once (`codegen.keyed`).

run(argument block: an array('q')):
1. each cell's address written into its pointer slot (the cells sit after the arguments in the
   block); the kernel's packed entry on the block, without the GIL (PyEval_SaveThread /
   RestoreThread);
2. a non-zero status: that status as a Python int, the cells untouched (the caller frees them);
3. else, when the cells' buffers fit in `limit` bytes (capacity × element size, each rounded up
   to 8 bytes): one new `bytes` object holding them one after another, each buffer freed and its
   cell rewritten {0, capacity, byte offset in the bytes}; otherwise None (cells untouched: the
   caller adopts each buffer).  A failed allocation of the bytes is None too (error cleared).
A wrong argument count, or an argument other than an array('q') of the kernel's block length,
returns NULL with no error set (CPython raises SystemError): only `runtime.fastcall`'s generated
code calls it.
"""
from __future__ import annotations

from llvmlite import ir

from .pyentry_emit import _Callee

PTR, I64, I32, I8 = ir.PointerType(), ir.IntType(64), ir.IntType(32), ir.IntType(8)
BASE = "ctensor_runner"
_SIGS = {"PyLong_FromLongLong": (PTR, [I64]),
         "PyBytes_FromStringAndSize": (PTR, [PTR, I64]), "PyErr_Clear": (ir.VoidType(), []),
         "Py_IncRef": (ir.VoidType(), [PTR]), "PyEval_SaveThread": (PTR, []),
         "PyEval_RestoreThread": (ir.VoidType(), [PTR]), "free": (ir.VoidType(), [PTR]),
         "kernel": (I32, [PTR])}


def emit_runner(slot: dict, data_offset: int, bytes_offset: int) -> tuple[str, str]:
    """(LLVM IR text, function name) of the runner; `slot`: context slot of each name in `_SIGS`
    and of 'None', 'array_type', 'items_offset' / 'descr_offset' (where an array's items and type
    descriptor pointers sit), 'length' (of the block, in items), 'npointers',
    'ncells', 'limit' (the tables from slot 'table' on); `data_offset`: where a numpy
    array's data pointer sits in the object; `bytes_offset`: where a bytes object's data starts."""
    m = ir.Module(name=BASE)
    fn = ir.Function(m, ir.FunctionType(PTR, [PTR, PTR, I64]), name=BASE)
    selfobj, args, nargs = fn.args
    blocks = {n: fn.append_basic_block(n) for n in ("entry", "call", "failed", "sizes", "size_body", "copy",
                                                    "copy_body", "copy_buf", "copy_next", "done", "none", "null")}
    b = ir.IRBuilder(blocks["entry"])
    c = lambda v: ir.Constant(I64, v)                                          # noqa: E731
    ctx = b.load(b.gep(selfobj, [c(data_offset)], source_etype=I8), typ=PTR, name="ctx")
    slot_at = lambda k, typ=I64: b.load(b.gep(ctx, [k if isinstance(k, ir.Value) else c(k)], source_etype=I64),
                                        typ=typ, align=8)                      # noqa: E731

    def capi(name, argv):
        ret, params = _SIGS[name]
        return b.call(_Callee(slot_at(slot[name], PTR), ir.FunctionType(ret, params)), argv)

    b.cbranch(b.icmp_signed("==", nargs, c(1)), blocks["call"], blocks["null"])
    b.position_at_end(blocks["call"])
    # the block: an array('q') (its type checked), whose items pointer sits at a fixed offset
    obj = b.load(args, typ=PTR, name="obj")
    ob_type = b.load(b.gep(obj, [c(8)], source_etype=I8), typ=PTR, align=8)
    is_array, converted = fn.append_basic_block("is_array"), fn.append_basic_block("converted")
    b.cbranch(b.icmp_unsigned("==", ob_type, slot_at(slot["array_type"], PTR)), is_array, blocks["null"])
    b.position_at_end(is_array)
    # of typecode 'q' and of this kernel's block length: no write outside it, whatever is passed
    size = b.load(b.gep(obj, [c(16)], source_etype=I8), typ=I64, align=8)
    descr = b.load(b.gep(obj, [slot_at(slot["descr_offset"])], source_etype=I8), typ=PTR, align=8)
    code = b.load(descr, typ=I8, align=1)
    fits = b.and_(b.icmp_signed("==", size, slot_at(slot["length"])), b.icmp_unsigned("==", code, ir.Constant(I8, 113)))
    b.cbranch(fits, converted, blocks["null"])
    b.position_at_end(converted)
    block = b.load(b.gep(obj, [slot_at(slot["items_offset"])], source_etype=I8), typ=PTR, align=8, name="block")
    # block[pointer slot] = &block[cell slot], for every cell (the result cell and grown cells)
    npointers, table = slot_at(slot["npointers"]), slot["table"]
    head, body, ready = (fn.append_basic_block(n) for n in ("point", "point_body", "ready"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, "i")
    i.add_incoming(c(0), converted)
    b.cbranch(b.icmp_signed("<", i, npointers), body, ready)
    b.position_at_end(body)
    at = b.add(c(table), b.mul(i, c(2)))
    target = b.gep(block, [slot_at(b.add(at, c(1)))], source_etype=I64)
    b.store(b.ptrtoint(target, I64), b.gep(block, [slot_at(at)], source_etype=I64), align=8)
    i.add_incoming(b.add(i, c(1)), body)
    b.branch(head)
    b.position_at_end(ready)
    state = capi("PyEval_SaveThread", [])
    status = capi("kernel", [block])
    capi("PyEval_RestoreThread", [state])
    b.cbranch(b.icmp_signed("==", status, ir.Constant(I32, 0)), blocks["sizes"], blocks["failed"])
    b.position_at_end(blocks["failed"])
    b.ret(capi("PyLong_FromLongLong", [b.sext(status, I64)]))


    def cell_of(j):
        """(pointer to the cell in the block, element size) of grown cell j."""
        at = b.add(first, b.mul(j, c(2)))
        return b.gep(block, [slot_at(at)], source_etype=I64), slot_at(b.add(at, c(1)))

    def rounded(cap, size):            # capacity × size, rounded up to 8 bytes
        return b.and_(b.add(b.mul(cap, size), c(7)), c(-8))

    # total bytes; any capacity beyond the limit (or negative) is None before a product can wrap
    b.position_at_end(blocks["sizes"])
    ncells, limit = slot_at(slot["ncells"]), slot_at(slot["limit"])
    first = b.add(c(table), b.mul(npointers, c(2)), name="cells")
    entry = b.block
    b.position_at_end(blocks["size_body"])
    j, total = b.phi(I64, "j"), b.phi(I64, "total")
    b.position_at_end(blocks["sizes"])
    b.branch(blocks["size_body"])
    b.position_at_end(blocks["size_body"])
    more = fn.append_basic_block("size_more")
    b.cbranch(b.icmp_signed("<", j, ncells), more, blocks["copy"])
    b.position_at_end(more)
    cell, size = cell_of(j)
    cap = b.load(b.gep(cell, [c(1)], source_etype=I64), typ=I64, align=8)
    fits = fn.append_basic_block("size_fits")
    b.cbranch(b.icmp_unsigned("<=", cap, limit), fits, blocks["none"])
    b.position_at_end(fits)
    t2 = b.add(total, rounded(cap, size))
    j.add_incoming(c(0), entry)
    total.add_incoming(c(0), entry)
    j.add_incoming(b.add(j, c(1)), fits)
    total.add_incoming(t2, fits)
    b.cbranch(b.icmp_unsigned("<=", t2, limit), blocks["size_body"], blocks["none"])

    # one bytes object; each buffer copied at its offset, freed, its cell {0, cap, offset}
    b.position_at_end(blocks["copy"])
    out = capi("PyBytes_FromStringAndSize", [ir.Constant(PTR, None), total])
    got = fn.append_basic_block("bytes_ok")
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(out, I64), c(0)), blocks["none"], got)
    b.position_at_end(got)
    data = b.gep(out, [c(bytes_offset)], source_etype=I8, name="data")
    b.branch(blocks["copy_body"])
    b.position_at_end(blocks["copy_body"])
    k, at = b.phi(I64, "k"), b.phi(I64, "at")
    k.add_incoming(c(0), got)
    at.add_incoming(c(0), got)
    b.cbranch(b.icmp_signed("<", k, ncells), blocks["copy_buf"], blocks["done"])
    b.position_at_end(blocks["copy_buf"])
    cell, size = cell_of(k)
    buf = b.load(cell, typ=PTR, align=8)
    cap = b.load(b.gep(cell, [c(1)], source_etype=I64), typ=I64, align=8)
    nbytes = b.mul(cap, size)
    has = b.icmp_unsigned("!=", b.ptrtoint(buf, I64), c(0))
    with b.if_then(has):
        memcpy = m.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
        b.call(memcpy, [b.gep(data, [at], source_etype=I8), buf, nbytes, ir.Constant(ir.IntType(1), 0)])
        capi("free", [buf])
    b.store(c(0), cell, align=8)
    b.store(at, b.gep(cell, [c(2)], source_etype=I64), align=8)
    b.branch(blocks["copy_next"])
    b.position_at_end(blocks["copy_next"])
    k.add_incoming(b.add(k, c(1)), blocks["copy_next"])
    at.add_incoming(b.add(at, rounded(cap, size)), blocks["copy_next"])
    b.branch(blocks["copy_body"])
    b.position_at_end(blocks["done"])
    b.ret(out)

    b.position_at_end(blocks["none"])
    capi("PyErr_Clear", [])
    none = slot_at(slot["None"], PTR)
    capi("Py_IncRef", [none])
    b.ret(none)
    b.position_at_end(blocks["null"])
    b.ret(ir.Constant(PTR, None))
    return str(m), BASE
