"""`evaluate`: the reference interpreter of the continuous einsum (paper §4.2, Fig. 5, step 2).

Given the partition of `partition.py`, every product cell of all indices (LHS indices first, then
reduction indices) is visited once; the expression is evaluated with each tensor's constant value
on that cell, weighted by the measures of the reduction axes, and ⊕-accumulated into the output
cell named by the LHS indices (see `semirings` for weights and contributions).

Rules (raise ValueError otherwise):
* indices not on the LHS are reduction indices; a real reduction index needs a measure in
  d(...); an int reduction index without one uses ``counting``; d(...) may not name an LHS index
  nor an index no tensor access uses; ``lebesgue`` is not allowed on an int index;
* every LHS index and every bare index (``IndexRef``) must address some tensor dimension (that
  gives its kind); a bare index evaluates to the coordinate of a pinpoint/int cell; on a gap cell
  the cell's contribution must not depend on it (sampled at the cell's ends and middle: a factor
  annihilates it), else the program is invalid there (paper §4.3, validity condition 2);
* ``counting``: rules C1-C4 of the package docstring; index sums and evaluation orders: its item 6.
* int reduction over `OTHER` (infinitely many coordinates where all accesses through that index
  read their fill) under ``"+"`` must contribute 0 — the oracle is restricted to such programs.
"""
from __future__ import annotations

import math
import os
from dataclasses import replace
from itertools import permutations, product

from .endpoints import is_pinpoint
from .expr import MISSING, Access, IndexRef, eval_expr, walk
from .parse import parse
from .endpoints import elementary_cells
from .partition import (UNDETERMINED, access_table, index_kinds, is_simple, partitions, preimage_pieces,
                        sum_breakpoints, sum_lookup)
from .pieces import PieceTensor
from .result import Result
from .semirings import (OTHER, UserSemiring, add_of, check_semiring, contribution, idempotent, is_identity,
                        weight)


def _index_value(name, kind, cell):
    if kind == "int":
        if cell is OTHER:
            raise ValueError(f"bare index {name!r} used over unboundedly many int coordinates")
        return float(cell)
    if not is_pinpoint(cell):
        raise ValueError(f"bare index {name!r} is not constant on the cell {cell} "
                         "(invalid program, paper §4.3 (2))")
    return cell[0][0]


def _isolated(r, env, cells, pos, users, lookup):
    """True iff the pinpoint cell env[r] is its own Fig. 5 partition along axis r: some access
    using r changes piece (or piece <-> fill) just left of it, and some just right of it; False if
    on one side none does; None (undecided in this evaluation order) if on a side only an
    index-sum access that is UNDETERMINED there could: whether it pins r depends on whether its
    other index can compensate, which this order cannot tell."""
    k = pos[env[r]]
    here = {acc: lookup(acc, env)[0] for acc in users}

    def side(j):
        there = {acc: lookup(acc, {**env, r: cells[j]})[0] for acc in users}
        pairs = [(here[a], there[a]) for a in users if here[a] != there[a]]
        if any(UNDETERMINED not in p for p in pairs):
            return True
        return None if pairs else False

    left, right = side(k - 1), side(k + 1)
    if left is False or right is False:
        return False
    return None if left is None or right is None else True


def _check_tensors(accesses, tensors):
    for acc in accesses:
        if acc.tensor not in tensors:
            raise ValueError(f"no tensor named {acc.tensor!r}")
        t = tensors[acc.tensor]
        if not isinstance(t, PieceTensor):
            raise TypeError(f"{acc.tensor!r} must be an oracle PieceTensor, got {type(t).__name__}")
        if len(acc.dims) != t.ndim:
            raise ValueError(f"{acc.tensor} has {t.ndim} dims, accessed with {len(acc.dims)}")
    for name in {acc.tensor for acc in accesses}:
        tensors[name].check_disjoint()


class NotConstant(ValueError):
    """The program is not piecewise constant on some cell of the partition (invalid, §4.3)."""


# evaluate every accepted order and compare (`evaluate`'s all_orders=None): about 10x the time of one
# order on programs of three or four indices, so CI checks it on the order regression cases only
# and long fuzz runs turn it on everywhere with CTENSOR_ORACLE_ALL_ORDERS=1
ALL_ORDERS = os.environ.get("CTENSOR_ORACLE_ALL_ORDERS", "0").strip().lower() not in ("", "0", "false", "no")


