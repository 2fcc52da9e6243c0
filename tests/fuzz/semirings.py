"""User-defined semirings for the fuzzer, once ctensor has them (`ct.Semiring`, issue 31 item 1).

`user_semiring(rng)` returns None while `ct.Semiring` or the oracle's `UserSemiring` does not exist
(the generator then draws a built-in one), else a `UserSemiring` pairing the compiled
`ct.Semiring` (⊕ as einsum text) with the oracle's ⊕ written here in Python — two independent
implementations of one definition.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ctensor as ct

try:
    from ..oracle import semirings as _oracle_semirings
except ImportError:                          # pragma: no cover - run from inside tests/
    from oracle import semirings as _oracle_semirings


def _lse(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    if max(a, b) == math.inf:          # inf ⊕ inf = inf (the formula gives NaN: inf - inf)
        return math.inf
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _pow(a, w):
    try:
        return math.pow(a, w)
    except ValueError:                 # a negative base to a fractional power
        return math.nan
    except OverflowError:
        return math.inf if a > 0 or float(w).is_integer() and w % 2 == 0 else -math.inf


# name: (ct.Semiring arguments, oracle add, oracle repeat)
DEFINITIONS = {
    "max": (dict(add="max(a, b)", zero=-math.inf, idempotent=True, annihilator=math.inf),
            lambda a, b: max(a, b), None),
    "min": (dict(add="min(a, b)", zero=math.inf, idempotent=True, annihilator=-math.inf),
            lambda a, b: min(a, b), None),
    "plus-repeat": (dict(add="a + b", zero=0.0, repeat="a * w"), lambda a, b: a + b, lambda a, w: a * w),
    "plus": (dict(add="a + b", zero=0.0), lambda a, b: a + b, None),
    # the inf case apart, so that ⊕ stays associative over ±inf (a run of weight inf is inf)
    "logsumexp": (dict(add="inf if max(a, b) == inf else max(a, b) + log(1 + exp(-abs(a - b)))",
                       zero=-math.inf, repeat="a + log(w)"),
                  _lse, lambda a, w: a + math.log(w)),
    # the declared annihilator decides (0 ⊗ nan = 0, as ctensor applies declared laws first); a ** w
    # in float (llvm.pow: NaN for a negative base and a fractional w; Python would give a complex)
    "times": (dict(add="a * b", zero=1.0, annihilator=0.0, repeat="a ** w"),
              lambda a, b: 0.0 if a == 0 or b == 0 else a * b, lambda a, w: _pow(a, w)),
    "or": (dict(add="a | b", zero=False, idempotent=True, annihilator=True), lambda a, b: bool(a) or bool(b), None),
}


@dataclass
class UserSemiring:
    name: str
    compiled: object          # ct.Semiring
    oracle: object            # tests.oracle.semirings.UserSemiring

    def describe(self) -> str:
        return f"ct.Semiring({self.name}: {DEFINITIONS[self.name][0]})"


def available() -> bool:
    return hasattr(ct, "Semiring") and hasattr(_oracle_semirings, "UserSemiring")


def make(name: str) -> UserSemiring:
    kw, add, repeat = DEFINITIONS[name]
    compiled = ct.Semiring(kw["add"], kw["zero"], idempotent=kw.get("idempotent", False),
                           annihilator=kw.get("annihilator"), repeat=kw.get("repeat"), name=name)
    oracle = _oracle_semirings.UserSemiring(add, kw["zero"], kw.get("idempotent", False), repeat)
    return UserSemiring(name, compiled, oracle)


def user_semiring(rng):
    if not available():
        return None
    names = sorted(DEFINITIONS)
    return make(names[int(rng.integers(len(names)))])
