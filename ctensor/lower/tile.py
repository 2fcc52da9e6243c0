"""Tile loops: how a tensor stored under UniformGrid levels is iterated with the einsum unchanged.

A tensor `P[x, y, id]` stored as UniformGrid(x) → UniformGrid(y) → coordinate levels has two more
levels than modes.  The loop nest `for x: for y: for id` becomes

    for x#cell: for y#cell: for x in (current x#cell piece): for y in (current y#cell piece): for id

The tile loop `x#cell` runs over the same real axis as x, with no measure: the looplet passes
split it into pieces on which every tensor read at the tile loop is constant (a cell of P's grid
intersected with the runs of the other tensors), and the body runs once per piece.  The inner x
loop then runs over that piece only, reading P's coordinate level.  The pieces partition the axis,
so every point is visited exactly once and any reduction, measure or semiring keeps its meaning:
sum over x = sum over pieces of the sum over x inside the piece.

Every other tensor read with x is read at the tile loop (so a Box prunes whole cells: the pieces
outside its run are fill and annihilate); expressions of x itself (`(x - ox)**2`) read the inner
loop, where the partitions are pinpoints.  Source: loop tiling over a binned layout,
shape-spf-z3-digest §4 items 6–7; the continuous paper's uniform grid (§7.1, Fig. 23).

Whole cells: a grid marks the fiber of each cell with the cell's bounds (`Fiber.cell`).  At the
innermost tile loop, when the piece is the whole cell — the other tensors' runs cover it, as a
box covers the cells inside it — every coordinate stored below lies in the inner loop's extent,
so `lower_piece` lowers the body a second time with those accesses marked `covered` at the
binned index, and their levels skip their seeks and coordinate tests there (`looplets.passes`:
Walk, Pinpoint); a run-time test on the piece picks the version.

Conditions (else InvalidProgramError): every tiled tensor bins the same indices, in the same order;
those indices are reduction indices (not output indices) and consecutive in the loop order.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import reduce

from ..errors import InvalidProgramError
from ..extents import Extent, lim_eq, lim_le
from ..ir import build as b
from ..looplets.nodes import Fiber
from .notation import Block, Loop, Sieve, map_accesses, walk_accesses


SUFFIX = "#cell"


def tile_name(idx: str) -> str:
    return idx + SUFFIX


@dataclass(frozen=True)
class Piece:
    """Marker extent of an inner loop: the current piece of the tile loop `tile` (bound when the
    tile loop collapses, `bind_pieces`)."""
    tile: str
    continuous: bool = True


class PieceExtent(Extent):
    """An inner loop's extent once bound to a tile piece; collapses that assume an inner loop spans
    its whole axis check for it (`looplets.count.reduction_nest`)."""


@dataclass
class Tiling:
    binned: tuple          # the indices binned by the grids, outermost first
    order: list            # the loop order with the tile loops inserted
    depth: dict            # tensor name -> number of grid levels


def plan_tiles(es, plan, tensors) -> Tiling | None:
    """The tile loops of a plan, or None when no tensor has grid levels."""
    from ..lang.program import accesses
    depth, binned = {}, None
    for acc in accesses(plan.rhs):
        lvls = tensors[acc.tensor].levels()
        m = 0
        while m < len(lvls) and lvls[m].tile:
            m += 1
        if not m:
            continue
        depth[acc.tensor] = m
        these = tuple(acc.idxs[:m])
        if binned is not None and these != binned:
            raise InvalidProgramError(f"{acc.tensor}'s grid bins {these} but another tensor's bins {binned}; "
                                      "every grid-indexed tensor of one einsum must bin the same indices")
        binned = these
    if binned is None:
        return None
    _check_counting(plan, binned, tensors, depth)
    out = [i for i in binned if i in es.out_idxs]
    if out:
        raise InvalidProgramError(f"index {out[0]!r} is binned by a UniformGrid and is an output index: grids "
                                  "index reductions only (use a tensor without grid levels)")
    order = list(plan.order)
    p = order.index(binned[0])
    if tuple(order[p:p + len(binned)]) != binned:
        raise InvalidProgramError(f"the loops over the grid's indices {binned} must be consecutive and in this "
                                  f"order, but the loop order is {order}")
    return Tiling(binned, order[:p] + [tile_name(i) for i in binned] + order[p:], depth)


def _check_counting(plan, binned, tensors, depth):
    """Under the counting measure on a binned index, a grid tensor must be a factor of the
    product whose fill is 0 / False, under a reduction whose identity is 0 (+, or).  Elsewhere the
    other tensors' pinpoints count where the grid tensor is its fill, and a tile piece may be a
    point only because a cell edge meets another tensor's bound (cells are cut at edges that are
    no change of value): the inner loop would count it.  Refused rather than answered wrong
    (issue 31, found by the differential fuzzer)."""
    from ..lang.nodes import EAccess, product_factors
    from ..lang.semiring import identity
    if not any(plan.measures.get(i) == "counting" for i in binned):
        return
    factors = product_factors(plan.rhs)
    for name in depth:
        fill = getattr(tensors[name].levels()[-1], "fill", None)
        # (a zero term is a no-op where 0 is ⊕'s identity: 0 still counts under min / max)
        ok = any(isinstance(f, EAccess) and f.tensor == name for f in factors) and fill in (0, False) \
            and identity(plan.op) in (0, False)
        if not ok:
            raise InvalidProgramError(
                f"{name} is stored under UniformGrid levels and the counting measure is on its binned index "
                f"{', '.join(i for i in binned if plan.measures.get(i) == 'counting')}, but {name} is not a factor "
                f"of the product with fill 0 under + or or: the other tensors' pinpoints would count where {name} "
                f"is its fill, which the tile loops do not lower (not supported yet); store {name} without grid "
                f"levels (ct.points(..., grid=None)) for this program")
    _check_counting_intervals(plan, binned, tensors, depth)


def _check_counting_intervals(plan, binned, tensors, depth):
    """Under the counting measure on an index binned by a grid over an interval level, no other
    grid tensor may read the index.  A run [a, c] with a < c, listed in the cell [c, ..) it meets
    in one point, is clipped there to the point {c}, which counts only where another access's
    piece changes just left of c (paper Fig. 5): `cell_point` looks for a bound of its own at c
    among the cuts the passes record (phase starts, a stepper's chunk ended just before, a stored
    point: at a tile loop for every stepper and spike, `looplets.passes`).  The whole-cell walk of
    another grid's points records none, so that case is refused rather than answered wrong."""
    from ..lang.program import accesses
    counted = {i for i in binned if plan.measures.get(i) == "counting"}
    clipped = [name for name in depth
               if any(binned[lv.axis] in counted and type(lv.binned_level()).__name__ in CLIPS
                      for lv in tensors[name].levels()[:depth[name]])]
    for name in clipped:
        for acc in accesses(plan.rhs):
            if acc.tensor != name and acc.tensor in depth and counted & set(_index_names(acc)):
                idx = sorted(counted & set(_index_names(acc)))[0]
                raise InvalidProgramError(
                    f"{name} is stored as intervals under UniformGrid levels and the counting measure is on its "
                    f"binned index {idx!r}, which {acc.tensor}, also under UniformGrid levels, reads too: where a "
                    f"cell edge meets one of {acc.tensor}'s points the tile loops cannot tell a pinpoint from a run "
                    f"clipped by the cell (not supported yet); store one of them without grid levels for this "
                    f"program, or use the lebesgue or boolean measure")


