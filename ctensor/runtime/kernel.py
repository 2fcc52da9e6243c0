"""`Kernel`: a compiled continuous einsum — the artifact of the compiler driver (`ctensor.driver`) and
its call.  No compilation logic lives here: a kernel holds its `KernelSpec` (what the compiler
decided, `runtime.spec`) and its machine code (`codegen.CompiledFunction`), and runs it.

A call writes one int64 argument block (slot k = parameter k; `Kernel.abi`), runs the packed entry
point without the GIL, and rebuilds the output from the buffers the kernel grew with realloc.  The
common call takes `runtime.fastcall` (a few µs of Python); every other case — other data facts, a
revisited sparse output, a sum to recompute pointwise, an error — the checked path below.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ..errors import FormatError
from ..formats.level import strip_facts
from ..formats.tensor import Tensor
from ..ir import nodes as ir
from ..ir.printer import format_function
from .args import split_args, user_measures
from .fastcall import FastCall, shape_groups
from .merge_output import unmergeable
from .output_format import NP_DTYPE, cells_taker, rebuild_output
from .packed import PackedCall
from .spec import KernelSpec
from .buffers import free


class OtherFacts(TypeError):
    """Tensors of the compiled formats whose data facts differ (`formats.level.Facts`): `pack`
    refuses them, a call runs a sibling kernel.  `keys`: their format keys."""

    def __init__(self, message, keys):
        super().__init__(message)
        self.keys = keys


class Kernel:
    """A compiled einsum.  Build with `ct.compile`; call with tensors of the same formats (T.format).
    The code is also specialised for facts of the data (`formats.level.Facts`, e.g. every interval
    start finite); a call whose tensors differ only in those runs a sibling kernel, compiled at its
    first use and kept by this one.  `pack` (a block for this kernel's own entry point) accepts
    only the facts compiled for (`accepts`) and raises TypeError otherwise.

    A float sum of terms under Lebesgue measures into a scalar or Dense output is computed term by
    term (`split_sums`; the code then grows linearly, not exponentially, in the terms).  That is
    exact while each term's integral is finite; a call whose result has a non-finite value
    recomputes it with the pointwise kernel (compiled then), where terms can cancel on an
    unbounded run.  Code that calls `address` directly gets the term-by-term result.

    A sparse output (SparseRunList runs, SparseList pinpoints or ids) is written in one pass in
    increasing coordinate order.  When a loop outside its last index revisits it with overlapping
    coordinates (`C[x] = S[i, x] * d(i; counting)`, the coverage depth), the call runs a sibling
    kernel (`merge_output=True`) that appends every pass unchecked, and the runtime ⊕-merges the
    passes (`runtime.merge_output`).  `pack`/`address` run this kernel, which reports such data
    with InvalidProgramError.  A pointwise ⊕ of `driver.build.POINTWISE_SPLIT` or more terms into
    such an output that the union protocol cannot read in one pass (`C[x] = A[x]*B[x] + D[x]*E[x] +
    …`, `lower.nest.union_read`) is compiled that way from the start, one pass per term; code
    calling its `address` directly gets the unmerged passes.

    Calls are thread-safe: each builds its own argument block and output buffers, the native code
    runs without the GIL, and sibling kernels are compiled once under a lock.

    Attributes: `ir` (printed ctensor IR), `llvm_ir` (optimised LLVM IR), `address` (of the native
    function taking one pointer to an int64 argument block), `compile_seconds`, `plan`, `spec`,
    `guard_stats` (what the z3 guard prover did, `ctensor.analysis.guards`; None when off),
    `source` ('compiled', or 'disk' when loaded from the on-disk kernel cache without lowering).
    """

    def __init__(self, spec, compiled, fn=None, fn_loader=None, source="compiled"):
        if not isinstance(spec, KernelSpec):
            raise TypeError("a Kernel is built by the compiler: use ct.compile(text, **tensors) "
                            "(or ctensor.driver.compile_kernel(text, kwargs, ...))")
        self.spec, self.compiled, self.source = spec, compiled, source
        self._fn, self._fn_loader = fn, fn_loader
        self.text, self.es, self.plan = spec.text, spec.es, spec.plan
        self.formats, self.format_strs, self.scalar_kinds = spec.formats, spec.format_strs, spec.scalar_kinds
        self.out_fmt, self.getters = spec.out_fmt, spec.getters
        self.split_sums, self.merge_output = spec.split_sums, spec.merge_output
        self.prove_guards = spec.prove_guards
        self.compile_seconds = spec.compile_seconds
        # a first tier (`driver.tiering`): set when the optimised code has replaced it, or failed to
        self._optimised = threading.Event()
        self.tier_error = None
        if not compiled.forward_address:
            self._optimised.set()
        self._measures, self._options = spec.measures, spec.options
        self.scalar_slot = {g[1]: k for k, g in enumerate(self.getters) if g[0] == "scalar"}
        self.shape_groups = shape_groups(self.plan)
        self._siblings = {}
        self._lock = threading.Lock()
        self._fast = fast = FastCall(self).call
        # the generated call is this kernel's own __call__, in a subclass per kernel: `k(**kw)` then
        # runs it directly, not through a method that calls it (a Python frame, ~0.1 µs of ~2)
        self.__class__ = type("Kernel", (Kernel,), {"__call__": fast, "__slots__": (), "__doc__": Kernel.__doc__,
                                                    "__module__": Kernel.__module__, "__qualname__": "Kernel"})

    # ------------------------------------------------------------------ tiers (driver.tiering)
    @property
    def tier(self) -> str:
        """The code calls run now: 'quick-cg0' for a first tier (its optimised code compiling in the
        background), else the optimised code's LLVM tier ('O3', or a light tier for huge kernels)."""
        return self.compiled.tier

    def wait_optimized(self, timeout: float | None = None) -> bool:
        """Wait until this kernel runs its optimised code (`driver.tiering`); at once for a kernel
        compiled in one tier.  True when it does; False on a timeout, or if the optimised compile
        failed (`tier_error`: the kernel then keeps its first tier, which computes the same
        results)."""
        return self._optimised.wait(timeout) and self.tier_error is None

    def _promote(self, spec, compiled, fn):
        """Replace the first tier by the optimised code (`driver.tiering.upgrade`): the same argument
        block (checked), so a call in flight on either is correct; the first tier's entry forwards."""
        if spec.getters != self.spec.getters or spec.params != self.spec.params:
            raise AssertionError(f"{self.text!r}: the optimised kernel's argument block differs from its "
                                 "first tier's; it keeps the first tier")
        # (not under `_lock`, which a sibling's compile holds for its length; each store is atomic
        # under the GIL and any mix of old and new fields is a consistent call)
        self.compiled.forward_to(compiled)
        self.spec, self._fn, self._fn_loader = spec, fn, None
        self.compiled = compiled
        self._optimised.set()

    def _promotion_failed(self, error):
        self.tier_error = error
        self._optimised.set()

    # ------------------------------------------------------------------ artifact
    # what exposes the code waits for the optimised tier: inspecting or embedding a kernel sees the
    # same code whenever it is asked
    @property
    def fn(self) -> ir.Function:
        """The IR function (read back from the disk cache for a kernel loaded from it)."""
        self._optimised.wait()
        if self._fn is None:
            self._fn = self._fn_loader()
        return self._fn

    @property
    def ir(self) -> str:
        return format_function(self.fn)

    @property
    def llvm_ir(self) -> str:
        self._optimised.wait()
        return self.compiled.llvm_ir

    @property
    def guard_stats(self) -> dict | None:
        """What the z3 guard prover did (`ctensor.analysis.guards`); None when off."""
        self._optimised.wait()
        return self.spec.guard_stats

    @property
    def address(self) -> int:
        self._optimised.wait()
        return self.compiled.packed_address

    @property
    def ctypes_function(self):
        """The packed entry point as a ctypes function `int32 (void *argument_block)`; numba's
        @njit code can call it directly (it becomes an external function pointer)."""
        self._optimised.wait()
        return self.compiled.packed

    @property
    def mergeable(self) -> bool:
        """Can a revisited sparse output of this kernel be merged (`runtime.merge_output`)?"""
        return not self.merge_output and unmergeable(self.out_fmt, self.plan) is None

    def __reduce__(self):
        raise TypeError("a Kernel is machine code in this process's JIT engine and cannot be pickled; "
                        "pickle its tensors and call ct.compile again (the on-disk kernel cache makes that a "
                        "load in milliseconds, not a compile)")

    def accepts(self, tensors) -> bool:
        """Were these tensors' formats and data facts the ones compiled for (so a call runs this
        kernel, not a sibling, and does not raise TypeError)?"""
        return all(k in tensors and tensors[k].level.format_key() == key for k, key in self.formats.items())

    # ------------------------------------------------------------------ siblings
    def _sibling(self, tag, kwargs, **options) -> "Kernel":
        """The same program compiled again for these arguments (with this kernel's user measures,
        which calls omit) and options: compiled at first use (once, under the lock), kept by tag."""
        k = self._siblings.get(tag)
        if k is None:
            with self._lock:
                k = self._siblings.get(tag)
                if k is None:
                    from ..driver import compile_kernel      # the driver builds kernels: import at use
                    k = self._siblings[tag] = compile_kernel(self.text, {**self._measures, **kwargs},
                                                             **{**self._options, **options})
        return k

    # ------------------------------------------------------------------ call
    def check(self, tensors, scalars):
        keys, facts = {}, None
        for k, key in self.formats.items():
            if k not in tensors:
                raise TypeError(f"missing tensor argument {k!r}")
            got = keys[k] = tensors[k].level.format_key()
            if got != key:
                lvl = tensors[k].level
                if strip_facts(got) != strip_facts(key):
                    raise TypeError(f"{k}: kernel was compiled for the format {self.format_strs[k]} "
                                    f"({key}), got {lvl.format_str()} ({got}); compile a new kernel for this format")
                facts = facts or (f"{k}: the kernel's code is specialised for facts of the data ({key}) that this "
                                  f"{lvl.format_str()} tensor does not have ({got}); call the kernel itself (it "
                                  "runs a sibling kernel) or pack a sibling from ct.compile")
            if tensors[k].is_empty_format:
                raise FormatError(f"{k}: tensor holds no data")
        if facts:
            raise OtherFacts(facts, keys)
        for k, want in self.scalar_kinds.items():
            if k not in scalars:
                raise TypeError(f"missing scalar argument {k!r}")
            val, got = scalars[k]
            if k not in self.scalar_slot:
                continue                # not read by the program
            # the block holds the kinds compiled for: widen bool -> int -> float, never narrow
            if got != want and want != "float" and not (want == "int" and got == "bool"):
                raise TypeError(f"scalar {k!r}: the kernel was compiled for {'an int' if want == 'int' else 'a bool'} "
                                f"scalar, got {got} {val!r}; "
                                "compile a new kernel for it")
            if want != "float" and not -2 ** 63 <= int(val) < 2 ** 63:
                raise TypeError(f"scalar {k!r} = {val!r} does not fit in a 64-bit integer; pass it as a float")
        # integer modes addressed by one index must have one shape
        for i, ((first, d0), *rest) in self.shape_groups:
            n0 = tensors[first].modes()[d0].shape
            for name, d in rest:
                n = tensors[name].modes()[d].shape
                if n != n0:
                    raise FormatError(f"index {i!r}: {name} has {n} coordinates along mode {d} but {first} has "
                                      f"{n0} along mode {d0}")

    def pack(self, **kwargs) -> "PackedCall":
        """Check the arguments and build the int64 argument block of one call (see `PackedCall`)."""
        tensors, scalars = split_args(kwargs)
        for k, m in user_measures(kwargs).items() if self._measures else ():
            if k in self._measures and m != self._measures[k]:
                raise TypeError(f"measure {k!r}: this kernel was compiled for {self._measures[k]!r}, got {m!r}; "
                                "compile the program again for another measure")
        self.check(tensors, scalars)
        block = np.zeros(len(self.getters), np.int64)
        keep, cells = [], {}
        out_cell = None
        for k, g in enumerate(self.getters):
            if g[0] == "in":
                _, name, depth, attr = g
                v = getattr(tensors[name].levels()[depth], attr)
                if isinstance(v, np.ndarray):
                    keep.append(v)
                    block[k] = v.ctypes.data
                else:
                    block[k] = int(v or 0)
            elif g[0] == "scalar":
                val = scalars[g[1]][0]
                block[k] = np.float64(val).view(np.int64) if self.scalar_kinds[g[1]] == "float" else int(val)
            elif g[0] == "outshape":
                name, depth = g[1]
                block[k] = tensors[name].modes()[depth].shape
            elif g[0] == "grow":
                cell = cells[(g[1], g[2])] = np.zeros(2, np.int64)
                block[k] = cell.ctypes.data
            elif g[0] == "out":
                out_cell = np.zeros(1, NP_DTYPE[self.plan.out_kind])
                block[k] = out_cell.ctypes.data
        return PackedCall(self, tensors, block, keep, cells, out_cell)

    def __call__(self, **kwargs):
        """Run the kernel: a Python scalar for a 0-d output, else a `ct.Tensor` of `out_fmt`.
        Raises TypeError / FormatError for arguments of other formats, kinds or shapes,
        InvalidProgramError when the program is invalid on this data (`PackedCall.check_status`).
        Each kernel's class runs `runtime.fastcall`'s generated function instead (the same
        arguments and results), which takes `_checked_call` for anything it cannot vouch for."""
        return self._fast(self, **kwargs)

    def _finite(self, kwargs, out):
        """`out` of a sum computed term by term, or the pointwise kernel's where it is not finite."""
        if _all_finite(out):
            return out
        return self._sibling("pointwise", kwargs, split_sums=False)(**kwargs)

    def _checked_call(self, kwargs):
        try:
            call = self.pack(**kwargs)
        except OtherFacts as e:
            return self._sibling(tuple(sorted(e.keys.items())), kwargs)(**kwargs)
        status = self.compiled.packed(call.address)
        if status:
            call.release()
            return self._failed(kwargs, status, call)
        out = call.finish(status)
        if self.split_sums and not _all_finite(out):
            return self._sibling("pointwise", kwargs, split_sums=False)(**kwargs)
        return out

    def _failed(self, kwargs, status, call=None):
        """A call whose kernel returned `status` != 0 (its buffers freed)."""
        if status == ir.STATUS_OUTPUT_ORDER and self.mergeable:
            # a loop outside the output's last index revisits it: the sibling appends every pass
            # unchecked and merges them after the call (`runtime.merge_output`)
            return self._sibling("merged", kwargs, merge_output=True)(**kwargs)
        (call or self.pack(**kwargs)).check_status(status)
        raise AssertionError("unreachable: check_status raises on a non-zero status")

    def _finish_cells(self, kwargs, cells_view, grows):
        """The output Tensor from the grown-buffer cells of a fast call (`fastcall`): `grows` lists
        (offset in `cells_view`, (depth, buffer name)); every buffer is adopted or freed."""
        cells = {key: cells_view[off:off + 2] for off, key in grows}
        try:
            tensors = {k: kwargs[k] for k in self.formats}
            return Tensor.frozen(self._rebuild(tensors, cells), self.es.out)
        finally:
            for cell in cells.values():
                free(int(cell[0]))
                cell[0] = cell[1] = 0

    def _rebuild(self, tensors, cells):
        return rebuild_output(self.out_fmt, self.plan, self.merge_output, tensors, cells_taker(cells))

    # ------------------------------------------------------------------ embedding (runtime.abi, runtime.embed)
    @property
    def abi(self):
        """The argument block's fields, entry points and status codes (`runtime.abi.Abi`)."""
        from .abi import abi_of
        self._optimised.wait()
        return abi_of(self)

    def llvm_module(self):
        """A new llvmlite ModuleRef holding this kernel's functions, to link into another module
        (`runtime.embed.llvm_module`)."""
        from .embed import llvm_module
        self._optimised.wait()
        return llvm_module(self)


def _all_finite(out) -> bool:
    """Is every value of a 0-d result or of a Dense output's leaf finite?"""
    if isinstance(out, Tensor):
        val = out.level.levels()[-1].val
        return val is None or bool(np.isfinite(val).all())
    return math.isfinite(out)
