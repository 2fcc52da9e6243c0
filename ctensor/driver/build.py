"""Lowering one planned einsum into an IR function (DESIGN.md §1, the stage between the front end and
codegen): every tensor virtualised as fibers, the program written in notation, loop nests chosen
(fission of sums, tiles, one nest per term of a long pointwise ⊕), then lowered through looplets.

`lower_program` also records the kernel's argument block: one *getter* per IR parameter, saying
where a call takes its value (`runtime.kernel.Kernel`, `runtime.abi`):

* ``("in", tensor, depth, attr)``: attribute `attr` of level `depth` of an input tensor (a buffer's
  address, or a length);
* ``("scalar", name)``: a scalar argument (floats bit-cast into the int64 slot);
* ``("out",)``: the address of the one-element cell a 0-d output is stored into;
* ``("grow", depth, attr)``: the address of an [address, capacity] int64 cell of an output buffer the
  kernel grows with libc realloc;
* ``("outshape", (tensor, depth))``: the shape of a Dense output level, from that input's mode.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidProgramError
from ..formats.dense import Dense
from ..formats.sparse_byte_map import SparseByteMap
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, I8, I64, PtrType
from ..lang.program import accesses, scalar_names
from ..looplets.nodes import Hollow
from ..lower.context import Context
from ..lower.guard_fission import fission_guards
from ..lower.lowerer import lower, read_scalars
from ..lang.nesting import inner_indices
from ..lang.semiring import Semiring, identity, idempotent
from ..lower.ops import REDUCTIONS
from ..lower.nest import (expanded_terms, loop_nest, mark_all_unions, mark_unions, nested_nest, reduction_terms,
                          union_read)
from ..lower.notation import Access, ScalarOut, Val, walk_accesses
from ..lower.program_notation import counting_additive, notation, root_cover
from ..lower.tile import plan_tiles, tile_extents
from ..runtime.merge_output import unmergeable

_IR = {"bool": I8, "int": I64, "float": F64}
# a pointwise ⊕ of this many terms or more (not all read by the union protocol, which is linear
# in one pass) compiles one loop nest per term (`lower.nest`): one pass over k such terms has
# ~2**k code paths (unions of runs, k = 3: 0.2-0.6 s to compile, k = 4: 0.8-2.5 s, k = 5: 2-8 s,
# k = 7: minutes), while the merge of the passes makes a call several times slower (100k runs per
# term: 12 ms one pass, 84 ms split, at k = 4)
POINTWISE_SPLIT = 4


@dataclass
class Lowered:
    """An einsum lowered to IR: the function, its getters (module docstring), and the decisions the
    call path depends on."""
    fn: ir.Function
    getters: list
    split_sums: bool         # a float sum computed term by term (recompute pointwise if not finite)
    merge_output: bool       # passes appended unchecked and merged by the runtime
    guard_stats: dict | None


def lower_program(es, plan, tensors, scalars, out_fmt, *, prove_guards, split_sums, merge_output,
                  cut_at=None) -> Lowered:
    """Lower the planned einsum `es` over `tensors` (name -> Tensor) and `scalars` (name -> (value,
    kind)) into an IR function writing `out_fmt` (None: a 0-d output cell).  `cut_at`: the size
    (statements × loops) past which the guard proofs stop (`driver.tiering`; None: never)."""
    ctx = Context(prove_guards=prove_guards, cut_at=cut_at)
    ctx.unordered_output = merge_output
    ctx.fold_overlaps = (isinstance(plan.op, Semiring) or plan.op in REDUCTIONS) and idempotent(plan.op)
    ctx.index_kinds = dict(plan.kinds)
    getters = []
    roots, vlevels = {}, {}
    for name in dict.fromkeys(a.tensor for a in accesses(es.rhs)):
        t = tensors[name]
        before = len(ctx.params)
        roots[name] = v = t.level.virtualize(ctx, name, "read")
        depth, lv = 0, v
        while not getattr(lv, "is_leaf", True):
            if not getattr(lv, "tile", False):      # keyed by mode, as plan.source is
                vlevels[(name, depth)] = lv
                depth += 1
            lv = lv.child
        depth_of = {id(l): d for d, l in enumerate(t.levels())}
        getters += [("in", name, depth_of[id(lvl)], attr) for _, lvl, attr in ctx.param_roles[before:]]
    svals = {}
    for name in dict.fromkeys(scalar_names(plan.rhs)):   # make_plan checked they were passed
        kind = scalars[name][1]
        p = ctx.param(name, F64 if kind == "float" else I64, ("scalar", name))
        getters.append(("scalar", name))
        e = ir.Read(p)
        svals[name] = Val(b.ne(e, b.i64(0)) if kind == "bool" else e, kind)
    # output
    leaf_ir = _IR[plan.out_kind] if plan.out_kind != "bool" else ir.I1
    if out_fmt is None:
        cell = ctx.param(es.out + "_out", PtrType(_IR[plan.out_kind]), ("out",))
        getters.append(("out",))
        acc = ctx.mut(leaf_ir, b.const(plan.fill, leaf_ir), "acc")
        lhs = Access(ScalarOut(acc, plan.out_kind), (), es.out, "update")
    else:
        before = len(ctx.params)
        vout = out_fmt.virtualize(ctx, es.out, "write")
        depth_of = {id(l): d for d, l in enumerate(out_fmt.levels())}
        for kind, lvl, attr in ctx.param_roles[before:]:
            d = depth_of[id(lvl)]
            getters.append(("outshape", plan.source[es.out_idxs[d]]) if kind == "shape" else ("grow", d, attr))
        vout.declare(ctx, b.i64(1))
        lhs = Access(Hollow(vout, b.i64(0), None), es.out_idxs, es.out, "update")
    tiling = plan_tiles(es, plan, tensors)
    if tiling is not None:
        ctx.grid_tensors = frozenset(tiling.depth)
    rhs = mark_unions(notation(plan.rhs, roots, svals, plan.kinds, tiling, root_cover(plan, vlevels, tiling)))
    extents = {i: vlevels[plan.source[i]].extent() for i in plan.order}
    order = plan.order
    if tiling is not None:
        extents, order = tile_extents(tiling, extents), tiling.order
    ctx.loop_order = tuple(order)
    random_access = out_fmt is None or all(isinstance(lv, (Dense, SparseByteMap)) for lv in out_fmt.levels()[:-1])
    fission = random_access and plan.op == "+" and plan.out_kind == "int" \
        and all(m == "counting" for m in plan.measures.values()) and counting_additive(plan, tensors)
    # a float sum under Lebesgue (or counting, pinned as for integers) measures on real indices
    # splits too (code linear in the terms, not exponential): exact while every term's integral
    # is finite; a non-finite result is recomputed pointwise (`Kernel.__call__`), where terms may
    # cancel on an unbounded run (1 + -1 over (-inf, 0) is 0, not NaN)
    real = {i: m for i, m in plan.measures.items() if plan.kinds[i] == "real"}
    sums = expanded_terms(rhs)
    split_sums = split_sums and random_access and plan.out_kind == "float" and plan.op == "+" \
        and bool(real) and set(real.values()) <= {"lebesgue", "counting"} \
        and all(m == "counting" for i, m in plan.measures.items() if i not in real) \
        and ("counting" not in real.values() or counting_additive(plan, tensors)) \
        and len(sums) > 1
    first_reduced = next((k for k, i in enumerate(order) if i not in es.out_idxs), len(order))
    terms, split_at = None, None
    pointwise = not plan.measures and tiling is None and out_fmt is not None
    if (fission or split_sums) and first_reduced < len(order):
        terms, split_at = sums, first_reduced
    elif pointwise and _split_pointwise(chain := reduction_terms(rhs, plan.op), tensors):
        # a pointwise ⊕ of many terms: one nest per term (`lower.nest`); a sparse last output
        # level is then revisited, once per term, and merged by the runtime
        terms = chain
        if random_access:
            split_at = 0
        elif order[-1] == es.out_idxs[-1] and unmergeable(out_fmt, plan) is None:
            split_at = len(order) - 1
            merge_output = ctx.unordered_output = True
    if terms is None:
        rhs = mark_all_unions(rhs, tensors)      # one nest over a long mixed expression: keep its code linear
    inner = inner_indices(plan.op, plan.measures)
    if inner:            # ∑_j ∨_x (`lang.nesting`): one nest, a boolean temporary per outer point
        if tiling is not None or terms is not None:
            raise InvalidProgramError(f"the nested reduction (∨ over {sorted(inner)} inside {plan.op!r}) of "
                                      f"{es.text!r} over a UniformGrid is not lowered")
        any_ = Access(ScalarOut(ctx.mut(ir.I1, b.FALSE, "any"), "bool"), (), "∨", "update")
        nest = nested_nest(order, extents, lhs, plan.op, rhs, plan.measures, inner, any_, identity(plan.op) == 0)
    else:
        nest = loop_nest(order, extents, lhs, plan.op, rhs, plan.measures, terms, split_at)
    lower(ctx, read_scalars(ctx, nest))
    if out_fmt is None:
        val = ir.Read(acc) if plan.out_kind != "bool" else b.cast(I8, ir.Read(acc))
        ctx.emit(ir.Store(ir.Read(cell), b.i64(0), val))
    else:
        vout.freeze(ctx, b.i64(1))
    # a loop computing a costly guard before an inner loop: the guards of a strip first, vectorised
    fn = fission_guards(ir.Function("ct_" + es.out, ctx.params, ctx.statements() + ctx.epilogue))
    guard_stats = None if ctx.prover is None else {**ctx.prover.stats, "log": ctx.prover.log}
    return Lowered(fn, getters, split_sums, merge_output, guard_stats)


def _split_pointwise(terms, tensors) -> bool:
    """Split a pointwise ⊕ into one nest per term: `POINTWISE_SPLIT` or more terms read tensors,
    and not all of them by the union protocol (`lower.nest.union_read`: one pass is linear then)."""
    stateful = [t for t in terms if next(walk_accesses(t), None) is not None]
    return len(stateful) >= POINTWISE_SPLIT and not all(union_read(t, tensors) for t in stateful)
