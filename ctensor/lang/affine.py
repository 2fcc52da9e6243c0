"""Affine index expressions of accesses (continuous paper Fig. 2: `index`, `val * index`,
`affineIndex + affineIndex`).

An access dimension such as `A[2*x + a*y - b]` is first read as a polynomial over names — a dict
{monomial: number}, a monomial being the sorted tuple of the names multiplied together — and then
*bound*: given which names are loop indices, every monomial must hold at most one index, and the
dimension becomes an `EAffine` (coefficient per index, plus a constant), with coefficients and
constant being scalar expressions.  Binding is separate from parsing because only the whole
program says which names are indices (`lang.program`).

Raises `NotAffine` (a `ValueError`; the callers turn it into `InvalidProgramError` with the text)
for anything else: powers, functions, products of two indices, division by a non-literal.
"""
from __future__ import annotations

from .nodes import EAffine, ECall, EIndex, ELit, EScalar


class NotAffine(ValueError):
    """The expression is not affine in the loop indices with scalar coefficients."""


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _add(p: dict, q: dict, sign=1) -> dict:
    out = dict(p)
    for m, c in q.items():
        v = out.get(m, 0) + sign * c
        if isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63:
            raise NotAffine(f"the integer {v} (a folded coefficient or offset) does not fit in a 64-bit "
                            "integer; write the numbers as floats")
        if v == 0:
            out.pop(m, None)
        else:
            out[m] = v
    return out


def _mul(p: dict, q: dict) -> dict:
    out: dict = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            out = _add(out, {tuple(sorted(m1 + m2)): c1 * c2})
    return out


def poly_of(e) -> dict:
    """Polynomial {monomial: number} of a scalar/index expression tree; raises NotAffine."""
    if isinstance(e, ELit) and _num(e.value):
        return {(): e.value} if e.value != 0 else {}
    if isinstance(e, (EScalar, EIndex)):
        return {(e.name,): 1}
    if isinstance(e, ECall):
        if e.op == "neg":
            return _add({}, poly_of(e.args[0]), -1)
        if e.op in ("+", "-"):
            return _add(poly_of(e.args[0]), poly_of(e.args[1]), 1 if e.op == "+" else -1)
        if e.op == "*":
            return _mul(poly_of(e.args[0]), poly_of(e.args[1]))
        if e.op == "/":
            d = poly_of(e.args[1])
            if set(d) == {()} and d[()] != 0:
                return {m: c / d[()] for m, c in poly_of(e.args[0]).items()}
            raise NotAffine("division by anything but a non-zero number")
    raise NotAffine(f"operator {getattr(e, 'op', type(e).__name__)!r}")


def poly_expr(p: dict):
    """A scalar expression tree of a polynomial (inverse of `poly_of`); None for the zero polynomial."""
    out = None
    for m, c in p.items():
        body = None
        for n in m:
            body = EScalar(n) if body is None else ECall("*", (body, EScalar(n)))
        neg = c < 0
        mag = -c if neg else c
        if body is None:
            term = ELit(mag)
        elif mag != 1:
            term = ECall("*", (ELit(mag), body))
        else:
            term = body
        if out is None:
            out = ECall("neg", (term,)) if neg else term
        else:
            out = ECall("-" if neg else "+", (out, term))
    return out


def bind_affine(poly: dict, order, is_index) -> EAffine:
    """Bind a polynomial to an `EAffine`: names with is_index(name) are loop indices; `order` lists
    the names in written order (the order of the terms).  Raises NotAffine when a monomial
    multiplies two indices (or an index by itself)."""
    coefs: dict = {}
    const: dict = {}
    for m, c in poly.items():
        idx = [n for n in m if is_index(n)]
        if len(idx) > 1:
            raise NotAffine(f"product of indices {'*'.join(idx)}")
        rest = list(m)
        if idx:
            rest.remove(idx[0])
            coefs[idx[0]] = _add(coefs.get(idx[0], {}), {tuple(rest): c})
        else:
            const = _add(const, {m: c})
    rank = {n: k for k, n in enumerate(dict.fromkeys(order))}
    terms = tuple((poly_expr(coefs[i]), i) for i in sorted(coefs, key=lambda n: rank.get(n, len(rank)))
                  if coefs[i])
    return EAffine(terms, poly_expr(const))


