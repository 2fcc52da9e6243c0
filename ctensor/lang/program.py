"""Front-end analysis of a parsed einsum: names, dimensions, validity, loop order, measures,
semiring, output type.

* binding: output indices, measured indices and names standing alone as an access dimension are
  loop indices; in an affine dimension naming none of them (A[x + c]), the names not passed as
  scalars are; every other name is a scalar (coefficient or constant, A[a*x + b]);
* dimensionalize: each index's kind (integer or real) comes from the levels it addresses; mixing
  kinds, or an index used by no tensor, is an InvalidProgramError;
* concordize: the loop order must visit every tensor's levels outermost-first (row-major,
  DESIGN.md §2); by default it is the topological order of all accesses' index orders (ties by
  first appearance, output indices first); `order=` is checked against the same constraints;
* measures: reduction indices are those not on the left; a real reduction index needs a measure,
  an integer one defaults to counting; the boolean measure needs an idempotent semiring;
* semiring: '+' by default, 'or' when every measure is boolean;
* validity (continuous paper §4.3): `ctensor.analysis.validity.check_program`, before any
  "not lowered yet" error, so an invalid program is reported as invalid.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidProgramError
from ..lower.ops import RANK, REDUCTIONS, SEMIRINGS
from .affine import NotAffine, form, names_in_order, rebind_access
from .affine import scalar_names as dim_scalar_names
from .nodes import EAccess, ECall, EIndex, ELit, EScalar, Einsum


@dataclass
class Plan:
    einsum: Einsum
    order: list             # loop order, outermost first
    kinds: dict             # index -> 'int' | 'real'
    source: dict            # index -> (tensor name, depth) of a level addressing it
    measures: dict          # reduction index -> measure
    op: str                 # reduction operator ⊕
    out_kind: str           # 'bool' | 'int' | 'float'
    fill: object            # output fill = identity of ⊕
    rhs: object = None      # the right-hand side with index names bound (EIndex, rebound accesses)
    validity: object = None  # the analysis.validity.Verdict of the program


def accesses(e):
    if isinstance(e, EAccess):
        yield e
    elif isinstance(e, ECall):
        for a in e.args:
            yield from accesses(a)


def scalar_names(e):
    """Scalar names read by an expression, including those in access dimensions (A[a*x + c])."""
    if isinstance(e, EScalar):
        yield e.name
    elif isinstance(e, ECall):
        for a in e.args:
            yield from scalar_names(a)
    elif isinstance(e, EAccess):
        for d in e.dims:
            yield from dim_scalar_names(d)


def bind_indices(e, kinds):
    """Names that are loop indices denote index values (EIndex), not scalars."""
    if isinstance(e, EScalar) and e.name in kinds:
        return EIndex(e.name)
    if isinstance(e, ECall):
        return ECall(e.op, tuple(bind_indices(a, kinds) for a in e.args))
    return e


def value_kind(e, tensors, scalars, kinds=None) -> str:
    if isinstance(e, ELit):
        v = e.value
        return "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "float"
    if isinstance(e, EScalar):
        return scalars[e.name][1]
    if isinstance(e, EAccess):
        return tensors[e.tensor].leaf_kind
    if isinstance(e, EIndex):
        return "int" if kinds and kinds.get(e.name) == "int" else "float"
    ks = [value_kind(a, tensors, scalars, kinds) for a in e.args]
    if e.op == "ifelse":
        return max(ks[1:], key=RANK.get)
    if e.op in ("lt", "le", "gt", "ge", "eq", "ne", "not"):
        return "bool"
    if e.op in ("/", "sqrt"):
        return "float"
    if e.op == "*" and all(k == "bool" for k in ks):
        return "bool"
    if e.op in ("+", "-", "neg") and all(k == "bool" for k in ks):
        return "int"
    return max(ks, key=RANK.get)


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


def front_end(es: Einsum, tensors: dict, scalars: dict, semiring=None, require_scalars=True) -> FrontEnd:
    """Bind names, dimensionalize, and pick measures and the reduction operator (module docstring).
    tensors: name -> object with `.levels()`; scalars: the names passed as scalars.  Raises
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
    for acc in accesses(rhs):
        lvls = tensors[acc.tensor].modes()
        for depth, (d, lvl) in enumerate(zip(acc.dims, lvls)):
            for i in d.indices:
                if i in kinds and kinds[i] != lvl.coord:
                    raise InvalidProgramError(f"index {i!r} addresses both integer and real modes in {es.text!r}")
                kinds[i] = lvl.coord
                # the index's source level (extent, output shape) is one it reads alone (x, x ± c)
                (source if form(d) in ("plain", "shift") else fallback).setdefault(i, (acc.tensor, depth))
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
            measures[i] = es.measures[i]
        elif kinds[i] == "int":
            measures[i] = "counting"
        else:
            raise InvalidProgramError(f"reduction over the real index {i!r} needs a measure: add "
                                      f"'* d({i}; lebesgue)' (or counting, boolean) to {es.text!r}")
    if semiring is None:
        op = "or" if measures and all(m == "boolean" for m in measures.values()) else "+"
    else:
        if semiring not in SEMIRINGS:
            raise InvalidProgramError(f"unknown semiring {semiring!r}; use one of {sorted(set(SEMIRINGS))}")
        op = SEMIRINGS[semiring]
    if op == "+" and "boolean" in measures.values():
        raise InvalidProgramError("the boolean measure needs an idempotent semiring: pass semiring='or' "
                                  "(or 'min'/'max')")
    return FrontEnd(rhs, kinds, source, measures, op)


