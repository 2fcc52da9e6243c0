"""The symbolic simplifier run after every looplet pass (Finch `simplify.jl`, digest §4.2).

Rules, as data where they are data:
* fill leaves become literals; a fully indexed leaf value becomes a `Val`;
* constant folding of calls whose arguments are all literals; `a if c else b` with a constant c
  is the taken branch (so a masked (min,+) value over a fill region is +inf, then a no-op);
* annihilators (x*0 → 0, x & false → false, x | true → true) — not IEEE: 0·inf is 0 here, as in
  Finch (digest pitfall 13);
* identities (x*1, x+0, x & true, x | false, min(x, +inf), max(x, -inf));
* an assignment of the reduction's identity is a no-op (`+= 0`, `|= false`, `min= inf`);
* empty loops, sieves and blocks vanish; constant sieves fold;
* `missing` (a permissive read outside its tensor, `formats.affine`) propagates through every
  operator except `coalesce`, which takes its first argument that is not missing, and except
  that an annihilator wins (missing * 0 is 0, missing & false is false); so that the answer does
  not depend on which access resolves first, `op(missing, X)` waits until X is settled (reads no
  tensor any more).  An assignment of missing is dropped.
* under a counting measure on a real index, an access that a rule drops (an annihilator, a folded
  `ifelse`, a settled `coalesce`) still cuts the partition (paper §4.2, Fig. 5: the counting
  measure weighs the pinpoints of the partition every tensor of the expression cuts), so it is kept
  beside the value in a `CUT` node; see `CUT`.
"""
from __future__ import annotations

import math
import operator

from ..errors import InvalidProgramError
from ..ir import build as b
from ..looplets.nodes import FillLeaf, Value
from .notation import MISSING, Access, Assign, Block, Call, Lit, Loop, Sieve, Val, uses_index, walk_accesses
from .tile import SUFFIX
from ..lang.semiring import identity

# `Call(CUT, (value, a1, a2, ...))` has the value `value`; the accesses a1, a2, ... are read only for
# the partition they cut.  `(A[x] * 0 + C[x]) * d(x; counting)` with A a pinpoint at 12 inside a run of
# C counts C(12) once; dropping A with its product would count nothing (C alone has no pinpoint).
# Cuts are lifted to the top of an assignment's right-hand side, an access leaves its cut once it
# reads no kept index, and a cut without accesses is its value, so the generated code never sees one.
CUT = "cut"

# `Call(MAYBE, (present, value))` is `value` where the boolean expression `present` holds and missing
# elsewhere.  A permissive read outside its tensor is missing, but an annihilator wins over it (the
# literal rule below folds `min(missing, -inf)` to -inf); when the other operand is a runtime value
# (-inf stored in a Dense W of `min(V[~(i + 1)], W[i])`), whether it annihilates is known only at
# run time, so the result is `maybe(W[i] == -inf, -inf)`.  Operators and coalesce carry it up; the
# assignment writes it under `if present` (`lowerer.emit_assign`), so the code never sees one.
MAYBE = "maybe"

# `Call(PRESENT, (a,))` is whether the access a stores a leaf there (True) or reads its fill
# (False); a is the very access object read for its value elsewhere in the expression, so one
# cursor serves both (`lower.lowerer._pinned`).  Where a (marked `Access.tracked`) resolves to a
# leaf it becomes `Call(TRACKED, (value, present))`, which `lower.lowerer.settle_presence` splits
# before anything else reads the expression.
PRESENT = "present"
TRACKED = "tracked"

ANNIHILATORS = {"*": [0, False], "and": [False], "or": [True], "min": [-math.inf], "max": [math.inf]}
IDENTITIES = {"*": [1, True], "+": [0, False], "and": [True], "or": [False], "min": [math.inf],
              "max": [-math.inf], "xor": [False]}


def _nan_min(a, b):
    return a if a != a else b if b != b else min(a, b)     # NaN propagates, as in the generated code


