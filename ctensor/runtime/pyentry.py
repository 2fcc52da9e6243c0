"""A native CPython entry point for repeated calls of one packed kernel (DESIGN.md §5, packed entry).

`PackedCall.run()` costs ~0.5 µs through ctypes, and the Python around it (writing the query into
numpy buffers, reading the output cells, `perm.take`, `astype`) another ~2 µs, while the kernel for
a small query runs in well under a microsecond.  `native_entry` generates, with llvmlite, a CPython
builtin (METH_FASTCALL: `PyObject *f(PyObject *self, PyObject *const *args, Py_ssize_t nargs)`)
that does all of it natively in one call from Python:

1. `nargs == K`, each argument through `PyFloat_AsDouble` (float, int, numpy scalar, anything with
   `__float__` or `__index__`); a conversion error is cleared;
2. `checks` (("le"|"lt", a, b), ("finite", a), ("notnan", a)), then `stores`: (address of a float64,
   expr), where expr is a tree of ("arg", i), ("const", c), ("add"|"sub"|"mul"|"min"|"max", a, b),
   ("nextup"|"nextdown", a).  `min`/`max` are Python's builtins on two values (`min(a, b)` keeps a
   unless b < a), `nextup`/`nextdown` are `math.nextafter(a, ±inf)` exactly;
3. the kernel's packed entry on its argument block;
4. the output: for a kernel whose output is one `SparseList(Pattern())` level of integer ids, a fresh
   int64 numpy array `perm[idx]` (or `idx` when perm is None), in the kernel's write order; for a
   kernel with a scalar output, a Python float, int or bool.

It returns **None** (a new reference) instead, without raising, on a wrong argument count, a failed
conversion, a failed check, a non-zero kernel status, or output buffers that are not what the
kernel promises (an id out of range, a pointer past the buffer's capacity): the caller then takes
its Python path, which raises the right error.  Only `np.empty` failing (MemoryError) raises.

Lifetime.  Nothing is baked into the machine code: every address (C-API functions, the kernel, the
argument block, the output cells, perm, the store targets, the constants) is read from a context
array of int64 slots, which is the builtin's `self`.  That array's base is a `_Context` object
holding the PyMethodDef, the PackedCall (argument block, input buffers, output cells), perm, and
whatever the caller passes as `keep` (the arrays the store addresses point into), so the builtin
alone keeps everything it reads alive.  Since the code depends only on the shape of the prologue
(not on addresses or constants), it is compiled once per shape, shared by every entry, and cached on
disk with the kernels, keyed by that shape (`codegen.keyed`: a new process loads it without
emitting it or importing llvmlite).  The output pointers are read from the cells on every call
(the kernel may `realloc` its buffers).

Layout assumption.  `self`'s data pointer is read at offset `object.__basicsize__`, which is where
numpy's `PyArray_DATA` (an inline function compiled into every numpy extension, hence part of
numpy's ABI in 1.x and 2.x) reads it; the output array's data pointer likewise.  `native_entry`
checks this on a live array first and returns None if it does not hold.

Threads.  One entry writes its query into one argument block (its PackedCall's) and reads the
output buffers of that block.  By default it holds the GIL from its first store into the block
until it returns (no Python code runs in between), so calls of the entry from many threads are
serialised and safe, provided nothing else uses that PackedCall: give an entry a PackedCall of its
own (`spatial.PointIndex` does).  With `release=` (a condition on the arguments, as `checks`) the
entry runs the kernel without the GIL when the condition holds (PyEval_SaveThread /
PyEval_RestoreThread around the call: for calls long enough that other threads should run
meanwhile); a busy flag in its context, read and set under the GIL, then keeps a second thread
off the block: that call returns None and its caller takes the Python path (which packs a block of
its own).  `CTENSOR_NATIVE_ENTRY=0` in the environment disables entries (`native_entry` returns
None and callers use their Python path).
"""
from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass, field

import numpy as np

from ..codegen.keyed import compile_keyed
from ..formats.element import Pattern
from ..formats.sparse_list import SparseList
from .pyentry_slots import CAPI, SLOT

METH_FASTCALL = 0x0080
_DATA_OFFSET = object.__basicsize__

__all__ = ["NativeEntry", "native_entry", "enabled", "scalar_address"]


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


_new_cfunction = ctypes.pythonapi.PyCFunction_NewEx
_new_cfunction.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
_new_cfunction.restype = ctypes.py_object        # a new reference, which ctypes takes over


