"""Canonical, alpha-renamed terms of IR guard conditions, for the guard prover (`guards.py`).

A guard is an i1 IR expression.  Its let-bound variables are expanded into their definitions (SSA:
a `let` never changes, so `v == def(v)` wherever v is readable); what cannot be looked through
becomes a *leaf*:

* a parameter, or a `let` whose definition was not recorded (a `for` variable);
* a read of a mutable variable or a load, *snapshotted* by the `let` whose definition holds it
  (two lets of the same cursor or address are different leaves: a store or an assignment may
  come between them); at the guard itself (no enclosing let) a read or load is identified by its
  structure — the guard is evaluated at one point;
* float arithmetic (rounding: a proof over the reals would not carry over, digest §3.7) and
  integer arithmetic other than on ε (i64 wraps), as opaque nodes: structurally equal nodes are
  one value (the IR is pure), otherwise unconstrained.

Nodes are hash-consed in a table (children before parents), so the size is linear in the DAG and
the table itself, with leaves numbered by first occurrence, is the alpha-renamed cache key.
"""
from __future__ import annotations

import math

from ..ir import nodes as ir

# let definitions deeper than this are cut to a leaf (sound: a leaf is less known, never wrong)
MAX_DEPTH = 24


def const_key(c: ir.Const):
    v = c.value
    if isinstance(v, float):
        return ("const", c.type.name, v, math.copysign(1.0, v))   # -0.0 and 0.0 stay apart
    return ("const", c.type.name, v)