def _nan_max(a, b):
    return a if a != a else b if b != b else max(a, b)


_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
         "**": lambda a, b: a ** b if isinstance(b, int) and b >= 0 else math.pow(a, b),
         "min": _nan_min, "max": _nan_max, "lt": operator.lt, "le": operator.le,
         "gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne,
         "neg": operator.neg, "not": operator.not_, "sqrt": math.sqrt, "abs": abs,
         "exp": lambda v: _exp(v), "log": lambda v: _log(v)}


def _exp(v):
    """exp as the generated code computes it (llvm.exp): inf past the float range, not an error."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _log(v):
    """log as llvm.log: -inf at 0, NaN below it."""
    return -math.inf if v == 0 else math.nan if v < 0 or v != v else math.log(v)


def _lit_is(a, values) -> bool:
    return isinstance(a, Lit) and any(a.value == v for v in values)


def _fold(op, args):
    vals = [a.value for a in args]
    if op == "and":
        return Lit(all(vals)) if all(isinstance(v, bool) for v in vals) else None
    if op == "or":
        return Lit(any(vals)) if all(isinstance(v, bool) for v in vals) else None
    if op == "xor":
        return None
    if op == "*" and all(isinstance(v, bool) for v in vals):
        return Lit(all(vals))
    f = _FOLD.get(op)
    if f is None:
        return None
    try:
        out = vals[0] if len(vals) == 1 and op not in ("neg", "not", "sqrt", "abs", "exp", "log") else None
        if out is None:
            out = f(*vals) if len(vals) <= 2 else None
            if out is None:
                out = vals[0]
                for v in vals[1:]:
                    out = f(out, v)
    except (ArithmeticError, ValueError):
        return None
    if isinstance(out, bool) and op in ("+", "-"):
        out = int(out)
    return Lit(out)


def _missing(a) -> bool:
    return isinstance(a, Lit) and a.value is MISSING


def _maybe(e) -> bool:
    return isinstance(e, Call) and e.op == MAYBE


def _parts(e):
    """(present, value) of an operand: present is None (always) unless it is a MAYBE."""
    return (e.args[0], e.args[1]) if _maybe(e) else (None, e)


def _all(conds):
    conds = [c for c in conds if c is not None]
    return None if not conds else conds[0] if len(conds) == 1 else Call("and", tuple(conds))


def _any(conds):
    return conds[0] if len(conds) == 1 else Call("or", tuple(conds))


def _annihilates(op, e):
    """The condition "operand e is present and holds op's annihilator" (e a runtime value)."""
    c, v = _parts(e)
    return _all([c, Call("eq", (v, Lit(ANNIHILATORS[op][0])))])


def _with_maybe(op, args, keep):
    """op over settled operands, some of them MAYBE (none missing): present where all are, or
    where a present operand is op's annihilator, whose value it then takes."""
    present = _all([_parts(a)[0] for a in args])
    if op == "coalesce":
        c, v = _parts(args[0])
        rest = _simplify_call(op, args[1:], keep) if len(args) > 1 else Lit(MISSING)
        if _missing(rest):
            return args[0]
        c2, v2 = _parts(rest)
        value = _simplify_call("ifelse", (c, v, v2), keep)
        return value if c2 is None else Call(MAYBE, (_any([c, c2]), value))
    if op == "ifelse" and not _maybe(args[0]):
        (cx, vx), (cy, vy) = _parts(args[1]), _parts(args[2])
        taken = Call("ifelse", (args[0], Lit(True) if cx is None else cx, Lit(True) if cy is None else cy))
        return Call(MAYBE, (taken, _simplify_call(op, (args[0], vx, vy), keep)))
    value = _simplify_call(op, tuple(_parts(a)[1] for a in args), keep)
    if op not in ANNIHILATORS:
        return Call(MAYBE, (present, value))
    z = next((a for a in args if _lit_is(a, ANNIHILATORS[op])), None)
    if z is not None:                # a literal annihilator wins over the missing operands
        return z
    z = Lit(ANNIHILATORS[op][0])
    live = [_annihilates(op, a) for a in args if not isinstance(a, Lit)]
    return Call(MAYBE, (_any([present] + live), _simplify_call("ifelse", (present, value, z), keep)))


