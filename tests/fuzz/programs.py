"""Random continuous-einsum programs for the fuzzer (paper Fig. 2 grammar, DESIGN.md §6).

`generate(seed, k)` draws program k of a run deterministically from numpy's generator seeded with
(seed, k): 1-3 tensors (explicit level nests or constructors, `levels`), each mode read by an
index of its kind — real x, y, z; integer i, j, k with fixed extents `INT_SHAPES` — plainly, through
an affine map (`2*x + 1`, `-x`, `a*x - c` with scalars, negative scales) or an index sum
(`x + y`, Toeplitz); sometimes one index twice in an access (a diagonal, `B[x, x]`).  The
accesses are combined by `*` mostly, and `+ - min max` comparisons, `&`, a scalar, a bare index,
`x if ... else inf`; the output keeps some indices (scalar, integer, continuous or mixed); each
reduction index gets a measure (lebesgue, counting, boolean, a user `ct.Measure`; integer ones may
omit it), the program a semiring (`+`, `or`, `min`, `max`, and user ones when `ct.Semiring`
exists) and sometimes an `order=`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from . import levels
from .semirings import available as user_semirings_available, user_semiring

REAL_IDX = ["x", "y", "z"]
INT_IDX = ["i", "j", "k"]
INT_SHAPES = {"i": 3, "j": 4, "k": 2}

# user measures: (ct.Measure weight, the same measure as a Python function of (lo, hi)) — real
# ones atomless and additive; the int one weighs 2 per coordinate
REAL_MEASURES = [("hi**3 - lo**3", lambda lo, hi: hi ** 3 - lo ** 3),
                 ("(hi - lo) * 2.5", lambda lo, hi: (hi - lo) * 2.5),
                 ("max(hi, 0) - max(lo, 0)", lambda lo, hi: max(hi, 0.0) - max(lo, 0.0))]
INT_MEASURE = ("(hi - lo + 1) * 2", lambda lo, hi: (hi - lo + 1) * 2.0)


@dataclass
class Program:
    seed: int
    k: int
    text: str
    tensors: dict                                   # name -> ct.Tensor
    specs: dict                                     # name -> format description
    scalars: dict = field(default_factory=dict)
    measures: dict = field(default_factory=dict)    # name -> (weight text, python function)
    semiring: object = None                         # a name, or a `semirings.UserSemiring`
    order: list | None = None

    def describe(self) -> str:
        sr = getattr(self.semiring, "describe", lambda: self.semiring)()
        parts = [self.text, f"semiring={sr!r}"] + ([f"order={self.order}"] if self.order else [])
        parts += [f"{n}: {s}" for n, s in self.specs.items()]
        parts += [f"{n}={v!r}" for n, v in self.scalars.items()]
        parts += [f"{n}=ct.Measure({w!r})" for n, (w, _) in self.measures.items()]
        return "\n  ".join(parts)


def _pick(rng, seq, p=None):
    return seq[int(rng.choice(len(seq), p=p))]


def _tensor_kinds(rng):
    """(source, mode kinds) of one tensor."""
    src = _pick(rng, ["nest", "intervals", "points", "box", "interval_set"], [0.55, 0.2, 0.1, 0.06, 0.09])
    if src == "nest":
        nd = _pick(rng, [1, 2, 3], [0.45, 0.4, 0.15])
        return src, [("real" if rng.random() < 0.65 else "int") for _ in range(nd)]
    if src == "intervals":
        return src, ["real"]
    if src == "points":
        return src, ["real"] * _pick(rng, [1, 2]) + ["int"]
    if src == "box":
        return src, ["real"] * _pick(rng, [1, 2])
    return src, ["int", "real"]


def _index(rng, pool, rank, taken, after):
    """An index of `pool` not in `taken`: one used before (a join) or the next new one.  Mostly
    one ranked after `after` (the access's previous index) in the order of first use, so that
    accesses agree with one loop order; sometimes any (transposed accesses are refused)."""
    pos = -1 if after is None else rank.index(after) if after in rank else len(rank)
    old = [v for v in pool if v in rank and v not in taken and (rank.index(v) > pos or rng.random() < 0.08)]
    new = [v for v in pool if v not in rank and v not in taken]
    if old and (not new or rng.random() < 0.7):
        return _pick(rng, old)
    return new[0] if new else None


def _real_dim(rng, v, rank, taken, scal):
    r = rng.random()
    if r < 0.66:
        return v
    if r < 0.93:
        a = _pick(rng, ["2*", "-", "0.5*", "-2*", "a*", "-0.5*"])
        if a == "a*":
            scal.setdefault("a", _pick(rng, [2.0, -1.0, 0.5]))
        b = _pick(rng, ["", " + 1", " - 1.5", " + c", " - 0.5"])
        if b == " + c":
            scal.setdefault("c", _pick(rng, [1.0, -2.0, 0.5]))
        return f"{a}{v}{b}"
    w = _index(rng, REAL_IDX, rank, taken | {v}, None)       # an index sum (Toeplitz)
    if w is None:
        return v
    taken.add(w)
    if w not in rank:
        rank.append(w)
    return f"{v} {_pick(rng, ['+', '-'])} {_pick(rng, ['', '2*', '0.5*'])}{w}"


def _combine(rng, terms, boolean):
    """One expression over every access term."""
    terms = list(terms)
    rng.shuffle(terms)
    e = terms[0]
    for t in terms[1:]:
        if boolean and rng.random() < 0.5:
            op = _pick(rng, ["&", "|"])
            e = f"({e} {op} {t})"
            continue
        op = _pick(rng, ["*", "+", "-", "min", "max", "cmp"], [0.6, 0.12, 0.06, 0.08, 0.08, 0.06])
        if op in ("min", "max"):
            e = f"{op}({e}, {t})"
        elif op == "cmp":
            e = f"(({e}) {_pick(rng, ['<', '>=', '!=', '=='])} {t})"
        else:
            e = f"{e} {op} {t}" if op == "*" else f"({e} {op} {t})"
    return e


def _build_tensor(rng, src, kinds, dims):
    shapes = [INT_SHAPES[d] for d, k in zip(dims, kinds) if k == "int"]
    if src == "nest":
        return levels.nest(rng, levels.random_spec(rng, kinds), shapes)
    if src == "intervals":
        return levels.intervals(rng)
    if src == "points":
        return levels.points(rng, len(kinds) - 1, shapes[0])
    if src == "box":
        return levels.box(rng, len(kinds))
    return levels.interval_set(rng, shapes[0])


def generate(seed: int, k: int) -> Program:
    rng = np.random.default_rng([seed, k])
    for _ in range(100):          # a draw the constructors refuse (rare) is drawn again
        try:
            return _generate(rng, seed, k)
        except levels.ct.FormatError:
            continue
    raise RuntimeError(f"program {seed}:{k}: no valid tensors in 100 draws")


def _generate(rng, seed, k) -> Program:
    n = _pick(rng, [1, 2, 3], [0.25, 0.45, 0.3])
    rank, scal, accesses, tensors, specs, kinds_of = [], {}, [], {}, {}, {}
    pointlike = {}                     # real index -> read by a mode that stores pinpoints
    for t in range(n):
        src, kinds = _tensor_kinds(rng)
        for _ in range(20):                  # indices for every mode (else draw other kinds)
            taken, dims, after = set(), [], None
            for m, kind in enumerate(kinds):
                same = [d for d, dk in zip(dims, kinds) if dk == kind]
                if same and rng.random() < 0.06:         # a diagonal access B[x, x] (Fig. 2 grammar)
                    dims.append(_pick(rng, same))
                    continue
                v = _index(rng, REAL_IDX if kind == "real" else INT_IDX, rank, taken, after)
                if v is None:
                    break
                taken.add(v)
                dims.append(v)
                after = v
            if len(dims) == len(kinds):
                break
            src, kinds = _tensor_kinds(rng)
        else:
            break
        texts = []
        for v, kind in zip(dims, kinds):
            if v not in rank:
                rank.append(v)
            kinds_of[v] = kind
            texts.append(_real_dim(rng, v, rank, taken, scal) if kind == "real" else v)
        name = f"T{t}"
        tensors[name], specs[name] = _build_tensor(rng, src, kinds, dims)
        for v, kind in zip(dims, levels.pointlike_modes(specs[name], len(kinds))):
            pointlike[v] = pointlike.get(v, False) or kind
        accesses.append(f"{name}[{', '.join(texts)}]")
    used = set(re.findall(r"\b[xyzijk]\b", " ".join(accesses)))
    for v in used:
        kinds_of.setdefault(v, "real")
    boolean = all(t.fill is False for t in tensors.values())
    expr = _combine(rng, accesses, boolean)
    first = [v for v in rank if v in used]                     # indices in order of first use
    out = [v for v in first if rng.random() < 0.3][:3]
    red = [v for v in first if v not in out]

    # measures
    measures, d_idx, d_meas = {}, [], []
    for v in red:
        if kinds_of[v] == "real":
            # mostly the measure that sees the data: counting where pinpoints are stored (lebesgue
            # gives 0 there), lebesgue elsewhere; every measure on every index sometimes
            p = [0.1, 0.6, 0.15, 0.15] if pointlike.get(v) else [0.45, 0.2, 0.15, 0.2]
            m = _pick(rng, ["lebesgue", "counting", "boolean", "user"], p)
        else:
            m = _pick(rng, [None, "counting", "user", "boolean"], [0.6, 0.25, 0.1, 0.05])
        if m is None:
            continue
        if m == "user":
            w, f = INT_MEASURE if kinds_of[v] == "int" else REAL_MEASURES[int(rng.integers(len(REAL_MEASURES)))]
            m = f"m{len(measures)}"
            measures[m] = (w, f)
        d_idx.append(v)
        d_meas.append(m)
    has_bool = "boolean" in d_meas

    # extras: a scalar, a constant, a bare index, an extremum
    r = rng.random()
    if r < 0.1:
        scal.setdefault("c", _pick(rng, [1.0, -2.0, 0.5]))
        expr = f"{expr} * c"
    elif r < 0.16:
        expr = f"({expr} + 1)"
    elif r < 0.28 and used:
        expr = f"{expr} * {_pick(rng, sorted(used))}"

    # semiring
    if has_bool and user_semirings_available() and rng.random() < 0.3:
        # nested reductions (∑_j ∨_x: boolean indices reduce with ∨ first under a non-idempotent ⊕)
        semiring = _pick(rng, ["+", "user"])
    elif has_bool:
        semiring = _pick(rng, [None, "min", "max", "or"]) if all(m == "boolean" for m in d_meas) else \
            _pick(rng, ["min", "max", "or"])
    else:
        semiring = _pick(rng, [None, "min", "max", "or", "user"], [0.6, 0.15, 0.15, 0.04, 0.06])
    if semiring == "user":
        semiring = user_semiring(rng)
        if semiring is None:
            semiring = _pick(rng, [None, "min", "max"])
    if semiring in ("min", "max") and rng.random() < 0.25:
        reals = [v for v, m in zip(d_idx, d_meas) if kinds_of[v] == "real" and m in ("counting", "boolean")]
        if reals:
            inf = "inf" if semiring == "min" else "-inf"
            expr = f"({_pick(rng, reals)} if ({expr}) != 0 else {inf})"

    lhs = f"O[{', '.join(out)}]" if out else "s[]"
    text = f"{lhs} = {expr}" + (f" * d({', '.join(d_idx)}; {', '.join(d_meas)})" if d_idx else "")
    order = None
    if rng.random() < 0.12:
        order = list(first)
        if rng.random() < 0.3:
            rng.shuffle(order)
    return Program(seed, k, text, tensors, specs, scal, measures, semiring, order)
