"""One lowering pass per looplet kind, chosen by numeric priority (highest wins).

Source: Looplets paper §4, Finch paper §4 (SOS rules), Finch.jl `src/looplets/*.jl`; digest §2.3.
Each pass rewrites `for idx in ext: body` where some accesses in `body` are looplets at `idx`:
it emits code, substitutes looplets by their children, truncates every other looplet at `idx` to
the sub-extent it creates (`truncate`), and lowers the smaller loops recursively.  Order:
Thunk > Switch > Walk > Pinpoint > Phase > Sequence > Spike > Run > Stepper > AcceptRun > Lookup (DESIGN.md
§4; Walk and Pinpoint, a SparseList / SparsePoint fiber, are ours: they go before phases so that a
covered fiber is walked without tests, and a point is tested once).
"""
from __future__ import annotations

from ..errors import InvalidProgramError
from ..extents import Extent, SymLimit, lim_eq, lim_le, lim_min
from ..ir import build as b
from ..ir import nodes as ir
from ..ir.types import I8
from ..lower.lowerer import lower
from ..lower.notation import Loop
from ..lower.tile import SUFFIX as TILE_SUFFIX
from .count import try_count_collapse
from .extremum import try_extremum_collapse
from .nodes import AcceptRun, Lookup, Phase, Pinpoint, Run, Sequence, Spike, Stepper, Switch, Thunk, Walk
from .pins import cut_first, phase_cuts, pin_tails
from .rewrite import _accesses, _bind, _noop_on, _rewrite
from .truncate import truncate
from .walk import try_spike_walk, walk_pass


# ---------------------------------------------------------------- passes

def thunk_pass(ctx, loop):
    epilogues, found = [], []

    def make(acc):
        t = acc.tns
        if t.preamble:
            t.preamble(ctx)
        if t.epilogue:
            epilogues.append(t.epilogue)
        if t.around is not None and loop.ext.continuous and _has_slices(acc, loop.idx):
            found.append((acc, t.around))
        return t.body
    body = _rewrite(ctx, loop, lambda a: isinstance(a.tns, Thunk), make)
    with ctx.locating(loop.idx, found):
        lower(ctx, Loop(loop.idx, loop.ext, body))
    for e in reversed(epilogues):
        e(ctx)


def switch_pass(ctx, loop):
    acc = _accesses(loop, Switch)[0]
    cases = acc.tns.cases

    def branch(k):
        cond, node = cases[k]
        body = _rewrite(ctx, loop, lambda a: a is acc, lambda a: node)
        go = lambda: lower(ctx, Loop(loop.idx, loop.ext, body))
        if k == len(cases) - 1:
            go()
        else:
            ctx.if_(cond, go, lambda: branch(k + 1), prove=True)
    branch(0)


def phase_pass(ctx, loop):
    ext = loop.ext
    sub = ext
    phases = _accesses(loop, Phase)
    for acc in phases:
        ph = acc.tns
        sub = sub.intersect(Extent(ph.start or ext.start, ph.stop or ext.stop, ext.continuous))
    nonempty = sub.nonempty()
    if b.is_const(nonempty, False):
        return
    if sub != ext:
        sub = Extent(_bind(ctx, sub.start, loop.idx + "_start"), _bind(ctx, sub.stop, loop.idx + "_stop"),
                     ext.continuous)
        nonempty = sub.nonempty()
    # inside the guard the stop is known to be above -inf (nonempty() checked it)
    sub = Extent(sub.start, SymLimit(sub.stop.v, sub.stop.e, True), sub.continuous)
    body = _rewrite(ctx, loop, lambda a: isinstance(a.tns, Phase), lambda a: a.tns.body(ctx, sub), sub)
    with ctx.cutting(loop.idx, phase_cuts(phases, ext)):
        ctx.guard(nonempty, lambda: lower(ctx, Loop(loop.idx, sub, body)), prove=True)