def _settled(e) -> bool:
    """Reads no tensor any more: its value (missing or not) is known at this point."""
    if isinstance(e, Call):
        return all(_settled(a) for a in e.args)
    return not isinstance(e, Access)


def _reads(a: Access, keep) -> bool:
    # a tagged access (`Access.pins`) has consumed its real index but still tells at the collapse
    # which inner coordinates the point is a pinpoint of
    # a tile loop x#cell (`lower.tile`) is the axis x read at the cells of a grid: the accesses a
    # grid tensor's einsum reads there still cut x's partition
    return any(i in keep or i.endswith(SUFFIX) and i[:-len(SUFFIX)] in keep for i in a.idxs) or \
        bool(a.pins & keep) or any(uses_index(a, i) for i in keep)


def _cut(value, dropped, keep):
    """`value`, carrying the accesses of the expressions `dropped` that read an index in `keep`
    (`CUT`); just `value` when there are none."""
    if not keep:
        return value
    accs = [a for e in dropped for a in walk_accesses(e) if _reads(a, keep)]
    if not accs:
        return value
    if isinstance(value, Call) and value.op == CUT:
        return Call(CUT, value.args + tuple(accs))
    return Call(CUT, (value, *accs))


def simplify_expr(node, keep=frozenset()):
    """Simplify an expression.  `keep`: the real indices still under a counting measure, whose
    partition every access cuts (see `CUT`)."""
    if isinstance(node, Access):
        if isinstance(node.tns, FillLeaf):
            return Lit(node.tns.value)
        if isinstance(node.tns, Value) and not node.idxs:
            return Val(node.tns.expr, node.tns.dtype)
        return node
    if not isinstance(node, Call):
        return node
    if node.op == PRESENT:           # keeps its access object (shared with the value's)
        a = node.args[0]
        if isinstance(a, Access) and isinstance(a.tns, FillLeaf):
            return Lit(False)
        if isinstance(a, Access) and isinstance(a.tns, Value) and not a.idxs:
            return Lit(True)
        return node
    args = tuple(simplify_expr(a, keep) for a in node.args)
    if node.op == CUT:
        return _cut(args[0], args[1:], keep)
    carried = [a for a in args if isinstance(a, Call) and a.op == CUT]
    if carried:                  # lift the cuts of the arguments to this node
        args = tuple(a.args[0] if isinstance(a, Call) and a.op == CUT else a for a in args)
        return _cut(_simplify_call(node.op, args, keep), [Call(CUT, a.args[1:]) for a in carried], keep)
    return _simplify_call(node.op, args, keep)