def affine_poly(dim: EAffine) -> dict:
    """The polynomial of a bound dimension, index names included (for rebinding)."""
    p: dict = {} if dim.const is None else poly_of(dim.const)
    for coef, i in dim.terms:
        p = _add(p, _mul(poly_of(coef), {(i,): 1}))
    return p


def names_in_order(dim: EAffine) -> list:
    out = []
    for coef, i in dim.terms:
        out.append(i)
        out.extend(n for m in poly_of(coef) for n in m)
    if dim.const is not None:
        out.extend(n for m in poly_of(dim.const) for n in m)
    return list(dict.fromkeys(out))


def rebind(dim: EAffine, is_index) -> EAffine:
    """The same dimension bound with another choice of indices."""
    return bind_affine(affine_poly(dim), names_in_order(dim), is_index)


def coef_poly(dim: EAffine) -> dict:
    """index -> coefficient polynomial over scalars (monomial of scalar names -> number)."""
    return {i: poly_of(c) for c, i in dim.terms}


def const_poly(dim: EAffine) -> dict:
    return {} if dim.const is None else poly_of(dim.const)


def scalar_names(dim: EAffine) -> list:
    """Scalar names read by a bound dimension (coefficients and constant), in written order."""
    return [n for n in names_in_order(dim) if n not in dim.indices]


def offset_of(dim: EAffine):
    """(sign, ELit | EScalar) for `x ± c` (unit coefficient, one literal or scalar constant); None
    for a plain `x` and for every other form."""
    if len(dim.terms) != 1 or poly_of(dim.terms[0][0]) != {(): 1} or dim.const is None:
        return None
    (m, c), *more = const_poly(dim).items()
    if more:
        return None
    if m == ():
        return (1, ELit(c)) if c >= 0 else (-1, ELit(-c))
    if len(m) == 1 and c in (1, -1):
        return (int(c), EScalar(m[0]))
    return None


def form(dim: EAffine) -> str:
    """'plain' (x), 'shift' (x ± c), 'scaled index' (a*x + b), 'index sum' (x + y),
    'compound offset' (x + a*b), or 'constant' (no index)."""
    if not dim.terms:
        return "constant"
    if len(dim.terms) > 1:
        return "index sum"
    if poly_of(dim.terms[0][0]) != {(): 1}:
        return "scaled index"
    if dim.const is None:
        return "plain"
    return "shift" if offset_of(dim) is not None else "compound offset"


# ------------------------------------------------------------------------------------ printing
def _monomial_text(names, mag) -> str:
    return "*".join(([] if mag == 1 and names else [repr(mag)]) + list(names))


def _poly_terms(p: dict, suffix=()):
    """(negative?, text) per monomial of p times the names in `suffix`."""
    for m, c in p.items():
        yield c < 0, _monomial_text(list(m) + list(suffix), -c if c < 0 else c)


def format_affine(dim: EAffine) -> str:
    """Einsum text of a dimension, e.g. `2*x + y - b`, `(a + 1)*x`, `-x`; parses back to it."""
    pieces = []
    for coef, i in dim.terms:
        p = poly_of(coef)
        if len(p) == 1:
            pieces.extend(_poly_terms(p, (i,)))
        else:
            inner = " + ".join(t if not n else f"-{t}" for n, t in _poly_terms(p)).replace("+ -", "- ")
            pieces.append((False, f"({inner})*{i}"))
    if dim.const is not None:
        pieces.extend(_poly_terms(poly_of(dim.const)))
    out = ""
    for k, (neg, text) in enumerate(pieces):
        out += ("-" if neg else "") + text if k == 0 else (" - " if neg else " + ") + text
    return out or "0"


# ------------------------------------------------------------------------------------ accesses
def make_access(tensor: str, dims: tuple, permissive: tuple, text: str = ""):
    """An `EAccess` whose `idxs`/`offsets` are derived from its bound dimensions."""
    from .nodes import EAccess
    idxs = tuple(d.terms[0][1] if d.terms else None for d in dims)
    return EAccess(tensor, idxs, tuple(permissive), tuple(offset_of(d) for d in dims), tuple(dims), text)


def rebind_access(acc, is_index_for):
    """Rebind every dimension of an access; is_index_for(dim) gives the index predicate to use for
    that dimension.  Raises NotAffine."""
    dims = tuple(rebind(d, is_index_for(d)) for d in acc.dims)
    return make_access(acc.tensor, dims, acc.permissive, acc.text)
