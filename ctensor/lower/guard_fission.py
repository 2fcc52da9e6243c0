"""Guard fission: a loop whose body computes a costly guard and then runs an inner loop is split
into a vectorisable pass that computes the guard for a strip of iterations and a pass that runs
the inner loop where the guard held.

The pattern (KPConv, paper §7.4, Fig. 26: for each neighbour j and kernel point k, the influence
`max(0, 1 - sqrt(|p|²) / sigma)` then, where it is non-zero, the channel loop):

    for k in [lo, hi):                      # the prefix: lets, nested ifs, error exits
        let p = load KP[k] - shift
        if (p finite) {
            let g = max(0, 1 - sqrt(p * p) / sigma)
            if (g != 0) { T }               # the terminal guard; T holds a loop
        }

LLVM vectorises neither the k loop (it holds a loop) nor the prefix on its own, so each k pays the
full latency of sqrt and div in sequence.  The pass rewrites it as strips of `STRIP` iterations:

    for each strip [s0, s1) of [lo, hi):
        for k in [s0, s1): prefix, each error exit `if (c) return` now `if (c) state = EXIT`,
                           the guard `state = cond ? RUN : SKIP`, every prefix value T reads kept;
                           scratch[k - s0] = (state, kept values)     # no other side effect
        for k in [s0, s1): RUN: T on the kept values; EXIT: the prefix of this k again, as
                           written, which takes the exit

The first loop is straight-line after if-conversion (LLVM: masked loads, vector sqrt/div), its
trip count padded to a multiple of LANES so that no scalar remainder runs (`_lanes`); the
second runs T, and the exits, exactly where and in the order the original did: the effects are
the original's (the prefix has none but its exits), only the order of the prefix's loads changes.

Applies only when it is safe: the prefix holds lets (no calls), ifs without else, and exits
(stores then a return) only; it loads only through pointer parameters that T never stores to;
T assigns no mutable variable the prefix reads and has no return.  And only where it pays: the
prefix has a long-latency float op (sqrt, div, pow, exp, log) and T a loop.  The scratch buffers
are one realloc per element type per call, freed before every return.
"""
from __future__ import annotations

import itertools
import threading

from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import F64, I1, I64, PtrType

__all__ = ["STRIP", "fission_guards"]

STRIP = 32          # iterations per strip: a few vectors of every width, scratch in L1
LANES = 8           # phase 1's trip count is padded to a multiple of this (`_lanes`): 8 f64 per AVX-512 vector
# the padded trip count of a strip stays within its STRIP scratch slots only if LANES divides STRIP
assert STRIP % LANES == 0, "guard_fission: STRIP must be a multiple of LANES (phase 1 writes padded slots)"
SKIP, RUN, EXIT = 0, 1, 2   # outcome of an iteration's prefix: guard false, guard true, an exit fired
_SLOW = {"sqrt", "exp", "log"}
# names of new variables: numbered from 0 in each `fission_guards` call (per thread), so that the
# same program gives the same LLVM text, hence the same kernel symbol, in every process
_ids = threading.local()


def _next() -> int:
    return next(_ids.counter)


# ---------------------------------------------------------------- expression / statement walks
def _exprs(e):
    """`e` and its sub-expressions."""
    yield e
    if isinstance(e, (ir.Bin, ir.Cmp)):
        yield from _exprs(e.a)
        yield from _exprs(e.b)
    elif isinstance(e, (ir.Un, ir.Cast)):
        yield from _exprs(e.a)
    elif isinstance(e, ir.Select):
        for x in (e.cond, e.a, e.b):
            yield from _exprs(x)
    elif isinstance(e, ir.Load):
        yield from _exprs(e.ptr)
        yield from _exprs(e.index)
    elif isinstance(e, ir.Call):
        for x in e.args:
            yield from _exprs(x)