def _simplify_call(op, args, keep):
    if op == "wmul" and isinstance(args[1], Lit) and args[1].value is not MISSING and args[1].value == 0:
        # a measure weight times a zero value is 0 whatever the weight (0·∞ = 0, `ops._call`): the
        # collapse of a fill region is then a no-op assignment, dropped (not a loop of `x += 0`)
        return _cut(Lit(0.0), args, keep)
    if op == MAYBE:
        c, v = args
        if _maybe(c):                # a presence that may be missing: present where it is, and true
            c = _simplify_call("and", _parts(c), keep)
        if _maybe(v):
            c2, v = _parts(v)
            c = _simplify_call("and", (c, c2), keep)
        if _missing(v) or _missing(c) or isinstance(c, Lit) and not c.value:
            return Lit(MISSING)
        return v if isinstance(c, Lit) else Call(op, (c, v))
    if op == "coalesce":
        args = tuple(a for a in args if not _missing(a))
        if not args:
            return Lit(MISSING)
        if _maybe(args[0]) and all(_settled(a) for a in args):
            return _with_maybe(op, args, keep)
        # a value that cannot become missing any more (every access in it is resolved) wins
        if len(args) == 1 or isinstance(args[0], (Lit, Val)):
            return _cut(args[0], args[1:], keep)
        return Call(op, args)
    if op == "ifelse" and isinstance(args[0], Lit) and not _missing(args[0]):
        return _cut(args[1], args[2:], keep) if args[0].value else _cut(args[2], args[1:2], keep)
    if any(_missing(a) for a in args):
        if op == "ifelse" and not _missing(args[0]) and all(_settled(a) for a in args):
            raise InvalidProgramError("a branch of a data-dependent `a if c else b` is missing (a permissive "
                                      "read outside its tensor): wrap the access in coalesce(..., value)")
        if op in ANNIHILATORS and any(_lit_is(a, ANNIHILATORS[op]) for a in args):
            z = next(a for a in args if _lit_is(a, ANNIHILATORS[op]))
            return _cut(z, args, keep)
        if not all(_settled(a) for a in args):
            return Call(op, args)
        live = [a for a in args if not isinstance(a, Lit)] if op in ANNIHILATORS else []
        # missing, unless a runtime operand turns out to be the annihilator
        return Call(MAYBE, (_any([_annihilates(op, a) for a in live]), Lit(ANNIHILATORS[op][0]))) if live \
            else Lit(MISSING)
    if any(_maybe(a) for a in args) and all(_settled(a) for a in args):
        return _with_maybe(op, args, keep)
    if op == "ifelse":
        c, x, y = args
        if isinstance(x, Lit) and isinstance(y, Lit) and x.value == y.value and type(x.value) is type(y.value):
            return _cut(x, [c], keep)
        return Call(op, args)
    if all(isinstance(a, Lit) for a in args):
        folded = _fold(op, args)
        if folded is not None:
            return folded
    if op in ANNIHILATORS and any(_lit_is(a, ANNIHILATORS[op]) for a in args):
        z = next(a for a in args if _lit_is(a, ANNIHILATORS[op]))
        return _cut(z, args, keep)
    if op in IDENTITIES:
        keep = tuple(a for a in args if not _lit_is(a, IDENTITIES[op]))
        if len(keep) < len(args):
            if not keep:
                return Lit(IDENTITIES[op][0])
            if len(keep) == 1:
                return keep[0]
            args = keep
    if op == "-" and len(args) == 2 and _lit_is(args[1], [0]):
        return args[0]
    return Call(op, args)


def simplify(node, real=frozenset()):
    """Simplify a statement tree; returns None when nothing is left to do.  `real`: the continuous
    loops around `node` (collected on the way down)."""
    if node is None:
        return None
    if isinstance(node, Block):
        out = []
        for s in node.stmts:
            s = simplify(s, real)
            if s is None:
                continue
            out.extend(s.stmts if isinstance(s, Block) else [s])
        if not out:
            return None
        return out[0] if len(out) == 1 else Block(out)
    if isinstance(node, Loop):
        body = simplify(node.body, real | {node.idx} if node.ext.continuous else real)
        return None if body is None else Loop(node.idx, node.ext, body)
    if isinstance(node, Sieve):
        if b.is_const(node.cond, False):
            return None
        body = simplify(node.body, real)
        if body is None:
            return None
        return body if b.is_const(node.cond, True) else Sieve(node.cond, body)
    if isinstance(node, Assign):
        keep = frozenset(i for i, m in node.measures.items() if m == "counting" and i in real)
        rhs = simplify_expr(node.rhs, keep)
        val = rhs.args[0] if isinstance(rhs, Call) and rhs.op == CUT else rhs
        ident = identity(node.op)
        if ident is not None and isinstance(val, Lit) and val.value == ident or \
                isinstance(val, Lit) and val.value is MISSING:
            return None
        return node.with_(rhs=rhs)
    return node