class OrderDependent(AssertionError):
    """Two valid evaluation orders of an index-sum program disagree: a defect of the oracle."""


def evaluate(text: str, tensors: dict, scalars: dict | None = None,
             semiring: str | None = None, measures: dict | None = None,
             all_orders: bool | None = None) -> Result:
    """Evaluate einsum `text` on oracle `PieceTensor`s; see the package docstring.  `measures`:
    user measures by name, Python functions f(lo, hi) -> weight of a cell (ε dropped; an int cell c
    weighs f(c, c)); a measure must be atomless on real axes (f(a, a) = 0), since cells are
    elementary."""
    prog = parse(text, scalars)
    if measures:
        prog = replace(prog, measures=tuple((i, measures.get(m, m)) for i, m in prog.measures))
    nodes = list(walk(prog.expr))
    accesses = list(dict.fromkeys(n for n in nodes if isinstance(n, Access)))
    _check_tensors(accesses, tensors)
    kinds = index_kinds(accesses, tensors)
    for name in [n.name for n in nodes if isinstance(n, IndexRef)] + list(prog.out_indices):
        if name not in kinds:
            raise ValueError(f"{name!r} is neither a scalar nor an index of a tensor access")

    explicit = dict(prog.measures)
    for idx in explicit:
        if idx in prog.out_indices:
            raise ValueError(f"d(...) names the output index {idx!r}")
        if idx not in kinds:
            raise ValueError(f"d(...) names {idx!r}, which no tensor access uses")
    reduction = [i for i in kinds if i not in prog.out_indices]
    measures = {}
    for r in reduction:
        if r in explicit:
            measures[r] = explicit[r]
        elif kinds[r] == "int":
            measures[r] = "counting"
        else:
            raise ValueError(f"real reduction index {r!r} needs a measure in d(...)")
        if kinds[r] == "int" and measures[r] == "lebesgue":
            raise ValueError(f"the lebesgue measure is not defined on the int index {r!r}")
    # the default ⊕ looks at every reduction index's measure, an int index's implicit counting
    # included, as ctensor does: `O[x] = P[x, y, i] * d(y; boolean)` is ∑_i ∨_y, not ∨_{y, i}
    # (the fuzzer's default-semiring disagreement)
    semiring = check_semiring(semiring, tuple(measures.items()) or prog.measures)
    if all(is_simple(acc) for acc in accesses):
        return _evaluate(prog, accesses, tensors, kinds, measures, semiring, reduction, None)
    # index sums: an evaluation order in which every cell is constant (or annihilated) is a
    # valid refinement of the Fig. 5 partition; an invalid program has none
    err, first = None, None
    for order in permutations(kinds):
        try:
            res = _evaluate(prog, accesses, tensors, kinds, measures, semiring, reduction,
                            {v: k for k, v in enumerate(order)})
        except NotConstant as e:
            err = e
            continue
        if not (ALL_ORDERS if all_orders is None else all_orders):
            return res
        if first is None:
            first = (order, res)
        elif not _same(first[1], res):
            raise OrderDependent(f"{prog.text!r}: evaluation orders {first[0]} and {order} give "
                                 "different answers (an oracle defect)")
    if first is not None:
        return first[1]
    raise err


def _same(a: Result, b: Result) -> bool:
    """Two results of one program agree at every breakpoint probe of either (NaN equals NaN)."""
    def eq(u, v):
        return u == v or (u != u and v != v) or (isinstance(u, float) and isinstance(v, float)
                                                  and abs(u - v) <= 1e-9 * max(1.0, abs(u), abs(v)))
    if not a.indices:
        return eq(a.value, b.value)
    axes = []
    for k, kind in enumerate(a.dims):
        if kind == "int":
            used = sorted(set(a.breakpoints(k)) | set(b.breakpoints(k)))
            axes.append(used + [max(used, default=0) + 1])        # one unused coordinate
        else:
            bs = sorted(set(a.breakpoints(k)) | set(b.breakpoints(k))) or [0.0]
            mids = [(u + v) / 2 for u, v in zip(bs, bs[1:])]
            axes.append(bs + mids + [bs[0] - 1.0, bs[-1] + 1.0])
    return all(eq(a.at(*q), b.at(*q)) for q in product(*axes))