def _has_slices(acc, idx) -> bool:
    """Does the access read inner levels at other indices than `idx` (slices whose count at a
    point of an outer run list may differ)?  A diagonal B[x, x] has none: its child is read at x."""
    return any(i != idx for i in acc.idxs[1:])


def sequence_pass(ctx, loop):
    acc = _accesses(loop, Sequence)[0]
    ext = loop.ext
    found = []
    if acc.tns.runs and ext.continuous and _has_slices(acc, loop.idx):
        ctx.run_levels.setdefault(loop.idx, set()).add(acc.name)
        if acc.tns.around is not None:
            found.append((acc, acc.tns.around))
        else:
            ctx.run_unlocated.setdefault(loop.idx, set()).add(acc.name)
    phases, prev = [], None
    specs = acc.tns.phases
    for k, spec in enumerate(specs):
        start = None if k == 0 else ext.plus_unit(prev)      # None: the extent's own start
        stop = spec.stop(ctx, ext) if spec.stop is not None and k < len(specs) - 1 else None
        phases.append(Phase(spec.body, start=start, stop=stop))
        prev = stop if stop is not None else ext.stop
    with ctx.locating(loop.idx, found):
        for ph in phases:
            body = _rewrite(ctx, loop, lambda a: a is acc, lambda a, ph=ph: ph)
            lower(ctx, Loop(loop.idx, ext, body))


def spike_pass(ctx, loop):
    ext = loop.ext
    is_spike = lambda a: isinstance(a.tns, Spike)
    if cut_first(loop):
        stepper_pass(ctx, loop)
        return
    body_ext = Extent(ext.start, ext.minus_unit(ext.stop), ext.continuous)
    nonempty = body_ext.nonempty()
    if not b.is_const(nonempty, False):
        body = _rewrite(ctx, loop, is_spike, lambda a: Run(a.tns.body), body_ext)
        ctx.if_(nonempty, lambda: lower(ctx, Loop(loop.idx, body_ext, body)), prove=True)
    tail_ext = Extent(ext.stop, ext.stop, ext.continuous)
    loop, sure = pin_tails(ctx, loop)
    tail = _rewrite(ctx, loop, is_spike, lambda a: Run(a.tns.tail), tail_ext)
    # at a tile loop a stored point's own start is a bound the inner loop must see (`lower.tile.cell_point`)
    starts = [(a.name, "start", ext.stop) for a in _accesses(loop, Spike)] if loop.idx.endswith(TILE_SUFFIX) else []
    with ctx.pinning(loop.idx, sure), ctx.cutting(loop.idx, starts):
        lower(ctx, Loop(loop.idx, tail_ext, tail))


def run_pass(ctx, loop):
    body = _rewrite(ctx, loop, lambda a: isinstance(a.tns, Run), lambda a: a.tns.body)
    lower(ctx, Loop(loop.idx, loop.ext, body))


