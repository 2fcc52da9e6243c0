"""Steps 1a and 1b of the piecewise-constant evaluation semantics (paper §4.2, Fig. 5).

Step 1a (`preimage_pieces`): every live piece of every access is mapped into the iteration
space through the inverse of the access's indexing function.  Each access dimension is
``scale*var + offset`` (or a constant): a real interval maps to ``preimage(iv, scale, offset)``;
an int coordinate k maps to ``(k - offset) / scale`` when that is an integer (else the piece is
never read); a constant dimension keeps only the pieces containing the constant and disappears.

Step 1b (`partitions`, `access_table`): the iteration space is cut, independently along each
index, into elementary cells — for a real index the points and open gaps induced by every finite
preimage endpoint of every access using it, plus the two rays (`endpoints.elementary_cells`); for
an int index each int coordinate used by some preimage, plus `OTHER` (all the unused ones, where
every access through that index reads its fill).  The product of these cells refines every
intersection of preimage pieces of Fig. 5, so each tensor is constant on each product cell:
`access_table` records, for every product cell a piece covers, the piece (number and value; a
cell outside all pieces reads the fill).  Using the same float computation for breakpoints and for coverage
makes containment exact even when ``(v - offset) / scale`` rounds.

Index sums (``A[y + x]``, Toeplitz): such a dimension is resolved along the index of its terms
that comes last in an evaluation order; the others must then sit on point cells (a pinpoint of a
real index, or an int coordinate), which makes it the single-index dimension
``s_x * x + (offset + Σ s_j * v_j)``.  Its breakpoints along x are the preimages of the pieces
for every combination of point values of the other indices (`sum_breakpoints`), and a cell where
one of the other indices is not a point reads `UNDETERMINED` (`sum_lookup`; `evaluate` then
requires the cell's contribution not to depend on that value — true where something annihilates
it, as a pinpoint mask does in a valid program, paper §4.3).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from .endpoints import contains, elementary_cells, is_empty, overlaps, point, preimage
from .semirings import OTHER


@dataclass
class Preimage:
    """One access's pieces in iteration-space coordinates (Fig. 5 step 1a)."""
    vars: tuple     # distinct index names of the access, in dimension order
    dims: tuple     # (var, kind) per non-constant dimension
    pieces: list    # (coords per non-constant dimension, value)
    fill: object


def index_kinds(accesses, tensors) -> dict:
    """Kind ('int' or 'real') of every index, from the tensor dimensions it addresses."""
    kinds = {}
    # an index reading an int dimension, and real ones only in sums with another index
    # (Grid[o + d*t + x], Time[t]), is int: it only shifts the real coordinate
    on_int = {v for acc in accesses for aff, kind in zip(acc.dims, tensors[acc.tensor].dims) if kind == "int"
              for v, _ in aff.terms}
    alone = {v for acc in accesses for aff, kind in zip(acc.dims, tensors[acc.tensor].dims) if kind == "real"
             and len({w for w, _ in aff.terms}) < 2 for v, _ in aff.terms}
    kinds.update({v: "int" for v in on_int - alone})
    for acc in accesses:
        dims = tensors[acc.tensor].dims
        for aff, kind in zip(acc.dims, dims):
            for var, scale in aff.terms:
                if kind == "real" and kinds.get(var) == "int" and len(aff.terms) > 1:
                    continue
                if kinds.setdefault(var, kind) != kind:
                    raise ValueError(f"index {var!r} addresses both int and real dimensions")
                if kind == "int" and (scale != int(scale) or aff.offset != int(aff.offset)):
                    raise ValueError(f"int index {var!r} needs integer scale and offset in {acc}")
    return kinds


def _keep_constant(kind, coord, offset) -> bool:
    if kind == "int":
        return float(coord) == offset
    return contains(coord, point(offset))


