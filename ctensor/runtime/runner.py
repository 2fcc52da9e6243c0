"""The native runner of a kernel call (issue 27 item 1): the kernel and its output buffers in one
CPython builtin, so a call's Python does not pay ctypes (~0.3 µs) and, per grown output buffer,
`string_at` + `free` + numpy's array interface (~0.8 µs each; a run-list output grows six).

`runner(kernel, pointers, cells)` returns a METH_FASTCALL builtin `run(block)` (code in
`runtime.runner_emit`, compiled once per process and cached on disk like `runtime.pyentry`'s
entries: `codegen.keyed`).  It runs the kernel's packed entry on the argument block (an
`array('q')`, its items read at a fixed offset checked on a live array) without the GIL, then:

* status != 0: returns the status (int); the output cells are untouched (the caller frees them);
* otherwise, if the grown buffers, at their capacities, fit in `LIMIT` bytes: returns one new
  immutable `bytes` holding them (each at a multiple of 8 bytes), each buffer freed and its cell
  rewritten {0, capacity, byte offset}; numpy arrays over it (`np.frombuffer`) are read-only views
  that keep it alive, so an output is immutable and owns its memory;
* else None: the cells still hold the buffers, which the caller adopts one by one
  (`buffers.adopt_array`: no copy of a large output).

Before the kernel runs, it writes each cell's address into the block slot that points to it (the
cells sit after the arguments, in the same block).  `cells` lists, per grown buffer, the slot of
its three-slot cell in the argument block and its element size.  The builtin's context (addresses of the C-API functions, libc `free`, the kernel,
the cell table) is read-only after it is built: calls from many threads share it safely, each
with its own argument block and its own bytes.

Returns None when native entries are disabled (CTENSOR_NATIVE_ENTRY=0) or the object layouts it
assumes do not hold (a numpy array's data pointer at `object.__basicsize__`, as `runtime.pyentry`
checks; a bytes object's data at `bytes.__basicsize__ - 1`); callers then call the kernel through
ctypes and adopt the buffers.
"""
from __future__ import annotations

import ctypes
import functools
from array import array

import numpy as np

from .buffers import _libc

LIMIT = 16384             # bytes of output buffers (at capacity) copied into one bytes object
_CAPI = ("PyLong_FromLongLong", "PyBytes_FromStringAndSize", "PyErr_Clear", "Py_IncRef",
         "PyEval_SaveThread", "PyEval_RestoreThread")
SLOT = {name: k for k, name in enumerate(_CAPI + ("free", "kernel", "None", "array_type", "items_offset",
                                                  "descr_offset", "length", "npointers", "ncells", "limit",
                                                  "table"))}
_BYTES_OFFSET = bytes.__basicsize__ - 1          # PyBytesObject.ob_sval (its basic size counts one byte)
_ITEMS_OFFSET = object.__basicsize__ + 8         # arrayobject.ob_item, after the PyVarObject header
_DESCR_OFFSET = _ITEMS_OFFSET + 16               # arrayobject.ob_descr, after ob_item and allocated


def runner(kernel, length, pointers, cells, limit: int = LIMIT):
    """The builtin `run(block)` of `kernel` (module docstring), or None.  `length`: items of the
    block (an array('q') of another length is refused); `pointers`: (block slot
    of a cell's address, block slot of the cell) per cell; `cells`: (block slot of a grown cell,
    element size in bytes) per grown output buffer."""
    # imported at first use: `import ctensor` stays without the entry and cache machinery
    from .pyentry import _Context, _MethodDef, _new_cfunction, METH_FASTCALL, enabled
    address = _code() if enabled() else None
    if address is None:
        return None
    slots = np.zeros(SLOT["table"] + 2 * len(pointers) + 2 * len(cells), np.int64)
    for name, value in _capi().items():
        slots[SLOT[name]] = value
    slots[SLOT["kernel"]], slots[SLOT["None"]] = kernel.compiled.packed_address, id(None)
    slots[SLOT["array_type"]], slots[SLOT["items_offset"]] = id(array), _ITEMS_OFFSET
    slots[SLOT["descr_offset"]], slots[SLOT["length"]] = _DESCR_OFFSET, length
    slots[SLOT["npointers"]], slots[SLOT["ncells"]], slots[SLOT["limit"]] = len(pointers), len(cells), limit
    slots[SLOT["table"]:] = np.asarray(list(pointers) + list(cells), np.int64).reshape(-1)
    name = f"ctensor_run_{kernel.es.out}".encode()
    # the kernel's machine code lives as long as its engine or library (the process); the context
    # holds the compiled function object too, so nothing the builtin reads can go away before it
    ctx = _Context(slots, name, (kernel.compiled,))
    method = ctx.method = _MethodDef(name, address, METH_FASTCALL, None)
    return _new_cfunction(ctypes.addressof(method), np.asarray(ctx), None)


@functools.cache
def _capi() -> dict:
    """Addresses of the C-API functions and libc `free` the runner calls (one lookup per process)."""
    got = {name: ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in _CAPI}
    return {**got, "free": ctypes.cast(_libc.free, ctypes.c_void_p).value}


@functools.cache
def _code():
    """Address of the runner's code (one per process), or None (module docstring)."""
    from .pyentry import _DATA_OFFSET, _layout_ok
    if not _layout_ok() or not _bytes_layout_ok() or not _array_layout_ok():
        return None
    from ..codegen.keyed import compile_keyed
    from ..driver.kernel_store import source_fingerprint       # the emitter's version

    def make():
        from .runner_emit import emit_runner
        text, base = emit_runner(SLOT, _DATA_OFFSET, _BYTES_OFFSET)
        return text, base, (base,)
    (address,), _ = compile_keyed(("runner", _DATA_OFFSET, _BYTES_OFFSET, _ITEMS_OFFSET, _DESCR_OFFSET,
                                   source_fingerprint()), make)
    return address


def _array_layout_ok() -> bool:
    """Do an array('q')'s size, items pointer and type descriptor (whose first byte is the
    typecode) sit where the runner reads them (CPython's arraymodule: PyVarObject header, ob_item,
    allocated, ob_descr)?"""
    a = array("q", range(5))
    size = ctypes.c_ssize_t.from_address(id(a) + object.__basicsize__).value
    descr = ctypes.c_void_p.from_address(id(a) + _DESCR_OFFSET).value
    return ctypes.c_void_p.from_address(id(a) + _ITEMS_OFFSET).value == a.buffer_info()[0] and size == 5 \
        and bool(descr) and ctypes.c_char.from_address(descr).value == b"q"


def _bytes_layout_ok() -> bool:
    b = bytes(range(1, 17))
    return ctypes.string_at(id(b) + _BYTES_OFFSET, len(b)) == b
