"""`PackedCall`: one argument block of a compiled kernel, for repeated low-overhead calls from Python
or from embedding code (numba), with the kernel-grown output buffers read in place (DESIGN.md §5:
the packed entry point), or a Dense output written straight into the caller's array
(`set_output`, `runtime.lend`)."""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from ..errors import InvalidProgramError, KernelError
from ..formats.tensor import Tensor
from ..ir import nodes as ir
from .buffers import borrow_array, free
from .lend import check_input, check_lent, check_row, check_window, input_slot, lend_plan
from .merge_output import unmergeable


class PackedCall:
    """One packed call: `address` of the int64 argument block (pass it to `Kernel.address` or
    `Kernel.ctypes_function`, from Python or numba), then `finish(status)` for the result.  The
    object keeps the input buffers alive until then."""

    def __init__(self, kernel, tensors, block, keep, cells, out_cell):
        self.kernel, self.tensors, self.block = kernel, tensors, block
        self.keep, self.cells, self.out_cell = keep, cells, out_cell
        self._views = {}
        # a caller's array lent as the output (`set_output`): its cell is never freed here, so the
        # finaliser below sees the same set and skips it
        self._lent, self._lent_at, self._lent_keys, self._lend = None, 0, set(), None
        # (name, depth, attr) -> (slot, length, array given, its address, the packed buffer's address)
        self._inputs = {}
        # read once: `ndarray.ctypes.data` costs about 1 µs, the kernel call itself about 0.5 µs
        self._address, self._entry = block.ctypes.data, kernel.compiled.packed
        self._floats = block.view(np.float64)      # float scalars are stored bit-cast in the block
        # buffers the kernel grew and nobody adopted are freed when the call is dropped unreleased
        # (e.g. a PointIndex's single-query calls); the finaliser holds the cells, not self
        weakref.finalize(self, _free_cells, cells, self._lent_keys)

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

    def set_output(self, out: np.ndarray, row: int = 0, zeroed: bool = False) -> np.ndarray:
        """Have `run` write this call's output straight into `out` (no kernel-grown buffer, no copy
        after the call); returns `out`.  Call it again (e.g. with the next `row`) before the next
        `run` to write elsewhere.

        For a kernel whose output is Dense levels over an Element leaf (`Out[i, j] = ...` with the
        default or a Dense `out=` format).  `out`: a numpy array of the output's shape (the Dense
        levels' shapes, outermost first, as this call's inputs give them) — or with more rows,
        receiving the output in rows [row, row + shape[0]) — of the leaf's dtype (float64,
        float32 for `Element(..., dtype=float32)`, int64 or bool), C-contiguous, aligned,
        writeable, and sharing no memory with an input buffer of this call.  The kernel first
        sets each of its elements to the output's fill value, then accumulates, so they are all
        overwritten; other rows of `out` are left alone.  `run` leaves the result there (the
        values of `Kernel.__call__`'s Tensor, `.to_numpy()`); `finish` returns `out`.  On a
        failing status the rows hold a partial result.  The array is referenced until the next
        `set_output` with another array, `finish` or `release`.  Passing the same array again
        (another `row`) checks only the row: a few hundred ns.

        zeroed=True: the caller vouches that these rows hold only zero bytes (e.g. rows of a
        fresh `np.zeros` array no run has written), and the kernel does not set them to the
        fill value again when the fill is zero bits (0, 0.0, False; otherwise the flag changes
        nothing).  That pass costs as much as the output's other writes: for a large output
        from np.zeros (calloc), whose pages the OS zeroes on first touch anyway, it is pure
        overhead.  Rows that hold anything else give a wrong result: pass it only for memory
        you know is zero.

        Raises TypeError: `out` not a numpy array, another dtype, `row` not an int, or a kernel
        whose output is a scalar, has a sparse level, or is a float sum computed term by term
        (`Kernel.split_sums`, whose call recomputes a non-finite result pointwise: compile it
        with `ctensor.driver.compile_kernel(text, tensors, split_sums=False)` to lend it an
        output); FormatError: another shape, not C-contiguous / aligned / writeable, overlapping
        an input buffer (named), or rows outside `out`.
        """
        plan = self._lend
        if plan is None:
            plan = self._lend = lend_plan(self.kernel, self.block, self.tensors)
        if out is not self._lent:
            self._lent_at = check_lent(plan, out)
            self._lent = out
        address = self._lent_at + check_row(plan.shape, out, row)
        cell = self.cells[plan.cell]
        if plan.cell not in self._lent_keys:
            if cell[0]:             # a buffer an earlier `run` grew (read with `buffer`): ours to free
                free(int(cell[0]))
                self._views.pop(plan.cell, None)
            self._lent_keys.add(plan.cell)
        # capacity = exactly the elements the kernel writes (its Dense shapes' product, checked
        # against out.shape above): the kernel's grow test (capacity < needed) never fires, so it
        # writes in place and never passes the array to realloc; negative: they hold the fill
        cell[0], cell[1] = address, -plan.size if zeroed and plan.zero_fill else plan.size
        return out

    def set_input(self, name: str, depth: int, attr: str, array: np.ndarray, start: int = 0) -> None:
        """Have the next runs read input buffer `attr` of level `depth` of tensor `name` (e.g. the
        pinpoints `idx` of a SparsePoint level) from elements [start, start + n) of `array`,
        where n is the length of the buffer packed: the next chunk of a longer array, read in
        place instead of copied into the packed buffer.  `array` stays referenced until the next
        `set_input` of that buffer or `release`; same array again checks only the range.

        Only float buffers (real coordinates and values), which the kernel never uses as an
        index; the window is checked to hold no NaN, and no ±inf where the packed buffer held
        none (the code may be specialised for finite data: `formats.level.Facts`, and a float
        turned into a cell index must be a number).  Like rewriting a buffer in place between
        runs, the level's ordering (sorted where the level sorts) is the caller's to keep.
        `array`: 1-D, C-contiguous, aligned, of the packed buffer's dtype.

        Raises TypeError (no such float input buffer of this kernel, `array` not a numpy array
        or of another dtype, `start` not an int) or FormatError (not 1-D / contiguous / aligned,
        [start, start + n) not inside `array`, or a NaN / an infinity in it, with its index),
        naming the argument.
        """
        key = (name, depth, attr)
        got = self._inputs.get(key)
        if got is None or got.array is not array:
            if got is None:
                slot, n = input_slot(self.kernel, self.tensors, name, depth, attr)
                finite = bool(np.isfinite(getattr(self.tensors[name].levels()[depth], attr)).all())
                got = _Rebound(slot, n, None, 0, int(self.block[slot]), finite)
            got = self._inputs[key] = got._replace(array=array,
                                                   address=check_input(self.tensors[name], depth, attr, array))
        offset = check_row((got.n,), array, start, "start")
        check_window(array, start, got.n, got.finite)
        self.block[got.slot] = got.address + offset

    def _unlend(self):
        if self._lent_keys:
            for key in self._lent_keys:
                cell = self.cells[key]
                cell[0], cell[1] = 0, 0
            self._lent_keys.clear()
        self._lent = None

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
        """Free the kernel-grown buffers (views from `buffer` become invalid) and return a lent
        output array (`set_output`) to its owner."""
        self._views = {}
        self._unlend()
        for got in self._inputs.values():
            self.block[got.slot] = got.packed      # a run after release reads the packed buffers again
        self._inputs = {}
        _free_cells(self.cells)

    def finish(self, status: int):
        """Raise KernelError on a non-zero status; return the scalar, the lent array (`set_output`)
        or the output Tensor; free every kernel-grown buffer."""
        k = self.kernel
        try:
            self.check_status(status)
            if self._lent is not None:
                return self._lent
            if self.out_cell is not None:
                return self.out_cell[0].item()
            # well-formed by construction: appends are checked in order by the kernel itself
            return Tensor.frozen(k._rebuild(self.tensors, self.cells), k.es.out)
        finally:
            self.release()


class _Rebound(NamedTuple):
    """An input buffer `set_input` rebound: its block slot and length, the array read now and its
    address, the packed buffer's address (restored by `release`), whether that held only finite values."""
    slot: int
    n: int
    array: object
    address: int
    packed: int
    finite: bool


def _free_cells(cells, lent=()):
    for key, cell in cells.items():
        if key in lent:             # a caller's array (`set_output`): not ours to free
            continue
        free(int(cell[0]))
        cell[0], cell[1] = 0, 0