class _Context:
    """Owner of everything the native function reads: its `self` is a numpy view of `slots` whose
    base is this object (numpy keeps the base of an `__array_interface__` array alive)."""

    __slots__ = ("slots", "method", "name", "refs", "__array_interface__")

    def __init__(self, slots, name, refs):
        self.slots, self.name, self.refs = slots, name, refs
        self.method = None
        # read-only: `fn.__self__` must not let Python code rewrite the addresses the code follows
        self.__array_interface__ = {"data": (slots.ctypes.data, True), "shape": slots.shape,
                                    "typestr": slots.dtype.str, "version": 3}


@dataclass
class NativeEntry:
    """A native entry point (see the module docstring).  `fn` is the CPython builtin: call it
    directly (`entry.fn(*args)`, ~0.1 µs cheaper than `entry(*args)`).  `fn` alone keeps the kernel
    state it uses alive."""
    fn: object
    llvm_ir: str = field(repr=False)
    output: str                      # 'ids' | 'float' | 'int' | 'bool'

    def __call__(self, *args):
        return self.fn(*args)


def enabled() -> bool:
    """False when CTENSOR_NATIVE_ENTRY=0 (or 'off'/'false') is set in the environment."""
    return os.environ.get("CTENSOR_NATIVE_ENTRY", "1").strip().lower() not in ("0", "off", "false", "no")


def scalar_address(call, name: str) -> int:
    """Address of float scalar argument `name` in `call`'s argument block, for a store target.
    Raises KeyError (no such scalar) or TypeError (not a float scalar)."""
    k = call.kernel
    if k.scalar_kinds[name] != "float":
        raise TypeError(f"scalar {name!r} is {k.scalar_kinds[name]}, a store target must be float")
    return call.address + 8 * k.scalar_slot[name]


def native_entry(call, nargs: int, stores=(), checks=(), perm=None, keep=(), release=None) -> NativeEntry | None:
    """Build the native entry of `call` (a `PackedCall`) taking `nargs` numbers.

    `stores`: sequence of (address, expr): int addresses of float64 slots that must stay valid as
    long as the entry lives (pass their owners in `keep`; the argument block is kept by `call`).
    `checks`: sequence of conditions, all true or the entry returns None.  `perm`: int32/int64 1-d
    numpy array mapping the kernel's ids to the returned ones (ids output only); ids must be < its
    length (else < the output's shape when perm is None).  `release`: None (hold the GIL
    throughout) or a condition, as in `checks`, under which the kernel runs without the GIL (see
    the module docstring: a concurrent call then returns None).

    Returns None when disabled (CTENSOR_NATIVE_ENTRY=0) or when the array layout check fails.
    Raises TypeError for an output the entry cannot return (anything but one SparseList(Pattern())
    level of integer ids, or a scalar), ValueError for a malformed expression or perm.
    """
    if type(nargs) is not int or not 0 <= nargs <= 64:
        raise ValueError(f"nargs must be an int in 0..64, got {nargs!r}")
    if not enabled() or not _layout_ok():
        return None
    k = call.kernel
    output, out_slot, idx_slot, bound, perm_bits = _output(call, perm)
    consts: list[float] = []
    stores = [(int(a), _check_expr(e, nargs, consts)) for a, e in stores]
    checks = [_check_cond(c, nargs, consts) for c in checks]
    release = None if release is None else _check_cond(release, nargs, consts)
    if any(a <= 0 for a, _ in stores):
        raise ValueError("store addresses must be positive integers")
    (address,), llvm_ir = _compiled(nargs, stores, checks, consts, output, perm_bits, release)

    n_fixed = len(SLOT)
    slots = np.zeros(n_fixed + len(stores) + len(consts), np.int64)
    for name in CAPI:
        slots[SLOT[name]] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    dtype = np.dtype(np.int64)
    slots[SLOT["None"]], slots[SLOT["empty"]], slots[SLOT["dtype"]] = id(None), id(np.empty), id(dtype)
    slots[SLOT["kernel"]], slots[SLOT["block"]] = k.compiled.packed_address, call.address
    slots[SLOT["out"]], slots[SLOT["idx"]] = out_slot, idx_slot
    slots[SLOT["perm"]], slots[SLOT["bound"]] = 0 if perm is None else perm.ctypes.data, bound
    for j, (a, _) in enumerate(stores):
        slots[n_fixed + j] = a
    slots[n_fixed + len(stores):] = np.asarray(consts, np.float64).view(np.int64)

    name = f"ctensor_entry_{k.es.out}".encode()
    ctx = _Context(slots, name, (call, perm, tuple(keep), dtype, np.empty))
    method = ctx.method = _MethodDef(name, address, METH_FASTCALL, None)
    fn = _new_cfunction(ctypes.addressof(method), np.asarray(ctx), None)
    return NativeEntry(fn, llvm_ir, output)