def _domains(accesses, tensors, kinds):
    """int index -> its declared extent 0..n-1, for indices read permissively (where reads outside
    a tensor's shape are missing): the shape of a tensor reading it alone, not permissively."""
    out = {}
    perm = {v for acc in accesses for aff in acc.dims if aff.permissive for v in aff.vars}
    for acc in accesses:
        t = tensors[acc.tensor]
        for aff, kind, n in zip(acc.dims, t.dims, t.shape):
            if kind == "int" and aff.var in perm and not aff.permissive and n is not None \
                    and aff.terms == ((aff.var, 1.0),) and aff.offset == 0:
                out.setdefault(aff.var, n)
    return out


def _sizes(accesses, tensors, kinds):
    """int index -> n, for an index some tensor of declared shape n reads alone (not permissively):
    the index ranges over 0..n-1 only, so `OTHER` holds no coordinate once those are all used
    (under min/max an empty `OTHER` must not contribute its fill-only value)."""
    out = {}
    for acc in accesses:
        t = tensors[acc.tensor]
        for aff, kind, n in zip(acc.dims, t.dims, t.shape):
            if kind == "int" and n is not None and not aff.permissive and len(aff.vars) == 1 \
                    and aff.terms == ((aff.var, 1.0),) and aff.offset == 0:
                out[aff.var] = min(n, out.get(aff.var, n))
    return out


def _out_of_extent(acc, tensor, env):
    """A permissive int dimension reads outside its tensor's shape on the cell `env`."""
    for aff, kind, n in zip(acc.dims, tensor.dims, tensor.shape):
        if aff.permissive and kind == "int" and n is not None:
            u = aff.offset + sum(s * env[v] for v, s in aff.terms)
            if not 0 <= u < n:
                return True
    return False


