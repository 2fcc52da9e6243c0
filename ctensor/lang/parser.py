"""Parser of the continuous einsum (continuous paper Fig. 2; DESIGN.md §6).

    Out[i, x] = expr * d(x, j; lebesgue, counting)

The text is rewritten into Python syntax (`Out[]` → `Out[()]`, `d(a, b; m, n)` → `d((a, b), (m, n))`)
and parsed with the standard `ast` module; the tree is then checked against the grammar and turned
into the expression tree of `lang.nodes`.  Each access dimension is an affine expression of loop
indices with literal or scalar coefficients (`A[x]`, `A[x - c]`, `A[a*x + b]`, `A[y - x]`,
`A[~(x + c)]`), kept as an `EAffine` (`lang.affine`).  Errors raise `InvalidProgramError` with the
offending text.
"""
from __future__ import annotations

import ast
import re

from ..errors import InvalidProgramError
from .affine import NotAffine, bind_affine, make_access, names_in_order as _names_of, poly_of, rebind_access
from .nodes import EAccess, EAffine, ECall, EIndex, ELit, EScalar, Einsum  # noqa: F401 (re-exported)

MEASURES = ("lebesgue", "counting", "boolean")


_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
        ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}
_CMP = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_FUNCS = {"min": "min", "max": "max", "sqrt": "sqrt", "abs": "abs", "exp": "exp", "log": "log",
          "coalesce": "coalesce"}


def _preprocess(text: str) -> str:
    s = re.sub(r"\[\s*\]", "[()]", text)

    def measure(m):
        inner = m.group(1)
        if ";" not in inner:
            return f"d(({inner},), ())"
        idx, meas = inner.split(";", 1)
        return f"d(({idx},), ({meas},))"
    return re.sub(r"\bd\(([^()]*)\)", measure, s)


MAX_DEPTH = 250      # the lowering takes ~20 Python frames per level (`runtime.recursion.LIMIT`)


def _depth(e) -> int:
    """Nesting depth of an expression's operators, without recursion."""
    best, stack = 0, [(e, 1)]
    while stack:
        e, d = stack.pop()
        if isinstance(e, ECall):
            best = max(best, d)
            stack.extend((a, d + 1) for a in e.args)
    return best


def parse(text: str) -> Einsum:
    """Parse einsum text into an `Einsum`; raise InvalidProgramError on malformed input."""
    if not isinstance(text, str):
        raise TypeError(f"einsum text must be a str, got {type(text).__name__}")
    try:
        src = _preprocess(" ".join(text.split()))     # one line: newlines and tabs are spaces
        tree = ast.parse(src, mode="exec")
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
    depth = _depth(rhs)
    if depth > MAX_DEPTH:
        raise InvalidProgramError(f"einsum {text[:60]!r}... nests operators {depth} deep; at most {MAX_DEPTH} "
                                  "(the compiler recurses over the expression): split it into several einsums")
    # output indices, measured indices and names standing alone as a dimension are loop indices;
    # lang.program settles the remaining names with the scalars actually passed
    known = set(out_idxs) | set(measures) | _standalone_names(stmt.value)
    texts = {}
    for node in _subscripts(stmt.value):
        texts.setdefault(_access(node, text), (ast.get_source_segment(src, node) or "").replace("[()]", "[]"))
    rhs = _bind_accesses(rhs, known, texts)
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
            raise InvalidProgramError(f"output index {ast.unparse(e)!r} in {text!r} must be a plain index name "
                                      "(affine output indices are not supported)")
    return tuple(out)


_AFFINE_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _number(v, text):
    """A literal as the program computes it: integers are int64 (one that does not fit would wrap
    around), so a larger one is refused."""
    if isinstance(v, int) and not isinstance(v, bool) and not -2 ** 63 <= v < 2 ** 63:
        raise InvalidProgramError(f"integer literal {v} in {text!r} does not fit in a 64-bit integer; "
                                  f"write it as a float ({float(v)!r})")
    return v


