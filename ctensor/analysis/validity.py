"""Program validity (continuous paper §4.3, Fig. 7; digest §3.6, §3.7; DESIGN.md §2).

A continuous einsum is valid under the piecewise-constant semantics when

1. every effectual partition of its iteration space — the intersection of the accesses' pieces
   pulled back through their affine index expressions — is an axis-aligned box in the loop
   indices (or a single point, or empty), and
2. every expression of loop indices outside tensor accesses (`A[x] * x`, the radius test
   `(x - ox)**2 + (y - oy)**2 <= r**2`) is constant on every effectual partition — in practice,
   the partitions are single points in those indices, e.g. because a pinpoint tensor is a factor.

Otherwise the output is not piecewise constant: `C[y] = A[y + x] * B[x] * d(x; lebesgue)` over
interval tensors cuts parallelograms and its result is piecewise linear in y; with a pinpoint mask
`M[y] * A[y + x] * B[x]` every partition is a segment of one y, and the program is valid.

How it is decided, cheapest first:
* syntactic fast path: every dimension reads one index and every index read outside accesses is
  pinned — valid, z3 is not imported;
* the verdict cache, keyed by the access pattern (`pattern.py`);
* z3 (`smt.py`): quantifier-free swap / pinned / constant queries under a resource limit.

Policy for z3 `unknown` (digest §3.7): refuse with `ValidityUnknown` (never accept silently);
`assume_valid=True` accepts the program and logs a warning.  The verdict of an *invalid* program
cannot be overridden.
"""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from ..errors import InvalidProgramError, ValidityUnknown
from ..lang.nodes import EAccess, ECall, EIndex, ELit, EScalar
from .cache import VerdictCache
from .pattern import Names, Pattern, build_pattern, syntactically_valid, term_indices

_CACHE = VerdictCache()


@dataclass(frozen=True)
class Verdict:
    """status: 'valid' | 'invalid' | 'unknown'; method: 'syntactic' (no z3) or 'z3'; failure: the
    z3 counterexample (`smt.Failure`, canonical names) of an invalid program; reason: z3's
    reason_unknown; pattern: the access pattern the verdict is about (also its cache key)."""
    status: str
    method: str
    pattern: Pattern
    failure: object = None
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def verdict_cache() -> VerdictCache:
    """The in-memory verdict cache (`.info()` for hits and misses, `.clear()` to empty it)."""
    return _CACHE


def decide(pattern: Pattern) -> Verdict:
    """The verdict of an access pattern: fast path, then cache, then z3.  Never raises."""
    if syntactically_valid(pattern):
        return Verdict("valid", "syntactic", pattern)
    key = pattern.key
    v = _CACHE.get(key)
    if v is None:
        from . import smt              # imports z3: only programs that need it pay for it
        out = smt.solve(pattern)
        v = Verdict(out.status, "z3", pattern, out.failure, out.reason)
        _CACHE.put(key, v)
    return v


def check_program(rhs, tensors: dict, kinds: dict, measures: dict, op: str, text: str,
                  assume_valid: bool = False) -> Verdict:
    """Check a bound program (`lang.program.front_end`: accesses rebound, indices as EIndex).

    tensors: name -> Tensor (only the levels' `pinpoints`/`coord` and the fill matter); kinds:
    index -> 'int' | 'real'; measures: reduction index -> measure; op: the reduction ⊕.

    Returns the Verdict of a valid program (or of an undecided one with assume_valid=True).
    Raises InvalidProgramError naming the offending access or expression and a counterexample
    from the z3 model; ValidityUnknown when z3 cannot decide and assume_valid is False.
    """
    pattern, names = build_pattern(rhs, tensors, kinds, measures, op)
    v = decide(pattern)
    if v.status == "invalid" and v.failure.kind == "term":
        # the partitions are boxes (checked first); each index term needs to be constant only where
        # it is read: check it alone, with the accesses that drop it at their fill as guards
        for term in names.terms:
            pattern, names = build_pattern(rhs, tensors, kinds, measures, op, term)
            v = decide(pattern)
            if not v.valid:
                break
    if v.status == "invalid":
        raise InvalidProgramError(_render_invalid(v, names, text) + _point_runs_hint(tensors))
    if v.status == "unknown":
        msg = (f"cannot decide whether {text!r} is valid (continuous paper §4.3): z3 answered unknown "
               f"({v.reason}) for the accesses {', '.join(str(a) for a in names.accesses)}")
        if not assume_valid:
            raise ValidityUnknown(msg + "; pass assume_valid=True to compile it anyway")
        import logging              # imported here: `import ctensor` does not pay for it
        logging.getLogger("ctensor.validity").warning("%s; compiling anyway because assume_valid=True", msg)
    return v