def stepper_pass(ctx, loop):
    """Co-iterate every stepper at once (two-finger merge): each step ends at the nearest chunk
    stop; a stepper whose chunk ends there advances (digest §2.3, Fig. 1(e) of the paper)."""
    ext = loop.ext
    steppers = _accesses(loop, Stepper)
    if len(steppers) == 1 and (try_count_collapse(ctx, loop, steppers[0])
                               or try_extremum_collapse(ctx, loop, steppers[0])
                               or try_spike_walk(ctx, loop, steppers[0])):
        return
    iv = ctx.mut(ext.start.v.type, ext.start.v, loop.idx)
    ie, const_e = None, b.i8(0)
    if ext.continuous:
        # When every step ends with the same constant ε c, every later start has ε = sat(c+1):
        # keep it a constant so the merge compares plain floats.  A start at -inf may take that ε
        # too: the only point it adds or drops is -inf itself, where no data lies.
        eps = {acc.tns.stop_eps for acc in steppers} | {ext.stop.e.value if b.is_const(ext.stop.e) else None}
        c = eps.pop() if len(eps) == 1 else None
        if c is not None:
            nxt_e = max(-1, min(1, c + 1))
            if b.is_const(ext.start.e, nxt_e) or b.is_const(ext.start.v, float("-inf")):
                const_e = b.i8(nxt_e)
            else:
                c = None
        if c is None:
            ie = ctx.mut(I8, ext.start.e, loop.idx + "_e")
    cur = lambda: SymLimit(ir.Read(iv), ir.Read(ie) if ie is not None else const_e)
    for acc in steppers:
        acc.tns.seek(ctx, ext)
    # run steppers (not spikes) of outer levels: their own bounds at a point, also the start of a
    # step just after their chunk ended, make its count depend on the inner coordinate
    # (`lower.run_counting`)
    runs = [a for a in steppers if not a.tns.spikes and _has_slices(a, loop.idx)] if ext.continuous else []
    # every stepper's start after its chunk ended is a cut: the counting weight at a run list's
    # bound needs to know whether another access cuts there (`lower.run_counting`), and at a tile
    # loop the inner loop must see every such bound (`lower.tile.cell_point`)
    ended = {acc: ctx.mut(ir.I1, b.FALSE, acc.name + "_ended") for acc in steppers} if ext.continuous else {}
    located = ctx.run_around.get(loop.idx, {})
    for acc in runs:
        if (acc.name, tuple(acc.idxs[1:])) not in located:
            ctx.run_unlocated.setdefault(loop.idx, set()).add(acc.name)
    exact_start = ie is not None or _e_ge(const_e, ext.start.e)
    with ctx.block() as body:
        i0 = _bind(ctx, cur(), loop.idx + "_i")
        # facts for the guard prover: the loop condition holds for this step's start, and the
        # cursor, which starts at ext.start and only moves forward (chunk stops are at or after
        # it on canonical input), lies in the extent (in value only when its first ε is not
        # ext.start's: a start at -inf, see above)
        ctx.assume(lim_le(i0, ext.stop))
        ctx.assume(lim_le(ext.start, i0) if exact_start else b.le(ext.start.v, i0.v))
        stops = {}
        for acc in steppers:
            acc.tns.preamble(ctx)
            stops[acc] = _bind(ctx, acc.tns.stop(ctx), acc.name + "_stop")
        step_stop = ext.stop
        for k, s in enumerate(stops.values()):
            step_stop = lim_min(step_stop, s)
            if 0 < k < len(stops) - 1:     # a let per partial minimum: the select trees nest
                step_stop = _bind(ctx, step_stop, loop.idx + "_min")
        step_stop = _bind(ctx, step_stop, loop.idx + "_step")
        step = Extent(i0, step_stop, ext.continuous)
        chunks = {acc: truncate(acc.tns.chunk(ctx), Extent(i0, stops[acc], ext.continuous), step)
                  for acc in steppers}
        new = _rewrite(ctx, loop, lambda a: a in chunks, lambda a: chunks[a], step)
        cuts = [(acc.name, "stop", stops[acc]) for acc in steppers] if ext.continuous else []
        # a start at i0 only where the run's chunk ended just before it (NaN never equals a point)
        cuts += [(acc.name, "start", SymLimit(b.select(ir.Read(ended[acc]), i0.v, b.f64(float("nan"))), i0.e))
                 for acc in ended]
        with ctx.cutting(loop.idx, cuts, runs):
            lower(ctx, Loop(loop.idx, step, new))
        for acc in steppers:
            full = ctx.let(lim_eq(stops[acc], step_stop), acc.name + "_full")
            acc.tns.next(ctx, full)
            if acc in ended:
                ctx.assign(ended[acc], full)
        nxt = ext.plus_unit(step_stop)
        ctx.assign(iv, nxt.v)
        if ie is not None:
            ctx.assign(ie, nxt.e)
    ctx.emit(ir.While(lim_le(cur(), ext.stop), body))


def _e_ge(e, f) -> bool:
    """Compile time: ε expression e is a constant >= the constant f."""
    return b.is_const(e) and b.is_const(f) and e.value >= f.value


