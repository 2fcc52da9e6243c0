"""The einsums that answer bedtools' questions over a `GenomeIndex`, and the index tensors each reads.

Source: the continuous tensor paper §7.2 (genomic interval queries as continuous einsums; the
uniform grid of Fig. 23).  The tensors' formats and sizes are in `ctensor.apps.genome_layout`;
`ctensor.apps.genome_index.GenomeIndex` builds them and runs these programs.
"""
from __future__ import annotations

# The einsums, by operation.  Index names: i query, j data (start order), x the genome axis,
# s the data start coordinate.
EINSUMS = {
    # #(data starts < query end) - #(data ends <= query start): A[i] = (-inf, qe), B[i] = (-inf, qs]
    "count": "C[i] = (A[i, x] * S[x, j] - B[i, x] * E[x, j]) * d(x, j; counting, counting)",
    # rank of a coordinate among the data starts: #(starts in A[i] = (-inf, t)) or (-inf, t]
    "rank": "N[i] = A[i, x] * S[x, j] * d(x, j; counting, counting)",
    # the same over distinct pinpoints P[x] (SparseList -> Pattern: the array itself, no ids)
    "rank_points": "N[i] = A[i, x] * P[x] * d(x; counting)",
    # pairs, two plans for one answer (`GenomeIndex.pair_plan`).  "window": data starting in the
    # query's window W[i] = [qs - maxlen, qe) whose interval meets the query's, in one pass;
    # "ranks": the same candidates as a range of ranks R[i, j] = [rank(qs - maxlen), rank(qe))
    # from two "rank" calls, then a dense loop over the range (faster when windows are crowded).
    # A candidate starts before qe, so it meets the query iff it ends after qs: End[j] > QS[i]
    "overlap": "O[i, j] = W[i, s] * S[s, j] * (End[j] > QS[i]) * d(s; boolean)",
    "overlap_ranks": "O[i, j] = R[i, j] * (End[j] > QS[i])",
    # the overlapping pieces themselves, per pair (same two plans)
    "intersect": "I[i, j, x] = W[i, s] * S[s, j] * Q[i, x] * D[j, x] * d(s; boolean)",
    "intersect_ranks": "I[i, j, x] = R[i, j] * Q[i, x] * D[j, x]",
    # bases of the query covered by at least one data interval (Lebesgue measure of the query's
    # meet with the union: a query meets a few maximal runs where it would meet many depth runs)
    "covered": "B[i] = Q[i, x] * U[x] * d(x; lebesgue)",
    # the same by ranks: the union's runs meeting the query are the range R[i] = [#(run ends <= qs),
    # #(run starts < qe)) (two "rank" searches over the pinpoints US, UR), each adding its overlap
    # with the query (USv, URv: the runs' starts and ends as values; QS, QE the query's)
    "covered_ranks": "B[i] = R[i, k] * (min(URv[k], QE[i]) - max(USv[k], QS[i])) * d(k; counting)",
    # the union of the data as maximal runs (bedtools merge): one pass per interval, OR-merged by the
    # runtime (a sweep: the passes come in start order, `runtime.merge_output`)
    "union": "U[x] = D[j, x] * d(j; boolean)",
    # the union from a depth track
    "merge": "M[x] = Depth[x] > 0",
    # the depth track (bedtools genomecov -bg): one pass per interval, merged by the runtime
    "depth": "Depth[x] = D[j, x] * d(j; counting)",
    # the parts of each query interval no data interval covers
    "subtract": "R[i, x] = Q[i, x] * (Depth[x] == 0)",
    # closest, (max,+) then (min,+), each collapsing to one finger search per query
    # (`ctensor.looplets.extremum`): p[i], the last end of a run of the data's union in
    # B[i] = [chromosome start, qs], then c[i], the first data start in A[i] = [p, chromosome end)
    # (`GenomeIndex.closest` says why these two give the distance).  The tied nearest intervals
    # are then the "overlap" pairs of the query widened by its distance.
    "closest_prev": "P[i] = (x if (B[i, x] & UE[x]) else -inf) * d(x; boolean)",
    "closest_next": "C[i] = (x if (A[i, x] & S[x, j]) else inf) * d(x, j; boolean, counting)",
    # the uniform grid (layout="grid", the paper's Fig. 23).  c: the left edge of a cell of width
    # w, G[c, j]: the intervals meeting cell c, W[i] = [floor_w(qs), qe): the edges of the cells
    # meeting the query.  Filter W * G, exact test on the values DS/End (QS/QE the query's), and
    # the reference cell: a pair meets in the cells from floor_w(max(qs, ds)) on, and among the
    # cells that meet the query and list j only that first one has c <= max(qs, ds), so each
    # pair counts once and a query's pairs come in start order (cells in order, j sorted in each).
    # c <= max(qs, ds) is written (qs >= c) | (ds >= c): the same for coordinates, which are never
    # NaN, without the NaN test an einsum max(..) of values carries
    "grid_count": "C[i] = W[i, c] * G[c, j] * (DS[j] < QE[i]) * (End[j] > QS[i]) * ((QS[i] >= c) | (DS[j] >= c))"
                  " * d(c, j; counting, counting)",
    "grid_overlap": "O[i, j] = W[i, c] * G[c, j] * (DS[j] < QE[i]) * (End[j] > QS[i]) * ((QS[i] >= c) | (DS[j] >= c))"
                    " * d(c; boolean)",
    # map (bedtools map -c col -o sum|count|mean|min|max): the overlap pairs' test, each pair
    # weighted by the data column V[j] and summed over j (+), or its least / greatest value kept
    # (the (min,+) / (max,+) semirings; no overlap leaves the semiring's identity, ±inf)
    "map_sum": "M[i] = W[i, s] * S[s, j] * (End[j] > QS[i]) * V[j] * d(s, j; counting, counting)",
    "map_sum_ranks": "M[i] = R[i, j] * (End[j] > QS[i]) * V[j] * d(j; counting)",
    "map_min": "M[i] = (V[j] if (W[i, s] & S[s, j] & (End[j] > QS[i])) else inf) * d(s, j; boolean, counting)",
    "map_min_ranks": "M[i] = (V[j] if (R[i, j] & (End[j] > QS[i])) else inf) * d(j; counting)",
    "map_max": "M[i] = (V[j] if (W[i, s] & S[s, j] & (End[j] > QS[i])) else -inf) * d(s, j; boolean, counting)",
    "map_max_ranks": "M[i] = (V[j] if (R[i, j] & (End[j] > QS[i])) else -inf) * d(j; counting)",
    # a bedGraph signal's integral over each query (the bigWig "stats" question: the
    # length-weighted sum, a Lebesgue integral of the piecewise-constant track Sig[x])
    "integral": "T[i] = Q[i, x] * Sig[x] * d(x; lebesgue)",
    # bases two unions share (bedtools jaccard): the Lebesgue measure of their intersection
    "shared": "J[] = MA[x] * MB[x] * d(x; lebesgue)",
    "grid_intersect": "I[i, j, x] = W[i, c] * G[c, j] * ((QS[i] >= c) | (DS[j] >= c)) * Q[i, x] * D[j, x] * d(c; boolean)",
}
SEMIRING = {"closest_next": "min", "closest_prev": "max", "map_min": "min", "map_min_ranks": "min",
            "map_max": "max", "map_max_ranks": "max"}


# the index tensors each operation reads (up front; merge reads S and E only to tell a lone
# zero-length interval, built on that first use; coverage's run starts/ends as pinpoints,
# `genome_cover.cover_parts`, are views of U's arrays made on its first call)
PARTS = {"count": ("S", "E"), "overlap": ("S", "End"), "intersect": ("S", "D"),
         "coverage": ("S", "E", "U"), "subtract": ("Depth",), "merge": ("U",),
         "closest": ("S", "End", "UE"), "depth": ("Depth",)}
# under layout="grid": counts and pairs read the grid and the start/end values
GRID_PARTS = {**PARTS, "count": ("G", "DS", "End"), "overlap": ("G", "DS", "End"), "intersect": ("G", "DS", "D"),
              "coverage": ("G", "DS", "End", "U")}
LAYOUTS = ("sorted", "grid")
