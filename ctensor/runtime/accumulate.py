"""`thaw`: accumulate into an existing tensor, `ct.einsum("C[i] += A[i] * B[i]", C=C, A=A, B=B)`.

Finch paper §3: `thaw` is the inverse of `freeze` — a frozen level becomes writable again and
further writes ⊕-combine with what it holds, until the next freeze.  Here a thawed level is the
first *pass* of the output: its stored entries; the kernel's writes of the einsum are the second
pass; and the freeze is the ⊕-merge of the passes, the same one that freezes a revisited output
(`runtime.merge_output`: entries at one coordinate ⊕-reduced, runs cut at every endpoint and
⊕-added per segment, in Limit order so closedness is exact).  So `C[i] += rhs` computes
`C_old[i] ⊕ rhs[i]` with ⊕ the einsum's reduction (`semiring=`; `+` by default: with
`semiring="min"`, `C[x] += ...` keeps the smaller value).  The einsum's own reduction over its
other indices happens inside the kernel as usual, C_old is ⊕-added once per output point.

Thawed formats (`thaw_level`): Dense levels over a last level that is Dense, SparseList (ids or
pinpoints) or SparseRunList, over an Element or Pattern leaf.  Refused with InvalidProgramError:
SparsePoint and SparseInterval (a ⊕ may leave two entries in a fiber, which they cannot hold),
UniformGrid, UnitCells, SparseByteMap and sparse levels above others.

The result has Out's levels (a run list homogeneous when every finite endpoint of the merged
runs has one closedness, else with Limit endpoints).  The call **returns a new tensor** (or Python scalar for `s[] += ...`); the user's C is not
modified: a `ct.Tensor` is immutable once built (kernels cache its format key and data facts, and
threads may be reading it), so an in-place update would break every reader.  C's fill must be ⊕'s
identity, as for any `out=` (InvalidProgramError otherwise); C's integer shapes must equal the
program's (FormatError).
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import FormatError, InvalidProgramError
from ..formats.dense import Dense
from ..formats.element import Element, Pattern
from ..formats.level import DEFAULT_CLOSED
from ..formats.sparse_list import SparseList
from ..formats.sparse_run_list import SparseRunList
from ..formats.tensor import Tensor
from .merge_output import merge_points, merge_runs, store_closed
from .reduce_np import reducer

# `Out[idx, ...] += rhs`: the output's name, its index list and the right-hand side
_ACCUMULATE = re.compile(r"^\s*([A-Za-z_]\w*)\s*\[([^\]]*)\]\s*\+=(.*)$", re.S)


def split_accumulate(text: str):
    """(output name, the einsum text with `=` instead of `+=`) for an accumulating einsum, else None."""
    m = _ACCUMULATE.match(text)
    if m is None:
        return None
    return m.group(1), f"{m.group(1)}[{m.group(2)}] ={m.group(3)}"


def einsum_accumulate(text, name, compile_fn, options, tensors):
    """Run `name[...] += rhs` (module docstring): the old value is `tensors[name]`, read by the
    right-hand side too when it names it.  Returns the new Tensor or scalar."""
    if name not in tensors:
        raise TypeError(f"{text.split('+=')[0].strip()} += ...: pass the tensor (or scalar) to accumulate into as "
                        f"{name}=...")
    if options.get("out") is not None:
        raise TypeError(f"{name}[...] += ... writes in {name}'s format: do not pass out= as well")
    old = tensors[name]
    rhs = text.split("=", 1)[1]
    args = dict(tensors) if re.search(rf"\b{re.escape(name)}\s*\[", rhs) else \
        {k: v for k, v in tensors.items() if k != name}
    if not isinstance(old, Tensor):
        if isinstance(old, (bool, int, float, np.bool_, np.integer, np.floating)):
            k = compile_fn(text, **options, **args)
            if k.es.out_idxs:
                raise TypeError(f"{name}: a tensor output needs a ct.Tensor to accumulate into, got {old!r}")
            new = k(**args)
            return np.asarray(reducer(k.plan.op)(np.asarray([old]).astype(type(new)), np.asarray([new])))[0].item()
        raise TypeError(f"{name}: expected the ct.Tensor to accumulate into, got {type(old).__name__}")
    fmt = writable_format(old.level, name)
    k = compile_fn(text, **{**options, "out": fmt}, **args)
    new = k(**args)
    return Tensor.frozen(thaw_level(old.level, new.level, k.plan.op, name), old.name)


def writable_format(lvl, name):
    """The out= format the kernel writes the new pass in: C's, with run lists heterogeneous (the
    merge decides the closedness at freeze); InvalidProgramError for a level `thaw_level` refuses."""
    modes = lvl.modes()
    for d, m in enumerate(modes):
        last = d == len(modes) - 1
        if not (isinstance(m, Dense) or last and isinstance(m, (SparseList, SparseRunList))):
            where = "above another level" if isinstance(m, (SparseList, SparseRunList)) else "in an output to thaw"
            raise InvalidProgramError(
                f"{name}[...] += ...: thaw is not implemented for {type(m).__name__} {where} (level {d} of "
                f"{lvl.format_str()}); it is for Dense levels over a last Dense, SparseList or SparseRunList "
                f"level (a SparsePoint or SparseInterval fiber could not hold the ⊕ of two entries)")
    if not isinstance(lvl.leaf, (Element, Pattern)):
        raise InvalidProgramError(f"{name}[...] += ...: thaw needs an Element or Pattern leaf, got {lvl.leaf.format_str()}")

    def copy(lv):
        if lv.is_leaf:
            return lv.empty()
        if isinstance(lv, Dense):
            return Dense(copy(lv.child), lv.shape)
        if isinstance(lv, SparseList):
            return SparseList(copy(lv.child), shape=lv.shape, real=lv.coord == "real")
        return SparseRunList(copy(lv.child), closed=None)
    return copy(lvl)


def thaw_level(old, new, op, name, npos=1):
    """The freeze of `old` thawed and `new` written into it: the ⊕ of the two, level by level
    (module docstring).  `npos`: the number of fibers at this level (equal in both)."""
    if isinstance(old, Pattern):
        return old
    if isinstance(old, Element):
        val = reducer(op)(old.val, new.val)
        return Element(old.fill, val=np.asarray(val, old.val.dtype), dtype=old.val.dtype)
    if isinstance(old, Dense):
        if old.shape != new.shape:
            raise FormatError(f"{name}: Dense level of shape {old.shape}, but the program's index has {new.shape} "
                              "coordinates")
        return Dense(thaw_level(old.child, new.child, op, name, npos * old.shape), old.shape)
    # the last level: old's entries first in every fiber, then new's, then the merge
    ptr, order = _interleave(old.ptr, new.ptr)
    leaf = old.child
    val = None if isinstance(leaf, Pattern) else np.concatenate([leaf.val, new.child.val.astype(leaf.val.dtype)])[order]
    rebuilt = (lambda v: leaf) if val is None else (lambda v: Element(leaf.fill, val=v, dtype=leaf.val.dtype))
    if isinstance(old, SparseList):
        if old.coord == "int" and old.shape != new.shape:
            raise FormatError(f"{name}: SparseList level of shape {old.shape}, but the program's index has "
                              f"{new.shape} coordinates")
        idx = np.concatenate([old.idx, new.idx.astype(old.idx.dtype)])[order]
        p, i, v = merge_points(ptr, idx, val, op)
        return SparseList(rebuilt(v), p, i, shape=old.shape, real=old.coord == "real")
    (ole, ore), (nle, nre) = old.eps_arrays(), new.eps_arrays()
    cat = lambda a, b, t: np.concatenate([a.astype(t), b.astype(t)])[order]     # noqa: E731
    p, lv, le, rv, re, v = merge_runs(ptr, cat(old.left, new.left, np.float64), cat(ole, nle, np.int8),
                                      cat(old.right, new.right, np.float64), cat(ore, nre, np.int8), val, op)
    # homogeneous when every finite endpoint has one closedness, else Limit endpoints
    return store_closed(SparseRunList(rebuilt(v), p, lv, rv, None, le, re), DEFAULT_CLOSED)


def _interleave(optr, nptr):
    """(ptr, order): the entries of two levels with one fiber count, fiber by fiber, each fiber's
    old entries before its new ones; `order` indexes the concatenation [old entries, new entries]."""
    npos = len(optr) - 1
    ofib = np.repeat(np.arange(npos, dtype=np.int64), np.diff(optr))
    nfib = np.repeat(np.arange(npos, dtype=np.int64), np.diff(nptr))
    order = np.argsort(np.concatenate([ofib, nfib]), kind="stable")
    ptr = (np.asarray(optr, np.int64) + np.asarray(nptr, np.int64))
    return ptr, order