def pinpoint_pass(ctx, loop):
    """One stored coordinate c: when the body is a no-op on the fill, `if start <= c <= stop: body
    at [c, c]` (the other accesses truncated to the point, so a stepper there seeks c); otherwise
    the fiber's Sequence form."""
    acc = _accesses(loop, Pinpoint)[0]
    pt, ext = acc.tns, loop.ext
    if not _noop_on(ctx, loop, acc, pt.empty):
        body = _rewrite(ctx, loop, lambda a: a is acc, lambda a: pt.fallback())
        lower(ctx, Loop(loop.idx, ext, body))
        return
    point = Extent(pt.coord, pt.coord, ext.continuous)
    new = _rewrite(ctx, loop, lambda a: a is acc, lambda a: Run(pt.body), point)
    go = lambda: lower(ctx, Loop(loop.idx, point, new))
    cuts = [(acc.name, "start", pt.coord), (acc.name, "stop", pt.coord)] if ext.continuous else []
    with ctx.cutting(loop.idx, cuts):         # the point is a piece of its own (`looplets.pins`)
        if loop.idx in acc.covered:      # coord is known to lie in the extent (a whole grid cell)
            go()
        else:
            ctx.if_(b.land(lim_le(ext.start, pt.coord), lim_le(pt.coord, ext.stop)), go, prove=True)


def acceptrun_pass(ctx, loop):
    body = _rewrite(ctx, loop, lambda a: isinstance(a.tns, AcceptRun), lambda a: a.tns.body(ctx, loop.ext))
    lower(ctx, Loop(loop.idx, loop.ext, body))


def lookup_pass(ctx, loop):
    ext = loop.ext
    is_lookup = lambda a: isinstance(a.tns, Lookup)
    if ext.continuous:
        pin = ctx.pinpoint_test(ext)
        if b.is_const(pin, False):
            names = ", ".join(a.name for a in _accesses(loop, Lookup))
            raise InvalidProgramError(f"{names}: a pinpoint-only access (Lookup) cannot cover an interval of "
                                      f"positive length along {loop.idx}")
        ctx.fail_if(b.lnot(pin), ir.STATUS_LOOKUP_ON_INTERVAL)
        point = Extent(ext.start, ext.start, True)
        body = _rewrite(ctx, loop, is_lookup, lambda a: a.tns.body(ctx, ext.start), point)
        lower(ctx, Loop(loop.idx, point, body))
        return
    j = ir.Var(ctx.fresh(loop.idx), ext.start.v.type, "let")
    jl = SymLimit(ir.Read(j), b.i8(0))
    point = Extent(jl, jl, False)
    with ctx.block() as inner:
        body = _rewrite(ctx, loop, is_lookup, lambda a: a.tns.body(ctx, jl), point)
        lower(ctx, Loop(loop.idx, point, body))
    ctx.emit(ir.For(j, ext.start.v, b.add(ext.stop.v, b.i64(1)), inner))


PASSES = [  # (priority, looplet class, pass)
    (10, Thunk, thunk_pass),
    (9, Switch, switch_pass),
    (8.7, Walk, walk_pass),           # picks its form before any phase cuts the extent
    (8.5, Pinpoint, pinpoint_pass),   # before phases: one coordinate test, then the rest at that point
    (8, Phase, phase_pass),
    (7, Sequence, sequence_pass),
    (6, Spike, spike_pass),
    (5, Run, run_pass),
    (3, Stepper, stepper_pass),
    (2, AcceptRun, acceptrun_pass),
    (1, Lookup, lookup_pass),
]


def choose_pass(accesses):
    best = None
    for acc in accesses:
        for prio, cls, fn in PASSES:
            if isinstance(acc.tns, cls) and (best is None or prio > best[0]):
                best = (prio, fn)
    if best is None:
        raise InvalidProgramError(f"no lowering pass for {[type(a.tns).__name__ for a in accesses]}")
    return best[1]
