"""Invariant factors of a sum become guards of the loops they do not depend on.

In `Out[i, c] = Q[x, i] * P[a, j] * (|a - x| <= R) * F[j, c] * K[a - x + p, k] * max(0, 1 - |p| / s)`
the radius test is known once `x` and `a` are pinpoints (their values are substituted as runtime
scalars, `lower.lowerer._collapse_index_value`), and the kernel-point weight once `p` is; the loops
left inside (over j, p, k, c) do not change them.  Left in the innermost assignment they would be
computed per channel and, where they are 0, the inner loops would still run and add zeros.

`hoist_factors(ctx, loop)`: where the loop's body is one `+`-assignment whose right side is a
product, the factors that read no tensor and no index (only literals and runtime scalars) are
computed once before the loop, and the loop runs only where their product is non-zero: `+` adds
nothing there because 0 annihilates `*` (the simplifier's rule for fills, `lower.simplify`).  The
product's value replaces the factors, so the inner assignment multiplies by one scalar.
"""
from __future__ import annotations

from ..ir import build as b
from .notation import Access, Call, Idx, Lit, Loop, Sieve, Val, map_assigns, walk_assigns
from .ops import kind, to_ir


def _factors(e) -> list:
    """The operands of a (nested) product, or [e]."""
    if isinstance(e, Call) and e.op == "*":
        return [f for a in e.args for f in _factors(a)]
    return [e]


def _closed(e) -> bool:
    """Does `e` read only literals and runtime scalars (no tensor, no index value)?"""
    if isinstance(e, (Access, Idx)):
        return False
    if isinstance(e, Call):
        return all(_closed(a) for a in e.args)
    return isinstance(e, (Lit, Val))


def _product(fs):
    out = fs[0]
    for f in fs[1:]:
        out = Call("*", (out, f))
    return out


def _lift_sieves(node, conds):
    """`node` without the Sieves on its chain of single statements (Loop/Sieve down to the one
    assignment), their conditions appended to `conds`."""
    if isinstance(node, Sieve):
        conds.append(node.cond)
        return _lift_sieves(node.body, conds)
    if isinstance(node, Loop):
        return Loop(node.idx, node.ext, _lift_sieves(node.body, conds))
    return node


def hoist_factors(ctx, loop: Loop):
    """`loop`, or a Sieve on the non-zero value of its invariant factors around it (see module)."""
    assigns = list(walk_assigns(loop.body))
    if len(assigns) != 1:
        return loop
    # Sieves between the loop and its one assignment (the finite-pinpoint tests of the counting
    # measure, `lowerer.collapse`) test values computed before this loop: tested once, here
    conds = []
    lifted = _lift_sieves(loop.body, conds)
    if conds:
        cond = conds[0]
        for c in conds[1:]:
            cond = b.land(cond, c)
        return Sieve(cond, hoist_factors(ctx, Loop(loop.idx, loop.ext, lifted)))
    if assigns[0].op != "+":
        return loop
    a = assigns[0]
    fs = _factors(a.rhs)
    # a bare Lit or Val is already one scalar: nothing to compute once
    inv = [f for f in fs if isinstance(f, Call) and _closed(f)]
    if not inv or len(inv) == len(fs):
        return loop
    guard = _product(inv)
    k = kind(guard)
    w = ctx.let(to_ir(ctx, guard, k), "guard")
    if k == "bool":
        cond, rest = w, [f for f in fs if not any(f is g for g in inv)]
    else:
        cond = b.ne(w, b.const(0.0 if k == "float" else 0, w.type))
        rest = [Val(w, k)] + [f for f in fs if not any(f is g for g in inv)]
    rhs = _product(rest)
    body = map_assigns(loop.body, lambda x: x.with_(rhs=rhs) if x is a else x)
    return Sieve(cond, Loop(loop.idx, loop.ext, body))
