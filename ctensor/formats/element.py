"""Leaf levels: `Element(fill)` stores one value per position; `Pattern` stores nothing (true).

Source: Finch paper §3, Finch.jl `element_levels.jl`, `pattern_levels.jl`.  Values are kept as one
of three dtypes: bool (stored one byte each), int64 and float64.
"""
from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F32, F64, I1, I8, I64, PtrType
from ..looplets.nodes import Value
from .level import Level, float_exact, numeric_array

DTYPES = {"bool": (np.bool_, I8), "int": (np.int64, I64), "float": (np.float64, F64)}


def kind_of(dtype) -> str:
    k = np.dtype(dtype).kind
    if k == "b":
        return "bool"
    if k in "iu":
        return "int"
    if k == "f":
        return "float"
    raise FormatError(f"unsupported value dtype {np.dtype(dtype)}: use bool, integer or float values")


def kind_of_value(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, np.integer)):
        return "int"
    if isinstance(x, (float, np.floating)):
        return "float"
    raise FormatError(f"fill value {x!r} must be a bool, int or float")


def to_ir_value(expr, kind: str):
    """Loaded storage -> logical value (bool bytes become i1)."""
    if kind == "bool":
        return b.ne(expr, b.i8(0))
    return expr


def ir_type(kind: str):
    return {"bool": I1, "int": I64, "float": F64}[kind]


def _exact_values(val, np_dtype, kind: str, fill) -> np.ndarray:
    """`val` converted to the leaf's dtype; FormatError naming the first value the conversion would
    change (1.5 or NaN into int values, 2 or 0.5 into bool values, uint64 past int64, ints past
    2**53 into float values) instead of truncating it, or values that are not numbers."""
    raw = numeric_array(val, "val")        # complex values lost their imaginary part, strings were parsed
    conv = np.asarray(raw, dtype=np_dtype)
    _check_exact(raw, conv, kind, fill)
    return conv


def _check_exact(src, val, kind, fill):
    """Raise FormatError unless converting `src` to `val` (the kind's dtype) kept every value: no
    truncated float in an int or bool leaf, no uint64 past int64, no int past 2**53 in a float one."""
    k = src.dtype.kind
    lossy = (k == "f" and kind != "float") or (k in "iu" and kind == "bool") or \
        (k == "u" and src.dtype.itemsize == 8 and kind == "int") or \
        (k in "iu" and src.dtype.itemsize == 8 and kind == "float")
    if not lossy or src.shape != val.shape:
        return
    ok = float_exact(src, val) if kind == "float" else val == src
    bad = np.flatnonzero(~np.asarray(ok))
    if bad.size:
        j = int(bad[0])
        raise FormatError(f"val[{j}] = {src.flat[j].item()!r} cannot be stored exactly as {kind} values "
                          f"(the fill {fill!r} makes the values {kind}; pass a fill of the values' type)")


def _check_single(src, val):
    """FormatError naming the first value that float32 storage would round (NaN stays NaN)."""
    if src.dtype == np.float32 or src.shape != val.shape:
        return
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~((val == src) | (np.isnan(val) & np.isnan(src.astype(np.float64)))))
    if bad.size:
        j = int(bad[0])
        raise FormatError(f"val[{j}] = {src.flat[j].item()!r} is not a float32 number: round the values first "
                          "(values.astype(np.float32)) to store them as float32")


class Element(Level):
    """Leaf level holding one value per position.

    Parameters
    ----------
    fill : bool, int or float
        The fill (background) value; the dtype of the values follows it unless `dtype` is given.
    val : array-like, optional
        The values, one per position of the parent level.
    dtype : numpy dtype, optional
        float32 stores float values in single precision (half the memory of float64): kernels read
        them widened to float64; as an output leaf (out=), each ⊕ is computed in float64 and its
        result rounded to float32.  Values and fill given to the constructor must be float32
        numbers (no silent rounding: pass values.astype(np.float32)).
    """

    def __init__(self, fill=0.0, val=None, dtype=None):
        self.kind = kind_of(dtype) if dtype is not None else kind_of_value(fill)
        self.single = dtype is not None and np.dtype(dtype) == np.float32
        np_dtype = np.float32 if self.single else DTYPES[self.kind][0]
        try:
            self._fill = np_dtype(fill).item()
        except (ValueError, OverflowError, TypeError):
            raise FormatError(f"fill {fill!r} cannot be stored as {self.kind} values") from None
        if self._fill != fill and not (self.kind == "float" and fill != fill):
            raise FormatError(f"fill {fill!r} cannot be stored exactly as {self.kind} values")
        self.val = None if val is None else np.ascontiguousarray(_exact_values(val, np_dtype, self.kind, fill))
        if self.single and val is not None:
            _check_single(np.asarray(val), self.val)

    def frozen(self, val: np.ndarray) -> "Element":
        """This leaf's format over `val`, a contiguous array of its dtype that ctensor built itself (a
        kernel's output, `runtime.output_format`): no conversion or check."""
        e = Element.__new__(Element)
        e.kind, e._fill, e.val, e.single = self.kind, self._fill, val, val.dtype == np.float32
        return e

    @property
    def is_leaf(self):
        return True

    @property
    def fill(self):
        return self._fill

    def format_key(self):
        # repr for floats: a -0.0 fill is not a 0.0 one (1/fill), and a NaN fill equals itself
        key = ("Element", self.kind, repr(self._fill) if self.kind == "float" else self._fill)
        return key + ("float32",) if self.single else key

    def format_str(self):
        return f"Element({self._fill!r}{', dtype=float32' if self.single else ''})"

    def empty(self):
        return Element(self._fill, dtype=np.float32 if self.single else DTYPES[self.kind][0])

    def has_data(self):
        return self.val is not None

    def child_count(self, npos):
        return 0

    def arrays(self):
        return [self.val]

    def validate(self, npos, name):
        if self.val is None or self.val.shape != (npos,):
            got = None if self.val is None else self.val.shape
            raise FormatError(f"{name}.val: expected {npos} values, got {got}")

    def eval(self, pos, coords):
        return self.val[pos].item()

    def pieces(self, pos):
        yield (), self.val[pos].item()

    def virtualize(self, ctx, name, mode="read"):
        return VElement(ctx, self, name, mode)


