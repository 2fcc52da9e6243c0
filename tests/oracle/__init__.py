"""Reference interpreter (oracle) of ctensor's continuous einsum — slow on purpose, shares no code
with `ctensor`.  Source: the continuous tensor paper, §3.2 (syntax, denotational semantics), §4.1
(piecewise-constant tensors) and §4.2 / Fig. 5 (piecewise-constant evaluation semantics).

Semantics implemented by ``evaluate(text, tensors, scalars=None, semiring=None) -> Result``:

1. Parse ``Out[i, x] = expr * d(r, s; m1, m2)`` (`parse`).  Indices not on the LHS are reduction
   indices; real ones need a measure, int ones default to ``counting``.
2. Step 1a: map every piece of every access into the iteration space by the inverse of its
   (affine) indexing function (`partition.preimage_pieces`).
3. Step 1b: cut each real index at every finite preimage endpoint into points, open gaps and the
   two rays (Limit intervals ``((a,0),(a,0))``, ``((a,+1),(b,-1))``, ``((-inf,+1),(b,-1))``...);
   each int index into its used coordinates plus `OTHER` (all unused ones).  Every tensor is
   constant on every product cell.
4. Step 2: for each product cell, evaluate the expression on the tensors' constants, weight by
   the measures of the reduction axes — ``lebesgue`` = hi.v − lo.v (ε dropped), ``counting`` = 1
   on int coordinates and on pinpoint *Fig. 5 partitions* (intersections of one piece or maximal
   fill gap per access), 0 on intervals of positive length, ``boolean`` = 1 — and
   ⊕-accumulate into the output cell.  Semirings: ``"+"`` (default; fill 0; contribution
   v × Π w with 0 × ∞ = 0 and measure-zero cells skipped), ``"or"`` (default when every measure
   is boolean; fill False), ``"min"`` (fill +inf), ``"max"`` (fill −inf); an idempotent semiring
   adds v iff every weight is non-zero.  ``boolean`` requires an idempotent semiring.
5. An int reduction over `OTHER` under ``"+"`` must contribute 0 (else ValueError).

Data model: `PieceTensor(dims, pieces, fill)` with endpoints ``(value, eps)`` (see `endpoints`,
`pieces`).  Result: ``.value`` (0-d), ``.at(*coords)``, ``.pieces()``, ``.breakpoints(axis)``.
"""
from .endpoints import interval, point, probe_points
from .evaluate import evaluate
from .parse import Program, parse
from .pieces import PieceTensor
from .result import Result
from .semirings import OTHER, SEMIRINGS

__all__ = ["PieceTensor", "Result", "Program", "evaluate", "parse", "interval", "point",
           "probe_points", "OTHER", "SEMIRINGS"]