CLIPS = ("SparseRunList", "SparseInterval")     # binned levels whose entries a cell clips (`cell_point`)


def _index_names(acc):
    """The index names an access reads (every index of an affine dimension, `A[x + y]`)."""
    return [i for d in acc.dims for i in d.indices]


def tile_access_idxs(tiling: Tiling, tensor: str, idxs: tuple) -> tuple:
    """Indices of an access after tiling: a grid tensor reads the tile loops first; any other
    tensor reads a binned index at its tile loop."""
    if tensor in tiling.depth:
        return tuple(tile_name(i) for i in tiling.binned) + tuple(idxs)
    return tuple(tile_name(i) if i in tiling.binned else i for i in idxs)


def tile_extents(tiling: Tiling, extents: dict) -> dict:
    out = dict(extents)
    for i in tiling.binned:
        out[tile_name(i)] = extents[i]
        out[i] = Piece(tile_name(i))
    return out


def bind_pieces(node, tile: str, ext: Extent):
    """Give every loop waiting for a piece of `tile` the extent `ext` (lowerer.collapse calls this
    when the tile loop's body runs on one piece)."""
    if isinstance(node, Loop):
        e = node.ext
        if isinstance(e, Piece) and e.tile == tile:
            e = PieceExtent(ext.start, ext.stop, ext.continuous)
        return Loop(node.idx, e, bind_pieces(node.body, tile, ext))
    if isinstance(node, Sieve):
        return Sieve(node.cond, bind_pieces(node.body, tile, ext))
    if isinstance(node, Block):
        return Block([bind_pieces(s, tile, ext) for s in node.stmts])
    return node


