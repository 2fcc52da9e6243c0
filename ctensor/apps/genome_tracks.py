"""The operations of a `GenomeIndex` that read the data's depth track (`Depth[x] = D[j, x] *
d(j; counting)`) or its union (`U[x] = D[j, x] * d(j; boolean)`), each built once per index: the
covered bases of each query and coverage (the union), subtract and the depth track itself (the
depth), the merged runs (the union).  A mixin of `GenomeIndex` (`ctensor.apps.genome_index`,
which holds the index, its tensors and the pair operations).  Source: the continuous tensor paper
§7.2; every answer is an einsum of `genome_einsums.EINSUMS` (covered, subtract, depth, union)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import Dense, Pattern, SparseRunList
from . import genome_cover
from .genome_layout import decode, interval_tensor, rows
from .workers import check_workers, split_rows


class TrackOps:
    """`GenomeIndex`'s depth-track operations (module docstring); they use its `genome`, `_run`,
    `_count`, `Depth`, `U`, `chroms`, `_zero_at` and `count_overlaps`."""

    def covered(self, start, end, chrom=None, workers: int = 1) -> np.ndarray:
        """Bases of each (widened) query interval covered by at least one data interval, int64.
        `workers`: threads the queries are split over (contiguous chunks, same result)."""
        check_workers(workers)
        gs, ge, _ = self.genome(chrom, start, end, workers)
        return split_rows(self._covered, workers, (gs, ge), order_by=gs)

    def _covered(self, gs, ge):
        # by the plan of `genome_cover` (direct over few union runs, by ranks over many)
        return genome_cover.covered(self, gs, ge)

    def coverage(self, start, end, chrom=None, workers: int = 1) -> dict:
        """`bedtools coverage`: per query, count of overlapping data intervals, bases covered,
        query length (zero-length queries count as 2, as bedtools widens them), covered fraction.
        `workers`: threads the queries are split over (contiguous chunks, same result)."""
        check_workers(workers)
        gs, ge, _ = self.genome(chrom, start, end, workers)
        return genome_cover.coverage(self, gs, ge, workers)

    def subtract(self, start, end, chrom=None, workers: int = 1):
        """Pieces of each query interval not covered by any data interval (`bedtools subtract`):
        (query row, piece start, piece end), int64 arrays; a zero-length query that is not wholly
        covered keeps its original coordinates, as bedtools prints it.  `workers`: threads the
        queries are split over (contiguous chunks, same result)."""
        check_workers(workers)
        gs, ge, zero = self.genome(chrom, start, end, workers)
        st, en = np.asarray(start, np.int64), np.asarray(end, np.int64)
        return split_rows(self._subtract, workers, (gs, ge, zero, st, en), rows=(0,), order_by=gs)

    def _subtract(self, gs, ge, zero, st, en):
        out = Dense(SparseRunList(Pattern()))
        R = self._run("subtract", out=out, Q=interval_tensor(gs, ge, "left"), Depth=self.Depth)
        lx = R.level.child
        qi = rows(np.asarray(lx.ptr))
        left, right = np.asarray(lx.left), np.asarray(lx.right)
        _, ps, pe = decode(left, right)
        z = zero[qi]
        if z.any():                       # one row per surviving zero-length query, as given
            first = np.ones(len(qi), bool)
            first[1:] = qi[1:] != qi[:-1]
            drop = z & ~first
            ps = np.where(z, st[qi], ps)
            pe = np.where(z, en[qi], pe)
            qi, ps, pe = qi[~drop], ps[~drop], pe[~drop]
        return qi, ps, pe

    def depth(self):
        """The depth track (`bedtools genomecov -bg`): (chrom names, start, end, depth) of maximal
        runs of constant non-zero depth, zero-length intervals widened, starts clipped at 0."""
        lvl = self.Depth.level
        code, s, e = decode(np.asarray(lvl.left), np.asarray(lvl.right))
        s = np.maximum(s, 0)
        keep = e > s
        return self.names(code[keep]), s[keep], e[keep], lvl.child.val[keep]

    def names(self, code, frame: bool = False):
        """The chromosome names of the codes: an object array, or (`frame`) a pandas array of the
        default string dtype, as a DataFrame column (a take of the few names: converting an object
        array costs ~40 ns a row)."""
        if frame:
            return pd.Series(self.chroms, dtype=None if self.chroms else object).array.take(np.asarray(code, np.int64))
        return np.asarray(self.chroms, dtype=object)[code]

    def merge(self, frame: bool = False):
        """The union of the data (`bedtools merge`): (chrom names, start, end) of maximal runs;
        touching intervals merge.  A run made of one zero-length interval prints as that interval.
        `frame`: the names as a pandas array (`names`), for a DataFrame column."""
        left, right = np.asarray(self.U.level.left), np.asarray(self.U.level.right)
        code, s, e = decode(left, right)
        # a run [p-1, p+1) over a zero-length interval at p is that interval alone iff exactly one
        # interval meets it
        cand = np.flatnonzero((e - s == 2) & np.isin(left + 1, self._zero_at))
        if cand.size:
            names = self.names(code[cand])
            n = self.count_overlaps(s[cand] + 1, s[cand] + 1, names if len(self.chroms) > 1 else None)
            lone = cand[n == 1]
            s[lone] += 1
            e[lone] -= 1
        return (self.names(code, frame=True) if frame else self.names(code)), s, e