def check(text: str, *, semiring=None, assume_valid: bool = False, **args) -> Verdict:
    """Check the validity of a continuous einsum without compiling it.

    `args` are what `ct.einsum` takes: tensors (a `ct.Tensor`, or just its format — a `Level` —
    since validity depends only on formats) and scalars (their values do not matter; scalars may
    be omitted when the program shows they are not indices).  `semiring` as in `ct.compile`.

    Checks (continuous paper §4.3, digest §3.6): effectual partitions are axis-aligned boxes, and
    index expressions outside accesses are constant on them.  Returns a `Verdict`.  Raises
    InvalidProgramError for a malformed or invalid program (naming the access and a
    counterexample), ValidityUnknown when z3 cannot decide (unless assume_valid=True).
    """
    from ..formats.level import Level
    from ..formats.tensor import Tensor
    from ..lang.parser import parse
    from ..lang.program import front_end
    es = parse(text)
    tensors = {k: Tensor(v, name=k) if isinstance(v, Level) else v for k, v in args.items()
               if isinstance(v, (Tensor, Level))}
    scalars = {k: v for k, v in args.items() if k not in tensors}
    fe = front_end(es, tensors, scalars, semiring, require_scalars=False)
    return check_program(fe.rhs, tensors, fe.kinds, fe.measures, fe.op, text, assume_valid)


# ------------------------------------------------------------------------------------ messages
def _all_points(lvl) -> bool:
    """A real interval level (SparseRunList, SparseInterval) whose stored intervals are all
    closed points [p, p]: pinpoints by value, intervals by format."""
    left, right = getattr(lvl, "left", None), getattr(lvl, "right", None)
    if getattr(lvl, "coord", None) != "real" or left is None or right is None or not len(left) \
            or not hasattr(lvl, "closed"):
        return False
    if lvl.closed is None:           # SparseRunList with Limit endpoints
        closed = not np.any(lvl.left_eps) and not np.any(lvl.right_eps)
    else:
        closed = lvl.closed == "both"
    return bool(closed and np.array_equal(left, right))


def _point_runs_hint(tensors) -> str:
    """Validity is decided from the formats: a run list of points is a run list.  Say how to
    store such a tensor as pinpoints, which the program may need (issue 31)."""
    names = [name for name, t in tensors.items() if hasattr(t, "levels") and any(_all_points(lv) for lv in t.levels())]
    if not names:
        return ""
    return (f". Note: every interval of {', '.join(names)} is a closed point [p, p], but its level is an interval "
            f"level, and validity is decided from formats: stored as pinpoints, a SparseList level of real "
            f"coordinates, ct.Tensor(ct.SparseList(ct.Element(0.0, val=values), [0, len(p)], p)) (or "
            f"ct.points(coords) for boolean points with ids), the program may be valid")


# (symbol, precedence) as in Python: ** > unary > * / > + - > & > ^ > | > comparisons
_INFIX = {"**": ("**", 8), "*": ("*", 6), "/": ("/", 6), "+": ("+", 5), "-": ("-", 5), "and": ("&", 4),
          "xor": ("^", 3), "or": ("|", 2), "lt": ("<", 1), "le": ("<=", 1), "gt": (">", 1), "ge": (">=", 1),
          "eq": ("==", 1), "ne": ("!=", 1)}


