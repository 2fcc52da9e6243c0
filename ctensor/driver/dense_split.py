"""Dense split: the trailing dense contraction of a sum of products goes to BLAS.

A program such as

    Out[i, m] = Q[x, i] * P[x + r, j] * F[j, c] * K[r + p, k] * max(0, 1 - |p| / s) * W[k, c, m]
                * d(x, r, j, c, p, k; counting, ...)

is, by distributivity of + over *, `Out[i, m] = sum_{k, c} A[i, k, c] * W[k, c, m]` with

    A[i, k, c] = Q[x, i] * P[x + r, j] * F[j, c] * K[r + p, k] * max(0, 1 - |p| / s) * d(x, r, j, p; ...)

The scalar loop nest would do the (k, c, m) product once per stored (i, j, p) combination, C_in *
C_out multiply-adds per neighbour; the split does it once per row of A, as one matrix product
(numpy's BLAS), and the compiled kernel only builds A (continuous paper §7.4, Fig. 27: PyTorch won
the wide layers through BLAS).

`plan_split` finds the split; it applies when all of these hold (otherwise the program compiles as
written):
  * the reduction is + (the default semiring), no `out=` format is asked for;
  * the right side is a product with one factor `W[...]`: a tensor stored Dense at every level over
    a float Element, read at plain, distinct indices, and read nowhere else;
  * each index of W is either an output index read by no other factor (the kept indices, m), or an
    index summed under the counting measure that some other factor reads (the contracted ones, k, c);
    at least one of each;
  * the other factors read each contracted index as a plain dimension of a Dense level (`_dense_in`:
    A is then no larger than the loop nest's work);
  * the program without W has an all-Dense output (checked once it is compiled, `all_dense_output`).
A loop order given by the caller applies to the program without W, less the kept indices.
The sum over the contracted indices then runs in `numpy.tensordot`; the output is the Dense tensor
the unsplit program returns, up to float rounding (BLAS adds in another order).  A W holding NaN or
±inf is not split: in the matrix product it would reach rows where A is 0 (0 * inf is NaN), which
the loop nest skips where the sparse factors are absent, so such a call runs the program as written
(compiled on first need, `SplitKernel.unsplit`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError
from ..formats.dense import Dense
from ..formats.element import Element
from ..formats.tensor import Tensor
from .product_ast import is_measure, operand, parse_product

__all__ = ["Split", "SplitKernel", "plan_split"]

SUM = {None, "+", "sum", "plus", "(+,*)"}


@dataclass(frozen=True)
class Split:
    text: str              # the einsum without W: A[rest of the output, contracted] = ...
    dense: str             # W's name
    dense_idxs: tuple      # W's indices, in its storage order
    out_idxs: tuple        # the original output's indices
    inner_idxs: tuple      # A's indices: the output's without the kept ones, then the contracted ones
    contracted: tuple


def _is_dense(t) -> bool:
    lvl = t.level
    while isinstance(lvl, Dense):
        lvl = lvl.child
    return isinstance(lvl, Element) and t.ndim >= 1 and np.asarray(lvl.val).dtype.kind == "f"


def _plain_names(sub: ast.Subscript):
    elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    return tuple(e.id for e in elts) if all(isinstance(e, ast.Name) for e in elts) else None


def _dense_in(idxs, factors, tensors) -> bool:
    """Is each index read only at a Dense level, as a plain dimension, by the factors?  Then the loop
    nest visits every entry of A anyway and A is no larger than the work (a contracted index held
    by a sparse level, the point ids of a neighbour search, would make A[i, j] dense over all j)."""
    for f in factors:
        for sub in ast.walk(f):
            if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)):
                continue
            elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            t = tensors.get(sub.value.id)
            for pos, e in enumerate(elts):
                names = {n.id for n in ast.walk(e) if isinstance(n, ast.Name)} & set(idxs)
                if not names:
                    continue
                if not isinstance(e, ast.Name) or not isinstance(t, Tensor) or pos >= t.ndim \
                        or not isinstance(t.modes()[pos], Dense):
                    return False
    return True


def plan_split(text, tensors: dict, semiring=None, out=None) -> Split | None:
    """The dense split of `text` over `tensors` (name -> Tensor), or None (module docstring)."""
    if out is not None or semiring not in SUM or not isinstance(text, str):
        return None
    if not any(isinstance(t, Tensor) and _is_dense(t) for t in tensors.values()):
        return None             # no candidate W: decided before parsing
    parsed = parse_product(text)
    if parsed is None:
        return None
    es, factors = parsed
    rest = [f for f in factors if not is_measure(f)]
    for w in rest:
        if not (isinstance(w, ast.Subscript) and isinstance(w.value, ast.Name)):
            continue
        name = w.value.id
        t = tensors.get(name)
        idxs = _plain_names(w)
        if not isinstance(t, Tensor) or idxs is None or len(set(idxs)) != len(idxs) or not _is_dense(t):
            continue
        others = [f for f in rest if f is not w]
        other_names = {n.id for f in others for n in ast.walk(f) if isinstance(n, ast.Name)}
        kept = tuple(i for i in idxs if i in es.out_idxs and i not in other_names)
        contracted = tuple(i for i in idxs if es.measures.get(i) == "counting" and i in other_names)
        if not others or name in other_names or not kept or not contracted \
                or len(kept) + len(contracted) != len(idxs) or not _dense_in(contracted, others, tensors):
            continue
        inner = tuple(i for i in es.out_idxs if i not in kept) + contracted
        measures = {i: m for i, m in es.measures.items() if i not in contracted}
        body = " * ".join(operand(f) for f in others)
        if measures:
            body += f" * d({', '.join(measures)}; {', '.join(measures.values())})"
        return Split(f"{es.out}__dense[{', '.join(inner)}] = {body}", name, idxs, es.out_idxs, inner, contracted)
    return None


def dense_array(t: Tensor, name: str) -> np.ndarray:
    """The values of an all-Dense tensor as a C-ordered array (a view of its value buffer)."""
    shape = tuple(int(m.shape) for m in t.modes())
    lvl = t.level
    while isinstance(lvl, Dense):
        lvl = lvl.child
    val = np.asarray(lvl.val)
    n = int(np.prod(shape))
    if val.shape[0] < n:
        raise FormatError(f"{name}: {val.shape[0]} values for shape {shape}")
    return val[:n].reshape(shape)


class SplitKernel:
    """A compiled dense split: `inner` (the Kernel of the program without W) and a BLAS product.
    Called like a Kernel; `ir`, `llvm_ir`, `spec` and the rest are the inner kernel's."""

    def __init__(self, inner, split: Split, unsplit=None):
        # unsplit(): the Kernel of the program as written, for a W that is not all finite
        self.inner, self.split, self._unsplit, self._whole = inner, split, unsplit, None
        self.inner_key = None             # the inner kernel's store key (`driver.pipeline.dense_split`)

    def unsplit(self, kwargs):
        """The Kernel of the program as written, compiled on first use for the tensors `kwargs`
        (they have the formats this kernel was compiled for: `accepts`); two threads racing here
        compile it twice, harmlessly (the on-disk kernel cache makes the second a load)."""
        if self._whole is None:
            self._whole = self._unsplit(kwargs)
        return self._whole

    def __getattr__(self, attr):          # introspection: the compiled part is the inner kernel
        return getattr(self.__dict__["inner"], attr)

    def accepts(self, tensors) -> bool:
        w = tensors.get(self.split.dense)
        rest = {k: v for k, v in tensors.items() if k != self.split.dense}
        return isinstance(w, Tensor) and _is_dense(w) and w.ndim == len(self.split.dense_idxs) \
            and self.inner.accepts(rest)

    def pack(self, **kwargs):
        raise TypeError("a dense-split kernel (ctensor.driver.dense_split) has no packed call: call it")

    def __call__(self, **kwargs):
        s = self.split
        w = kwargs.get(s.dense)
        if not isinstance(w, Tensor) or not _is_dense(w) or w.ndim != len(s.dense_idxs):
            raise TypeError(f"{s.dense}: expected a Dense tensor of {len(s.dense_idxs)} modes (the kernel was "
                            f"compiled for one), got {w!r}")
        W = dense_array(w, s.dense)
        if self._unsplit is not None and not np.isfinite(W).all():
            return self.unsplit(kwargs)(**kwargs)
        a = self.inner(**{k: v for k, v in kwargs.items() if k != s.dense})
        A = dense_array(a, "the sparse part's output")
        na = len(s.inner_idxs) - len(s.contracted)
        wax = [s.dense_idxs.index(i) for i in s.contracted]
        for ax, i in enumerate(s.contracted):
            if A.shape[na + ax] != W.shape[wax[ax]]:
                raise FormatError(f"{s.dense}: index {i!r} has extent {W.shape[wax[ax]]} in {s.dense} but "
                                  f"{A.shape[na + ax]} in the other tensors")
        R = np.tensordot(A, W, axes=(list(range(na, A.ndim)), wax))
        # R's axes: the inner output's kept part, then W's kept indices in W's order
        have = list(s.inner_idxs[:na]) + [i for i in s.dense_idxs if i not in s.contracted]
        R = np.ascontiguousarray(R.transpose([have.index(i) for i in s.out_idxs]), dtype=np.float64)
        level = Element(0.0, val=R.reshape(-1))
        for n in reversed(R.shape):
            level = Dense(level, n)
        return Tensor(level, name=s.text.split("__dense", 1)[0], owned=True)


def all_dense_output(kernel) -> bool:
    fmt = kernel.out_fmt
    while isinstance(fmt, Dense):
        fmt = fmt.child
    return isinstance(fmt, Element)
