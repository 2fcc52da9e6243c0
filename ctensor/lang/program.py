"""Front-end analysis of a parsed einsum: names, dimensions, validity, loop order, measures,
semiring, output type.

* binding: output indices, measured indices and names standing alone as an access dimension are
  loop indices; in an affine dimension naming none of them (A[x + c]), the names not passed as
  scalars are; every other name is a scalar (coefficient or constant, A[a*x + b]);
* dimensionalize: each index's kind (integer or real) comes from the levels it addresses; an index
  reading an integer mode may read real modes only as a term of an index sum with a real index
  (Grid[o + d*t + x], the continuous paper's §7.3 form: it stays integer and is bound outside the
  real index); other mixing, or an index used by no tensor, is an InvalidProgramError;
* concordize: the loop order must visit every tensor's levels outermost-first (row-major,
  DESIGN.md §2); a dimension reading several indices (A[y + x], Toeplitz) is lowered at the last
  of them, the others being bound by outer loops; by default the order is topological (ties by
  first appearance, output indices first; an index sum's outer index preferably point-like);
  `order=` is checked against the same constraints; the plan's accesses carry, as `idxs`, the
  index each dimension is lowered at;
* measures: reduction indices are those not on the left; a real reduction index needs a measure,
  an integer one defaults to counting; under a non-idempotent ⊕ the boolean measure's indices
  reduce with ∨ innermost (`lang.nesting`);
* semiring: '+' by default, 'or' when every measure is boolean; a name or a `ct.Semiring`
  (`lang.semiring.resolve`);
* validity (continuous paper §4.3): `ctensor.analysis.validity.check_program`, before any
  "not lowered" error (`_check_lowerable`), so an invalid program is reported as invalid.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import InvalidProgramError
from .affine import NotAffine, coef_poly, form, names_in_order, rebind_access
from .nodes import EAccess, ECall, ELit, Einsum
from .diagonal import check_diagonal
from .nesting import inner_indices, innermost, output_type
from .parser import MEASURES
from .semiring import resolve as resolve_semiring
from .walk import accesses, bind_indices, logical, scalar_names, value_kind   # (re-exported)


@dataclass
class Plan:
    einsum: Einsum
    order: list             # loop order, outermost first
    kinds: dict             # index -> 'int' | 'real'
    source: dict            # index -> (tensor name, depth) of a level addressing it
    measures: dict          # reduction index -> measure
    op: object              # reduction operator ⊕: a name of lower.ops.REDUCTIONS or a ct.Semiring
    out_kind: str           # 'bool' | 'int' | 'float'
    fill: object            # output fill = identity of ⊕
    rhs: object = None      # the right-hand side with index names bound (EIndex, rebound accesses)
    validity: object = None  # the analysis.validity.Verdict of the program


@dataclass
class FrontEnd:
    """A program with its names bound: what validity needs (and what lowering builds on)."""
    rhs: object             # right-hand side: accesses rebound, loop indices as EIndex
    kinds: dict             # index -> 'int' | 'real'
    source: dict            # index -> (tensor name, depth) of a level addressing it
    measures: dict          # reduction index -> measure
    op: str                 # reduction operator ⊕


def _bind_access(acc, es, known, scalars):
    """Bind one access: in a dimension naming a known index (output, measured, or standing alone
    somewhere), the known names are its indices; otherwise its names that were not passed as
    scalars are (A[x + c] with c=... passed).  Raises InvalidProgramError."""
    def pred(d):
        names = set(names_in_order(d))
        if names & known:
            return known.__contains__
        if not names - set(scalars):
            raise InvalidProgramError(f"{acc}: index expression {d} in {es.text!r} names no loop index "
                                      "(every name in it was passed as a scalar)")
        return lambda n: n not in scalars
    try:
        return rebind_access(acc, pred)
    except NotAffine as exc:
        raise InvalidProgramError(f"{acc} in {es.text!r} is not affine in the loop indices ({exc})") from None


def _map_accesses(e, f):
    if isinstance(e, EAccess):
        return f(e)
    if isinstance(e, ECall):
        return ECall(e.op, tuple(_map_accesses(a, f) for a in e.args))
    return e


def front_end(es: Einsum, tensors: dict, scalars: dict, semiring=None, require_scalars=True,
              user_measures=None) -> FrontEnd:
    """Bind names, dimensionalize, and pick measures and the reduction operator (module docstring).
    tensors: name -> object with `.levels()`; scalars: the names passed as scalars; user_measures:
    name -> `ct.Measure`, for the names in d(...) other than lebesgue, counting, boolean.  Raises
    InvalidProgramError."""
    for acc in accesses(es.rhs):
        if acc.tensor not in tensors:
            raise InvalidProgramError(f"tensor {acc.tensor!r} in {es.text!r} was not passed")
        lvls = tensors[acc.tensor].modes()
        if len(lvls) != len(acc.dims):
            raise InvalidProgramError(f"{acc.tensor} has {len(lvls)} modes but is accessed with "
                                      f"{len(acc.dims)} indices in {es.text!r}")
    known = set(es.out_idxs) | set(es.measures) | {d.terms[0][1] for acc in accesses(es.rhs) for d in acc.dims
                                                   if form(d) == "plain"}
    rhs = _map_accesses(es.rhs, lambda a: _bind_access(a, es, known, scalars))
    kinds, source, fallback = {}, {}, {}
    mixed = _mixed_indices(rhs, tensors)
    for acc in accesses(rhs):
        lvls = tensors[acc.tensor].modes()
        for depth, (d, lvl) in enumerate(zip(acc.dims, lvls)):
            perm = bool(acc.permissive and acc.permissive[depth])
            for i in d.indices:
                kind = "int" if i in mixed else lvl.coord
                if i in kinds and kinds[i] != kind:
                    raise InvalidProgramError(f"index {i!r} addresses both integer and real modes in {es.text!r} "
                                              "(an integer index may read a real mode only as a term of an index "
                                              "sum with a real index, Grid[o + d*t + x])")
                kinds[i] = kind
                if i in mixed and lvl.coord == "real":
                    continue      # not its source: the integer mode it reads gives its extent
                # the index's source level (extent, output shape) is one it reads alone (x, x ± c)
                # (a permissive dimension takes no part in it: Finch's dimensionalization, digest §1.6)
                (source if form(d) in ("plain", "shift") and not perm else fallback).setdefault(i, (acc.tensor, depth))
    source.update({i: s for i, s in fallback.items() if i not in source})
    rhs = bind_indices(rhs, kinds)
    for name in scalar_names(rhs):
        if name in kinds:
            raise InvalidProgramError(f"loop index {name!r} is used as a coefficient or constant of an index "
                                      f"expression in {es.text!r}")
        if require_scalars and name not in scalars:
            raise InvalidProgramError(f"scalar {name!r} in {es.text!r} was not passed (pass {name}=<number>)")
    for i in es.out_idxs:
        if i not in kinds:
            raise InvalidProgramError(f"output index {i!r} in {es.text!r} is not used on the right-hand side")
    for i in es.measures:
        if i in es.out_idxs:
            raise InvalidProgramError(f"index {i!r} is both an output index and integrated by d(...)")
        if i not in kinds:
            raise InvalidProgramError(f"measured index {i!r} in {es.text!r} is not used by any tensor")
    measures = {}
    for i in kinds:
        if i in es.out_idxs:
            continue
        if i in es.measures:
            measures[i] = _measure(es.measures[i], i, es.text, user_measures or {})
        elif kinds[i] == "int":
            measures[i] = "counting"
        else:
            raise InvalidProgramError(f"reduction over the real index {i!r} needs a measure: add "
                                      f"'* d({i}; lebesgue)' (or counting, boolean) to {es.text!r}")
    return FrontEnd(rhs, kinds, source, measures, resolve_semiring(semiring, measures, es.text))


def _mixed_indices(rhs, tensors) -> set:
    """Indices that read an integer mode and, on real modes, only terms of index sums that also
    read another index (Grid[o + d*t + x] with Time[t] integer): they stay integer.  Such a
    dimension is lowered at its real index, so t is bound by an outer loop and only shifts the
    real coordinate (formats.affine); the loop order is held to that (`_loop_order`)."""
    on_int, alone_real = set(), set()
    for acc in accesses(rhs):
        for d, lvl in zip(acc.dims, tensors[acc.tensor].modes()):
            if lvl.coord == "int":
                on_int.update(d.indices)
            elif len(set(d.indices)) < 2:
                alone_real.update(d.indices)
    return on_int - alone_real


def _measure(name, i, text, user):
    if name in MEASURES:
        return name
    if name in user:
        return user[name]
    raise InvalidProgramError(f"unknown measure {name!r} for {i!r} in {text!r}: use one of {MEASURES}, or pass "
                              f"{name}=ct.Measure('<weight of lo and hi>')")


def _check_lowerable(rhs, kinds, text, tensors, scalars):
    """Forms that are valid but that the lowering does not implement (run after validity, so an
    invalid program is reported as invalid, not as unsupported).  What is lowered
    (`formats.affine`): on a real mode any dimension `c_1*i_1 + ... + c_k*i_k + c` with non-zero
    literal or scalar coefficients (Offset, Scale — a negative or runtime-signed coefficient
    iterates the level backwards — and Toeplitz sums, lowered at their innermost index); `~` on a
    real mode (a no-op: the extent is the whole line).  On an integer mode: a plain index, or a
    permissive `~(±i ± j + c)` with coefficients ±1 and an integer constant; every integer index
    is read alone somewhere (its extent).  A UniformGrid-binned mode: i, i + c, c*i + b, c > 0."""
    alone = {d.terms[0][1] for acc in accesses(rhs) for k, d in enumerate(acc.dims)
             if form(d) == "plain" and not (acc.permissive and acc.permissive[k])}
    for i, kind in kinds.items():
        if kind == "int" and i not in alone:
            raise InvalidProgramError(f"integer index {i!r} in {text!r} is read only through ~ or index expressions, "
                                      f"so its extent is unknown: read it alone (T[{i}]) in some access")
    for acc in accesses(rhs):
        lvls, modes = tensors[acc.tensor].levels(), tensors[acc.tensor].modes()
        grid = sum(1 for lv in lvls if getattr(lv, "tile", False))
        for k, d in enumerate(acc.dims):
            perm = bool(acc.permissive and acc.permissive[k])
            kind = modes[k].coord      # the mode's, not the index's: Grid[o + d*t + x] with t integer
            if k < grid and (len(d.terms) > 1 or perm or not _positive_literal(d.terms[0][0])):
                raise InvalidProgramError(f"{acc} in {text!r}: {acc.tensor}'s mode {k} is binned by a UniformGrid, "
                                          f"so it can be read as i, i + c or c*i + b with a literal c > 0, not {d}"
                                          + (" with ~" if perm else "") + " (not lowered)")
            if kind == "real":
                continue
            if form(d) == "plain" and not perm:
                continue
            if not perm:
                raise InvalidProgramError(
                    f"{acc} in {text!r}: integer index expression {d} would read {acc.tensor} outside its shape "
                    f"at the ends of the loop; write it permissive, {acc.tensor}[..~({d})..], to read missing "
                    "there (use coalesce(..., value) for another default)")
            for i, c in coef_poly(d).items():
                if c not in ({(): 1}, {(): -1}):
                    raise InvalidProgramError(f"{acc} in {text!r}: the coefficient of integer index {i!r} in {d} must be "
                                              "1 or -1 (other and runtime coefficients are lowered on real modes only)")
            if d.const is not None and value_kind(d.const, tensors, scalars) != "int":
                raise InvalidProgramError(f"{acc} in {text!r}: the constant of integer index expression {d} must be "
                                          "an integer (an int literal or a scalar passed as int)")


def _positive_literal(c) -> bool:
    return isinstance(c, ELit) and not isinstance(c.value, bool) and c.value > 0


def _lowering(dims, order):
    """Per chain (the dimensions' index sets of an access, or the output's), the index each
    dimension is lowered at — the last of its indices in `order` — or None when they do not
    follow storage order (each dimension lowered at a strictly later loop than the previous)."""
    pos = {i: k for k, i in enumerate(order)}
    out = []
    for chain in dims:
        low = [max(d, key=pos.get) for d in chain]
        # a diagonal B[x, x] reads two levels at one loop: the second after the first's piece is fixed
        if any(pos[a] > pos[b] or (pos[a] == pos[b] and not da == db == {a})
               for a, b, da, db in zip(low, low[1:], chain, chain[1:])):
            return None
        out.append(tuple(low))
    return out


def _pointlike(rhs, tensors, kinds, measures):
    """index -> does a valid program give it one value per effectual partition?  (integer,
    counting measure, or read alone by a level of pinpoints)"""
    pins = {d.terms[0][1] for acc in accesses(rhs) for d, lvl in zip(acc.dims, tensors[acc.tensor].modes())
            if len(d.terms) == 1 and getattr(lvl, "pinpoints", False)}
    return lambda i: kinds[i] == "int" or measures.get(i) == "counting" or i in pins


def check_order(order):
    """`order=`: None or a sequence of index names (a str is refused: with names longer than one
    letter it is ambiguous).  Raises TypeError naming the argument."""
    if order is not None and (isinstance(order, str) or not hasattr(order, "__iter__")):
        raise TypeError(f"order= must be a sequence of index names such as ['i', 'x'], got {order!r}")
    return order


def make_plan(es: Einsum, tensors: dict, scalars: dict, semiring=None, order=None, assume_valid=False,
              measures=None) -> Plan:
    """tensors: name -> object with `.levels()` (root level first) and `.leaf_kind`.

    Runs the front end, then the validity check (`ctensor.analysis.validity`, continuous paper
    §4.3), then rejects forms the lowering does not implement.  Raises InvalidProgramError
    (`ValidityUnknown` when z3 cannot decide validity and assume_valid is False)."""
    from ..analysis.validity import check_program   # analysis builds on lang: import at use
    fe = front_end(es, tensors, scalars, semiring, user_measures=measures)
    fe.rhs = logical(fe.rhs, tensors, scalars, fe.kinds)
    verdict = check_program(fe.rhs, tensors, fe.kinds, fe.measures, fe.op, es.text, assume_valid=assume_valid)
    rhs, kinds, source, measures, op = fe.rhs, fe.kinds, fe.source, fe.measures, fe.op
    _check_lowerable(rhs, kinds, es.text, tensors, scalars)
    check_diagonal(rhs, list(accesses(rhs)), kinds, measures, tensors, es.text, fe.op)
    op, out_kind, fill = output_type(op, value_kind(rhs, tensors, scalars, kinds), measures, kinds, es.text)
    pointlike, bound = _pointlike(rhs, tensors, kinds, measures), rhs
    order, rhs = innermost(lambda o: _loop_order(es, bound, kinds, o, pointlike), order, inner_indices(op, measures),
                           es.text)
    for acc in accesses(rhs):
        for d, lvl, i in zip(acc.dims, tensors[acc.tensor].modes(), acc.idxs):
            if lvl.coord == "real" and kinds[i] == "int":
                raise InvalidProgramError(f"{acc} in {es.text!r}: its real dimension {d} would be lowered at the "
                                          f"integer index {i!r}; pass an order= with {i!r} before the real "
                                          f"indices of {d}")
    return Plan(es, order, kinds, source, measures, op, out_kind, fill, rhs, verdict)


def _no_order(text, accs):
    """Why no loop order exists: an access reading one index in two dimensions where one of them is
    an index sum (B[x + y, y]: every order lowers its dimensions at one loop or out of storage order;
    a diagonal of single-index dimensions, B[x, x] or B[x, 2*x], is lowered), else a transposed
    access."""
    for acc in accs:
        seen = {}
        for k, d in enumerate(acc.dims):
            for i in d.indices:
                if i in seen:
                    return (f"{acc} reads index {i!r} in dimensions {seen[i]} and {k}, and no loop order lowers "
                            f"them in storage order (not lowered: a diagonal beside an index sum; one whose dimensions "
                            f"each read that one index alone, as B[x, 2*x], is) in {text!r}")
                seen[i] = k
    return (f"no loop order visits every tensor of {text!r} in storage order (a transposed access): "
            "store one tensor in the other order")


def _loop_order(es, rhs, kinds, order, pointlike):
    """The loop order (outermost first) and, per access, the index each dimension is lowered at.

    A dimension reading several indices (A[y + x]) is lowered at the last of them (Toeplitz: the
    others are bound by outer loops).  Default order: repeatedly the first index (output indices
    first, then by appearance) that may come next — it is not the last index of a dimension
    whose access still has an earlier dimension unlowered — preferring, as an outer index of an
    index sum, one that is point-like (integer, counting, or read alone by a pinpoint level: the
    valid programs pin it, paper §4.3)."""
    accs = list(accesses(rhs))
    chains = [[set(d.indices) for d in acc.dims] for acc in accs] + [[{i} for i in es.out_idxs]]
    if order is not None:
        order = list(check_order(order))
        if sorted(order) != sorted(kinds):
            raise InvalidProgramError(f"order={order} must list exactly the indices {sorted(kinds)}")
        low = _lowering(chains, order)
        if low is None:
            bad = next(acc for acc, ch in zip(accs + [None], chains) if _lowering([ch], order) is None)
            if bad is None:
                raise InvalidProgramError(f"order={order} writes the output {es.out}[{', '.join(es.out_idxs)}] out "
                                          f"of its storage order; pass order= with {', '.join(es.out_idxs)} in "
                                          "that relative order (outputs are written in the order of their indices)")
            raise InvalidProgramError(f"order={order} visits {bad} out of storage order; "
                                      "transposed access needs a tensor stored in that order")
    else:
        appearance = list(es.out_idxs) + [i for acc in accs for d in acc.dims for i in d.indices]
        first = {}
        for k, i in enumerate(appearance):
            first.setdefault(i, k)
        order = []

        def ready(i):
            done = set(order)
            for ch in chains:
                for k, d in enumerate(ch):
                    if i in d and d - done == {i} and any(not e <= done | {i} for e in ch[:k]):
                        return False
            return True

        def outer(i):     # placing i now makes it an outer index of an index sum
            return any(i in d and len(d - set(order)) > 1 for ch in chains for d in ch)
        while len(order) < len(kinds):
            cand = [i for i in kinds if i not in order and ready(i)]
            if not cand:
                raise InvalidProgramError(_no_order(es.text, accs))
            order.append(min(cand, key=lambda i: (outer(i) and not pointlike(i), first.get(i, len(first)))))
        low = _lowering(chains, order)
        if low is None:
            raise InvalidProgramError(_no_order(es.text, accs))
    for acc, idxs, ch in zip(accs, low, chains):
        if any(a == b and not da == db == {a} for a, b, da, db in zip(idxs, idxs[1:], ch, ch[1:])):
            raise InvalidProgramError(f"{acc}: two of its dimensions would be lowered at the same loop "
                                      f"({', '.join(idxs)}; a diagonal access) in order {order}")
    lowered = {id(acc): idxs for acc, idxs in zip(accs, low)}
    return order, _map_accesses(rhs, lambda a: replace(a, idxs=lowered[id(a)]))