def _compiled(nargs, stores, checks, consts, output, perm_bits, release):
    """(address, optimised IR) of the entry's code, keyed by what `emit_entry` reads (the code
    depends on the shape, not on addresses or constant values), so a warm start loads it from
    the disk cache without emitting it (`codegen.keyed`)."""
    from ..driver.kernel_store import source_fingerprint       # the emitter's version
    shape = (nargs, tuple(e for _, e in stores), tuple(checks), len(consts), output, perm_bits, _DATA_OFFSET,
             release, source_fingerprint())

    def make():
        from .pyentry_emit import emit_entry
        text, base = emit_entry(nargs, stores, checks, consts, output, perm_bits, _DATA_OFFSET, release)
        return text, base, (base,)
    return compile_keyed(("pyentry",) + shape, make)


def _output(call, perm):
    """(output kind, address of the ptr (or scalar) cell, of the idx cell, id bound, perm bits)."""
    k = call.kernel
    if call.out_cell is not None:
        if perm is not None:
            raise ValueError("perm applies to an ids output, not to a scalar")
        return k.plan.out_kind, call.out_cell.ctypes.data, 0, 0, 0
    lvl = k.out_fmt
    if not (isinstance(lvl, SparseList) and lvl.coord == "int" and isinstance(lvl.child, Pattern)):
        raise TypeError(f"native entry: output of {k.text!r} is {lvl!r}; supported are one "
                        "SparseList(Pattern()) level of integer ids, or a scalar")
    if perm is None:
        name, d = k.plan.source[k.es.out_idxs[0]]
        bound, bits = call.tensors[name].modes()[d].shape, 0
    else:
        if not (isinstance(perm, np.ndarray) and perm.ndim == 1 and perm.dtype in (np.int32, np.int64)
                and perm.flags.c_contiguous and len(perm)):
            # non-empty: the gather loads perm[0] in place of an out-of-range id (`pyentry_emit`)
            raise ValueError("perm must be a non-empty contiguous 1-d int32 or int64 numpy array")
        bound, bits = len(perm), perm.dtype.itemsize * 8
    return "ids", call.cells[(0, "ptr")].ctypes.data, call.cells[(0, "idx")].ctypes.data, bound, bits


_BIN = ("add", "sub", "mul", "min", "max")
_UN = ("nextup", "nextdown")


def _check_expr(e, nargs, consts):
    """Validate an expression tree; ("const", c) becomes ("const", slot among consts)."""
    if not isinstance(e, tuple) or not e:
        raise ValueError(f"malformed expression {e!r}")
    op = e[0]
    if op == "arg" and len(e) == 2 and type(e[1]) is int and 0 <= e[1] < nargs:
        return e
    if op == "const" and len(e) == 2 and isinstance(e[1], (int, float, np.floating, np.integer)):
        consts.append(float(e[1]))
        return ("const", len(consts) - 1)
    if op in _BIN and len(e) == 3:
        return (op, _check_expr(e[1], nargs, consts), _check_expr(e[2], nargs, consts))
    if op in _UN and len(e) == 2:
        return (op, _check_expr(e[1], nargs, consts))
    raise ValueError(f"malformed expression {e!r} (nargs = {nargs})")


def _check_cond(c, nargs, consts):
    if isinstance(c, tuple) and len(c) == 3 and c[0] in ("le", "lt"):
        return (c[0], _check_expr(c[1], nargs, consts), _check_expr(c[2], nargs, consts))
    if isinstance(c, tuple) and len(c) == 2 and c[0] in ("finite", "notnan"):
        return (c[0], _check_expr(c[1], nargs, consts))
    raise ValueError(f"malformed check {c!r}")


@functools.cache
def _layout_ok() -> bool:
    """Does a numpy array's data pointer sit at offset object.__basicsize__ of the object?"""
    a = np.empty(3, np.int64)
    return ctypes.c_void_p.from_address(id(a) + _DATA_OFFSET).value == a.ctypes.data
