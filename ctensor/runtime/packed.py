"""`PackedCall`: one argument block of a compiled kernel, for repeated low-overhead calls from Python
or from embedding code (numba), with the kernel-grown output buffers read in place (DESIGN.md §5:
the packed entry point)."""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import InvalidProgramError, KernelError
from ..formats.tensor import Tensor
from ..ir import nodes as ir
from .buffers import borrow_array, free
from .merge_output import unmergeable


class PackedCall:
    """One packed call: `address` of the int64 argument block (pass it to `Kernel.address` or
    `Kernel.ctypes_function`, from Python or numba), then `finish(status)` for the result.  The
    object keeps the input buffers alive until then."""

    def __init__(self, kernel, tensors, block, keep, cells, out_cell):
        self.kernel, self.tensors, self.block = kernel, tensors, block
        self.keep, self.cells, self.out_cell = keep, cells, out_cell
        self._views = {}
        # read once: `ndarray.ctypes.data` costs about 1 µs, the kernel call itself about 0.5 µs
        self._address, self._entry = block.ctypes.data, kernel.compiled.packed
        self._floats = block.view(np.float64)      # float scalars are stored bit-cast in the block
        # buffers the kernel grew and nobody adopted are freed when the call is dropped unreleased
        # (e.g. a PointIndex's single-query calls); the finaliser holds the cells, not self
        weakref.finalize(self, _free_cells, cells)

    @property
    def address(self) -> int:
        return self._address

    def check_status(self, status: int):
        """Raise InvalidProgramError (the program is invalid on this data, or its output format
        cannot hold the passes it writes) or KernelError on a non-zero status."""
        k = self.kernel
        if status == ir.STATUS_OUTPUT_ORDER and k.out_fmt is not None:
            why = unmergeable(k.out_fmt, k.plan)
            if why is None:
                raise InvalidProgramError(
                    f"{k.text!r}: a loop outside the output's last index revisits its sparse output with "
                    "coordinates out of order; this kernel writes it in one pass: call the Kernel itself, "
                    "which runs a sibling kernel that merges the passes")
            real = [i for lv, i in zip(k.out_fmt.modes(), k.es.out_idxs) if lv.coord == "real"]
            if real:          # no Dense level and no other loop order exists for a real mode
                raise InvalidProgramError(
                    f"{k.text!r} cannot be computed into this output format (the program itself may be "
                    f"valid): its continuous output was written out of coordinate order.  It is written in "
                    f"one pass in increasing {', '.join(real)}, and a loop outside {real[0]!r} (a reduction "
                    f"index such as a sum over ids or over shifted copies) revisits it where the pieces "
                    f"overlap; the runtime cannot merge these passes (not supported: {why})")
        if status == ir.STATUS_FIBER_ORDER:
            raise InvalidProgramError(f"{k.text!r} cannot be computed into this output format (the program "
                                      f"itself may be valid): {ir.STATUS_NAMES[status]}")
        if status in (ir.STATUS_LOOKUP_ON_INTERVAL, ir.STATUS_INDEX_ON_INTERVAL, ir.STATUS_OUTPUT_ORDER,
                      ir.STATUS_BAD_AFFINE):
            raise InvalidProgramError(f"{k.text!r} is invalid on this data: {ir.STATUS_NAMES[status]}")
        if status != 0:
            raise KernelError(f"kernel for {k.text!r} failed: {ir.STATUS_NAMES.get(status, status)}")

    def set_scalar(self, name: str, value):
        """Rewrite scalar argument `name` in the argument block (for `run`); kinds as compiled."""
        k = self.kernel.scalar_slot[name]
        if self.kernel.scalar_kinds[name] == "float":
            self._floats[k] = value
        else:
            self.block[k] = int(value)

    # ---- repeated calls: the inputs' buffers may be rewritten in place between runs (same lengths),
    # the output buffers are kept and reused (no malloc once they are large enough)
    def run(self):
        """Run the kernel on this argument block; the output stays in the kernel's buffers, read
        with `buffer`.  Raises like `finish`."""
        status = self._entry(self._address)
        if status:
            self.check_status(status)

    def buffer(self, depth: int, attr: str, n: int, dtype) -> np.ndarray:
        """A numpy view (no copy) of the first n elements of output buffer `attr` (e.g. 'ptr',
        'idx', 'val') of output level `depth`; valid until the next `run`, `finish` or `release`
        and while this PackedCall is alive (its buffers are freed when it is collected)."""
        key = (depth, attr)
        address, capacity = self.cells[key].tolist()
        view = self._views.get(key)
        if view is None or view[0] != address or view[1] < n or view[2].dtype != dtype:
            # first use, or the kernel moved or grew the buffer (realloc may grow it in place)
            if n > capacity:
                raise RuntimeError(f"kernel output buffer holds fewer than {n} elements")
            if n == 0:
                return np.zeros(0, dtype)
            view = self._views[key] = (address, capacity, borrow_array(address, capacity, dtype))
        return view[2][:n]

    def release(self):
        """Free the kernel-grown buffers (views from `buffer` become invalid)."""
        self._views = {}
        _free_cells(self.cells)

    def finish(self, status: int):
        """Raise KernelError on a non-zero status; return the scalar or the output Tensor; free
        every kernel-grown buffer."""
        k = self.kernel
        try:
            self.check_status(status)
            if self.out_cell is not None:
                return self.out_cell[0].item()
            # well-formed by construction: appends are checked in order by the kernel itself
            return Tensor.frozen(k._rebuild(self.tensors, self.cells), k.es.out)
        finally:
            self.release()


def _free_cells(cells):
    for cell in cells.values():
        free(int(cell[0]))
        cell[0], cell[1] = 0, 0
