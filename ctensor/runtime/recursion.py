"""Deeply nested expressions: the compiler walks the expression tree recursively (a few Python frames
per operator), so a product of 55 factors passed Python's default limit of 1000 frames and raised
RecursionError.  `deep` runs a compile step with a higher limit, and turns running out of it into
InvalidProgramError.  The limit stays modest because in CPython 3.11 frames that pass through C (a
dataclass's hash, a repr) use the C stack, 8 MiB by default."""
from __future__ import annotations

import functools
import sys

from ..errors import InvalidProgramError

LIMIT = 6000          # ~300 factors in one product


def deep(fn):
    """Decorator: run `fn` with a recursion limit of at least LIMIT; RecursionError inside it becomes
    InvalidProgramError."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        old = sys.getrecursionlimit()
        if old < LIMIT:
            sys.setrecursionlimit(LIMIT)
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise InvalidProgramError("the expression nests too deeply to compile (Python's recursion "
                                      "limit); split it into several einsums") from None
        finally:
            if old < LIMIT:
                sys.setrecursionlimit(old)
    return wrapper