def lower_piece(ctx, body, tile: str, ext: Extent, lower):
    """Lower the body of loop `tile` collapsed on its piece `ext` (`lowerer.collapse`): with the
    inner loops bound to the piece (`bind_pieces`) and, when the piece is a whole cell of every
    grid fiber read there, a version whose accesses are `covered` at the binned index."""
    idx = tile[:-len(SUFFIX)] if tile.endswith(SUFFIX) else None
    cells = {id(a) for a in walk_accesses(body)
             if isinstance(a.tns, Fiber) and a.tns.cell is not None and idx in a.idxs}
    edges = [a.tns.cell[0] for a in walk_accesses(body) if id(a) in cells and getattr(a.tns.cell, "clips", False)]
    with _cell_starts(ctx, idx, edges):
        _lower_piece(ctx, body, tile, ext, lower, idx, cells)


@contextmanager
def _cell_starts(ctx, idx, edges):
    """Scope in which `ctx.cell_starts[idx]` also holds the lower edges of the cells being read."""
    stack = ctx.cell_starts.setdefault(idx, [])
    n = len(stack)
    stack.extend(edges)
    try:
        yield
    finally:
        del stack[n:]


def cell_point(ctx, idx: str, ext: Extent):
    """i1: may the pinpoint `ext` of the binned index `idx` count under the counting measure?

    Inside a cell [e, e'), a stored run [a, e] with a < e (listed in every cell it meets) is
    clipped to the point [e, e]: a point of the loop's extent, not of the tensor's partition (the
    run goes on to the left, and a cell edge is no change of value).  A point at a cell's lower
    edge counts only where some access's own piece starts there (`Context.pin_cuts`: a stored
    point, a run starting at e, another tensor's bound); elsewhere every point of the extent was
    cut by the accesses themselves.  Paper §4.2 (Fig. 5: the partition the tensors cut), §7.1."""
    los = ctx.cell_starts.get(idx)
    if not los or not ext.continuous:
        return b.TRUE
    at_edge = reduce(b.lor, [lim_eq(ext.start, lo) for lo in los], b.FALSE)
    cut = reduce(b.lor, [lim_eq(lim, ext.start) for _, side, lim in ctx.pin_cuts.get(idx, []) if side == "start"],
                 b.FALSE)
    return b.lor(b.lnot(at_edge), cut)


def _lower_piece(ctx, body, tile, ext, lower, idx, cells):
    # the whole-cell version only at the innermost tile loop: one per binned axis doubled the body
    # d times (8 copies for KPConv's 3-D grid: 2.6 s of O3 against 0.9 s), for ~4% on large boxes
    # (intervals below a grid are read by steppers and phases, which a covered mark does not speed up)
    if not cells or _has_tile_loop(body) or all(getattr(a.tns.cell, "clips", False)
                                                for a in walk_accesses(body) if id(a) in cells):
        lower(ctx, bind_pieces(body, tile, ext))
        return
    whole = b.TRUE
    for a in walk_accesses(body):
        if id(a) in cells:
            lo, hi = a.tns.cell[:2]
            whole = b.land(whole, b.land(lim_le(ext.start, lo), lim_le(hi, ext.stop)))

    def version(cover):
        def f(a):
            if id(a) not in cells:
                return a
            return replace(a, tns=replace(a.tns, cell=None), covered=a.covered | {idx} if cover else a.covered)
        return lambda: lower(ctx, bind_pieces(map_accesses(body, f), tile, ext))
    ctx.if_(whole, version(True), version(False))


def _has_tile_loop(node) -> bool:
    if isinstance(node, Loop):
        return node.idx.endswith(SUFFIX) or _has_tile_loop(node.body)
    if isinstance(node, Sieve):
        return _has_tile_loop(node.body)
    if isinstance(node, Block):
        return any(_has_tile_loop(s) for s in node.stmts)
    return False


def is_piece(ext) -> bool:
    """Is a loop's extent (waiting for or bound to) a tile piece rather than its whole axis?"""
    return isinstance(ext, (Piece, PieceExtent))