def _evaluate(prog, accesses, tensors, kinds, measures, semiring, reduction, rank):
    simple = [acc for acc in accesses if is_simple(acc)]
    pres = {acc: preimage_pieces(acc, tensors[acc.tensor]) for acc in simple}     # step 1a
    parts = partitions(pres.values(), kinds)                                       # step 1b
    if rank is not None:           # index sums add breakpoints to their last index, in order
        used = {v: set() for v in kinds}
        for pre in pres.values():
            for coords, _ in pre.pieces:
                for (var, kind), c in zip(pre.dims, coords):
                    used[var].update([c] if kind == "int" else [c[0][0], c[1][0]])
        # an int index of declared extent n takes each of 0..n-1 (below): the index sums that shift
        # by it must cut the later indices at every one of them too
        for v, n in _sizes(accesses, tensors, kinds).items():
            if n <= 256:
                used[v].update(range(n))
        for var in sorted(kinds, key=rank.__getitem__):
            for acc in accesses:
                if not is_simple(acc):
                    used[var] |= sum_breakpoints(acc, tensors[acc.tensor], var, rank, used)
            used[var] = {u for u in used[var] if kinds[var] == "int" or math.isfinite(u)}
        parts = {v: (sorted(used[v]) + [OTHER]) if kinds[v] == "int" else elementary_cells(used[v])
                 for v in kinds}
    for v, n in _domains(accesses, tensors, kinds).items():
        parts[v] = list(range(n))
    unused = {}        # int index -> how many coordinates its `OTHER` cell holds (size known)
    for v, n in _sizes(accesses, tensors, kinds).items():
        if OTHER in parts[v] and n <= 256:
            # the index ranges over 0..n-1: each unused coordinate is a cell of its own, so a bare
            # index has a value there and a fill-only value adds n - |used| times (the fuzzer's
            # `(T[i] + 1) * d(i; counting)`, `T[x, i] * i`: refused as unbounded before)
            parts[v] = sorted({c for c in parts[v] if c is not OTHER} | set(range(n)))
        if OTHER in parts[v] and set(range(n)) <= set(parts[v]):
            parts[v] = [c for c in parts[v] if c is not OTHER]      # no unused coordinate is left
        if OTHER in parts[v]:
            unused[v] = n - len({c for c in parts[v] if c is not OTHER and 0 <= c < n})
    tables = {acc: access_table(pres[acc], parts) for acc in simple}
    add = add_of(semiring)
    counted = isinstance(semiring, UserSemiring) and not semiring.idempotent   # OTHER weighs its count
    # a non-idempotent ⊕ reduces the boolean indices with ∨ first (∑_j ∨_x, `semirings`)
    inner = set() if idempotent(semiring) else {r for r in reduction if measures[r] == "boolean"}
    groups = {}        # (output cell, outer reduction cells) -> (∨ so far, outer weights)
    axes = list(prog.out_indices) + reduction
    pos = {r: {c: k for k, c in enumerate(parts[r])} for r in reduction}
    users = {r: [a for a in accesses if r in {v for aff in a.dims for v in aff.vars}] for r in reduction}

    def lookup(acc, env):  # (piece number or None, value) of access `acc` on the cell `env`
        t = tensors[acc.tensor]
        if _out_of_extent(acc, t, env):
            return "missing", MISSING
        if acc not in tables:
            return sum_lookup(acc, t, env, rank, kinds)
        return tables[acc].get(tuple(env[v] for v in pres[acc].vars), (None, pres[acc].fill))

    def isolated(r, env):
        if kinds[r] != "real" or measures[r] != "counting" or not is_pinpoint(env[r]):
            return True
        return _isolated(r, env, parts[r], pos[r], users[r], lookup)

    marks = sorted({float(v) for r, cs in parts.items() for c in cs for v in
                    ([c] if kinds[r] == "int" and c is not OTHER else
                     [c[0][0], c[1][0]] if kinds[r] == "real" else []) if math.isfinite(v)})
    cells = {}
    for combo in product(*(parts[a] for a in axes)):                               # step 2
        env = dict(zip(axes, combo))
        iso = {r: isolated(r, env) for r in reduction}
        ws = [weight(measures[r], kinds[r], env[r], iso[r] is not False) for r in reduction]
        if counted:
            ws = [unused.get(r, w) if env[r] is OTHER else w for r, w in zip(reduction, ws)]
        if None in iso.values() and not any(w == 0 for w in ws):
            # an undecided pinpoint weight (see `_isolated`) must not matter: the cell adds
            # nothing whether it counts 1 or 0, else another order must decide
            c = _cell_contribution(prog, accesses, tensors, kinds, env, ws, semiring, True, lookup, marks)
            if c is not None and not is_identity(semiring, c):
                raise NotConstant(f"{prog.text!r}: whether the pinpoint cell {env} is a Fig. 5 "
                                  "partition is undecided in this evaluation order")
            continue
        if any(w == 0 for w in ws):
            # measure-zero cell: contributes nothing in any semiring.  A zero of lebesgue or of
            # an (atomless) user measure stays zero on every sub-cell, but a counting zero on an
            # interval does not (a finer partition may hold an isolated pinpoint), so it only
            # stands if every access is constant there: else this order is no refinement of
            # the Fig. 5 partition (`NotConstant`) and another order must be tried
            if rank is not None and not any(w == 0 and measures[r] != "counting"
                                            for r, w in zip(reduction, ws)):
                _check_determined(prog, accesses, tensors, kinds, env, lookup, marks)
            continue
        if inner:
            inner_ws = [w for r, w in zip(reduction, ws) if r in inner]
            c = _cell_contribution(prog, accesses, tensors, kinds, env, inner_ws, "or", True, lookup, marks)
            if c is not None:
                key = tuple(env[i] for i in prog.out_indices) + tuple(env[r] for r in reduction if r not in inner)
                groups[key] = (groups.get(key, (False,))[0] or c, [w for r, w in zip(reduction, ws) if r not in inner])
            continue
        c = _cell_contribution(prog, accesses, tensors, kinds, env, ws, semiring, bool(reduction), lookup, marks)
        _put(prog, cells, add, semiring, c, [env[r] for r in reduction], tuple(env[i] for i in prog.out_indices))
    n = len(prog.out_indices)
    for key, (v, ws) in groups.items():
        _put(prog, cells, add, semiring, contribution(semiring, v, ws, True), key[n:], key[:n])
    return Result(prog.out, prog.out_indices, kinds, parts, cells, semiring)


def _put(prog, cells, add, semiring, c, reduced_cells, key):
    """⊕-add contribution c (None: nothing) into the output cell `key`."""
    if c is None:
        return
    if semiring == "+" and c != 0 and any(cell is OTHER for cell in reduced_cells):
        raise ValueError(f"{prog.text!r}: the fill-only value {c!r} is summed over infinitely "
                         "many int coordinates (oracle requires it to be 0)")
    cells[key] = c if key not in cells else add(cells[key], c)