def _stmt_exprs(s):
    if isinstance(s, (ir.Let, ir.Assign)):
        return [s.value]
    if isinstance(s, ir.Store):
        return [s.ptr, s.index, s.value]
    if isinstance(s, (ir.If, ir.While)):
        return [s.cond]
    if isinstance(s, ir.For):
        return [s.lo, s.hi]
    if isinstance(s, ir.Eval):
        return [s.expr]
    return []


def _walk(stmts):
    """Every statement in `stmts`, nested ones included."""
    for s in stmts:
        yield s
        if isinstance(s, ir.If):
            yield from _walk(s.then)
            yield from _walk(s.orelse)
        elif isinstance(s, (ir.While, ir.For)):
            yield from _walk(s.body)


def _reads(stmts) -> set:
    """ids of the variables read anywhere in `stmts`."""
    return {id(x.var) for s in _walk(stmts) for e in _stmt_exprs(s) for x in _exprs(e) if isinstance(x, ir.Read)}


def _subst(e, m: dict):
    """`e` with every Read of a variable in `m` (id -> Var) replaced by a Read of its image."""
    if isinstance(e, ir.Read):
        return ir.Read(m[id(e.var)]) if id(e.var) in m else e
    if isinstance(e, ir.Bin):
        return ir.Bin(e.op, _subst(e.a, m), _subst(e.b, m))
    if isinstance(e, ir.Cmp):
        return ir.Cmp(e.op, _subst(e.a, m), _subst(e.b, m))
    if isinstance(e, ir.Un):
        return ir.Un(e.op, _subst(e.a, m))
    if isinstance(e, ir.Cast):
        return ir.Cast(e.to, _subst(e.a, m))
    if isinstance(e, ir.Select):
        return ir.Select(_subst(e.cond, m), _subst(e.a, m), _subst(e.b, m))
    if isinstance(e, ir.Load):
        return ir.Load(_subst(e.ptr, m), _subst(e.index, m))
    if isinstance(e, ir.Call):
        return ir.Call(e.fn, tuple(_subst(x, m) for x in e.args), e.ret)
    return e


def _fresh(v: ir.Var) -> ir.Var:
    return ir.Var(f"{v.name}_f{_next()}", v.type, v.kind)


def _clone(stmts, m: dict) -> list:
    """A copy of `stmts` whose lets and loop variables are new (SSA: each defined once), reads
    renamed through `m` (id -> Var, extended in place)."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Let):
            v = m[id(s.var)] = _fresh(s.var)
            out.append(ir.Let(v, _subst(s.value, m)))
        elif isinstance(s, ir.Assign):
            out.append(ir.Assign(s.var, _subst(s.value, m)))
        elif isinstance(s, ir.Store):
            out.append(ir.Store(_subst(s.ptr, m), _subst(s.index, m), _subst(s.value, m)))
        elif isinstance(s, ir.If):
            out.append(ir.If(_subst(s.cond, m), _clone(s.then, m), _clone(s.orelse, m)))
        elif isinstance(s, ir.While):
            out.append(ir.While(_subst(s.cond, m), _clone(s.body, m)))
        elif isinstance(s, ir.For):
            lo, hi = _subst(s.lo, m), _subst(s.hi, m)
            v = m[id(s.var)] = _fresh(s.var)
            out.append(ir.For(v, lo, hi, _clone(s.body, m)))
        elif isinstance(s, ir.Eval):
            out.append(ir.Eval(_subst(s.expr, m)))
        else:
            out.append(s)
    return out


# ---------------------------------------------------------------- the pattern
def _is_exit(s) -> bool:
    """`if (c) { store...; return }`: an error exit."""
    return isinstance(s, ir.If) and not s.orelse and bool(s.then) and isinstance(s.then[-1], ir.Return) \
        and all(isinstance(x, (ir.Store, ir.Comment)) for x in s.then[:-1])


def _has_loop(stmts) -> bool:
    return any(isinstance(s, (ir.For, ir.While)) for s in _walk(stmts))


def _chain(stmts):
    """The guard chain of a loop body: (prefix statements on the path, the terminal If) or None.
    Every list on the path is lets / comments / exits, then one If (no else) continuing it."""
    *head, last = stmts or [None]
    for s in head:
        if isinstance(s, ir.Comment) or _is_exit(s):
            continue
        if not isinstance(s, ir.Let) or any(isinstance(x, ir.Call) for x in _exprs(s.value)):
            return None
    if not isinstance(last, ir.If) or last.orelse or _is_exit(last):
        return None
    deeper = _chain(last.then)
    if deeper is not None:
        return head + [last] + deeper[0], deeper[1]
    return (head, last) if _has_loop(last.then) else None


def _prefix_lets(stmts, terminal) -> list:
    """The lets of the prefix (every statement on the path to `terminal`, exits excluded)."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Let):
            out.append(s)
        elif isinstance(s, ir.If) and s is not terminal and not _is_exit(s):
            out += _prefix_lets(s.then, terminal)
    return out


