"""Looplet nodes: how one fiber of a level looks along one index, relative to a target extent.

Source: Looplets paper (CGO'23) §3–4; Finch paper §4; digest §2.  Each looplet is a small dataclass;
the pass that lowers it lives in `ctensor/looplets/passes.py` and carries its priority.

Callables receive the lowering context `ctx` (a `ctensor.lower.context.Context`) and emit IR into
it.  A looplet's expressions may only read `let` variables and parameters, never mutable cursors
directly, because expression trees are evaluated where they are finally used.

Leaves (what a looplet resolves to once the index is consumed) are:
  `Fiber(level, pos)`        a read subfiber of the next level (or a leaf level: a value);
  `Hollow(level, pos, dirty)` a write subfiber whose writes set the `dirty` flag;
  `FillLeaf(value)`          the whole subtensor is the fill value (a compile-time constant);
  `Value(expr, dtype)`       a runtime scalar.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional


# ---------------------------------------------------------------- leaves

@dataclass(frozen=True, eq=False)
class Fiber:
    level: Any        # a virtual level
    pos: Any          # i64 IR expression
    # (lo, hi) SymLimits in the loop's frame, set by a grid level on the fiber of one cell: every
    # coordinate stored below it along the binned index lies in [lo, hi] (`lower.tile.lower_piece`)
    cell: Any = None
    # i1 IR expression, or None for true: false for an unstored slot of a byte map read by id in a
    # ⊕-chain (`VSparseByteMap.unfurl_union`), whose child slot may hold anything; the union
    # protocol then reads the fiber as empty
    present: Any = None


@dataclass(frozen=True, eq=False)
class Hollow:
    level: Any
    pos: Any
    dirty: Any        # ir Var (i1, mut) or None when the parent does not track dirtiness


@dataclass(frozen=True)
class FillLeaf:
    value: Any        # Python bool/int/float


@dataclass(frozen=True, eq=False)
class Value:
    expr: Any
    dtype: str        # 'bool' | 'int' | 'float'


class Deferred:
    """A leaf or looplet built only after the enclosing Thunk's preamble has run (it reads
    variables that the preamble binds)."""

    def __init__(self, make: Callable):
        self.make = make


LEAVES = (Fiber, Hollow, FillLeaf, Value)


# ---------------------------------------------------------------- looplets

class Looplet:
    """Base class; `kind` names the pass that lowers it."""
    kind = "looplet"


@dataclass(eq=False)
class Thunk(Looplet):
    body: Any
    preamble: Optional[Callable] = None   # preamble(ctx)
    epilogue: Optional[Callable] = None   # epilogue(ctx)
    # `RunNeighbours` of an outer run-list fiber (the counting measure at its bounds), or None
    around: Any = None
    kind = "thunk"


@dataclass(eq=False)
class Lookup(Looplet):
    body: Callable                        # body(ctx, j: SymLimit) -> looplet or leaf
    kind = "lookup"


@dataclass(eq=False)
class Run(Looplet):
    body: Any                             # leaf or looplet, constant over the extent
    kind = "run"


@dataclass(eq=False)
class Spike(Looplet):
    body: Any                             # value on [start, stop - unit]
    tail: Any                             # value at stop
    kind = "spike"


@dataclass(eq=False)
class Phase(Looplet):
    body: Callable                        # body(ctx, ext) -> looplet or leaf
    start: Any = None                     # SymLimit (absolute) or None = extent start
    stop: Any = None                      # SymLimit (absolute) or None = extent stop
    kind = "phase"


@dataclass(eq=False)
class Sequence(Looplet):
    phases: list = field(default_factory=list)   # list[PhaseSpec]
    # the phases are pieces of a run-list-like level (SparseInterval): under counting, a point at
    # their bounds may count for some inner coordinates only (`lower.run_counting`)
    runs: bool = False
    around: Any = None                    # their `RunNeighbours`, when the level can locate them
    kind = "sequence"


@dataclass(eq=False)
class RunNeighbours:
    """Which run of an outer run-list fiber holds a point, for the counting measure at a point
    where the level has a bound of its own (`lower.run_counting`): there the point counts for
    inner coordinate i only where i is stored by a run on one side of it and not in the same run
    on the other (paper §4.2, Fig. 5), so the runs around it are located and their child fibers
    read for presence.

    nonempty(ctx) -> i1           the fiber stores a run (`locate` reads one)
    locate(ctx, p) -> (i1, i64)   whether the point p (a SymLimit in the loop's frame) lies in a
                                  run, and that run's number (else some run of the fiber: every
                                  read of it stays in the buffers); emitted only where nonempty
    fiber(k) -> leaf              the child of run k (a `Fiber`, wrapped by any affine view)
    """
    nonempty: Callable
    locate: Callable
    fiber: Callable


@dataclass(eq=False)
class PhaseSpec:
    """A phase of a Sequence before its start is known: stop(ctx, ext) -> SymLimit or None (last)."""
    body: Callable
    stop: Optional[Callable] = None


@dataclass(eq=False)
class Stepper(Looplet):
    """An unbounded run of chunks of the same shape (Looplets paper §4.5).

    seek(ctx, ext)       move the cursor to the first chunk whose stop >= ext.start
    preamble(ctx)        bind the current chunk's coordinates to let variables
    stop(ctx) -> SymLimit the current chunk's last coordinate
    chunk(ctx) -> looplet the current chunk over [prev stop + unit, stop]
    next(ctx, full)      advance past the current chunk when `full` (i1) holds
    stop_eps             the compile-time ε of every chunk stop, or None when it varies
    count(ctx, ext) -> i64  number of (all-true) leaves stored in ext, when the level can tell by
                         positions alone (see `ctensor.looplets.count`); None otherwise
    extremum(ctx, ext, which) -> (i1, coord)  whether a leaf is stored at a coordinate in ext, and
                         the first ('first') or last ('last') such coordinate, by searches alone
                         (see `ctensor.looplets.extremum`); None when the level cannot tell
    spikes, fill         chunks are spikes of `fill` ending in the child: when the loop body is a
                         no-op on the fill, the pass walks the stored coordinates only (`spike_walk`)
    last() -> SymLimit, more(ctx) -> i1   optional: the fiber's last stored coordinate, and whether
                         the cursor is still inside the fiber; with them a walk whose extent holds
                         that last coordinate loops on positions alone (no coordinate test per step)
    """
    seek: Callable
    preamble: Callable
    stop: Callable
    chunk: Callable
    next: Callable
    stop_eps: Optional[int] = None
    count: Optional[Callable] = None
    extremum: Optional[Callable] = None
    spikes: bool = False                 # every chunk is Spike(FillLeaf(fill), child at its stop)
    fill: Any = None                     # that fill, when `spikes`
    last: Optional[Callable] = None
    more: Optional[Callable] = None
    kind = "stepper"


@dataclass(eq=False)
class Pinpoint(Looplet):
    """A fiber with exactly one stored coordinate (a SparsePoint level, continuous paper §5.2):
    `body` at `coord` (an absolute SymLimit), `empty` everywhere else.  When the loop body is a
    no-op on `empty` (x & false, x * 0...), the pass only tests whether `coord` lies in the extent
    and runs the body there; otherwise it lowers `fallback()`, the same fiber as a Sequence of
    phases.  Like a Phase, it is absolute, so truncation leaves it unchanged."""
    coord: Any
    body: Any
    empty: Any
    fallback: Callable
    kind = "pinpoint"


@dataclass(eq=False)
class Walk(Looplet):
    """A fiber of sorted stored coordinates (a SparseList level) that may be walked by position:
    where the access is `covered` at the loop (every coordinate lies in the extent: a whole grid
    cell, `lower.tile.lower_piece`) and the loop body is a no-op on the fill, the pass visits
    `stepper`'s chunks from the cursor to the fiber's end with no seek, no coordinate test and no
    load of the last coordinate; otherwise it lowers `fallback()`, the usual Sequence.  Absolute,
    like a Sequence: truncation leaves it unchanged (and drops the cover, `rewrite._rewrite`)."""
    stepper: Any
    fallback: Callable
    kind = "walk"


@dataclass(eq=False)
class Switch(Looplet):
    cases: list                           # [(i1 expr, looplet-or-leaf)], last case should be TRUE
    kind = "switch"


@dataclass(eq=False)
class AcceptRun(Looplet):
    body: Callable                        # body(ctx, ext) -> looplet or leaf (writer)
    kind = "acceptrun"


LOOPLETS = (Thunk, Lookup, Run, Spike, Phase, Sequence, Stepper, Pinpoint, Walk, Switch, AcceptRun)
