"""Reference interpreter (oracle) of ctensor's continuous einsum — slow on purpose, shares no code
with `ctensor`.  Source: the continuous tensor paper, §3.2 (syntax, denotational semantics), §4.1
(piecewise-constant tensors) and §4.2 / Fig. 5 (piecewise-constant evaluation semantics).  This
docstring is the one statement of the semantics and of the counting rules; the modules refer here.

Fig. 5 semantics, as ``evaluate(text, tensors, scalars=None, semiring=None) -> Result`` runs it:

1. Parse ``Out[i, x] = expr * d(r, s; m1, m2)`` (`parse`).  Indices not on the LHS are reduction
   indices; real ones need a measure, int ones default to ``counting``.
2. Step 1a: map every piece of every access into the iteration space by the inverse of its
   (affine) indexing function (`partition.preimage_pieces`).
3. Step 1b: the Fig. 5 *partitions* are the non-empty intersections of one preimage piece (or
   maximal fill gap) per access; every tensor is constant on each.  The oracle refines them into
   product cells: each real index is cut at every finite preimage endpoint into points, open gaps
   and the two rays (Limit intervals ``((a,0),(a,0))``, ``((a,+1),(b,-1))``,
   ``((-inf,+1),(b,-1))``...); each int index into its used coordinates plus `OTHER` (all unused
   ones).
4. Step 2: for each product cell, evaluate the expression on the tensors' constants, weight by
   the measures of the reduction axes and ⊕-accumulate into the output cell.  Semirings: ``"+"``
   (default; fill 0; contribution v × Π w with 0 × ∞ = 0 and measure-zero cells skipped),
   ``"or"`` (default when every reduction index's measure is boolean, an int index's implicit
   counting included; fill False), ``"min"`` (fill +inf), ``"max"`` (fill −inf); an idempotent semiring adds v iff every weight is non-zero; a `UserSemiring`
   (Python add, zero, idempotent, repeat: see `semirings`).  Under a non-idempotent ⊕ the
   ``boolean`` indices reduce with ∨ innermost, per point of the other indices (∑_j ∨_x).
5. An int reduction over `OTHER` under ``"+"`` must contribute 0 (else ValueError).  An int index
   that a tensor of declared extent n reads alone ranges over 0..n-1 only: there `OTHER` is
   replaced by the unused coordinates, each a cell (so ``(T[i] + 1) * d(i; counting)`` and a bare
   ``i`` are evaluated; the differential fuzzer, `tests/fuzz`, generates both).

Measures of a cell along a reduction axis: ``lebesgue`` = hi.v − lo.v (ε dropped); ``boolean`` =
1; a user measure f(lo, hi) (atomless on real axes).  ``counting`` (paper §3.2.1, with ctensor's
convention 0 instead of ∞ on intervals):
  C1. an int coordinate weighs 1; `OTHER` weighs ∞;
  C2. a real cell of positive length weighs 0;
  C3. a real pinpoint cell {a} weighs 1 iff the Fig. 5 partition holding it projects to the point
      {a} on that axis: some access using the axis changes piece (or piece <-> fill) just left of
      a, and some just right of a (`evaluate._isolated`).  So count([a, b)) = 0 though the cell
      {a} is elementary, and touching pieces ([0,2) and [2,4)) are counted as given, not merged;
  C4. a zero of lebesgue or of a user measure stays zero on every sub-cell, but a counting zero
      on an interval does not (a finer partition may hold an isolated pinpoint): see 6.

6. Index sums (``A[x + y]``): a dimension reading several indices is resolved along the one that
   comes last in an *evaluation order*; the others must be on point cells there, elsewhere the
   access is UNDETERMINED (`partition.sum_lookup`).  An order is accepted only if it refines the
   Fig. 5 partitions on every cell that can contribute: where an access is UNDETERMINED the value
   must be the same for every value it may take (a factor annihilates it) — also on a cell whose
   weight is a counting zero (C4) — and where rule C3 would depend on an UNDETERMINED neighbour,
   the cell must add nothing either way.  Otherwise the order raises `NotConstant` and the next
   is tried; a program no order accepts is refused (invalid, paper §4.3, or beyond the oracle).
   The answer does not depend on the order: with ``all_orders=True`` every accepted order is
   evaluated and a disagreement raises `OrderDependent` (an oracle defect); the default is the
   first accepted order, or every one when CTENSOR_ORACLE_ALL_ORDERS=1 (long fuzz runs: it costs
   about 10x on programs of three or four indices).
   Bare real indices on a non-point cell are sampled (ends, middle, every partition coordinate
   inside the cell), a heuristic: a guard like ``(x - y)**2 <= 4`` is seen where it is true.

Data model: `PieceTensor(dims, pieces, fill)` with endpoints ``(value, eps)`` (see `endpoints`,
`pieces`).  Result: ``.value`` (0-d), ``.at(*coords)``, ``.pieces()``, ``.breakpoints(axis)``.
"""
from .endpoints import interval, point, probe_points
from .evaluate import evaluate
from .parse import Program, parse
from .pieces import PieceTensor
from .result import Result
from .semirings import OTHER, SEMIRINGS, UserSemiring

__all__ = ["PieceTensor", "Result", "Program", "evaluate", "parse", "interval", "point",
           "probe_points", "OTHER", "SEMIRINGS", "UserSemiring"]
