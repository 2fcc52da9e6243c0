"""`Result`: the output of `evaluate`, a map from output cells to ⊕-accumulated values.

Output cells are products of the elementary cells of the LHS indices (see `partition`): a Limit
interval per real index, an int or `OTHER` per int index.  A cell that received no contribution
holds the semiring identity (``fill``).  Adjacent cells with equal values are not merged.
"""
from __future__ import annotations

from .endpoints import as_interval, contains, is_empty
from .pieces import PieceTensor, as_int_coord
from .semirings import OTHER, fill_of, is_identity


class Result:
    """Output of `evaluate`.

    * ``value``: the scalar of a 0-d output (Python float or bool).
    * ``at(*coords)``: the output at a point (ints for int indices; float, Limit ``(v, eps)`` or a
      Limit interval inside one cell for real indices).
    * ``pieces()``: non-identity cells as ``(coords, value)`` in the `PieceTensor` convention.
    """

    def __init__(self, name, indices, kinds, parts, cells, semiring):
        self.name = name
        self.indices = tuple(indices)
        self.dims = tuple(kinds[i] for i in indices)
        self.partitions = {i: parts[i] for i in indices}
        self.cells = cells
        self.semiring = semiring
        self.fill = fill_of(semiring)

    @property
    def value(self):
        if self.indices:
            raise ValueError(f"{self.name} has indices {self.indices}; use at() or pieces()")
        return self.cells.get((), self.fill)

    def _cell(self, index, kind, coord):
        if kind == "int":
            k = as_int_coord(coord)
            return k if k in self.partitions[index] else OTHER
        q = as_interval(coord)
        if is_empty(q):
            raise ValueError(f"empty query interval {coord!r}")
        for cell in self.partitions[index]:
            if contains(cell, q):
                return cell
        raise ValueError(f"query {coord!r} spans several cells of index {index!r}")

    def at(self, *coords):
        if len(coords) != len(self.indices):
            raise ValueError(f"at() takes {len(self.indices)} coordinates, got {len(coords)}")
        key = tuple(self._cell(i, k, c) for i, k, c in zip(self.indices, self.dims, coords))
        return self.cells.get(key, self.fill)

    def pieces(self) -> list:
        """Non-identity output cells, sorted; raises if an `OTHER` cell is non-identity (the
        output would be non-identity on infinitely many int coordinates)."""
        out = []
        for key, value in self.cells.items():
            if is_identity(self.semiring, value):
                continue
            if any(c is OTHER for c in key):
                raise ValueError(f"{self.name} is {value!r} on every int coordinate no input uses")
            out.append((key, value))
        return sorted(out, key=lambda kv: kv[0])

    def breakpoints(self, axis: int) -> list:
        """Finite cell boundaries (real index) or used coordinates (int index) along `axis`."""
        cells = self.partitions[self.indices[axis]]
        if self.dims[axis] == "int":
            return [c for c in cells if c is not OTHER]
        return sorted({v for c in cells for v, _ in c if abs(v) != float("inf")})

    def to_piece_tensor(self) -> PieceTensor:
        return PieceTensor(self.dims, self.pieces(), self.fill)

    def __repr__(self):
        return (f"Result({self.name}[{', '.join(self.indices)}], semiring={self.semiring!r}, "
                f"{len(self.cells)} cells)")
