"""Output formats of a kernel: the default one, the checks of a user's `out=`, and the output
rebuilt from the buffers a call grew."""
from __future__ import annotations

import numpy as np

from ..errors import FormatError, InvalidProgramError
from ..formats.dense import Dense
from ..formats.element import Element, Pattern
from ..formats.level import Level
from ..formats.sparse_byte_map import SparseByteMap
from ..formats.sparse_interval import SparseInterval
from ..formats.sparse_list import SparseList
from ..formats.sparse_point import SparsePoint
from ..formats.sparse_run_list import SparseRunList
from .buffers import adopt_array
from .merge_output import merge_level, store_closed
from .narrow_output import dense_shapes, to_int_interval, to_sparse_interval, to_sparse_point


NP_DTYPE = {"bool": np.bool_, "int": np.int64, "float": np.float64}


def default_output(plan) -> Level:
    """Dense for integer output modes, SparseRunList for real ones, over Element(identity of ⊕)."""
    leaf = Element(plan.fill, dtype=NP_DTYPE[plan.out_kind])
    lvl = leaf
    for i in reversed(plan.einsum.out_idxs):
        lvl = Dense(lvl) if plan.kinds[i] == "int" else SparseRunList(lvl)
    return lvl


def output_key(fmt: Level) -> tuple:
    """What an out= level decides of the code: its format key, and whether each closedness was
    given or left at the default (a default one may store its result in another, `SparseRunList`)."""
    return fmt.format_key(), tuple(type(getattr(lv, "closed", None)).__name__ for lv in fmt.levels())


# (value kind computed by the program, leaf kind of out=) pairs stored exactly besides equal kinds
_WIDER_LEAF = {("int", "float"), ("bool", "int")}


def check_output_format(fmt: Level, plan):
    """An out= format must give each output index a level of its kind (integer or real) and a leaf
    that holds the program's values exactly; raises InvalidProgramError naming the level."""
    es = plan.einsum
    for d, (lvl, i) in enumerate(zip(fmt.modes(), es.out_idxs)):
        kind = plan.kinds[i]
        if lvl.coord != kind:
            hint = " (a SparseList of integer ids needs shape= or real=False)" \
                if isinstance(lvl, SparseList) and kind == "int" else ""
            raise InvalidProgramError(f"out= level {d} ({type(lvl).__name__}) has {lvl.coord} coordinates but "
                                      f"{es.out}'s index {i!r} is {'an integer' if kind == 'int' else 'a real'} "
                                      f"index{hint}")
    lvls = fmt.levels()
    leaf = lvls[-1]
    if isinstance(leaf, Pattern) and len(lvls) > 1 and isinstance(lvls[-2], Dense):
        # a Dense level has no entries of its own to drop: the Pattern leaf would mark its parent's
        # entry for the whole row, making every id of the row true
        raise InvalidProgramError(f"out= {fmt.format_str()}: a Pattern leaf needs a sparse parent level "
                                  "(SparseList, SparseByteMap, SparseRunList); under Dense use Element(False)")
    if isinstance(leaf, Element) and leaf.kind != plan.out_kind and (plan.out_kind, leaf.kind) not in _WIDER_LEAF:
        raise InvalidProgramError(f"out= leaf {leaf.format_str()} holds {leaf.kind} values but {es.out} = ... computes "
                                  f"{plan.out_kind} values (reduction {plan.op!r}); use "
                                  f"Element({plan.fill!r})")
    if isinstance(leaf, Element) and leaf.fill != plan.fill:      # the identities: 0, False, True, ±inf
        # a kernel starts every output entry at the fill and ⊕-adds into it: another fill would
        # be ⊕-added to every stored value but not to the rest of the axis
        raise InvalidProgramError(f"out= leaf {leaf.format_str()} has fill {leaf.fill!r}, but an output's fill "
                                  f"must be the identity of its reduction {plan.op!r}; use Element({plan.fill!r})")


def check_output_shape(out, kernel, tensors):
    """An out= level given a shape must have the shape its index takes from the inputs of this
    call (a kernel computes it from them: the shape in out= is otherwise unused); raises
    FormatError naming the level.  `out` is the out= argument (Tensor, Level or None)."""
    fmt = getattr(out, "level", out)
    if not isinstance(fmt, Level):
        return
    es = kernel.es
    for d, lvl in enumerate(fmt.modes()):
        if lvl.coord == "int" and getattr(lvl, "shape", None) is not None and d < len(es.out_idxs):
            name, depth = kernel.plan.source[es.out_idxs[d]]
            n = tensors[name].modes()[depth].shape
            if n != lvl.shape:
                raise FormatError(f"out= level {d} ({type(lvl).__name__}) has shape {lvl.shape} but "
                                  f"{es.out}'s index {es.out_idxs[d]!r} has {n} coordinates (from {name})")


