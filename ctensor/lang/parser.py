"""Parser of the continuous einsum (continuous paper Fig. 2; DESIGN.md §6).

    Out[i, x] = expr * d(x, j; lebesgue, counting)

The text is rewritten into Python syntax (`Out[]` → `Out[()]`, `d(a, b; m, n)` → `d((a, b), (m, n))`)
and parsed with the standard `ast` module; the tree is then checked against the grammar and turned
into the small expression tree below.  Errors raise `InvalidProgramError` with the offending text.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..errors import InvalidProgramError

MEASURES = ("lebesgue", "counting", "boolean")


@dataclass(frozen=True)
class EAccess:
    tensor: str
    idxs: tuple            # index names
    permissive: tuple = ()  # per index: True for ~x
    offsets: tuple = ()     # per index: None, or (sign, ELit | EScalar) for A[x + c] / A[x - c]


@dataclass(frozen=True)
class ELit:
    value: object


@dataclass(frozen=True)
class EScalar:
    name: str


@dataclass(frozen=True)
class EIndex:
    name: str


@dataclass(frozen=True)
class ECall:
    op: str
    args: tuple


@dataclass(frozen=True)
class Einsum:
    out: str
    out_idxs: tuple
    rhs: object
    measures: dict          # reduction index -> measure name
    text: str


_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
        ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}
_CMP = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_FUNCS = {"min": "min", "max": "max", "sqrt": "sqrt", "abs": "abs"}


def _preprocess(text: str) -> str:
    s = re.sub(r"\[\s*\]", "[()]", text)

    def measure(m):
        inner = m.group(1)
        if ";" not in inner:
            return f"d(({inner},), ())"
        idx, meas = inner.split(";", 1)
        return f"d(({idx},), ({meas},))"
    return re.sub(r"\bd\(([^()]*)\)", measure, s)


def parse(text: str) -> Einsum:
    """Parse einsum text into an `Einsum`; raise InvalidProgramError on malformed input."""
    if not isinstance(text, str):
        raise TypeError(f"einsum text must be a str, got {type(text).__name__}")
    try:
        tree = ast.parse(_preprocess(text.strip()), mode="exec")
    except SyntaxError as exc:
        raise InvalidProgramError(f"cannot parse einsum {text!r}: {exc.msg}") from None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign) or len(tree.body[0].targets) != 1:
        raise InvalidProgramError(f"einsum must be one assignment 'Out[...] = expr', got {text!r}")
    stmt = tree.body[0]
    out, out_idxs = _lhs(stmt.targets[0], text)
    factors = _product_factors(stmt.value)
    measures: dict = {}
    rest = []
    for f in factors:
        if isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id == "d":
            _measure(f, measures, text)
        else:
            rest.append(f)
    if not rest:
        raise InvalidProgramError(f"einsum {text!r} has no expression besides its measure")
    rhs = _expr(rest[0], text)
    for f in rest[1:]:
        rhs = ECall("*", (rhs, _expr(f, text)))
    return Einsum(out, out_idxs, rhs, measures, text)


def _lhs(node, text):
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        raise InvalidProgramError(f"left-hand side must be 'Name[i, ...]' in {text!r}")
    idxs = _index_names(node.slice, text, allow_expr=False)
    if len(set(idxs)) != len(idxs):
        raise InvalidProgramError(f"output indices repeat in {text!r}")
    return node.value.id, idxs


def _index_names(sl, text, allow_expr=True):
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    out = []
    for e in elts:
        if isinstance(e, ast.Name):
            out.append(e.id)
        else:
            raise InvalidProgramError(f"index {ast.unparse(e)!r} in {text!r} must be a plain index name "
                                      "(affine indices are not supported yet)")
    return tuple(out)


def _shift_term(node, text):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return ELit(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _shift_term(node.operand, text)
        if isinstance(inner, ELit):
            return ELit(-inner.value)
    if isinstance(node, ast.Name):
        return EScalar(node.id)
    raise InvalidProgramError(f"index expression {ast.unparse(node)!r} in {text!r}: only an index plus or minus "
                              "a number or a scalar name is supported (A[x + c]); A[a*x], A[x + y] are not yet")


def _affine_index(e, text):
    """x -> (x, None); x + c, c + x, x - c -> (x, (±1, c)) with c a number or scalar name."""
    if isinstance(e, ast.Name):
        return e.id, None
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        if isinstance(e.left, ast.Name):
            return e.left.id, (1 if isinstance(e.op, ast.Add) else -1, _shift_term(e.right, text))
        if isinstance(e.op, ast.Add) and isinstance(e.right, ast.Name):
            return e.right.id, (1, _shift_term(e.left, text))
    raise InvalidProgramError(f"index {ast.unparse(e)!r} in {text!r} must be an index name or index ± constant "
                              "(A[x + c]); scaled and multi-index forms are not supported yet")


def _product_factors(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _product_factors(node.left) + _product_factors(node.right)
    return [node]


def _measure(call, measures, text):
    idx_t, meas_t = call.args
    idxs = [e.id if isinstance(e, ast.Name) else None for e in idx_t.elts]
    names = [e.id if isinstance(e, ast.Name) else None for e in meas_t.elts]
    if None in idxs or None in names:
        raise InvalidProgramError(f"malformed measure in {text!r}: write d(x, y; lebesgue, counting)")
    if not names:
        names = ["lebesgue"] * len(idxs)
    if len(names) != len(idxs):
        raise InvalidProgramError(f"d(...) in {text!r} names {len(idxs)} indices but {len(names)} measures")
    for i, m in zip(idxs, names):
        if m not in MEASURES:
            raise InvalidProgramError(f"unknown measure {m!r} in {text!r}; use one of {MEASURES}")
        if i in measures:
            raise InvalidProgramError(f"index {i!r} has two measures in {text!r}")
        measures[i] = m


def _expr(node, text):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return ELit(node.value)
    if isinstance(node, ast.Name):
        if node.id in ("True", "False"):
            return ELit(node.id == "True")
        if node.id in ("inf",):
            return ELit(float("inf"))
        return EScalar(node.id)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        idxs, perm, offs = [], [], []
        for e in elts:
            p = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Invert)
            e = e.operand if p else e
            name, off = _affine_index(e, text)
            idxs.append(name)
            perm.append(p)
            offs.append(off)
        return EAccess(node.value.id, tuple(idxs), tuple(perm), tuple(offs))
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return ECall(_BIN[type(node.op)], (_expr(node.left, text), _expr(node.right, text)))
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            return ECall("neg", (_expr(node.operand, text),))
        if isinstance(node.op, (ast.Not, ast.Invert)):
            return ECall("not", (_expr(node.operand, text),))
        if isinstance(node.op, ast.UAdd):
            return _expr(node.operand, text)
    if isinstance(node, ast.IfExp):
        # `a if c else b` (Finch's ifelse): the masked value of a (min,+) or (max,*) reduction,
        # e.g. `(x if S[x, j] else inf)`; only the taken branch is evaluated
        return ECall("ifelse", (_expr(node.test, text), _expr(node.body, text), _expr(node.orelse, text)))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        return ECall(_CMP[type(node.ops[0])], (_expr(node.left, text), _expr(node.comparators[0], text)))
    if isinstance(node, ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        out = _expr(node.values[0], text)
        for v in node.values[1:]:
            out = ECall(op, (out, _expr(v, text)))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        args = tuple(_expr(a, text) for a in node.args)
        if node.func.id in ("min", "max") and len(args) < 2 or node.func.id in ("sqrt", "abs") and len(args) != 1:
            raise InvalidProgramError(f"wrong number of arguments to {node.func.id} in {text!r}")
        out = args[0]
        if len(args) == 1:
            return ECall(_FUNCS[node.func.id], args)
        for a in args[1:]:
            out = ECall(_FUNCS[node.func.id], (out, a))
        return out
    raise InvalidProgramError(f"unsupported expression {ast.unparse(node)!r} in {text!r}")
