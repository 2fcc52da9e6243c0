"""The intervals of a `GenomeIndex` in start order, made on first use, only as far as an
operation reads them: the glue between the rows given and the index tensors.

Source: the continuous tensor paper §7.2 (the index tensors are laid out over the start order).
Two layouts of one set of intervals: the ranked axis (`radix_order.ranked_axis`: the stable start
order of the rows, and the genome-axis starts and ends by rank), which every operation that maps
ranks back to rows or reads intervals by rank needs (overlap, intersect, closest, the grid); and
the sorted values (`radix_order.start_sorted`: the starts ascending with their ends, equal starts
in any order, no row order made or gathered), all that count's S and E, merge's union, the depth
track and UE read.  When both are made they agree on every value; `D` (intervals by rank) is only
kept from the ranked axis, since overlap and intersect pair its j with S's ranks.

Threads: each layout is made once under the index's lock and read-only afterwards.
"""
from __future__ import annotations

import time

import numpy as np

from .genome_layout import BUILD, SPAN
from .frame_take import RankedColumns
from .radix_order import ranked_axis, start_sorted


def _density(gs, ge) -> float:
    """Intervals per base over the chromosomes' occupied extents (the pair plan's cost model): each
    chromosome's intervals are one block of the start order, its extent max(end) - first start
    (one reduceat; a pandas groupby cost ~3.7 ms for 100k intervals)."""
    if not len(gs):
        return 0.0
    codes = np.floor_divide(gs + 1, SPAN)       # chromosome k's widened starts: [k*SPAN - 1, ..)
    first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    return len(gs) / max(float((np.maximum.reduceat(ge, first) - gs[first]).sum()), 1.0)



class IntervalAxis:
    """Mixin of `GenomeIndex`: reads `_rows_in` (chromosome codes, widened starts, ends; int64, row
    order), `frame`, `_parts`, `_lock` and `build_seconds` (to which each layout's time is added)."""

    def _intervals(self, keep: bool = True):
        """D for the einsums whose answer does not depend on the order of equal starts (union,
        depth): the index's D when built (or, with `keep`, when the ranks are), else one made from
        the sorted values and not kept, since `D` must list equal starts in the order of the ranks."""
        if "D" in self._parts or (keep and "_axis" in self.__dict__):
            return self._part("D")
        return BUILD["D"](*self._sorted_values())

    def _lazy(self, key, make):
        """self.<key> = make(), once, whatever the threads; its time is added to build_seconds."""
        v = self.__dict__.get(key)
        if v is None:
            with self._lock:
                v = self.__dict__.get(key)
                if v is None:
                    t0 = time.perf_counter()
                    v = make()
                    self.__dict__[key] = v
                    self.build_seconds += time.perf_counter() - t0
        return v

    def _ranked_axis(self):
        """(order, gs, ge): rank j -> data row (None: the data came in start order; stable, equal
        starts keep the data's order) and the genome-axis starts and ends by rank, made on the
        first use by an operation that maps ranks to rows or reads intervals by rank."""
        return self._lazy("_axis", lambda: ranked_axis(*self._rows_in))

    def _sorted_values(self):
        """(starts ascending, ends in that order), genome axis: all that S, E, UE, the union and the
        depth track read.  The ranked axis when it is built or free (data in start order), else
        a sort of the packed values (`radix_order.start_sorted`: no row order, no gathers)."""
        if "_axis" in self.__dict__:
            return self._gs, self._ge
        # () when start_sorted declines: the ranked axis then (timed once, by its own _lazy)
        return self._lazy("_values", lambda: start_sorted(*self._rows_in) or ()) or self._ranked_axis()[1:]

    order = property(lambda self: self._ranked_axis()[0])
    _gs = property(lambda self: self._ranked_axis()[1])
    _ge = property(lambda self: self._ranked_axis()[2])
    # the data columns by rank, on first use
    ranked = property(lambda self: self._lazy("_ranked", lambda: RankedColumns(self.frame, self.order)))
    density = property(lambda self: self._lazy("_density", lambda: _density(self._gs, self._ge)))