def _check_lowerable(rhs, kinds, text):
    """Forms that are valid but that the lowering does not implement yet (run after validity, so an
    invalid program is reported as invalid, not as unsupported)."""
    for acc in accesses(rhs):
        if any(acc.permissive):
            raise InvalidProgramError(f"permissive access {acc} in {text!r} is valid but not lowered yet")
        for d in acc.dims:
            f = form(d)
            if f not in ("plain", "shift"):
                raise InvalidProgramError(f"{acc} in {text!r} is valid but its {f} ({d}) is not lowered yet "
                                          "(needs the Scale/Toeplitz wrappers)")
        if len(set(acc.idxs)) != len(acc.idxs):
            raise InvalidProgramError(f"{acc} repeats an index (diagonal access is not supported)")
        for i, off in zip(acc.idxs, acc.offsets):
            if off is not None and kinds[i] == "int":
                # a shifted integer mode would be read outside its shape at the ends of the loop;
                # that needs permissive access (~i) with padding semantics, not implemented yet
                raise InvalidProgramError(f"{acc.tensor}: integer index {i!r} with an offset is not supported "
                                          "(offsets are supported on real indices)")


def make_plan(es: Einsum, tensors: dict, scalars: dict, semiring=None, order=None, assume_valid=False) -> Plan:
    """tensors: name -> object with `.levels()` (root level first) and `.leaf_kind`.

    Runs the front end, then the validity check (`ctensor.analysis.validity`, continuous paper
    §4.3), then rejects forms the lowering does not implement.  Raises InvalidProgramError
    (`ValidityUnknown` when z3 cannot decide validity and assume_valid is False)."""
    from ..analysis.validity import check_program   # analysis builds on lang: import at use
    fe = front_end(es, tensors, scalars, semiring)
    verdict = check_program(fe.rhs, tensors, fe.kinds, fe.measures, fe.op, es.text, assume_valid=assume_valid)
    rhs, kinds, source, measures, op = fe.rhs, fe.kinds, fe.source, fe.measures, fe.op
    _check_lowerable(rhs, kinds, es.text)
    rk = value_kind(rhs, tensors, scalars, kinds)
    if op == "+":
        if measures:
            out_kind = "float" if rk == "float" or "lebesgue" in measures.values() else "int"
        else:
            out_kind = rk
            if rk == "bool":
                op = "or"
    elif op in ("or", "and"):
        out_kind = "bool"
    else:
        out_kind = "float"
    fill = REDUCTIONS[op][0]
    fill = bool(fill) if out_kind == "bool" else (float(fill) if out_kind == "float" else int(fill))
    order = _loop_order(es, rhs, kinds, order)
    return Plan(es, order, kinds, source, measures, op, out_kind, fill, rhs, verdict)


def _loop_order(es, rhs, kinds, order):
    # runs after _check_lowerable: every dimension is one index (x or x ± c), so idxs are the chains
    chains = [acc.idxs for acc in accesses(rhs)] + [es.out_idxs]
    if order is not None:
        order = list(order)
        if sorted(order) != sorted(kinds):
            raise InvalidProgramError(f"order={order} must list exactly the indices {sorted(kinds)}")
        pos = {i: k for k, i in enumerate(order)}
        for ch in chains:
            if any(pos[a] > pos[b] for a, b in zip(ch, ch[1:])):
                raise InvalidProgramError(f"order={order} visits [{', '.join(ch)}] out of storage order; "
                                          "transposed access needs a tensor stored in that order")
        return order
    appearance = list(es.out_idxs) + [i for ch in chains for i in ch]
    first = {}
    for k, i in enumerate(appearance):
        first.setdefault(i, k)
    preds = {i: set() for i in kinds}
    for ch in chains:
        for a, b in zip(ch, ch[1:]):
            preds[b].add(a)
    out = []
    while len(out) < len(kinds):
        ready = [i for i in kinds if i not in out and preds[i] <= set(out)]
        if not ready:
            raise InvalidProgramError(f"no loop order visits every tensor of {es.text!r} in storage order "
                                      "(a transposed access): store one tensor in the other order")
        out.append(min(ready, key=first.get))
    return out
