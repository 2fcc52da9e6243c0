"""Differential fuzzer: random continuous-einsum programs, ctensor against the reference interpreter.

What it generates (`programs`, `levels`): 1-3 tensors per program — explicit level nests of 1-3
modes over every level kind (Dense, SparseList of ids or real pinpoints, SparsePoint,
SparseInterval of ids or reals, SparseRunList with homogeneous or per-interval Limit endpoints,
SparseByteMap, UnitCells dense or through a row index, UniformGrid) and leaves (float, int, bool,
float32 Elements, fill 0 or 1, Pattern), or the constructors `ct.intervals` (every closedness,
per-interval lists, fills, dtypes), `ct.points` (with and without a grid), `ct.box`,
`ct.interval_set`; empty fibers and empty tensors, touching pieces, pinpoint runs, ±inf bounds.
Indices x, y, z (real) and i, j, k (integer), read plainly, through affine maps (offsets, scalar
coefficients, negative and fractional scales) or index sums (Toeplitz); expressions of `*` mostly,
`+ - min max`, comparisons, `& |`, scalars, bare indices, `x if .. else inf`; scalar, integer,
continuous and mixed outputs; measures lebesgue, counting, boolean and user `ct.Measure`s;
semirings `+`, `or`, `min`, `max` (and user ones once `ct.Semiring` exists: `semirings`); `order=`
sometimes.  Each program runs through ctensor's public API and through `tests.oracle`
(`check`); outcomes are match, mismatch, refused-valid, oracle-refused, crash and timeout.
Programs run in worker subprocesses (`runner`) with a fresh kernel cache; `summary` prints counts,
refusal categories, compile times and a reproduction line per failure.

    python -m tests.fuzz --programs 10000 --seed 0 --jobs 2 --out summary.json
    python -m tests.fuzz --seed 0 --only 71          # one program, in-process, with its traceback

Program k of seed s is drawn from numpy's generator seeded with (s, k): a run is deterministic,
and a failure is reproduced by its one line.  CI runs a fixed seed and budget (tests/test_fuzzer.py).
"""
