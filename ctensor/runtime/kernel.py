"""`Kernel`: a compiled continuous einsum, callable on tensors of the formats it was compiled for.

Compilation (DESIGN.md §1): parse → plan (dimensions, loop order, measures) → notation with the
tensors as virtual fibers → recursive looplet lowering into IR → llvmlite O3 → native code.  A call
packs every buffer address, shape and scalar into one int64 argument block, runs the packed entry
point, and rebuilds the output from the buffers the kernel grew with realloc.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..analysis.guards import enabled_by_default
from ..codegen import compile_function
from ..errors import FormatError, InvalidProgramError
from ..formats.dense import Dense
from ..formats.level import Level, strip_facts
from ..formats.sparse_byte_map import SparseByteMap
from ..formats.tensor import Tensor
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.printer import format_function
from ..ir.types import F64, I8, I64, PtrType
from ..lang.measure import Measure
from ..lang.parser import parse
from ..lang.affine import form
from ..lang.program import accesses, make_plan, scalar_names
from ..looplets.nodes import Hollow
from ..lower.context import Context
from ..lower.lowerer import lower, read_scalars
from ..lower.nest import expanded_terms, loop_nest, mark_all_unions, mark_unions, reduction_terms, union_read
from ..lower.tile import plan_tiles, tile_extents
from ..lower.notation import Access, ScalarOut, Val, walk_accesses
from ..lower.program_notation import counting_additive, notation, root_cover
from .recursion import deep
from .merge_output import unmergeable
from .output_format import NP_DTYPE, check_output_format, default_output, rebuild_output
from .packed import PackedCall

_IR = {"bool": I8, "int": I64, "float": F64}
# a pointwise ⊕ of this many terms or more (not all read by the union protocol, which is linear
# in one pass) compiles one loop nest per term (`lower.nest`): one pass over k such terms has
# ~2**k code paths (unions of runs, k = 3: 0.2-0.6 s to compile, k = 4: 0.8-2.5 s, k = 5: 2-8 s,
# k = 7: minutes), while the merge of the passes makes a call several times slower (100k runs per
# term: 12 ms one pass, 84 ms split, at k = 4)
POINTWISE_SPLIT = 4


def split_args(kwargs):
    """(tensors, scalars) of the keyword arguments; user measures (`ct.Measure`) are skipped
    (`user_measures`)."""
    tensors, scalars = {}, {}
    for k, v in kwargs.items():
        if isinstance(v, Measure):
            continue
        if isinstance(v, Tensor):
            tensors[k] = v
        elif isinstance(v, (bool, np.bool_)):
            scalars[k] = (bool(v), "bool")
        elif isinstance(v, (int, np.integer)):
            scalars[k] = (int(v), "int")
        elif isinstance(v, (float, np.floating)):
            scalars[k] = (float(v), "float")
        else:
            raise TypeError(f"argument {k!r} must be a ct.Tensor, a number or a ct.Measure, got {type(v).__name__}")
    return tensors, scalars


def user_measures(kwargs) -> dict:
    """The `ct.Measure` keyword arguments: name -> Measure (named in d(...))."""
    return {k: v for k, v in kwargs.items() if isinstance(v, Measure)}


def _read_args(es, plan, tensors, scalars):
    """The tensors and scalars the program reads (others are ignored, at compile time and in calls:
    the kernel neither records nor requires them).  A scalar named like a loop index would be
    ignored too (the index wins), which is refused: InvalidProgramError."""
    clash = sorted(set(scalars) & set(plan.kinds))
    if clash:
        raise InvalidProgramError(f"{clash[0]!r} is a loop index of {es.text!r}; it cannot also be passed "
                                  f"as a scalar ({clash[0]}={scalars[clash[0]][0]!r})")
    read = {a.tensor for a in accesses(es.rhs)} | set(scalar_names(plan.rhs))
    return ({k: v for k, v in tensors.items() if k in read}, {k: v for k, v in scalars.items() if k in read})


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
    with InvalidProgramError.  A pointwise ⊕ of `POINTWISE_SPLIT` or more terms into such an
    output that the union protocol cannot read in one pass (`C[x] = A[x]*B[x] + D[x]*E[x] + …`,
    `lower.nest.union_read`) is compiled that way from the start, one pass per term; code
    calling its `address` directly gets the unmerged passes.

    Attributes: `ir` (printed ctensor IR), `llvm_ir` (optimised LLVM IR), `address` (of the native
    function taking one pointer to an int64 argument block), `compile_seconds`, `plan`,
    `guard_stats` (what the z3 guard prover did, `ctensor.analysis.guards`; None when off).
    """

    @deep
    def __init__(self, text, kwargs, semiring=None, order=None, out=None, assume_valid=False,
                 prove_guards=None, split_sums=True, merge_output=False):
        t0 = time.perf_counter()
        self._split_ok = split_sums
        self.merge_output = merge_output
        self.prove_guards = enabled_by_default() if prove_guards is None else bool(prove_guards)
        tensors, scalars = split_args(kwargs)
        self._measures = user_measures(kwargs)     # kept for sibling kernels, whose calls omit them
        es = parse(text)
        self.text, self.es = text, es
        self.plan = plan = make_plan(es, tensors, scalars, semiring, order, assume_valid=assume_valid,
                                     measures=self._measures)
        tensors, scalars = _read_args(es, plan, tensors, scalars)
        self.formats = {k: t.level.format_key() for k, t in tensors.items()}
        # for a sibling kernel: tensors of these formats whose data facts differ (`_sibling`)
        self._options = dict(semiring=semiring, order=order, out=out, assume_valid=assume_valid,
                             prove_guards=prove_guards, merge_output=merge_output)
        self._siblings = {}
        self.format_strs = {k: t.level.format_str() for k, t in tensors.items()}
        self.scalar_kinds = {k: s[1] for k, s in scalars.items()}
        if out is not None and not isinstance(out, (Tensor, Level)):
            raise TypeError(f"out= must be a ct.Tensor or a level format such as ct.Dense(ct.Element(0.0)), "
                            f"got {type(out).__name__}")
        out_fmt = out.level.empty() if isinstance(out, Tensor) else (out.empty() if isinstance(out, Level) else None)
        if es.out_idxs and out_fmt is None:
            out_fmt = default_output(plan)
        if out_fmt is not None and out_fmt.ndim != len(es.out_idxs):
            raise InvalidProgramError(f"out= format has {out_fmt.ndim} modes but {es.out} has {len(es.out_idxs)}")
        if out is not None and out_fmt is not None:
            check_output_format(out_fmt, plan)
        self.out_fmt = out_fmt
        self._build(tensors, scalars)
        self.scalar_slot = {g[1]: k for k, g in enumerate(self.getters) if g[0] == "scalar"}
        t1 = time.perf_counter()
        self.compiled = compile_function(self.fn)
        self.compile_seconds = {"lower": t1 - t0, **self.compiled.compile_seconds,
                                "total": time.perf_counter() - t0}

    # ------------------------------------------------------------------ compile
    def _build(self, tensors, scalars):
        plan, es = self.plan, self.es
        ctx = Context(prove_guards=self.prove_guards)
        ctx.unordered_output = self.merge_output
        self.getters = []
        roots, vlevels = {}, {}
        used = [a.tensor for a in accesses(es.rhs)]
        for name in dict.fromkeys(used):
            t = tensors[name]
            before = len(ctx.params)
            roots[name] = v = t.level.virtualize(ctx, name, "read")
            depth, lv = 0, v
            while not getattr(lv, "is_leaf", True):
                if not getattr(lv, "tile", False):      # keyed by mode, as plan.source is
                    vlevels[(name, depth)] = lv
                    depth += 1
                lv = lv.child
            self._input_getters(ctx, before, name, t)
        svals = {}
        for name in dict.fromkeys(scalar_names(plan.rhs)):   # make_plan checked they were passed
            kind = scalars[name][1]
            p = ctx.param(name, F64 if kind == "float" else I64, ("scalar", name))
            self.getters.append(("scalar", name))
            e = ir.Read(p)
            svals[name] = Val(b.ne(e, b.i64(0)) if kind == "bool" else e, kind)
        # output
        if self.out_fmt is None:
            cell = ctx.param(es.out + "_out", PtrType(_IR[plan.out_kind]), ("out",))
            self.getters.append(("out",))
            acc = ctx.mut(_IR[plan.out_kind] if plan.out_kind != "bool" else ir.I1,
                          b.const(plan.fill, _IR[plan.out_kind] if plan.out_kind != "bool" else ir.I1), "acc")
            lhs = Access(ScalarOut(acc, plan.out_kind), (), es.out, "update")
        else:
            before = len(ctx.params)
            vout = self.out_fmt.virtualize(ctx, es.out, "write")
            self._output_getters(ctx, before)
            vout.declare(ctx, b.i64(1))
            lhs = Access(Hollow(vout, b.i64(0), None), es.out_idxs, es.out, "update")
        tiling = plan_tiles(es, plan, tensors)
        rhs = mark_unions(notation(plan.rhs, roots, svals, plan.kinds, tiling, root_cover(plan, vlevels, tiling)))
        extents = {i: vlevels[plan.source[i]].extent() for i in plan.order}
        order = plan.order
        if tiling is not None:
            extents, order = tile_extents(tiling, extents), tiling.order
        random_access = self.out_fmt is None or all(isinstance(lv, (Dense, SparseByteMap))
                                                     for lv in self.out_fmt.levels()[:-1])
        fission = random_access and plan.out_kind == "int" and all(m == "counting" for m in plan.measures.values()) \
            and counting_additive(plan, tensors)
        # a float sum under Lebesgue (or counting, pinned as for integers) measures on real indices
        # splits too (code linear in the terms, not exponential): exact while every term's integral
        # is finite; a non-finite result is recomputed pointwise (`__call__`), where terms may
        # cancel on an unbounded run (1 + -1 over (-inf, 0) is 0, not NaN)
        real = {i: m for i, m in plan.measures.items() if plan.kinds[i] == "real"}
        sums = expanded_terms(rhs)
        self.split_sums = self._split_ok and random_access and plan.out_kind == "float" and plan.op == "+" \
            and bool(real) and set(real.values()) <= {"lebesgue", "counting"} \
            and all(m == "counting" for i, m in plan.measures.items() if i not in real) \
            and ("counting" not in real.values() or counting_additive(plan, tensors)) \
            and len(sums) > 1
        first_reduced = next((k for k, i in enumerate(order) if i not in es.out_idxs), len(order))
        terms, split_at = None, None
        pointwise = not plan.measures and tiling is None and self.out_fmt is not None
        if (fission or self.split_sums) and first_reduced < len(order):
            terms, split_at = sums, first_reduced
        elif pointwise and _split_pointwise(chain := reduction_terms(rhs, plan.op), tensors):
            # a pointwise ⊕ of many terms: one nest per term (`lower.nest`); a sparse last output
            # level is then revisited, once per term, and merged by the runtime
            terms = chain
            if random_access:
                split_at = 0
            elif order[-1] == es.out_idxs[-1] and unmergeable(self.out_fmt, plan) is None:
                split_at = len(order) - 1
                self.merge_output = ctx.unordered_output = True
        if terms is None:
            rhs = mark_all_unions(rhs, tensors)      # one nest over a long mixed expression: keep its code linear
        lower(ctx, read_scalars(ctx, loop_nest(order, extents, lhs, plan.op, rhs, plan.measures, terms, split_at)))
        if self.out_fmt is None:
            val = ir.Read(acc) if plan.out_kind != "bool" else b.cast(I8, ir.Read(acc))
            ctx.emit(ir.Store(ir.Read(cell), b.i64(0), val))
        else:
            vout.freeze(ctx, b.i64(1))
        body = ctx.statements() + ctx.epilogue
        self.fn = ir.Function("ct_" + es.out, ctx.params, body)
        self.guard_stats = None if ctx.prover is None else {**ctx.prover.stats, "log": ctx.prover.log}
        self.param_roles = ctx.param_roles

    def _input_getters(self, ctx, before, name, t):
        depth_of = {id(l): d for d, l in enumerate(t.levels())}
        for role in ctx.param_roles[before:]:
            kind, lvl, attr = role
            self.getters.append(("in", name, depth_of[id(lvl)], attr))

    def _output_getters(self, ctx, before):
        lvls = self.out_fmt.levels()
        depth_of = {id(l): d for d, l in enumerate(lvls)}
        for role in ctx.param_roles[before:]:
            kind, lvl, attr = role
            d = depth_of[id(lvl)]
            if kind == "shape":
                self.getters.append(("outshape", self.plan.source[self.es.out_idxs[d]]))
            else:
                self.getters.append(("grow", d, attr))

    # ------------------------------------------------------------------ call
    @property
    def ir(self) -> str:
        return format_function(self.fn)

    @property
    def llvm_ir(self) -> str:
        return self.compiled.llvm_ir

    @property
    def address(self) -> int:
        return self.compiled.packed_address

    @property
    def mergeable(self) -> bool:
        """Can a revisited sparse output of this kernel be merged (`runtime.merge_output`)?"""
        return not self.merge_output and unmergeable(self.out_fmt, self.plan) is None

    def __reduce__(self):
        raise TypeError("a Kernel is machine code in this process's JIT engine and cannot be pickled; "
                        "pickle its tensors and call ct.compile again (its LLVM object is cached on disk)")

    def accepts(self, tensors) -> bool:
        """Were these tensors' formats and data facts the ones compiled for (so a call runs this
        kernel, not a sibling, and does not raise TypeError)?"""
        return all(k in tensors and tensors[k].level.format_key() == key for k, key in self.formats.items())

    def _sibling(self, kwargs, keys):
        """The kernel for tensors of this kernel's formats whose data facts (`keys`, their format
        keys) differ from the ones compiled for: compiled at first use, kept per combination."""
        sig = tuple(sorted(keys.items()))
        k = self._siblings.get(sig)
        if k is None:
            k = self._siblings[sig] = self._variant(kwargs)
        return k

    def _variant(self, kwargs, **options) -> "Kernel":
        """The same program compiled again for these arguments (with this kernel's user measures,
        which calls omit) and options."""
        return Kernel(self.text, {**self._measures, **kwargs}, **{**self._options, **options})

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
        shapes = {}
        for acc in accesses(self.plan.rhs):
            lvls = tensors[acc.tensor].modes()
            for d, (i, dim) in enumerate(zip(acc.idxs, acc.dims)):
                if (acc.permissive and acc.permissive[d]) or form(dim) != "plain":
                    continue        # an index read through an offset or ~ may cover other coordinates
                if self.plan.kinds[i] == "int":
                    n = lvls[d].shape
                    if shapes.setdefault(i, (n, acc.tensor))[0] != n:
                        raise FormatError(f"index {i!r}: {acc.tensor} has {n} coordinates but "
                                          f"{shapes[i][1]} has {shapes[i][0]}")

    @property
    def ctypes_function(self):
        """The packed entry point as a ctypes function `int32 (void *argument_block)`; numba's
        @njit code can call it directly (it becomes an external function pointer)."""
        return self.compiled.packed

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
        try:
            call = self.pack(**kwargs)
        except OtherFacts as e:
            return self._sibling(kwargs, e.keys)(**kwargs)
        status = self.compiled.packed(call.address)
        if status == ir.STATUS_OUTPUT_ORDER and self.mergeable:
            # a loop outside the output's last index revisits it: the sibling appends every pass
            # unchecked and merges them after the call (`runtime.merge_output`)
            call.release()
            k = self._siblings.get("merged")
            if k is None:
                k = self._siblings["merged"] = self._variant(kwargs, merge_output=True)
            return k(**kwargs)
        out = call.finish(status)
        if self.split_sums and not _all_finite(out):
            k = self._siblings.get("pointwise")
            if k is None:
                k = self._siblings["pointwise"] = self._variant(kwargs, split_sums=False)
            return k(**kwargs)
        return out

    def _rebuild(self, tensors, cells):
        return rebuild_output(self.out_fmt, self.plan, self.merge_output, tensors, cells)

    # ------------------------------------------------------------------ embedding (runtime.abi, runtime.embed)
    @property
    def abi(self):
        """The argument block's fields, entry points and status codes (`runtime.abi.Abi`)."""
        from .abi import abi_of
        return abi_of(self)

    def llvm_module(self):
        """A new llvmlite ModuleRef holding this kernel's functions, to link into another module
        (`runtime.embed.llvm_module`)."""
        from .embed import llvm_module
        return llvm_module(self)


def _split_pointwise(terms, tensors) -> bool:
    """Split a pointwise ⊕ into one nest per term: `POINTWISE_SPLIT` or more terms read tensors,
    and not all of them by the union protocol (`lower.nest.union_read`: one pass is linear then)."""
    stateful = [t for t in terms if next(walk_accesses(t), None) is not None]
    return len(stateful) >= POINTWISE_SPLIT and not all(union_read(t, tensors) for t in stateful)


def _all_finite(out) -> bool:
    """Is every value of a 0-d result or of a Dense output's leaf finite?"""
    if isinstance(out, Tensor):
        val = out.level.levels()[-1].val
        return val is None or bool(np.isfinite(val).all())
    return math.isfinite(out)