class VElement:
    def __init__(self, ctx, lvl: Element, name, mode):
        self.lvl, self.kind, self.fill, self.name = lvl, lvl.kind, lvl.fill, name
        self.single = getattr(lvl, "single", False)
        self.storage = storage = F32 if self.single else DTYPES[self.kind][1]
        self.mode = mode
        if mode == "read":
            self.val = ir.Read(ctx.param(name + "_val", PtrType(storage), ("read", lvl, "val")))
        else:
            from ..lower.context import GrowBuffer
            self.buf = GrowBuffer(ctx, name + "_val", storage, lvl, "val")

    is_leaf = True

    def read_leaf(self, ctx, pos):
        v = b.load(self.val, pos)
        v = ctx.let(b.cast(F64, v) if self.single else to_ir_value(v, self.kind), self.name + "_v")
        return Value(v, self.kind)

    # ---- write side
    def declare(self, ctx, npos):
        # the first `filled` values may hold the fill already (a caller's buffer, `GrowBuffer`)
        self.assemble(ctx, b.i64(0), b.sub(npos, b.i64(1)), self.buf.filled)

    def assemble(self, ctx, start, stop, filled=None):
        self.buf.ensure(ctx, b.add(stop, b.i64(1)))
        k = ir.Var(ctx.fresh("k"), I64, "let")
        fill = b.const(self.fill, self.storage)
        first = start if filled is None else b.maximum(start, filled)
        ctx.emit(ir.For(k, first, b.add(stop, b.i64(1)), [ir.Store(self.buf.data, ir.Read(k), fill)]))

    def freeze(self, ctx, npos):
        pass

    def same_value(self, ctx, p, q):
        """i1: the values written at positions p and q are equal (run-length merging)."""
        return b.eq(b.load(self.buf.data, p), b.load(self.buf.data, q))

    def write_leaf(self, ctx, pos, op, rhs):
        """val[pos] = op(val[pos], rhs); rhs is an IR expression of the logical type."""
        from ..lower.ops import combine
        old = b.load(self.buf.data, pos)
        old = b.cast(F64, old) if self.single else to_ir_value(old, self.kind)
        new = combine(op, old, rhs, ctx)       # ctx: an int64 sum that overflows fails the kernel
        if self.kind == "bool":
            new = b.cast(I8, new)
        ctx.emit(ir.Store(self.buf.data, pos, b.cast(self.storage, new)))     # a float32 leaf rounds here


class Pattern(Level):
    """Boolean leaf that stores nothing: true at every stored position, fill false."""

    kind = "bool"

    @property
    def is_leaf(self):
        return True

    @property
    def fill(self):
        return False

    def format_key(self):
        return ("Pattern",)

    def format_str(self):
        return "Pattern()"

    def empty(self):
        return Pattern()

    def has_data(self):
        return True

    def child_count(self, npos):
        return 0

    def arrays(self):
        return []

    def validate(self, npos, name):
        pass

    def eval(self, pos, coords):
        return True

    def pieces(self, pos):
        yield (), True

    def virtualize(self, ctx, name, mode="read"):
        return VPattern() if mode == "read" else VPatternWrite()


class VPattern:
    is_leaf = True
    kind = "bool"
    fill = False

    def read_leaf(self, ctx, pos):
        from ..looplets.nodes import FillLeaf
        return FillLeaf(True)

    def leaf_count(self, ctx, pos):
        return pos


class VPatternWrite:
    """A boolean output leaf that stores nothing: an entry of the parent exists iff a true value
    was written to it (the parent's dirty flag), so a sparse parent keeps only its coordinates.
    Writing false stores nothing, which is the fill — equal as functions for any reduction whose
    result is true exactly when some written value is true (or, =)."""
    is_leaf = True
    kind = "bool"
    fill = False

    def declare(self, ctx, npos):
        pass

    def assemble(self, ctx, start, stop):
        pass

    def freeze(self, ctx, npos):
        pass

    def same_value(self, ctx, p, q):
        return b.TRUE                        # every stored entry is true: touching runs merge

    def write_dirty(self, ctx, pos, op, rhs, dirty):
        from ..errors import InvalidProgramError
        if op not in ("or", "="):
            raise InvalidProgramError(f"a Pattern output holds true values only; reduction {op!r} needs Element")
        if dirty is None:
            raise InvalidProgramError("a Pattern output needs a sparse parent level (use Element(False))")
        ctx.assign(dirty, b.lor(ir.Read(dirty), rhs))