class Canon:
    """One query's node table.  `defs`: let Var -> defining IR expression."""

    def __init__(self, defs: dict):
        self.defs = defs
        self.nodes: list = []
        self.ids: dict = {}
        self.leaf_num: dict = {}        # leaf identity -> number (first occurrence)
        self._memo: dict = {}           # let Var -> node id
        self._loads: dict = {}          # snapshot let Var -> loads seen in its definition

    def add(self, node: tuple) -> int:
        k = self.ids.get(node)
        if k is None:
            k = self.ids[node] = len(self.nodes)
            self.nodes.append(node)
        return k

    def leaf(self, ident, ty) -> int:
        n = self.leaf_num.setdefault(ident, len(self.leaf_num))
        return self.add(("leaf", _tyname(ty), n))

    def leaves(self) -> set:
        return set(self.leaf_num)

    def expr(self, e, snap=None, depth=0) -> int:
        """Node id of IR expression `e`; `snap` is the let Var whose definition is being read."""
        if isinstance(e, ir.Const):
            return self.add(const_key(e))
        if isinstance(e, ir.Read):
            v = e.var
            if v.kind == "param":
                return self.leaf(("param", id(v)), v.type)
            if v.kind == "mut":
                return self.leaf(("mut", id(v)) if snap is None else ("mut", id(v), id(snap)), v.type)
            d = self.defs.get(v)
            if d is None or depth >= MAX_DEPTH:
                return self.leaf(("let", id(v)), v.type)
            k = self._memo.get(v)
            if k is None:
                k = self._memo[v] = self.expr(d, v, depth + 1)
            return k
        if isinstance(e, ir.Load):
            if snap is None:
                return self.add(("load", _tyname(e.type), self.expr(e.ptr, None, depth), self.expr(e.index, None, depth)))
            seen = self._loads.setdefault(snap, [])
            seen.append(None)
            return self.leaf(("load", id(snap), len(seen)), e.type)
        if isinstance(e, ir.Cmp):
            return self._cmp(e.op, e.a, e.b, snap, depth)
        if isinstance(e, ir.Select):
            return self.add(("ite", _tyname(e.type), self.expr(e.cond, snap, depth),
                             self.expr(e.a, snap, depth), self.expr(e.b, snap, depth)))
        if isinstance(e, ir.Bin):
            a, b = self.expr(e.a, snap, depth), self.expr(e.b, snap, depth)
            t = e.type
            t = _tyname(t)
            if t == "i1" and e.op in ("and", "or", "xor"):
                return self.add(("bool", e.op, a, b))
            if e.op in ("min", "max"):
                return self.add(("minmax", e.op, t, a, b))
            if t == "i8" and e.op in ("add", "sub"):
                return self.add(("eps", e.op, a, b))      # ε arithmetic: exact (see guard_smt)
            return self.add(("opaque", t, e.op, a, b))
        if isinstance(e, ir.Un):
            a = self.expr(e.a, snap, depth)
            if e.op == "not" and _tyname(e.a.type) == "i1":
                return self.add(("not", a))
            return self.add(("opaque", _tyname(e.type), e.op, a))
        if isinstance(e, ir.Cast):
            a = self.expr(e.a, snap, depth)
            if _tyname(e.a.type) == "i1" and _tyname(e.to) in ("i8", "i32", "i64"):
                return self.add(("b2i", _tyname(e.to), a))
            return self.add(("opaque", _tyname(e.to), "cast", a))
        # calls and anything new: an unconstrained value per occurrence
        return self.leaf(("other", id(e)), getattr(e, "type", None))

    def _cmp(self, op, a, b, snap, depth) -> int:
        """A comparison, with the adjacent-double form of `extents.lim_le` read back exactly:
        `x <= nextdown(v)` is `x < v` and `nextup(x) <= v` is `x < v` for every double, NaN
        included (next_float is NaN past ±inf); a select under `<=` is split into its branches."""
        if op == "le":
            if isinstance(b, ir.Un) and b.op == "nextdown":
                return self._cmp("lt", a, b.a, snap, depth)
            if isinstance(a, ir.Un) and a.op == "nextup":
                return self._cmp("lt", a.a, b, snap, depth)
            for side in (a, b):
                if isinstance(side, ir.Select) and any(isinstance(x, ir.Un) and x.op in ("nextup", "nextdown")
                                                       for x in (side.a, side.b)):
                    pick = (lambda x: (x, b)) if side is a else (lambda x: (a, x))
                    return self.add(("ite", "i1", self.expr(side.cond, snap, depth),
                                     self._cmp(op, *pick(side.a), snap, depth),
                                     self._cmp(op, *pick(side.b), snap, depth)))
        return self.add(("cmp", op, self.expr(a, snap, depth), self.expr(b, snap, depth)))

    def node_type(self, k: int) -> str:
        n = self.nodes[k]
        tag = n[0]
        if tag in ("leaf", "ite", "load", "opaque", "b2i"):
            return n[1]
        if tag == "const":
            return n[1]
        if tag in ("cmp", "bool", "not"):
            return "i1"
        if tag == "minmax":
            return n[2]
        if tag == "eps":
            return "i8"
        raise AssertionError(tag)

    def key(self, roots) -> tuple:
        return (tuple(self.nodes), tuple(roots))


def _tyname(ty) -> str:
    if ty is None:
        return "?"
    return getattr(ty, "name", None) or "ptr"


def direct_state(e) -> bool:
    """Does `e` read a mutable variable or memory outside any let (so it may change later)?"""
    if isinstance(e, ir.Read):
        return e.var.kind == "mut"
    if isinstance(e, (ir.Load, ir.Call)):
        return True
    if isinstance(e, (ir.Bin, ir.Cmp)):
        return direct_state(e.a) or direct_state(e.b)
    if isinstance(e, (ir.Un, ir.Cast)):
        return direct_state(e.a)
    if isinstance(e, ir.Select):
        return direct_state(e.cond) or direct_state(e.a) or direct_state(e.b)
    return False


def conjuncts(e, op="and") -> list:
    """Operands of a top-level chain of i1 `and` (or `or`)."""
    if isinstance(e, ir.Bin) and e.op == op and _tyname(e.type) == "i1":
        return conjuncts(e.a, op) + conjuncts(e.b, op)
    return [e]
