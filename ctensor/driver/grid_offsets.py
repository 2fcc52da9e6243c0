"""Change of variables for offsets into grid-binned modes: `In[x + r, ...]` becomes `In[a, ...]`.

The continuous paper writes a neighbourhood as a point plus an offset (§7.4, Fig. 26: KPConv's
`In[x + r, y + s, c] * Circle[r, s]`).  A mode binned by a `UniformGrid` (`ct.points(..., grid=)`)
is read at a plain index (its tile loop needs the index's own extent, `lang.program`), so the
offset r is replaced by the neighbour's coordinate a = x + r: every other r becomes (a - x) and
d(r; m) becomes d(a; m).  For the counting, Lebesgue and Boolean measures this is the same sum
(r -> a - x is a translation: a bijection of pinpoints, measure-preserving on intervals).

`rewrite(text, tensors)` returns the rewritten text and the renamed indices, or None when no access reads a binned mode as
`i + j` with j summed under one of those measures (the program then compiles as written).
"""
from __future__ import annotations

import ast

from ..formats.tensor import Tensor
from .product_ast import is_measure, operand, parse_product

MEASURES = ("counting", "lebesgue", "boolean")


def _binned(t) -> int:
    """How many leading modes of `t` a UniformGrid bins."""
    return sum(1 for lv in t.levels() if getattr(lv, "tile", False)) if isinstance(t, Tensor) else 0


def _offset(e):
    """(x, r) for a dimension written `x + r` (two distinct names), else None."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and isinstance(e.left, ast.Name) \
            and isinstance(e.right, ast.Name) and e.left.id != e.right.id:
        return e.left.id, e.right.id
    return None


def _elts(sub):
    return sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]


class _Substitute(ast.NodeTransformer):
    def __init__(self, subs, binned):
        self.subs, self.binned = subs, binned

    def visit_Subscript(self, node):
        elts = _elts(node)
        n = self.binned.get(node.value.id, 0) if isinstance(node.value, ast.Name) else 0
        new = []
        for k, e in enumerate(elts):
            off = _offset(e)
            if k < n and off is not None and off[1] in self.subs and self.subs[off[1]][1] == off[0]:
                new.append(ast.Name(self.subs[off[1]][0], ast.Load()))
            else:
                new.append(self.visit(e))
        node.slice = ast.Tuple(new, ast.Load()) if len(new) > 1 else new[0]
        return node

    def visit_Name(self, node):
        if node.id in self.subs:
            a, x = self.subs[node.id]
            return ast.BinOp(ast.Name(a, ast.Load()), ast.Sub(), ast.Name(x, ast.Load()))
        return node


def rewrite(text, tensors: dict):
    """(`text` with the offsets of grid-binned reads replaced by coordinates, {offset index: its
    coordinate index}) (module docstring), or None."""
    if not isinstance(text, str):
        return None
    # no grid-binned tensor, nothing to rewrite: decided before parsing (a kernel loaded from the
    # on-disk cache needs no parse at all)
    binned = {k: _binned(t) for k, t in tensors.items() if _binned(t)}
    if not binned:
        return None
    parsed = parse_product(text)
    if parsed is None:
        return None
    es, factors = parsed
    rest = [f for f in factors if not is_measure(f)]
    names = {n.id for f in factors for n in ast.walk(f) if isinstance(n, ast.Name)} | set(es.out_idxs)
    subs = {}
    for f in rest:
        for sub in ast.walk(f):
            if not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)):
                continue
            for k, e in enumerate(_elts(sub)[:binned.get(sub.value.id, 0)]):
                off = _offset(e)
                if off is None or off[1] in subs:
                    continue
                x, r = off
                if es.measures.get(r) in MEASURES and r not in es.out_idxs and (x in es.measures or x in es.out_idxs):
                    a = f"{r}_at"
                    while a in names:
                        a += "_"
                    names.add(a)
                    subs[r] = (a, x)
    if not subs:
        return None
    tr = _Substitute(subs, binned)
    body = " * ".join(operand(tr.visit(f)) for f in rest)
    idxs = [subs[i][0] if i in subs else i for i in es.measures]
    lhs = f"{es.out}[{', '.join(es.out_idxs)}]"
    return (f"{lhs} = {body} * d({', '.join(idxs)}; {', '.join(es.measures.values())})",
            {r: a for r, (a, _) in subs.items()})