def _prec(e) -> int:
    if isinstance(e, ECall):
        if e.op in _INFIX:
            return _INFIX[e.op][1]
        return 7 if e.op in ("neg", "not") else (0 if e.op == "ifelse" else 9)
    return 9


def expr_text(e) -> str:
    """Einsum text of an expression tree, with the parentheses Python's precedence needs."""
    if isinstance(e, ELit):
        return repr(e.value)
    if isinstance(e, (EScalar, EIndex)):
        return e.name
    if isinstance(e, EAccess):
        return str(e)
    p = _prec(e)

    def sub(a, tighter=False):        # tighter: the right operand of - / (and the left one of **)
        t = expr_text(a)
        return f"({t})" if _prec(a) < p or (tighter and _prec(a) == p) else t
    if e.op in _INFIX:
        sym = _INFIX[e.op][0]
        return f"{sub(e.args[0], e.op == '**')} {sym} {sub(e.args[1], e.op in ('-', '/') or p == 1)}"
    if e.op in ("neg", "not"):
        return ("-" if e.op == "neg" else "~") + sub(e.args[0])
    if e.op == "ifelse":
        return f"{sub(e.args[1], True)} if {sub(e.args[0], True)} else {expr_text(e.args[2])}"
    return f"{e.op}({', '.join(expr_text(a) for a in e.args)})"


def _point(p: dict, names: Names) -> str:
    return "(" + ", ".join(f"{names.index[i]}={v}" for i, v in p.items()) + ")"


def _pieces(f, names: Names) -> str:
    """'A[y + x] with y + x in [0, 1]; M[y] with y = 2 (and c = 1)': the partition's pieces."""
    per: dict = {}
    for (k, d), piece in f.pieces.items():
        where = f"= {piece[1]}" if piece[0] == "point" else f"in [{piece[1]}, {piece[2]}]"
        per.setdefault(k, []).append(f"{names.accesses[k].dims[d]} {where}")
    out = "; ".join(f"{names.accesses[k]} with {', '.join(ds)}" for k, ds in per.items())
    sc = [f"{names.scalar[s]} = {v}" for s, v in f.scalars.items() if s in names.scalar]
    return out + (f" (and {', '.join(sc)})" if sc else "")


def _render_invalid(v: Verdict, names: Names, text: str) -> str:
    f = v.failure
    if f.kind == "box":
        acc = names.accesses[f.access]
        dim = acc.dims[f.dim]
        swap = {**f.a, f.axis: f.b[f.axis]}
        piece = f.pieces[(f.access, f.dim)]
        where = f"differs from {piece[1]}" if piece[0] == "point" else f"lies outside [{piece[1]}, {piece[2]}]"
        return (f"invalid program {text!r}: because of {acc}, its effectual partitions are not axis-aligned "
                f"boxes, so the result is not piecewise constant (continuous paper §4.3). Counterexample — "
                f"pieces {_pieces(f, names)}: the partition contains {_point(f.a, names)} and "
                f"{_point(f.b, names)} but not {_point(swap, names)}, where {dim} = {f.value_at_swap} {where}. "
                f"A partition may be a non-box only where it is a single point: mask with a tensor of "
                f"pinpoints (SparseList, ct.points) over the indices of {acc}")
    term = names.terms[f.term]
    idxs = ", ".join(names.index[i] for i in term_indices(v.pattern.terms[f.term]))
    vals = (f", where it is {f.term_values[0]} and {f.term_values[1]}" if f.term_values
            else " (z3 cannot express it, so it is not known to be constant)")
    return (f"invalid program {text!r}: the expression {expr_text(term)} reads loop indices outside any tensor "
            f"access, so it must be constant on each effectual partition (continuous paper §4.3), but it is "
            f"not. Counterexample — pieces {_pieces(f, names)}: the partition contains {_point(f.a, names)} and "
            f"{_point(f.b, names)}{vals}. Such expressions are allowed only where partitions are single points "
            f"in {idxs}: multiply by a tensor of pinpoints (SparseList, ct.points) read with them")
