"""Kernel-grown buffers: hand them to numpy without a copy, released with libc `free`.

Kernels grow their outputs with libc `realloc` (DESIGN.md §5, variable-size outputs), so the memory
belongs to the C allocator of this process; the same allocator frees it when the last numpy array
viewing it is collected.
"""
from __future__ import annotations

import ctypes

import numpy as np

# the process's own symbols, as the JIT resolves the kernels' `realloc`: the same allocator, and no
# `ctypes.util.find_library` (it spawns ldconfig: ~10 ms of `import ctensor`)
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None
_libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.realloc.restype = ctypes.c_void_p


class _CBuffer:
    """Owner of one malloc'd buffer, exposed to numpy through the array interface; frees it when
    numpy drops the last view (the owner is the arrays' `base`)."""

    __slots__ = ("address", "__array_interface__")
    ctensor_frozen_buffer = True      # `formats.level.writable_alias`: nobody writes this memory

    def __init__(self, address: int, n: int, dtype: np.dtype):
        self.address = address
        # read-only: a tensor built on it need not copy it (`formats.level.detached`)
        self.__array_interface__ = {"data": (address, True), "shape": (n,), "typestr": dtype.str,
                                    "version": 3}

    def __del__(self, _free=_libc.free, _ptr=ctypes.c_void_p):
        # bound at definition: module globals may already be gone at interpreter shutdown
        _free(_ptr(self.address))


SMALL = 4096          # bytes: a kernel buffer up to this size is copied into numpy and freed


def adopt_array(cell, n: int, dtype) -> np.ndarray:
    """The first n elements of the buffer of a [address, capacity] cell as a read-only numpy array:
    one that owns the buffer (no copy; shrunk to n elements), or for at most `SMALL` bytes a copy
    (the buffer freed).  The cell is cleared, so the caller's later `free(cell[0])` does nothing."""
    dtype = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dtype)
    if cell is None or int(cell[0]) == 0 or int(cell[1]) < n:
        raise RuntimeError(f"kernel output buffer holds fewer than {n} elements")
    address = int(cell[0])
    nbytes = n * dtype.itemsize
    if nbytes <= SMALL:                      # a copy is cheaper than numpy's array interface
        out = np.frombuffer(ctypes.string_at(address, nbytes), dtype)
        _libc.free(address)
        cell[0], cell[1] = 0, 0
        return out
    if int(cell[1]) > n:                     # give back the doubling slack (in place, usually)
        shrunk = _libc.realloc(ctypes.c_void_p(address), n * dtype.itemsize)
        address = shrunk or address
    cell[0], cell[1] = 0, 0
    return np.asarray(_CBuffer(address, n, dtype))


class _Borrowed:
    """A non-owning view of a kernel buffer for numpy's array interface (the kernel keeps it)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, n: int, dtype: np.dtype):
        self.__array_interface__ = {"data": (address, False), "shape": (n,), "typestr": dtype.str,
                                    "version": 3}


def borrow_array(address: int, n: int, dtype) -> np.ndarray:
    """The n elements at `address` as a numpy array that does not own them."""
    return np.asarray(_Borrowed(address, n, np.dtype(dtype)))


def free(address: int):
    if address:
        _libc.free(ctypes.c_void_p(address))


# libc free called with a Python int address (its c_void_p argtypes convert it): no wrapper per call
free_ptr = _libc.free
