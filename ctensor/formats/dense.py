"""`Dense(child, shape)`: every integer coordinate 0..shape-1 of every fiber is stored.

Source: Finch paper §3; Finch.jl `dense_levels.jl`.  Child position of (p, i) is p*shape + i.
Unfurl is a Lookup (random access); the integer extent is the closed [0, shape-1].
"""
from __future__ import annotations

from ..errors import FormatError
from ..extents import Extent
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I64
from ..looplets.nodes import Fiber, Hollow, Lookup
from .level import Level, as_shape


class Dense(Level):
    """Dense integer level.

    Parameters
    ----------
    child : Level
    shape : int, optional
        Number of coordinates per fiber (0-based, closed extent [0, shape-1]).  May be omitted for
        an output format, where the shape comes from the program's other tensors.
    """

    coord = "int"
    pinpoints = True

    def __init__(self, child: Level, shape: int | None = None):
        self.child, self.shape = child, as_shape(shape, "Dense")

    @classmethod
    def frozen(cls, child: Level, shape: int) -> "Dense":
        """A Dense level of a valid int shape that ctensor built itself (a kernel's output): no check."""
        d = cls.__new__(cls)
        d.child, d.shape = child, shape
        return d

    def format_key(self):
        return ("Dense", self.child.format_key())

    def format_str(self):
        return f"Dense({self.child.format_str()})"

    def empty(self):
        return Dense(self.child.empty(), self.shape)

    def has_data(self):
        return self.shape is not None and self.child.has_data()

    def child_count(self, npos):
        return npos * self.shape

    def arrays(self):
        return [self.shape] + self.child.arrays()

    def validate(self, npos, name):
        if self.shape is None:
            raise FormatError(f"{name}: Dense level has no shape")
        self.child.validate(self.child_count(npos), name)

    def eval(self, pos, coords):
        i = coords[0]
        if not (isinstance(i, int) and 0 <= i < self.shape):
            raise IndexError(f"index {i!r} out of range for Dense level of shape {self.shape}")
        return self.child.eval(pos * self.shape + i, coords[1:])

    def pieces(self, pos):
        for i in range(self.shape):
            for c, v in self.child.pieces(pos * self.shape + i):
                yield (i,) + c, v

    def virtualize(self, ctx, name, mode="read"):
        return VDense(ctx, self, name, mode)


class VDense:
    is_leaf = False
    coord = "int"

    def __init__(self, ctx, lvl: Dense, name, mode):
        self.lvl, self.name, self.mode = lvl, name, mode
        self.shape = ir.Read(ctx.param(name + "_shape", I64, ("shape", lvl, "shape")))
        self.child = lvl.child.virtualize(ctx, name, mode)
        self.fill = lvl.fill

    def extent(self):
        return Extent.integer(b.i64(0), b.sub(self.shape, b.i64(1)))

    @property
    def leaf_count(self):
        if getattr(self.child, "leaf_count", None) is None:
            return None
        return lambda ctx, pos: self.child.leaf_count(ctx, ctx.let(b.mul(pos, self.shape)))

    view = None          # a CoordView when read through an affine index (`formats.affine`)

    def unfurl_union(self, ctx, pos, reverse=False, present=None):
        """Below a byte map read by id in a ⊕-chain (`VSparseByteMap.unfurl_union`): hands its
        `present` flag down to the children; None (the usual lookup) without one."""
        if present is None or self.view is not None:
            return None
        base = ctx.let(b.mul(pos, self.shape), self.name + "_base")
        return Lookup(lambda ctx, j: Fiber(self.child, ctx.let(b.add(base, j.v), self.name + "_q"), present=present))

    def unfurl_reversed(self, ctx, pos, ext):
        return self.unfurl(ctx, pos, ext, "read")    # random access: no order to reverse

    def unfurl(self, ctx, pos, ext, mode, dirty=None):
        base = ctx.let(b.mul(pos, self.shape), self.name + "_base")
        # through an affine index, loop coordinate j reads stored coordinate a*j + b (in range:
        # the access is permissive, `formats.affine._permissive`, which guards the other points)
        at = (lambda j: j.v) if self.view is None else (lambda j: self.view.into(j.v))
        if mode == "read":
            return Lookup(lambda ctx, j: Fiber(self.child, ctx.let(b.add(base, at(j)), self.name + "_q")))
        return Lookup(lambda ctx, j: Hollow(self.child, ctx.let(b.add(base, at(j)), self.name + "_q"), dirty))

    # ---- write side
    # the products below size the child's buffers: checked, so an output too large for memory fails
    # with STATUS_OUT_OF_MEMORY instead of wrapping around to a small buffer
    def declare(self, ctx, npos):
        self.child.declare(ctx, ctx.let(ctx.checked_mul(npos, self.shape)))

    def assemble(self, ctx, start, stop):
        end = ctx.checked_mul(b.add(stop, b.i64(1)), self.shape)
        self.child.assemble(ctx, b.mul(start, self.shape), b.sub(end, b.i64(1)))

    def freeze(self, ctx, npos):
        self.child.freeze(ctx, ctx.let(b.mul(npos, self.shape)))
