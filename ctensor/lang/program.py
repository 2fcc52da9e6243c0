"""Front-end analysis of a parsed einsum: dimensions, loop order, measures, semiring, output type.

* dimensionalize: each index's kind (integer or real) comes from the levels it addresses; mixing
  kinds, or an index used by no tensor, is an InvalidProgramError;
* concordize: the loop order must visit every tensor's levels outermost-first (row-major,
  DESIGN.md §2); by default it is the topological order of all accesses' index orders (ties by
  first appearance, output indices first); `order=` is checked against the same constraints;
* measures: reduction indices are those not on the left; a real reduction index needs a measure,
  an integer one defaults to counting; the boolean measure needs an idempotent semiring;
* semiring: '+' by default, 'or' when every measure is boolean.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidProgramError
from ..lower.ops import RANK, REDUCTIONS, SEMIRINGS
from .parser import EAccess, ECall, EIndex, ELit, EScalar, Einsum


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
    rhs: object = None      # the right-hand side with index names bound (EIndex)


def accesses(e):
    if isinstance(e, EAccess):
        yield e
    elif isinstance(e, ECall):
        for a in e.args:
            yield from accesses(a)


def scalar_names(e):
    """Scalar names read by an expression, including those in access offsets (A[x + c])."""
    if isinstance(e, EScalar):
        yield e.name
    elif isinstance(e, ECall):
        for a in e.args:
            yield from scalar_names(a)
    elif isinstance(e, EAccess):
        for off in e.offsets:
            if off is not None and isinstance(off[1], EScalar):
                yield off[1].name


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


def make_plan(es: Einsum, tensors: dict, scalars: dict, semiring=None, order=None) -> Plan:
    """tensors: name -> object with `.levels()` (root level first) and `.leaf_kind`."""
    kinds, source = {}, {}
    for acc in accesses(es.rhs):
        if acc.tensor not in tensors:
            raise InvalidProgramError(f"tensor {acc.tensor!r} in {es.text!r} was not passed")
        if any(acc.permissive):
            raise InvalidProgramError(f"permissive access {acc.tensor}[~...] is not supported yet")
        lvls = [l for l in tensors[acc.tensor].levels() if not l.is_leaf]
        if len(lvls) != len(acc.idxs):
            raise InvalidProgramError(f"{acc.tensor} has {len(lvls)} modes but is accessed with "
                                      f"{len(acc.idxs)} indices in {es.text!r}")
        if len(set(acc.idxs)) != len(acc.idxs):
            raise InvalidProgramError(f"{acc.tensor}[{', '.join(acc.idxs)}] repeats an index (diagonal access "
                                      "is not supported)")
        for depth, (i, lvl) in enumerate(zip(acc.idxs, lvls)):
            if i in kinds and kinds[i] != lvl.coord:
                raise InvalidProgramError(f"index {i!r} addresses both integer and real modes in {es.text!r}")
            kinds[i] = lvl.coord
            source.setdefault(i, (acc.tensor, depth))
    rhs = bind_indices(es.rhs, kinds)
    for name in scalar_names(rhs):
        if name in kinds:
            raise InvalidProgramError(f"index {name!r} inside another index expression (A[x + {name}]) needs "
                                      "the Toeplitz wrapper, which is not supported yet")
        if name not in scalars:
            raise InvalidProgramError(f"scalar {name!r} in {es.text!r} was not passed (pass {name}=<number>)")
    for acc in accesses(rhs):
        for i, off in zip(acc.idxs, acc.offsets):
            if off is not None and kinds[i] == "int":
                # a shifted integer mode would be read outside its shape at the ends of the loop;
                # that needs permissive access (~i) with padding semantics, not implemented yet
                raise InvalidProgramError(f"{acc.tensor}: integer index {i!r} with an offset is not supported "
                                          "(offsets are supported on real indices)")
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
    # semiring
    if semiring is None:
        op = "or" if measures and all(m == "boolean" for m in measures.values()) else "+"
    else:
        if semiring not in SEMIRINGS:
            raise InvalidProgramError(f"unknown semiring {semiring!r}; use one of {sorted(set(SEMIRINGS))}")
        op = SEMIRINGS[semiring]
    if op == "+" and "boolean" in measures.values():
        raise InvalidProgramError("the boolean measure needs an idempotent semiring: pass semiring='or' "
                                  "(or 'min'/'max')")
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
    order = _loop_order(es, kinds, order)
    return Plan(es, order, kinds, source, measures, op, out_kind, fill, rhs)


def _loop_order(es, kinds, order):
    chains = [acc.idxs for acc in accesses(es.rhs)] + [es.out_idxs]
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