def _applies(loop: ir.For):
    """(terminal If, prefix lets) when `loop` may and should be split (module docstring), else None."""
    found = _chain(loop.body)
    if found is None:
        return None
    path, terminal = found
    lets = _prefix_lets(loop.body, terminal)
    body = terminal.then
    slow = any((isinstance(x, ir.Un) and x.op in _SLOW) or (isinstance(x, ir.Bin) and x.op in ("div", "pow")
               and x.type.is_float) for s in lets for x in _exprs(s.value))
    if not slow or any(isinstance(s, ir.Return) for s in _walk(body)):
        return None
    if any(s.var.type not in (F64, I64) for s in lets if id(s.var) in _reads(body)):
        return None             # kept values live in 8-byte scratch slots
    # the prefix's loads: through pointer parameters T never stores to; its reads of mutable
    # variables: none that T assigns
    prefix_exprs = [x for s in lets for x in _exprs(s.value)] + \
                   [x for s in path if isinstance(s, ir.If) for x in _exprs(s.cond)] + \
                   [x for s in path if _is_exit(s) for st in s.then for e in _stmt_exprs(st) for x in _exprs(e)] + \
                   list(_exprs(terminal.cond))
    stored = {id(x.var) for s in _walk(body) if isinstance(s, ir.Store) for x in _exprs(s.ptr)
              if isinstance(x, ir.Read)}
    assigned = {id(s.var) for s in _walk(body) if isinstance(s, ir.Assign)}
    for x in prefix_exprs:
        if isinstance(x, ir.Load) and not (isinstance(x.ptr, ir.Read) and x.ptr.var.kind == "param"
                                           and id(x.ptr.var) not in stored):
            return None
        if isinstance(x, ir.Read) and x.var.kind == "mut" and id(x.var) in assigned:
            return None
    return terminal, lets


# ---------------------------------------------------------------- the rewrite
class _Scratch:
    """The per-call scratch buffers, one per element type (one object per type: LLVM then proves
    the strips' stores independent), each of `slots[type]` runs of STRIP entries."""

    def __init__(self):
        self.ptrs, self.slots = {}, {}

    def slot(self, ty):
        """(pointer of element type `ty`, index of the slot's first entry)."""
        if ty not in self.ptrs:
            self.ptrs[ty] = ir.Var(f"fission_scratch_{ty.name}_{_next()}", PtrType(ty), "mut")
            self.slots[ty] = 0
        k, self.slots[ty] = self.slots[ty], self.slots[ty] + 1
        return ir.Read(self.ptrs[ty]), b.i64(k * STRIP)