def preimage_pieces(acc, tensor) -> Preimage:
    """Fig. 5 step 1a for one access."""
    dims = tuple((aff.var, kind) for aff, kind in zip(acc.dims, tensor.dims) if aff.var is not None)
    vars_ = tuple(dict.fromkeys(v for v, _ in dims))
    pieces = []
    for coords, value in tensor.live_pieces():
        mapped, keep = [], True
        for aff, kind, c in zip(acc.dims, tensor.dims, coords):
            if aff.var is None:
                keep = _keep_constant(kind, c, aff.offset)
            elif kind == "int":
                s, o = int(aff.scale), int(aff.offset)
                keep = (c - o) % s == 0
                mapped.append((c - o) // s)
            else:
                iv = preimage(c, aff.scale, aff.offset)
                keep = not is_empty(iv)
                mapped.append(iv)
            if not keep:
                break
        if keep:
            pieces.append((tuple(mapped), value))
    return Preimage(vars_, dims, pieces, tensor.fill)


def partitions(preimages, kinds) -> dict:
    """Fig. 5 step 1b, per index: the ordered list of elementary cells of each index."""
    used = {v: set() for v in kinds}
    for pre in preimages:
        for coords, _ in pre.pieces:
            for (var, kind), c in zip(pre.dims, coords):
                used[var].update([c] if kind == "int" else [c[0][0], c[1][0]])
    return {v: (sorted(used[v]) + [OTHER]) if kinds[v] == "int" else elementary_cells(used[v])
            for v in kinds}


def access_table(pre: Preimage, parts: dict) -> dict:
    """Map each product cell (one cell per var of the access) covered by a piece to
    ``(piece number, value)``; the piece number identifies Fig. 5 partitions for `counting`."""
    table = {}
    for n, (coords, value) in enumerate(pre.pieces):
        cover = {}
        for (var, kind), c in zip(pre.dims, coords):
            if kind == "int":
                cells = [c]
            else:
                cells = [cell for cell in parts[var] if contains(c, cell)]
                for cell in parts[var]:
                    if overlaps(c, cell) and not contains(c, cell):
                        raise AssertionError(f"cell {cell} is not elementary for {c}")
            cover[var] = cells if var not in cover else [x for x in cover[var] if x in cells]
        for combo in product(*(cover[v] for v in pre.vars)):
            if combo in table:
                raise ValueError(f"two pieces cover the cell {combo} (overlap or float rounding "
                                 "of an affine index)")
            table[combo] = (n, value)
    return table


# ------------------------------------------------------------------------------ index sums
class _Undetermined:
    def __repr__(self):
        return "UNDETERMINED"


UNDETERMINED = _Undetermined()


def is_simple(acc) -> bool:
    """Every dimension reads at most one index."""
    return all(len(aff.terms) <= 1 for aff in acc.dims)


def free_var(aff, rank) -> str:
    """The index a dimension is resolved along: the last of its indices in the evaluation order."""
    return max(aff.vars, key=rank.__getitem__)


def _shift(aff, free, point) -> float:
    """offset + Σ s_j * v_j over the other indices (one computation for breakpoints and lookups,
    so that containment is exact)."""
    k = aff.offset
    for v, s in aff.terms:
        if v != free:
            k += s * point[v]
    return k


def _image_preimage(kind, c, scale, k):
    """The free index's preimage of a piece coordinate c: an int or None (int dim), a Limit interval."""
    if kind == "int":
        q, r = divmod(c - k, scale)
        return int(q) if r == 0 else None
    return preimage(c, scale, k)


def sum_breakpoints(acc, tensor, var, rank, used) -> set:
    """Breakpoints of `var` from the dimensions of `acc` reading it: a single-index dimension's
    piece preimages, and an index sum's for every combination of point values of its other
    indices (taken from `used`, final for indices earlier in the order)."""
    out = set()
    for k, (aff, kind) in enumerate(zip(acc.dims, tensor.dims)):
        if var not in aff.vars or free_var(aff, rank) != var:
            continue
        others = [v for v in aff.vars if v != var]
        scale = dict(aff.terms)[var]
        for vals in product(*(sorted(used[o]) for o in others)):
            shift = _shift(aff, var, dict(zip(others, vals)))
            for coords, _ in tensor.live_pieces():
                pre = _image_preimage(kind, coords[k], scale, shift)
                if pre is None or (kind == "real" and is_empty(pre)):
                    continue
                out.update([pre] if kind == "int" else [pre[0][0], pre[1][0]])
    return out


def point_value(cell, kind):
    """The value of a point cell (an int coordinate or a pinpoint), or None for any other cell."""
    if kind == "int":
        return None if cell is OTHER else cell
    return cell[0][0] if cell[0] == cell[1] else None


def sum_lookup(acc, tensor, env, rank, kinds):
    """(piece number or None, value) of an access with an index sum on the product cell `env`, or
    (UNDETERMINED, UNDETERMINED) when an index sum's other indices are not all on point cells."""
    point = {}
    for aff in acc.dims:
        if len(aff.terms) > 1:
            free = free_var(aff, rank)
            for v in aff.vars:
                if v != free:
                    point[v] = point_value(env[v], kinds[v])
                    if point[v] is None:
                        return UNDETERMINED, UNDETERMINED
    for n, (coords, value) in enumerate(tensor.live_pieces()):
        inside = True
        for aff, kind, c in zip(acc.dims, tensor.dims, coords):
            if not aff.terms:
                inside = _keep_constant(kind, c, aff.offset)
            else:
                free = free_var(aff, rank)
                pre = _image_preimage(kind, c, dict(aff.terms)[free], _shift(aff, free, point))
                cell = env[free]
                if kind == "int":
                    inside = pre is not None and pre == cell
                elif overlaps(pre, cell) and not contains(pre, cell):
                    raise AssertionError(f"cell {cell} is not elementary for {pre} in {acc}")
                else:
                    inside = overlaps(pre, cell)
            if not inside:
                break
        if inside:
            return n, value
    return None, tensor.fill
