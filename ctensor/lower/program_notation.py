"""The checked program (`lang.program` plan: parser nodes) as the lowering's notation: each access
a fiber of its tensor's root level with its affine maps (`formats.affine`) and covered indices,
and the fission test of counting sums (`lower.nest`)."""
from __future__ import annotations

from ..errors import InvalidProgramError
from ..formats.affine import DimMap, VAffine
from ..ir import build as b
from ..lang.parser import EAccess, ECall, EIndex, ELit, EScalar
from ..looplets.nodes import Fiber
from .nest import EXPAND_MAX
from .notation import Access, Call, Idx, Lit
from .tile import tile_access_idxs


def counting_additive(plan, tensors) -> bool:
    """May a sum be split into one loop nest per term (`lower.nest`)?  The counting measure on a
    real index weighs the pinpoints of the partition the *whole* expression cuts, so it is
    additive over terms only where every term is zero off its own pinpoints: each real counting
    index must be read, in every term, by a factor whose level there stores pinpoints (and whose
    fill is zero).  Else `(A[x] + B[x]) * d(x; counting)` with A = [6, 7] and B = {7} would drop
    A's value at the pinpoint 7 that only B cuts."""
    real = {i for i, m in plan.measures.items() if plan.kinds[i] == "real"}
    if not real:
        return True

    def terms(e):
        """Each term of e, products distributed over sums as `lower.nest.expanded_terms` does, as
        its list of factors; None beyond EXPAND_MAX terms."""
        if isinstance(e, ECall) and e.op in ("+", "-") and len(e.args) == 2:
            a, c = terms(e.args[0]), terms(e.args[1])
            return None if a is None or c is None else a + c
        if isinstance(e, ECall) and e.op == "neg" and len(e.args) == 1:
            return terms(e.args[0])
        if isinstance(e, ECall) and e.op == "*":
            out = [[]]
            for arg in e.args:
                ts = terms(arg)
                if ts is None or len(out) * len(ts) > EXPAND_MAX:
                    return None
                out = [p + t for p in out for t in ts]
            return out
        return [[e]]

    def plain(e):            # beyond EXPAND_MAX: the terms of the sum, unexpanded, as their factors
        if isinstance(e, ECall) and e.op in ("+", "-") and len(e.args) == 2:
            return plain(e.args[0]) + plain(e.args[1])
        return [factors(e)]

    def factors(e):
        if isinstance(e, ECall) and e.op == "*":
            return [f for a in e.args for f in factors(a)]
        if isinstance(e, ECall) and e.op == "neg" and len(e.args) == 1:
            return factors(e.args[0])
        return [e]

    expanded = terms(plan.rhs)
    for t in plain(plan.rhs) if expanded is None else expanded:
        pinned = set()
        for f in t:
            if not isinstance(f, EAccess) or tensors[f.tensor].fill not in (0, False):
                continue
            for d, lvl in zip(f.dims, tensors[f.tensor].modes()):
                if len(d.terms) == 1 and getattr(lvl, "pinpoints", False):
                    pinned.add(d.terms[0][1])
        if not real <= pinned:
            return False
    return True


def dim_map(dim, x, permissive, svals, kinds) -> DimMap:
    """The DimMap of one access dimension lowered at index x: coefficient of x, and the constant
    plus the other indices' terms (`formats.affine`)."""
    coef, const = None, None
    for c, i in dim.terms:
        if i == x:
            coef = notation(c, None, svals, kinds)
        else:
            t = Call("*", (notation(c, None, svals, kinds), Idx(i, "int" if kinds[i] == "int" else "float")))
            const = t if const is None else Call("+", (const, t))
    if dim.const is not None:
        c = notation(dim.const, None, svals, kinds)
        const = c if const is None else Call("+", (const, c))
    return DimMap(coef, const, kinds[x], bool(permissive))


def root_cover(plan, vlevels, tiling):
    """cover(tensor, idxs, maps) -> the indices whose root loop extent holds every coordinate the
    access stores along them (`Access.covered`): a real axis (the loop runs over the whole line,
    stored coordinates are finite) or the integer axis this very level sizes (plan.source), read
    plainly (no affine map), once, and not binned by a grid (its extent is a tile piece)."""
    binned = set() if tiling is None else set(tiling.binned)

    def cover(tensor, idxs, maps):
        out = set()
        for d, i in enumerate(idxs):
            lv = vlevels.get((tensor, d))
            if lv is None or d in maps or i in binned or idxs.count(i) != 1:
                continue
            if getattr(lv, "coord", None) == "real" or plan.source.get(i) == (tensor, d):
                out.add(i)
        return frozenset(out)
    return cover


def notation(e, roots, svals, kinds, tiling=None, cover=None, memo=None):
    """The notation of expression `e`.  Equal accesses (same tensor, index expressions and ~)
    become one shared Access (`memo`), read through one cursor."""
    if memo is None:
        memo = {}
    if isinstance(e, EAccess):
        if e not in memo:
            memo[e] = _access(e, roots, svals, kinds, tiling, cover)
        return memo[e]
    if isinstance(e, ELit):
        return Lit(e.value)
    if isinstance(e, EScalar):
        return svals[e.name]
    if isinstance(e, EIndex):
        return Idx(e.name, "int" if kinds[e.name] == "int" else "float")
    if isinstance(e, ECall):
        return Call(e.op, tuple(notation(a, roots, svals, kinds, tiling, cover, memo) for a in e.args))
    raise InvalidProgramError(f"unsupported expression {e!r}")


def _access(e, roots, svals, kinds, tiling, cover):
    """One access: a fiber of its tensor's root level, through its affine maps."""
    root = roots[e.tensor]
    maps = {}
    for depth, (x, dim, perm) in enumerate(zip(e.idxs, e.dims, e.permissive or (False,) * len(e.dims))):
        m = dim_map(dim, x, perm, svals, kinds)
        if not m.identity:
            maps[depth] = m
    idxs = e.idxs
    covered = frozenset() if cover is None else cover(e.tensor, idxs, maps)
    if tiling is not None:
        idxs = tile_access_idxs(tiling, e.tensor, idxs)
        k = tiling.depth.get(e.tensor, 0)
        # a grid level sits in the frame of the mode it bins: the same map applies to both
        maps = {(d + k): m for d, m in maps.items()} | {d: m for d, m in maps.items() if d < k}
    if maps:
        root = VAffine(root, maps)
    return Access(Fiber(root, b.i64(0)), idxs, e.tensor, covered=covered)
