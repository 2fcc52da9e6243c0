"""Embedding a compiled kernel in other JIT code: ctypes entry points, llvmlite modules, numba.

A kernel's native code follows the ABI of `runtime.abi` (`Kernel.abi`): the packed entry point
``int32_t <symbol>_packed(int64_t *block)`` and the unpacked ``int32_t <symbol>(...)``.  Three ways
to call it from elsewhere:

* `ctypes_entry`: a ctypes function of either entry point.  numba's ``@njit`` code calls ctypes
  functions as external function pointers (one indirect call per kernel call).
* `llvm_module` (``Kernel.llvm_module()``): a fresh llvmlite ``ModuleRef`` holding the kernel's
  optimised IR, to ``link_in`` to another llvmlite module that calls the symbols (`declare_packed`
  / `declare_unpacked` declare them in an ``llvmlite.ir.Module``); JIT it with any engine.
* `numba_inline`: a numba intrinsic calling the packed entry point whose IR is linked into numba's
  code library (``context.add_linking_libs``), so LLVM inlines it into the calling ``@njit``
  function: no call is left for a small kernel (the packed function is marked ``alwaysinline``
  unless ``always_inline=False``).

numba is an optional dependency (the `test` and `bench` extras): it is imported on first use of
`numba_inline`.  The kernel's IR and numba's share LLVM's global context, so the modules are
parsed under the engine's lock.
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm
from llvmlite import ir as lir

from ..codegen.engine import get_engine
from .abi import abi_of

_CTYPES = {"ptr": ctypes.c_void_p, "i64": ctypes.c_int64, "double": ctypes.c_double,
           "i32": ctypes.c_int32, "i8": ctypes.c_int8, "float": ctypes.c_float}
_LLTYPES = {"ptr": lir.PointerType(), "i64": lir.IntType(64), "double": lir.DoubleType(),
            "i32": lir.IntType(32), "i8": lir.IntType(8), "float": lir.FloatType()}
_LOCK = threading.Lock()
_INLINED: dict = {}          # (packed symbol, always_inline) -> numba intrinsic


def llvm_module(kernel) -> llvm.ModuleRef:
    """A new llvmlite ``ModuleRef`` with the kernel's optimised LLVM IR: the functions
    ``kernel.abi.symbol`` and ``kernel.abi.packed_symbol`` (external linkage) and declarations of
    libc ``realloc``/``free`` for kernels that grow outputs (resolved from the process when JITted).
    Each call parses anew: ``ModuleRef.link_in`` consumes the module it is given.  For bitcode
    (another process, ``llvm-link``): ``llvm_module(k).as_bitcode()``."""
    with get_engine().lock:          # LLVM's global context is shared with the compiler
        return llvm.parse_assembly(kernel.llvm_ir)


def declare_packed(module: lir.Module, kernel) -> lir.Function:
    """Declare the packed entry point ``i32 (ptr block)`` in an ``llvmlite.ir`` module (or return
    the existing declaration), to call it there and link `llvm_module` in before JITting."""
    name = abi_of(kernel).packed_symbol
    if name in module.globals:
        return module.globals[name]
    return lir.Function(module, lir.FunctionType(lir.IntType(32), [lir.PointerType()]), name=name)


def declare_unpacked(module: lir.Module, kernel) -> lir.Function:
    """Declare the unpacked function ``i32 (field types...)`` (`Abi.fields` in slot order) in an
    ``llvmlite.ir`` module."""
    abi = abi_of(kernel)
    if abi.symbol in module.globals:
        return module.globals[abi.symbol]
    fnty = lir.FunctionType(lir.IntType(32), [_LLTYPES[f.llvm_type] for f in abi.fields])
    return lir.Function(module, fnty, name=abi.symbol)


def ctypes_entry(kernel, unpacked: bool = False):
    """A ctypes function of the packed entry point, ``int32 (void *block)``
    (= ``Kernel.ctypes_function``), or with ``unpacked=True`` of the unpacked function, one
    argument per `Abi` field (pointers as ``c_void_p``: pass addresses, e.g. ``arr.ctypes.data``;
    ``c_int64``; ``c_double``).  Both can be called from numba ``@njit`` code."""
    if not unpacked:
        return kernel.ctypes_function
    abi = abi_of(kernel)
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, *[_CTYPES[f.llvm_type] for f in abi.fields])
    return proto(abi.address)


def numba_inline(kernel, always_inline: bool = True):
    """A numba intrinsic ``status = f(block)`` for ``@njit`` code that runs the kernel's packed
    entry point, its LLVM IR linked into numba's code library so that LLVM inlines it.

    `block`: a C-contiguous 1-D int64 array holding at least ``len(kernel.abi)`` slots (filled as
    `runtime.abi` documents), or the block's address as an integer.  Returns the int32 status.
    An array with fewer slots raises ValueError in the calling function; another argument type is
    a numba TypingError naming it.  ``always_inline=False`` leaves inlining to LLVM's cost model.
    Raises ImportError when numba is not installed."""
    abi = abi_of(kernel)
    key = (abi.packed_symbol, bool(always_inline))
    with _LOCK:
        f = _INLINED.get(key)
        if f is None:
            f = _INLINED[key] = _make_intrinsic(kernel.llvm_ir, abi, always_inline, kernel.text)
    return f


def _make_intrinsic(text: str, abi, always_inline: bool, program: str):
    from numba.core import cgutils, types
    from numba.core.errors import TypingError
    from numba.core.extending import intrinsic

    nslots, symbol = len(abi.fields), abi.packed_symbol
    libs = {}                          # id(codegen) -> (codegen, library): one library per numba target

    def library(context):
        cg = context.codegen()
        hit = libs.get(id(cg))
        if hit is None:
            with get_engine().lock:   # parse and link in LLVM's global context, which the compiler shares
                mod = llvm.parse_assembly(text)
                if always_inline:
                    mod.get_function(symbol).add_function_attribute("alwaysinline")
                lib = cg.create_library(f"ctensor.{symbol}")
                lib.add_llvm_module(mod)
            hit = libs[id(cg)] = (cg, lib)
        return hit[1]

    def typer(typingctx, block):
        ok = (isinstance(block, types.Array) and block.dtype == types.int64 and block.ndim == 1
              and block.layout == "C") or isinstance(block, types.Integer) \
            or block == types.voidptr or isinstance(block, types.CPointer)
        if not ok:
            raise TypingError(f"{symbol}: block must be a C-contiguous 1-D int64 array or an integer address, "
                              f"got {block}")

        def codegen(context, builder, signature, args):
            context.add_linking_libs([library(context)])
            fnty = lir.FunctionType(lir.IntType(32), [lir.PointerType()])
            fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            (value,), (ty,) = args, signature.args
            if isinstance(ty, types.Array):
                ary = context.make_array(ty)(context, builder, value)
                short = builder.icmp_signed("<", ary.nitems, lir.Constant(ary.nitems.type, nslots))
                with cgutils.if_unlikely(builder, short):
                    context.call_conv.return_user_exc(
                        builder, ValueError, (f"argument block of {program!r} needs {nslots} int64 slots",))
                ptr = ary.data
            elif isinstance(ty, types.Integer):
                ptr = builder.inttoptr(value, lir.PointerType())
            else:
                ptr = value
            return builder.call(fn, [ptr])
        return types.int32(block), codegen

    typer.__name__ = f"ctensor_{symbol}"
    return intrinsic(typer)


__all__ = ["llvm_module", "declare_packed", "declare_unpacked", "ctypes_entry", "numba_inline"]
