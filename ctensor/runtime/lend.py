"""A caller's numpy array as a kernel's output buffer (`PackedCall.set_output`).

A Dense output (Dense levels over an Element leaf) has one grown buffer, the leaf's values, of
exactly prod(shapes) elements in row-major order (`Dense`: child position p * shape + i), which
the kernel sizes with one `ensure` and fills with the output's fill value before it accumulates
(`formats.element.VElement.declare`).  A cell {address, capacity} holding the caller's array and
that exact capacity is therefore written in place, never reallocated: the caller's array is the
output.  Any other output (sparse levels) grows by amounts the kernel finds as it runs, so it
cannot be lent a fixed array.

`lend_plan` checks the kernel once per PackedCall; `check_lent` checks each array (a few
attribute reads: cheap enough to lend a chunk's rows of a larger array per call).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError
from ..formats.dense import Dense
from ..formats.element import Element
from .output_format import NP_DTYPE


@dataclass(frozen=True)
class LendPlan:
    cell: tuple          # (depth, 'val'): the leaf's grown cell in PackedCall.cells
    shape: tuple         # the output's shape, outermost first
    size: int            # prod(shape): the elements the kernel writes
    dtype: np.dtype      # the leaf's storage dtype
    zero_fill: bool      # the fill value's bits are all zero (np.zeros memory holds it)
    inputs: tuple        # ((first byte, end byte, name), ...) of this call's input buffers


def lend_plan(kernel, block: np.ndarray, tensors) -> LendPlan:
    """What an array lent to this call's output must be; TypeError for a kernel whose output cannot
    be lent (see `PackedCall.set_output`)."""
    fmt = kernel.out_fmt
    if fmt is None:
        raise TypeError(f"out: {kernel.text!r} has a scalar (0-d) output; there is no array to write into")
    levels = fmt.levels()
    leaf = levels[-1]
    if type(leaf) is not Element or not all(isinstance(lv, Dense) for lv in levels[:-1]):
        raise TypeError(f"out: only a Dense output (Dense levels over an Element leaf) is written into a caller's "
                        f"array; {kernel.text!r} writes {fmt.format_str()}, whose buffers the kernel grows as it runs")
    if kernel.split_sums:
        raise TypeError(f"out: {kernel.text!r} computes its float sum term by term (Kernel.split_sums), and a call "
                        "recomputes a non-finite result pointwise; to write its output into an array, compile "
                        "it with ctensor.driver.compile_kernel(text, tensors, split_sums=False)")
    grows = [g for g in kernel.getters if g[0] == "grow"]
    shapes = [j for j, g in enumerate(kernel.getters) if g[0] == "outshape"]
    depth = len(levels) - 1
    # the driver's getters for this format (`driver.build`): one shape per Dense level, in level
    # order, and the leaf's value buffer; anything else is a format this module does not know
    if grows != [("grow", depth, "val")] or len(shapes) != depth:
        raise TypeError(f"out: the kernel's output buffers {grows} are not one Dense value buffer")
    shape = tuple(int(block[j]) for j in shapes)
    dtype = np.dtype(np.float32 if getattr(leaf, "single", False) else NP_DTYPE[leaf.kind])
    inputs = []
    for g in kernel.getters:
        if g[0] == "in":
            v = getattr(tensors[g[1]].levels()[g[2]], g[3])
            if isinstance(v, np.ndarray) and v.nbytes:
                lo = v.ctypes.data
                inputs.append((lo, lo + v.nbytes, f"{g[1]} (level {g[2]} {g[3]})"))
    zero_fill = np.array(leaf.fill, dtype).tobytes() == bytes(dtype.itemsize)     # not -0.0, inf, True
    return LendPlan((depth, "val"), shape, int(np.prod(shape, dtype=np.int64)), dtype, zero_fill, tuple(inputs))


def check_lent(plan: LendPlan, out) -> int:
    """The address of `out`'s first element, after checking `out` against `plan`: the output's
    shape, or more rows of it (`PackedCall.set_output`'s `row`) — out.shape[1:] == plan.shape[1:]."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: expected a numpy array of shape {plan.shape} and dtype {plan.dtype}, "
                        f"got {type(out).__name__}")
    if out.dtype != plan.dtype:
        raise TypeError(f"out: expected dtype {plan.dtype} (the output's values), got {out.dtype}")
    if out.shape[1:] != plan.shape[1:] or out.ndim != len(plan.shape):
        raise FormatError(f"out: expected shape {plan.shape} (the output's Dense levels; more rows allowed with "
                          f"row=), got {out.shape}")
    flags = out.flags
    if not (flags.c_contiguous and flags.aligned and flags.writeable):
        what = "C-contiguous" if not flags.c_contiguous else "aligned" if not flags.aligned else "writeable"
        raise FormatError(f"out: the array must be {what} (the kernel writes its values in row-major order)")
    address = out.ctypes.data
    end = address + out.nbytes
    for lo, hi, name in plan.inputs:
        if lo < end and address < hi:
            raise FormatError(f"out: shares memory with the input buffer {name}; the kernel overwrites its output "
                              "before it reads the inputs")
    return address