def _phase1(stmts, terminal, state, keep):
    """The prefix with each exit `if (c) return` turned into `if (c) state = EXIT else <rest of its
    list>`, and the terminal guard into `state = cond ? RUN : SKIP` and the kept values' copies."""
    out = []
    for k, s in enumerate(stmts):
        if s is terminal:
            out.append(ir.Assign(state, b.select(s.cond, b.i64(RUN), b.i64(SKIP))))
            out += [ir.Assign(m, ir.Read(v)) for v, m in keep]
        elif _is_exit(s):
            out.append(ir.If(s.cond, [ir.Assign(state, b.i64(EXIT))], _phase1(stmts[k + 1:], terminal, state, keep)))
            return out
        elif isinstance(s, ir.If):
            out.append(ir.If(s.cond, _phase1(s.then, terminal, state, keep)))
        else:
            out.append(s)
    return out


def _replay(stmts, terminal) -> list:
    """The prefix with its exits, without the terminal guard's body."""
    out = []
    for s in stmts:
        if s is terminal:
            continue
        if isinstance(s, ir.If) and not _is_exit(s):
            out.append(ir.If(s.cond, _replay(s.then, terminal)))
        else:
            out.append(s)
    return out


def _lanes(t, k1, s0, s1, init, prefix, stores, n) -> ir.For:
    """Phase 1 over [s0, s1) as a loop of t in [0, a multiple of LANES), the prefix run where
    t < s1 - s0: LLVM vectorises a loop of unknown trip count and leaves the (s1 - s0) % VF last
    iterations to a scalar remainder, each paying the full sqrt and div latency (K = 15 kernel
    points: 8 in a vector, 7 scalar); padded, the remainder does not run when VF divides LANES, and
    the padding's lanes are masked off (masked loads at k = s0 + t, contiguous).  They store SKIP to
    slots that phase 2 never reads (s1 - s0 <= t < STRIP)."""
    kk = ir.Var(f"fis_k{n}", I64, "let")
    count = b.sub(ir.Read(s1), ir.Read(s0))
    padded = b.mul(b.div(b.add(count, b.i64(LANES - 1)), b.i64(LANES)), b.i64(LANES))
    live = [ir.Let(kk, b.add(ir.Read(s0), ir.Read(t)))] + _clone(prefix, {id(k1): kk})
    return ir.For(t, b.i64(0), padded, init + [ir.If(b.lt(ir.Read(t), count), live)] + stores)


def _split(loop: ir.For, terminal, lets, scratch: _Scratch) -> list:
    body = terminal.then
    read_in_t = _reads(body)
    kept_vars = [s.var for s in lets if id(s.var) in read_in_t]
    n = _next()
    lo, hi = ir.Var(f"fis_lo{n}", I64, "let"), ir.Var(f"fis_hi{n}", I64, "let")
    kb = ir.Var(f"fis_strip{n}", I64, "let")
    s0, s1 = ir.Var(f"fis_s0_{n}", I64, "let"), ir.Var(f"fis_s1_{n}", I64, "let")
    state = ir.Var(f"fis_state{n}", I64, "mut")
    keep = [(v, ir.Var(f"{v.name}_keep{n}", v.type, "mut")) for v in kept_vars]
    state_p, state_at = scratch.slot(I64)
    slots = [scratch.slot(v.type) for v in kept_vars]
    # phase 1: the prefix of every k of the strip, its outcome and kept values to the scratch
    k1 = loop.var
    tv = ir.Var(f"fis_t{n}", I64, "let")
    t1 = ir.Read(tv)
    init = [ir.Assign(state, b.i64(SKIP))] + [ir.Assign(m, b.const(0, v.type)) for v, m in keep]
    stores = [ir.Store(state_p, b.add(state_at, t1), ir.Read(state))] + \
             [ir.Store(p, b.add(at, t1), ir.Read(m)) for (p, at), (_, m) in zip(slots, keep)]
    phase1 = _lanes(tv, k1, s0, s1, init, _phase1(loop.body, terminal, state, keep), stores, n)
    # phase 2: T where the guard held; where an exit fired, the prefix again, which takes it
    k2 = _fresh(k1)
    t2 = b.sub(ir.Read(k2), ir.Read(s0))
    st = ir.Var(f"fis_st{n}", I64, "let")
    m = {id(k1): k2}
    loads = []
    for v, (p, at) in zip(kept_vars, slots):
        m[id(v)] = _fresh(v)
        loads.append(ir.Let(m[id(v)], ir.Load(p, b.add(at, t2))))
    run = loads + _clone(body, m)
    replay = _clone(_replay(loop.body, terminal), {id(k1): k2})
    phase2 = ir.For(k2, ir.Read(s0), ir.Read(s1), [
        ir.Let(st, ir.Load(state_p, b.add(state_at, t2))),
        ir.If(b.eq(ir.Read(st), b.i64(RUN)), run, [ir.If(b.eq(ir.Read(st), b.i64(EXIT)), replay)])])
    strips = b.div(b.add(b.sub(ir.Read(hi), ir.Read(lo)), b.i64(STRIP - 1)), b.i64(STRIP))
    strip = [ir.Let(s0, b.add(ir.Read(lo), b.mul(ir.Read(kb), b.i64(STRIP)))),
             ir.Let(s1, b.minimum(b.add(ir.Read(s0), b.i64(STRIP)), ir.Read(hi))), phase1, phase2]
    return [ir.Let(lo, loop.lo), ir.Let(hi, loop.hi),
            ir.If(b.lt(ir.Read(lo), ir.Read(hi)), [ir.For(kb, b.i64(0), strips, strip)])]