def _index_tree(node, text, names):
    """ast of one access dimension -> expression tree over names and numbers (`names` collects the
    names in written order)."""
    if isinstance(node, ast.Name):
        names.append(node.id)
        return EScalar(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return ELit(_number(node.value, text))
    if isinstance(node, ast.BinOp) and type(node.op) in _AFFINE_OPS:
        left = _index_tree(node.left, text, names)
        return ECall(_AFFINE_OPS[type(node.op)], (left, _index_tree(node.right, text, names)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _index_tree(node.operand, text, names)
        return ECall("neg", (inner,)) if isinstance(node.op, ast.USub) else inner
    raise InvalidProgramError(f"index expression {ast.unparse(node)!r} in {text!r} is not affine: use sums of "
                              "an index times numbers or scalar names, plus a constant (A[a*x + y - c])")


def _dimension(e, text):
    """One access dimension -> (EAffine, permissive).  Which names are indices is not known here:
    the first name written is taken as the index (A[x + c]); `parse` and `lang.program` rebind."""
    perm = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Invert)
    e = e.operand if perm else e
    names: list = []
    tree = _index_tree(e, text, names)
    try:
        poly = poly_of(tree)
        alive = [n for n in names if any(n in m for m in poly)]     # x - x + c: x is gone
        dim = bind_affine(poly, names, lambda n: bool(alive) and n == alive[0])
    except NotAffine as exc:
        raise InvalidProgramError(f"index expression {ast.unparse(e)!r} in {text!r} is not affine ({exc})") from None
    if not dim.terms:
        raise InvalidProgramError(f"index expression {ast.unparse(e)!r} in {text!r} has no index")
    return dim, perm


def _access(node, text) -> EAccess:
    sl = node.slice
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    dims = [_dimension(e, text) for e in elts]
    return make_access(node.value.id, tuple(d for d, _ in dims), tuple(p for _, p in dims))


def _subscripts(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)]


def _standalone_names(tree) -> set:
    """Names that form a whole access dimension (`A[x]`, `A[~x]`): loop indices for sure."""
    out = set()
    for n in _subscripts(tree):
        for e in (n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]):
            e = e.operand if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Invert) else e
            if isinstance(e, ast.Name):
                out.add(e.id)
    return out


def _bind_accesses(e, known, texts):
    """Rebind every access with the names known to be indices, and attach the text as written."""
    if isinstance(e, EAccess):
        def pred(d):
            if set(_names_of(d)) & known:
                return known.__contains__
            return lambda n, first=d.terms[0][1]: n == first
        acc = EAccess(e.tensor, e.idxs, e.permissive, e.offsets, e.dims, texts.get(e, ""))
        try:
            return rebind_access(acc, pred)
        except NotAffine as exc:
            raise InvalidProgramError(f"{acc} is not affine in the loop indices ({exc})") from None
    if isinstance(e, ECall):
        return ECall(e.op, tuple(_bind_accesses(a, known, texts) for a in e.args))
    return e


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
    for i, m in zip(idxs, names):            # a name not in MEASURES is a user measure (`lang.program`)
        if i in measures:
            raise InvalidProgramError(f"index {i!r} has two measures in {text!r}")
        measures[i] = m


def _expr(node, text):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return ELit(_number(node.value, text))
    if isinstance(node, ast.Name):
        if node.id in ("True", "False"):
            return ELit(node.id == "True")
        if node.id in ("inf",):
            return ELit(float("inf"))
        return EScalar(node.id)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return _access(node, text)
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
        # e.g. `(x if S[x, j] else inf)`. Its meaning is the taken branch; compiled code
        # drops a branch whose condition simplifies to a constant and selects between both otherwise
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
        if node.func.id in ("min", "max", "coalesce") and len(args) < 2 or \
                node.func.id in ("sqrt", "abs", "exp", "log") and len(args) != 1:
            raise InvalidProgramError(f"wrong number of arguments to {node.func.id} in {text!r}")
        out = args[0]
        if len(args) == 1:
            return ECall(_FUNCS[node.func.id], args)
        for a in args[1:]:
            out = ECall(_FUNCS[node.func.id], (out, a))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "d":
        # `A & B * d(x; ..)` parses as A & (B * d(..)): & and | bind more loosely than *
        raise InvalidProgramError(f"the measure d(..) in {text!r} must multiply the whole expression (a "
                                  "top-level factor); & and | bind more loosely than *, so write "
                                  "(A[..] & B[..]) * d(..)")
    raise InvalidProgramError(f"unsupported expression {ast.unparse(node)!r} in {text!r}")