def _open_values(prog, accesses, tensors, kinds, env, lookup):
    """(value of each access on the cell `env`, the UNDETERMINED index-sum accesses, the values each
    of those may take — its tensor's values and fill, and missing if read permissively — and the
    bare real indices on a non-pinpoint cell, whose values are sampled)."""
    values = {acc: lookup(acc, env)[1] for acc in accesses}
    undetermined = [acc for acc, v in values.items() if v is UNDETERMINED]
    choices = []
    for acc in undetermined:
        t = tensors[acc.tensor]
        vs = {v for _, v in t.live_pieces()} | {t.fill}
        choices.append(sorted(vs, key=repr) + ([MISSING] if any(a.permissive for a in acc.dims) else []))
    bare = sorted({n.name for n in walk(prog.expr) if isinstance(n, IndexRef)
                   and kinds[n.name] == "real" and not is_pinpoint(env[n.name])})
    return values, undetermined, choices, bare


def _check_determined(prog, accesses, tensors, kinds, env, lookup, marks):
    """Raise `NotConstant` unless, for each sample value of the bare real indices on non-pinpoint
    cells (whose variation does not depend on the evaluation order), the expression's value on
    the cell `env` is the same for every value each undetermined index-sum access may take."""
    values, undetermined, choices, bare = _open_values(prog, accesses, tensors, kinds, env, lookup)
    if not undetermined:
        return
    for at in product(*(_samples(env[name], marks) for name in bare)):
        at = dict(zip(bare, at))
        seen = set()
        for pick in product(*choices):
            vals = {**values, **dict(zip(undetermined, pick))}
            value = eval_expr(prog.expr, vals.__getitem__,
                              lambda name: at[name] if name in at else _index_value(name, kinds[name], env[name]))
            seen.add("missing" if value is MISSING else "nan" if value != value else value)  # 0.0 == -0.0
            if len(seen) > 1:
                raise NotConstant(f"{prog.text!r}: {', '.join(str(a) for a in undetermined)} is not "
                                  f"constant on the cell {env} (this evaluation order does not "
                                  "refine the Fig. 5 partition)")


def _samples(cell, marks=()) -> list:
    """Values of a real index on an interval cell that is not a point: its finite ends and middle,
    and every mark (a finite coordinate of any index's partition) inside it with the midpoints
    between them.  A heuristic: a guard on bare indices (``(x - y)**2 <= 4``) that is true only
    near another index's breakpoint is then seen on a huge cell."""
    (lo, _), (hi, _) = cell
    lo, hi = max(lo, min(hi, 0.0) - 1e3), min(hi, max(lo, 0.0) + 1e3)
    inner = sorted({m for m in marks if lo < m < hi} | {lo, (lo + hi) / 2, hi})
    return inner + [(u + v) / 2 for u, v in zip(inner, inner[1:])]


def _cell_contribution(prog, accesses, tensors, kinds, env, ws, semiring, reduces, lookup, marks):
    """The contribution of one cell.  Where an index sum is not constant on it (UNDETERMINED), the
    contribution for every value its tensor holds (and missing, if read permissively) must agree;
    so must it for sample values of a bare real index on a cell that is not a pinpoint (both hold
    where a factor annihilates the term, paper §4.3; otherwise the program is invalid there)."""
    values, undetermined, choices, bare = _open_values(prog, accesses, tensors, kinds, env, lookup)
    choices += [_samples(env[name], marks) for name in bare]
    seen = []
    for pick in product(*choices):
        vals = {**values, **dict(zip(undetermined, pick))}
        at = dict(zip(bare, pick[len(undetermined):]))
        value = eval_expr(prog.expr, vals.__getitem__,
                          lambda name: at[name] if name in at else _index_value(name, kinds[name], env[name]))
        c = None if value is MISSING else contribution(semiring, value, ws, reduces)
        if seen and c != seen[0]:
            raise NotConstant(f"{prog.text!r} is not piecewise constant on the cell {env}: "
                              f"{', '.join(str(a) for a in undetermined)} varies there (invalid, paper §4.3)")
        seen.append(c)
    return seen[0]
