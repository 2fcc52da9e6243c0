"""Program notation consumed by the recursive lowerer (Finch's FinchNotation, reduced).

Expressions: `Lit` (compile-time constant), `Val` (runtime scalar: an IR expression), `Call`
(an operator over expressions) and `Access` (a tensor read at indices).  Statements: `Assign`
(`lhs = op(lhs, rhs)` with the reduction measures still to apply), `Loop`, `Sieve` and `Block`.

An `Access.tns` is, as lowering proceeds, a virtual subfiber (`Fiber`/`Hollow`), a looplet at its
first index, or a leaf.  `Access.idxs` are the indices not consumed yet; the first one is the
loop the current looplet describes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


class _Missing:
    """Finch's `missing`: what a permissive access reads outside its tensor's extent.  It
    propagates through every operator but `coalesce`, and an assignment of it is dropped
    (`lower.simplify`)."""

    def __repr__(self):
        return "missing"


MISSING = _Missing()


@dataclass(frozen=True)
class Lit:
    value: Any             # bool | int | float


@dataclass(frozen=True, eq=False)
class Val:
    expr: Any              # IR expression
    dtype: str             # 'bool' | 'int' | 'float'


@dataclass(frozen=True, eq=False)
class Count(Val):
    """The number of int coordinates of a run (a counting weight): its product with an int value
    is checked for int64 overflow (`ops.checked_mul`); otherwise a `Val`."""


@dataclass(frozen=True)
class Idx:
    """The value of a loop index inside an expression (valid only on pinpoints, paper §4.3)."""
    name: str
    dtype: str             # 'int' | 'float'


@dataclass(frozen=True, eq=False)
class Call:
    op: str                # + - * / ** neg not and or lt le gt ge eq ne min max sqrt abs
    args: tuple


@dataclass(frozen=True, eq=False)
class Access:
    tns: Any
    idxs: tuple
    name: str              # user-facing tensor name, for error messages
    mode: str = "read"     # 'read' | 'update'
    # indices whose loop extent holds every coordinate stored in this fiber along them (a tile
    # piece equal to a whole grid cell, `lower.tile.lower_piece`): their levels skip the tests
    covered: frozenset = frozenset()
    # a term of a long ⊕-chain its fill does not annihilate: read by the union protocol
    # (`lower.nest.mark_unions`, `formats.run_union`)
    union: bool = False
    # real indices at which this access's piece is a stored pinpoint of an outer level, its inner
    # levels not read yet (`looplets.passes.spike_pass`): under the counting measure that point
    # counts for the inner coordinates this access stores there (`lower.lowerer.collapse`)
    pins: frozenset = frozenset()
    # read also for its presence (`PRESENT`, `lower.lowerer._pinned`): where it resolves to a leaf
    # it becomes Call(TRACKED, (value, stored?)), split at once by `lower.lowerer.settle_presence`
    tracked: bool = False


@dataclass(frozen=True, eq=False)
class ScalarOut:
    """A 0-d output: an accumulator variable."""
    var: Any
    kind: str


@dataclass(eq=False)
class Assign:
    lhs: Access
    op: str                # the reduction operator ⊕: + or min max (or '=' to overwrite)
    rhs: Any
    measures: dict = field(default_factory=dict)   # reduction index -> 'lebesgue'|'counting'|'boolean'

    def with_(self, **kw):
        return replace(self, **kw)


@dataclass(eq=False)
class Loop:
    idx: str
    ext: Any               # ctensor.extents.Extent
    body: Any


@dataclass(eq=False)
class Sieve:
    cond: Any              # IR i1 expression
    body: Any


@dataclass(eq=False)
class Block:
    stmts: list


def walk_accesses(node):
    """Yield every Access in a statement or expression tree once (pre-order).  An access written
    twice with the same indices (`A[x] * (A[x] > 0)`) is one shared object: one cursor."""
    seen = set()
    for a in _walk_accesses(node):
        if id(a) not in seen:
            seen.add(id(a))
            yield a


def _walk_accesses(node):
    if isinstance(node, Access):
        yield node
    elif isinstance(node, Call):
        for a in node.args:
            yield from _walk_accesses(a)
    elif isinstance(node, Assign):
        yield node.lhs
        yield from _walk_accesses(node.rhs)
    elif isinstance(node, (Loop, Sieve)):
        yield from _walk_accesses(node.body)
    elif isinstance(node, Block):
        for s in node.stmts:
            yield from _walk_accesses(s)


def map_accesses(node, fn):
    """Rebuild a tree with fn(access) substituted for every Access (fn may return any expression).
    fn runs once per access object, so a shared access stays shared (and a looplet pass emits
    its code once)."""
    memo = {}

    def once(a):
        if id(a) not in memo:
            memo[id(a)] = (a, fn(a))          # the access is kept alive so its id is not reused
        return memo[id(a)][1]
    return _map_accesses(node, once)


def _map_accesses(node, fn):
    if isinstance(node, Access):
        return fn(node)
    if isinstance(node, Call):
        return Call(node.op, tuple(_map_accesses(a, fn) for a in node.args))
    if isinstance(node, Assign):
        return node.with_(lhs=_map_accesses(node.lhs, fn), rhs=_map_accesses(node.rhs, fn))
    if isinstance(node, Loop):
        return Loop(node.idx, node.ext, _map_accesses(node.body, fn))
    if isinstance(node, Sieve):
        return Sieve(node.cond, _map_accesses(node.body, fn))
    if isinstance(node, Block):
        return Block([_map_accesses(s, fn) for s in node.stmts])
    return node


def map_assigns(node, fn):
    """Rebuild a statement tree with fn(assign) substituted for every Assign."""
    if isinstance(node, Assign):
        return fn(node)
    if isinstance(node, Loop):
        return Loop(node.idx, node.ext, map_assigns(node.body, fn))
    if isinstance(node, Sieve):
        return Sieve(node.cond, map_assigns(node.body, fn))
    if isinstance(node, Block):
        return Block([map_assigns(s, fn) for s in node.stmts])
    return node


def _affine_root(acc):
    """The affine wrapper (`formats.affine.VAffine`) an access reads through, or None."""
    lvl = getattr(acc.tns, "level", None)
    return lvl if hasattr(lvl, "uses_index") else None


def uses_index(node, idx) -> bool:
    """Does an expression or statement read the value of index `idx` (also as the offset of a
    Toeplitz access, A[y + x] read inside the loop over y)?"""
    if isinstance(node, Idx):
        return node.name == idx
    if isinstance(node, Access):
        root = _affine_root(node)
        return root is not None and root.uses_index(idx)
    if isinstance(node, Call):
        return any(uses_index(a, idx) for a in node.args)
    if isinstance(node, Assign):
        return uses_index(node.rhs, idx)
    if isinstance(node, (Loop, Sieve)):
        return uses_index(node.body, idx)
    if isinstance(node, Block):
        return any(uses_index(s, idx) for s in node.stmts)
    return False


def subst_expr(e, idx, value):
    """Replace Idx(idx) by `value` in an expression (also in the offsets of affine accesses)."""
    if isinstance(e, Idx) and e.name == idx:
        return value
    if isinstance(e, Call):
        return Call(e.op, tuple(subst_expr(a, idx, value) for a in e.args))
    if isinstance(e, Access) and _affine_root(e) is not None:
        return replace(e, tns=replace(e.tns, level=_affine_root(e).subst(idx, value)))
    return e


def subst_index(node, idx, value):
    """Replace Idx(idx) by `value` in every assignment's right-hand side."""
    return map_assigns(node, lambda a: a.with_(rhs=subst_expr(a.rhs, idx, value)))


def walk_assigns(node):
    if isinstance(node, Assign):
        yield node
    elif isinstance(node, (Loop, Sieve)):
        yield from walk_assigns(node.body)
    elif isinstance(node, Block):
        for s in node.stmts:
            yield from walk_assigns(s)
