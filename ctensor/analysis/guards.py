"""Simplifying interval guards with z3: continuous paper §6.3, Fig. 19 (names corrected, digest §3.4).

The lowering emits guards over Limit endpoints — "is the intersection non-empty"
(`max(starts) <= min(ends)` in the Limit order), "is it a pinpoint" (the counting measure's
`length == 0`), "is it above -inf" — and many are decided by what the lowering already knows at
that point.  Fig. 19: once the intersection of an interval with a pinpoint is known non-empty,
its length is 0, so the counting sum needs no length test.

`GuardProver` (one per kernel, owned by the lowering `Context`) keeps what is known:

* definitions of let variables (SSA: `v == def(v)` wherever v is readable);
* path facts: the condition of every enclosing `if` (its negation in an `else`);
* assumptions the lowering states: a stored coordinate is finite, a stepper's cursor lies in the
  loop's extent (the loop condition, and the cursor starting at the extent's start), ...

`prove(cond)` returns TRUE or FALSE when z3 proves the guard always holds or never holds under
those facts (unsat of the negation), `cond` with the conjuncts (disjuncts) the others and the facts
imply removed, or `cond` unchanged — always the unchanged guard when z3 answers unknown or the
per-kernel budget is spent.  The lowering asks through `Context.if_(..., prove=True)` /
`Context.guard(..., prove=True)` (looplet passes: phase, spike, switch; the sieves of collapses and
nests), after building the guarded code and only when it is not empty.  Facts that read a mutable variable or memory directly are not kept
(a later assignment or store could falsify them); reads inside let definitions are snapshots and
stay valid.  Only guards over floats or ε (Limit guards) go to z3; integer position tests do not.

Order of work: syntactic checks (constant, a fact itself or its negation), the verdict cache
(keyed by the alpha-renamed guard and the facts relevant to it: those sharing a leaf with it,
transitively), the same verdicts on disk (`guards_memo`: proved by an earlier process), then z3
under a resource limit (`guard_smt.RLIMIT`).

Switch: `ct.compile(..., prove_guards=False)`, or the environment variable
`CTENSOR_PROVE_GUARDS=0` for the default (tests compare both).
"""
from __future__ import annotations

import os
import time

from ..ir import build as b
from ..ir import nodes as ir
from . import guards_memo
from .cache import VerdictCache
from .guard_terms import Canon, conjuncts, direct_state

# z3 checks one kernel may spend; afterwards guards are kept as emitted (cache hits still apply)
MAX_CHECKS = 400
_MISS = ("miss",)
guard_cache = VerdictCache(maxsize=16384)


def enabled_by_default() -> bool:
    """The default of `prove_guards`: on unless CTENSOR_PROVE_GUARDS is 0/false/off/no."""
    return os.environ.get("CTENSOR_PROVE_GUARDS", "1").strip().lower() not in ("0", "false", "off", "no")


def _fits(verdict, parts) -> bool:
    """A verdict read from disk that `_apply` can use for `parts` (a sound line always does: its
    key fixes the number of parts)."""
    if verdict[0] == "const":
        return True
    keep = verdict[1]
    return bool(keep) and all(0 <= i < max(1, len(parts)) for i in keep) and len(set(keep)) == len(keep)


class _Fact:
    """A fact and its leaves (`Canon.leaves`), computed on first use: most facts leave scope before
    any guard asks for them (the box kernel: 278 facts, 17 guards), and canonicalising each one as it
    was stated cost ~20 ms of a ~0.3 s compile.  Deferring changes nothing: every let variable a
    fact reads was defined before it (SSA), and definitions are never replaced."""
    __slots__ = ("expr", "_defs", "_leaves")

    def __init__(self, expr, defs):
        self.expr, self._defs, self._leaves = expr, defs, None

    @property
    def leaves(self):
        if self._leaves is None:
            canon = Canon(self._defs)
            canon.expr(self.expr)
            self._leaves = canon.leaves()
        return self._leaves


