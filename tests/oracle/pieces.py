"""`PieceTensor`: a piecewise-constant tensor as an explicit list of disjoint boxes (paper §4.1).

Source: continuous tensor paper §4.1 — f(x) = Σ_m V_m · [x ∈ I_m] with the I_m pairwise disjoint,
axis-aligned boxes; everywhere not covered by a piece the tensor equals ``fill`` (this makes
"complete coverage" hold without listing the fill regions).

Data convention (fixed; the differential-test harness converts compiled tensors into it):

* ``dims``: one kind per dimension, ``"int"`` (integer coordinate) or ``"real"``.
* ``pieces``: list of ``(coords, value)``; for an int dim the coordinate is an ``int``, for a real
  dim it is a closed Limit interval ``((lo_v, lo_e), (hi_v, hi_e))`` (see `endpoints`), with
  ``lo_e`` in {0, +1} and ``hi_e`` in {0, -1}.  Pieces are pairwise disjoint; pieces with an
  empty interval are allowed and ignored.
* ``fill``: the value everywhere else (float or bool).  Values are normalised to Python
  ``float`` or ``bool``.
* ``shape``: optional, per dimension the declared extent ``n`` of an int dim (coordinates
  0..n-1) or None (unbounded; always None for a real dim).  Only permissive reads use it: outside
  it they read ``missing`` (`expr.MISSING`).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from .endpoints import (as_interval, check_piece_interval, contains, is_empty, overlaps)

KINDS = ("int", "real")


def normalize_value(v):
    """Python bool for booleans (incl. numpy), Python float for other reals."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return bool(v)
    if isinstance(v, numbers.Real):
        return float(v)
    raise ValueError(f"tensor values must be real numbers or booleans, got {v!r}")


def as_int_coord(c) -> int:
    if isinstance(c, bool) or not isinstance(c, numbers.Integral):
        raise ValueError(f"int-dim coordinate must be an integer, got {c!r}")
    return int(c)


@dataclass
class PieceTensor:
    """A piecewise-constant tensor: disjoint pieces ``(coords, value)`` over ``fill``."""

    dims: tuple
    pieces: list = field(default_factory=list)
    fill: float | bool = 0.0
    shape: tuple | None = None

    def __post_init__(self):
        self.dims = tuple(self.dims)
        self.shape = tuple(self.shape) if self.shape is not None else (None,) * len(self.dims)
        if len(self.shape) != len(self.dims):
            raise ValueError(f"shape has {len(self.shape)} entries for {len(self.dims)} dims")
        for kind in self.dims:
            if kind not in KINDS:
                raise ValueError(f"dim kind must be 'int' or 'real', got {kind!r}")
        self.fill = normalize_value(self.fill)
        normalized = []
        for n, piece in enumerate(self.pieces):
            try:
                coords, value = piece
            except (TypeError, ValueError):
                raise ValueError(f"piece {n} must be (coords, value), got {piece!r}") from None
            coords = tuple(coords)
            if len(coords) != len(self.dims):
                raise ValueError(f"piece {n} has {len(coords)} coords for {len(self.dims)} dims")
            coords = tuple(as_int_coord(c) if kind == "int" else check_piece_interval(c)
                           for kind, c in zip(self.dims, coords))
            normalized.append((coords, normalize_value(value)))
        self.pieces = normalized

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def live_pieces(self) -> list:
        """The pieces whose box is non-empty (every real interval non-empty)."""
        return [(c, v) for c, v in self.pieces
                if not any(kind == "real" and is_empty(x) for kind, x in zip(self.dims, c))]

    def _meets(self, a, b) -> bool:
        return all((x == y) if kind == "int" else overlaps(x, y)
                   for kind, x, y in zip(self.dims, a, b))

    def check_disjoint(self) -> None:
        """Raise ValueError naming the first two overlapping pieces (quadratic on purpose)."""
        live = self.live_pieces()
        for i in range(len(live)):
            for j in range(i + 1, len(live)):
                if self._meets(live[i][0], live[j][0]):
                    raise ValueError(f"pieces overlap: {live[i]!r} and {live[j]!r}")

    def at(self, *coords):
        """The value at a point: ints for int dims; for real dims a float (meaning (v, 0)), a Limit
        ``(v, eps)`` or a Limit interval ``(lo, hi)`` — the latter must lie inside one piece or
        outside all of them (else ValueError: the tensor is not constant there)."""
        if len(coords) != len(self.dims):
            raise ValueError(f"at() takes {len(self.dims)} coordinates, got {len(coords)}")
        query = tuple(as_int_coord(c) if kind == "int" else as_interval(c)
                      for kind, c in zip(self.dims, coords))
        if any(kind == "real" and is_empty(q) for kind, q in zip(self.dims, query)):
            raise ValueError(f"empty query interval in {coords!r}")
        hits = []
        for pc, value in self.live_pieces():
            if not self._meets(pc, query):
                continue
            inside = all(kind == "int" or contains(p, q)
                         for kind, p, q in zip(self.dims, pc, query))
            if not inside:
                raise ValueError(f"query {coords!r} straddles the boundary of piece {pc!r}")
            hits.append(value)
        if len(hits) > 1:
            raise ValueError(f"overlapping pieces at {coords!r}")
        return hits[0] if hits else self.fill

    def breakpoints(self, axis: int) -> list:
        """Sorted distinct finite endpoint values (real dim) or coordinates (int dim) along `axis`."""
        out = set()
        for c, _ in self.live_pieces():
            if self.dims[axis] == "int":
                out.add(c[axis])
            else:
                out.update(v for v, _ in c[axis] if abs(v) != float("inf"))
        return sorted(out)
