"""Kernel-grown buffers: copy them into numpy arrays and release them with libc `free`.

Kernels grow their outputs with libc `realloc` (DESIGN.md §5, variable-size outputs), so the memory
belongs to the C allocator of this process; the same allocator frees it here.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def read_array(cell, n: int, dtype) -> np.ndarray:
    """Copy the first n elements of the buffer described by a [address, capacity] cell."""
    dtype = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dtype)
    if cell is None or int(cell[0]) == 0 or int(cell[1]) < n:
        raise RuntimeError(f"kernel output buffer holds fewer than {n} elements")
    raw = (ctypes.c_char * (n * dtype.itemsize)).from_address(int(cell[0]))
    return np.frombuffer(raw, dtype=dtype, count=n).copy()


def free(address: int):
    if address:
        _libc.free(ctypes.c_void_p(address))