class GuardProver:
    """Facts known at the current point of the lowering, and the guard prover over them."""

    def __init__(self, max_checks: int = MAX_CHECKS):
        self.defs: dict = {}
        self.frames: list = [[]]
        self.max_checks = max_checks
        self.decided = 0                 # guards replaced by a constant (context.guard reads it)
        self.stats = {"asked": 0, "true": 0, "false": 0, "refined": 0, "syntactic": 0,
                      "cache_hits": 0, "memo_hits": 0, "z3_checks": 0, "z3_unknown": 0, "z3_seconds": 0.0,
                      "cut": 0}
        self.log: list = []              # (guard before, guard after)
        # set by the lowering of a kernel large enough for a first tier (`driver.tiering`): guards
        # asked after it are kept as emitted (`stats["cut"]` counts them), the optimised tier's
        # lowering proves them
        self.cut = False

    # ------------------------------------------------------------------ facts
    def define(self, var, expr):
        self.defs[var] = expr

    def push(self):
        self.frames.append([])

    def pop(self):
        self.frames.pop()

    def assume(self, cond):
        """Record `cond` (i1) as true from here to the end of the current block."""
        for c in conjuncts(cond):
            if isinstance(c, ir.Const) or direct_state(c):
                continue
            self.frames[-1].append(_Fact(c, self.defs))

    def _relevant(self, leaves):
        facts = [f for fr in self.frames for f in fr]
        chosen = [False] * len(facts)
        grew = True
        while grew:
            grew = False
            for k, f in enumerate(facts):
                if not chosen[k] and f.leaves & leaves:
                    chosen[k] = grew = True
                    leaves = leaves | f.leaves
        return [f for k, f in enumerate(facts) if chosen[k]]

    # ------------------------------------------------------------------ proving
    def prove(self, cond):
        """`cond`, TRUE, FALSE or `cond` with implied conjuncts/disjuncts dropped (see module doc)."""
        if isinstance(cond, ir.Const):
            return cond
        if self.cut:
            self.stats["cut"] += 1
            return cond
        self.stats["asked"] += 1
        canon = Canon(self.defs)
        root = canon.expr(cond)
        if not any(canon.node_type(k) in ("f64", "f32", "i8") for k in range(len(canon.nodes))):
            return cond                               # an integer position test: not a Limit guard
        op = "and" if isinstance(cond, ir.Bin) and cond.op == "and" else "or"
        parts = conjuncts(cond, op)
        part_ids = [canon.expr(p) for p in parts] if len(parts) > 1 else []
        facts = self._relevant(canon.leaves())
        fact_ids = [canon.expr(f.expr) for f in facts]
        verdict = self._syntactic(canon, root, fact_ids)
        if verdict is not None:
            self.stats["syntactic"] += 1
        else:
            key = (op, canon.key([root, *part_ids, -1, *fact_ids]))
            verdict = guard_cache.get(key)
            if verdict is not None:
                self.stats["cache_hits"] += 1
            else:
                h = guards_memo.key_digest(key)
                verdict = guards_memo.get(h)
                if verdict is not None and _fits(verdict, parts):
                    self.stats["memo_hits"] += 1
                else:
                    verdict = self._solve(canon, root, op, part_ids, fact_ids)
                    if verdict is None:
                        return cond                   # budget spent or unknown: not cached
                    guards_memo.put(h, verdict)
                guard_cache.put(key, verdict)
        return self._apply(cond, verdict, parts, op)

    def _syntactic(self, canon, root, fact_ids):
        if root in fact_ids:
            return ("const", True)
        neg = canon.ids.get(("not", root))
        if neg is not None and neg in fact_ids:
            return ("const", False)
        return None

    def _solve(self, canon, root, op, part_ids, fact_ids):
        if self.stats["z3_checks"] >= self.max_checks:
            return None
        from . import guard_smt
        from .smt import z3_locked                    # z3's context is shared with validity
        t0 = time.perf_counter()
        # every z3 object is created, used and freed under the lock (issue 31 (d): the query was
        # freed after the lock was released, racing another thread's z3 calls: segfaults, hangs)
        with z3_locked():
            q = guard_smt.Query(canon, fact_ids, [root, *part_ids])
            try:
                verdict = self._decide(q, root, op, part_ids)
            finally:
                self.stats["z3_checks"] += q.checks
                self.stats["z3_seconds"] += time.perf_counter() - t0
                del q
        return verdict

    def _decide(self, q, root, op, part_ids):
        always = q.unsat([(root, False)])
        if always:
            return ("const", True)
        never = q.unsat([(root, True)])
        if never:
            return ("const", False)
        if always is None or never is None:
            self.stats["z3_unknown"] += 1
            return None                               # z3 gave up: keep the guard as it is
        keep = list(range(max(1, len(part_ids))))
        pos = op == "and"
        for i in range(len(part_ids)):
            if len(keep) < 2 or self.stats["z3_checks"] + q.checks >= self.max_checks:
                break
            # and: drop a conjunct the others (and the facts) imply;
            # or: drop a disjunct that implies one of the others
            others = [(part_ids[j], pos) for j in keep if j != i]
            if q.unsat(others + [(part_ids[i], not pos)]):
                keep.remove(i)
        return ("keep", tuple(keep))

    def _apply(self, cond, verdict, parts, op):
        if verdict[0] == "const":
            out = b.TRUE if verdict[1] else b.FALSE
            self.stats["true" if verdict[1] else "false"] += 1
            self.decided += 1
        elif len(verdict[1]) < len(parts):
            kept = [parts[i] for i in verdict[1]]
            out = kept[0]
            for p in kept[1:]:
                out = b.land(out, p) if op == "and" else b.lor(out, p)
            self.stats["refined"] += 1
        else:
            return cond
        self.log.append((cond, out))
        return out

