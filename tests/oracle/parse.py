"""Parser of the continuous einsum text (paper Fig. 2; DESIGN.md §6) into a `Program`.

Accepted text: ``Out[i, x, ...] = expr`` or ``Out[...] = expr * d(r1, r2; m1, m2)`` where the
output may be 0-d (``s[]``).  The text is pre-processed (``[]`` -> ``[()]``, ``;`` -> a marker
argument) and then parsed with Python's `ast`.  Inside ``[...]`` every dimension is an affine
function of indices: ``x``, ``x + 1.5``, ``2*x - c``, ``dx*t + x``, ``y + x`` (an index sum) where
``c``, ``dx`` are scalars passed by name, or a constant; ``~dim`` reads permissively (out of the
tensor's extent: missing).  ``coalesce(a, b, ..)`` is the first operand that is not missing.
Outside brackets, names are scalars (from the ``scalars`` dict) or bare indices (``IndexRef``).
``d`` may only appear as the last factor.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

from .expr import Access, Affine, Const, IndexRef, Op

_LHS = re.compile(r"^\s*([A-Za-z_]\w*)\s*\[([^\]]*)\]\s*=(?!=)(.*)$", re.S)
_SEMI = "__oracle_semicolon__"

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
           ast.BitAnd: "and", ast.BitOr: "or"}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not"}
_CMP = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_CALLS = {"min": (2, None), "max": (2, None), "sqrt": (1, 1), "abs": (1, 1), "exp": (1, 1), "log": (1, 1), "coalesce": (2, None)}


@dataclass(frozen=True)
class Program:
    out: str                 # output tensor name
    out_indices: tuple       # LHS index names, in order
    expr: object             # expression tree (see expr.py)
    measures: tuple          # ((index, measure_name), ...) from d(...), in written order
    text: str


def parse(text: str, scalars=None) -> Program:
    """Parse einsum `text`; `scalars` (name -> number) resolves non-index names."""
    scalars = dict(scalars or {})
    m = _LHS.match(text)
    if not m:
        raise ValueError(f"expected 'Out[idx, ...] = expr', got {text!r}")
    out, lhs, rhs = m.group(1), m.group(2).strip(), m.group(3)
    out_indices = tuple(s.strip() for s in lhs.split(",")) if lhs else ()
    for name in out_indices:
        if not name.isidentifier():
            raise ValueError(f"output index {name!r} must be a plain name")
        if name in scalars:
            raise ValueError(f"output index {name!r} is also a scalar")
    if len(set(out_indices)) != len(out_indices):
        raise ValueError(f"repeated output index in {out_indices}")
    if rhs.count(";") > 1:
        raise ValueError("at most one ';' (inside d(...)) is allowed")
    rhs = re.sub(r"\[\s*\]", "[()]", rhs).replace(";", f", {_SEMI},")
    try:
        tree = ast.parse(rhs.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"cannot parse right-hand side of {text!r}: {e}") from None
    measures = ()
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Mult) and _is_d(tree.right):
        measures = _measures(tree.right)
        tree = tree.left
    conv = _Converter(scalars)
    return Program(out, out_indices, conv.expr(tree), measures, text)


def _is_d(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "d"


def _measures(call) -> tuple:
    if call.keywords:
        raise ValueError("d(...) takes no keywords")
    names = []
    for a in call.args:
        if isinstance(a, ast.Name):
            names.append(a.id)
        elif isinstance(a, ast.Constant) and isinstance(a.value, str):
            names.append(a.value)
        else:
            raise ValueError(f"d(...) arguments must be names, got {ast.unparse(a)!r}")
    if names.count(_SEMI) != 1:
        raise ValueError("d(...) must be written d(i, j; m1, m2)")
    k = names.index(_SEMI)
    idx, ms = names[:k], names[k + 1:]
    if len(idx) != len(ms) or not idx:
        raise ValueError(f"d(...) needs one measure per index, got {idx} ; {ms}")
    if len(set(idx)) != len(idx):
        raise ValueError(f"repeated index in d(...): {idx}")
    return tuple(zip(idx, (m.lower() for m in ms)))


class _Converter:
    def __init__(self, scalars):
        self.scalars = scalars

    def expr(self, node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return Const(node.value)
            if isinstance(node.value, (int, float)):
                return Const(float(node.value))
            raise ValueError(f"unsupported constant {node.value!r}")
        if isinstance(node, ast.IfExp):
            return Op("ifelse", (self.expr(node.test), self.expr(node.body), self.expr(node.orelse)))
        if isinstance(node, ast.Name):
            if node.id == "inf" and "inf" not in self.scalars:
                return Const(math.inf)
            if node.id in self.scalars:
                return Const(float(self.scalars[node.id]))
            return IndexRef(node.id)
        if isinstance(node, ast.Subscript):
            if not isinstance(node.value, ast.Name):
                raise ValueError(f"tensor access must be Name[...], got {ast.unparse(node)!r}")
            sl = node.slice
            dims = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            return Access(node.value.id, tuple(self.affine(d) for d in dims))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return Op(_BINOPS[type(node.op)], (self.expr(node.left), self.expr(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return Op(_UNARY[type(node.op)], (self.expr(node.operand),))
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = self.expr(node.values[0])
            for v in node.values[1:]:
                out = Op(op, (out, self.expr(v)))
            return out
        if isinstance(node, ast.Compare):
            terms = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
            parts = [Op(_CMP[type(o)], (terms[i], terms[i + 1])) for i, o in enumerate(node.ops)
                     if type(o) in _CMP]
            if len(parts) != len(node.ops):
                raise ValueError(f"unsupported comparison in {ast.unparse(node)!r}")
            out = parts[0]
            for p in parts[1:]:
                out = Op("and", (out, p))
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name == "d":
                raise ValueError("d(...) may only appear as the last factor: expr * d(...)")
            if name not in _CALLS or node.keywords:
                raise ValueError(f"unsupported function {name!r}")
            lo, hi = _CALLS[name]
            if len(node.args) < lo or (hi is not None and len(node.args) > hi):
                raise ValueError(f"wrong number of arguments to {name}")
            return Op(name, tuple(self.expr(a) for a in node.args))
        raise ValueError(f"unsupported expression {ast.unparse(node)!r}")

    def affine(self, node) -> Affine:
        perm = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert)
        coefs, const = self._lin(node.operand if perm else node)
        terms = tuple((v, float(c)) for v, c in coefs.items() if c != 0)
        return Affine(terms, float(const), perm)

    def _lin(self, node):
        """(coefficients by index name, constant) of an affine index expression."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return {}, float(node.value)
        if isinstance(node, ast.IfExp):
            return Op("ifelse", (self.expr(node.test), self.expr(node.body), self.expr(node.orelse)))
        if isinstance(node, ast.Name):
            if node.id == "inf" and "inf" not in self.scalars:
                return Const(math.inf)
            if node.id in self.scalars:
                return {}, float(self.scalars[node.id])
            return {node.id: 1.0}, 0.0
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            c, k = self._lin(node.operand)
            s = -1.0 if isinstance(node.op, ast.USub) else 1.0
            return {v: s * x for v, x in c.items()}, s * k
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            (ca, ka), (cb, kb) = self._lin(node.left), self._lin(node.right)
            s = 1.0 if isinstance(node.op, ast.Add) else -1.0
            out = dict(ca)
            for v, x in cb.items():
                out[v] = out.get(v, 0.0) + s * x
            return out, ka + s * kb
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            (ca, ka), (cb, kb) = self._lin(node.left), self._lin(node.right)
            if isinstance(node.op, ast.Div):
                if cb or kb == 0:
                    raise ValueError(f"index {ast.unparse(node)!r}: divide by a non-zero constant")
                return {v: x / kb for v, x in ca.items()}, ka / kb
            if ca and cb:
                raise ValueError(f"index {ast.unparse(node)!r} is not affine")
            if cb:
                (ca, ka), (cb, kb) = (cb, kb), (ca, ka)
            return {v: x * kb for v, x in ca.items()}, ka * kb
        raise ValueError(f"unsupported index expression {ast.unparse(node)!r}")