def check_row(shape: tuple, out: np.ndarray, row, name: str = "row") -> int:
    """The byte offset in `out` of rows [row, row + shape[0]), which must lie inside it."""
    if row.__class__ is not int:
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
            raise TypeError(f"{name}: expected an int, got {row!r}")
        row = int(row)
    n = shape[0]
    if row < 0 or row + n > len(out):
        raise FormatError(f"{name}: rows {row} .. {row + n - 1} (the buffer's {n}) are not all in the array's "
                          f"{len(out)} rows")
    return row * (out.nbytes // len(out)) if row else 0


def input_slot(kernel, tensors, name: str, depth: int, attr: str) -> tuple:
    """(block slot, length) of a float input buffer of this call (`PackedCall.set_input`)."""
    for j, g in enumerate(kernel.getters):
        if g == ("in", name, depth, attr):
            v = getattr(tensors[name].levels()[depth], attr)
            if isinstance(v, np.ndarray) and v.dtype.kind == "f":
                return j, len(v)
    raise TypeError(f"set_input: {name} (level {depth} {attr}) is not a float buffer this kernel reads; float "
                    f"buffers: {[g[1:] for g in kernel.getters if g[0] == 'in' and _is_float(tensors, g)]}")


def _is_float(tensors, g) -> bool:
    v = getattr(tensors[g[1]].levels()[g[2]], g[3])
    return isinstance(v, np.ndarray) and v.dtype.kind == "f"


def check_input(tensor, depth: int, attr: str, array) -> int:
    """The address of `array`'s first element, checked to replace the packed buffer."""
    want = getattr(tensor.levels()[depth], attr).dtype
    if not isinstance(array, np.ndarray):
        raise TypeError(f"array: expected a numpy array of {want}, got {type(array).__name__}")
    if array.dtype != want:
        raise TypeError(f"array: expected dtype {want} (the packed buffer's), got {array.dtype}")
    if array.ndim != 1 or not (array.flags.c_contiguous and array.flags.aligned):
        raise FormatError(f"array: expected a 1-D C-contiguous aligned array, got shape {array.shape} with "
                          f"strides {array.strides}")
    return array.ctypes.data


def check_window(array: np.ndarray, start: int, n: int, finite: bool) -> None:
    """FormatError naming the first NaN of array[start:start + n], or its first ±inf when `finite`
    (the buffer it replaces held none).  One pass when the window is finite: a sum of finite
    values is finite unless it overflows, which the element test then clears."""
    window = array[start:start + n]
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.add.reduce(window))
    if math.isfinite(total):
        return
    bad = np.flatnonzero(~np.isfinite(window) if finite else np.isnan(window))
    if bad.size:
        i = int(bad[0])
        raise FormatError(f"array[{start + i}] = {window[i].item()!r} is not "
                          f"{'finite' if finite else 'a number'} (the buffer it replaces holds "
                          f"{'finite values only' if finite else 'no NaN'})")