def _rewrite(stmts, scratch) -> tuple[list, bool]:
    out, changed = [], False
    for s in stmts:
        if isinstance(s, ir.For):
            inner, c = _rewrite(s.body, scratch)
            s = ir.For(s.var, s.lo, s.hi, inner) if c else s
            changed |= c
            found = _applies(s)
            if found is not None:
                out += _split(s, *found, scratch)
                changed = True
                continue
        elif isinstance(s, ir.If):
            then, c1 = _rewrite(s.then, scratch)
            orelse, c2 = _rewrite(s.orelse, scratch)
            if c1 or c2:
                s, changed = ir.If(s.cond, then, orelse), True
        elif isinstance(s, ir.While):
            body, c = _rewrite(s.body, scratch)
            if c:
                s, changed = ir.While(s.cond, body), True
        out.append(s)
    return out, changed


def _free_before_returns(stmts, free) -> list:
    out = []
    for s in stmts:
        if isinstance(s, ir.Return):
            out += free + [s]
        elif isinstance(s, ir.If):
            out.append(ir.If(s.cond, _free_before_returns(s.then, free), _free_before_returns(s.orelse, free)))
        elif isinstance(s, ir.While):
            out.append(ir.While(s.cond, _free_before_returns(s.body, free)))
        elif isinstance(s, ir.For):
            out.append(ir.For(s.var, s.lo, s.hi, _free_before_returns(s.body, free)))
        else:
            out.append(s)
    return out


def fission_guards(fn: ir.Function) -> ir.Function:
    """`fn` with every loop of the guard pattern split (module docstring); `fn` itself when none."""
    _ids.counter = itertools.count()
    scratch = _Scratch()
    body, changed = _rewrite(fn.body, scratch)
    if not changed:
        return fn
    alloc, frees = [], []
    for ty, v in scratch.ptrs.items():
        null = ir.Cast(PtrType(ty), b.i64(0))
        alloc.append(ir.Assign(v, ir.Call("realloc", (null, b.i64(scratch.slots[ty] * STRIP * 8)), PtrType(ty))))
        frees.append(ir.Eval(ir.Call("free", (ir.Read(v),), None)))
    # realloc(NULL, n) is malloc and free(NULL) does nothing: one failed allocation frees the rest
    failed = b.FALSE
    for v in scratch.ptrs.values():
        failed = b.lor(failed, b.eq(ir.Cast(I64, ir.Read(v)), b.i64(0)))
    alloc.append(ir.If(failed, frees + [ir.Return(ir.STATUS_OUT_OF_MEMORY)]))
    return ir.Function(fn.name, fn.params, alloc + _free_before_returns(body, frees) + frees)
