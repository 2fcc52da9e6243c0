"""Kernels with and without the z3 guard prover (continuous paper §6.3, Fig. 19), side by side in
one run: the counting measure over pinpoints meeting intervals, where the prover removes the
`length == 0` / `> -inf` tests (see benchmarks/guards_report.py for the rewrites).

    pytest benchmarks/bench_guards.py --benchmark-columns=min,median --benchmark-min-rounds=3

Answers are checked equal before timing; compile time is not timed here (guards_report.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct

N_POINTS = 1_000_000
N_INTERVALS = 100_000


def _data():
    rng = np.random.default_rng(7)
    pts = np.sort(rng.uniform(0, 1e6, N_POINTS))
    edges = np.sort(rng.choice(np.arange(0, 1_000_000, 2, dtype=np.int64), 2 * N_INTERVALS, replace=False))
    A = ct.intervals(edges[0::2].astype(float), edges[1::2].astype(float) + 1.0,
                     values=rng.random(N_INTERVALS), closed="both")
    return pts, A


PTS, A = _data()
CASES = {
    # Σ_x Σ_i P[x, i] A[x]: the pinpoints of P, weighted by A where it covers them
    "points": ("s[] = P[x, i] * A[x] * d(x, i; counting, counting)",
               lambda: {"P": ct.points(PTS.reshape(-1, 1)), "A": A}),
    # per id one pinpoint (Finch SparsePoint) met with A's intervals: Fig. 19's intersection
    "sparse_point": ("C[i] = T[i, x] * A[x] * d(x; counting)",
                     lambda: {"T": ct.Tensor(ct.Dense(ct.SparsePoint(ct.Element(0.0, val=np.ones(N_POINTS)), idx=PTS),
                                                      N_POINTS)), "A": A}),
}
_ARGS = {}


def _args(case):
    if case not in _ARGS:
        _ARGS[case] = CASES[case][1]()
    return _ARGS[case]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("prove", [True, False], ids=["guards-z3", "guards-kept"])
def test_counting_over_pinpoints(benchmark, case, prove):
    text, _ = CASES[case]
    args = _args(case)
    k = ct.compile(text, prove_guards=prove, **args)
    other = ct.compile(text, prove_guards=not prove, **args)
    got, ref = k(**args), other(**args)
    if isinstance(got, ct.Tensor):
        assert np.array_equal(got.to_numpy(), ref.to_numpy())
    else:
        assert got == ref
    benchmark.extra_info["guards removed"] = (k.guard_stats or {}).get("true", 0)
    benchmark(lambda: k(**args))