def cells_taker(cells):
    """`take` of `rebuild_output` over the [address, capacity] cells of a call ((depth, buffer name)
    -> cell): each buffer adopted (`buffers.adopt_array`)."""
    return lambda depth, attr, n, dtype: adopt_array(cells.get((depth, attr)), n, dtype)


def rebuild_output(fmt: Level, plan, merge: bool, tensors, take) -> Level:
    """The output's levels, from the buffers a call grew (`take(depth, buffer name, n, dtype)`: the
    first n elements of that buffer as a read-only array, `cells_taker` or `fastcall_out`'s bytes):
    Dense shapes from the inputs the plan took them from, sparse levels merged (`merge`: a
    revisited output, `merge_output.merge_level`) and run lists stored in the closedness `out=`
    asks for (`merge_output.store_closed`)."""
    es = plan.einsum

    def shape_of(depth):
        name, d = plan.source[es.out_idxs[depth]]
        return tensors[name].modes()[d].shape

    def build(lvl, depth, npos):
        cell = lambda attr, n, dtype: take(depth, attr, n, dtype)                  # noqa: E731
        if isinstance(lvl, Pattern):
            return Pattern()
        if isinstance(lvl, Element):
            dtype = np.float32 if getattr(lvl, "single", False) else NP_DTYPE[lvl.kind]
            return lvl.frozen(cell("val", npos, dtype))    # of the leaf's dtype
        if isinstance(lvl, Dense):
            n = shape_of(depth)
            return Dense(build(lvl.child, depth + 1, npos * n), n)
        if isinstance(lvl, SparseByteMap):
            return _byte_map(lvl, build, cell, shape_of(depth), depth, npos)
        ptr = cell("ptr", npos + 1, np.int64)
        nnz = int(ptr[-1])
        if isinstance(lvl, (SparseList, SparsePoint)) or isinstance(lvl, SparseInterval) and lvl.coord == "int":
            # a SparsePoint, an integer SparseInterval is written as a SparseList (`narrow_output`)
            idx = cell("idx", nnz, np.float64 if lvl.coord == "real" else np.int64)
            shape = shape_of(depth) if lvl.coord == "int" else None
            out = SparseList(build(lvl.child, depth + 1, nnz), ptr, idx, shape=shape, real=lvl.coord == "real")
            out = merge_level(out, plan.op) if merge else out
            if isinstance(lvl, SparsePoint):
                return to_sparse_point(SparsePoint(lvl.child, shape=shape), out, es.out,
                                       dense_shapes(fmt, depth, shape_of))
            if isinstance(lvl, SparseInterval):
                return to_int_interval(lvl, out, es.out, dense_shapes(fmt, depth, shape_of))
            return out
        if isinstance(lvl, (SparseRunList, SparseInterval)):   # a SparseInterval as a SparseRunList
            arrs = {a: cell(a, nnz, t) for a, t in (("left", np.float64), ("right", np.float64),
                                                                 ("left_eps", np.int8), ("right_eps", np.int8))}
            out = SparseRunList.frozen(build(lvl.child, depth + 1, nnz), ptr, arrs["left"], arrs["right"], None,
                                       arrs["left_eps"], arrs["right_eps"])
            out = merge_level(out, plan.op) if merge else out
            if isinstance(lvl, SparseInterval):
                return to_sparse_interval(lvl, out, es.out, dense_shapes(fmt, depth, shape_of))
            return store_closed(out, lvl.closed)
        raise InvalidProgramError(f"{type(lvl).__name__} cannot be an output level")
    out = build(fmt, 0, 1)
    for lvl in out.levels():        # outputs are immutable: arrays computed here (merged, sorted) too
        for v in vars(lvl).values():
            if isinstance(v, np.ndarray) and v.flags.writeable:
                v.flags.writeable = False
    return out


def _byte_map(lvl, build, cell, n, depth, npos) -> SparseByteMap:
    """Freeze of a SparseByteMap (Finch sorts its `srt` list): the slots p*n + i the kernel appended,
    in write order, sorted; fiber p's ids are those in [p*n, (p+1)*n)."""
    nnz = int(cell("count", 1, np.int64)[0])
    slots = np.sort(cell("srt", nnz, np.int64))
    ptr = np.searchsorted(slots, np.arange(npos + 1, dtype=np.int64) * n).astype(np.int64)
    idx = slots - np.repeat(np.arange(npos, dtype=np.int64) * n, np.diff(ptr))
    tbl = cell("tbl", npos * n, np.int8).view(np.bool_)
    return SparseByteMap(build(lvl.child, depth + 1, npos * n), n, ptr, idx, tbl)
