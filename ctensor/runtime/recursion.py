"""Deeply nested expressions: the compiler walks the expression tree recursively (a few Python frames
per operator), so a product of 55 factors passed Python's default limit of 1000 frames and raised
RecursionError.  `deep` runs a compile step with a higher limit, and turns running out of it into
InvalidProgramError.  The limit stays modest because in CPython 3.11 frames that pass through C (a
dataclass's hash, a repr) use the C stack, 8 MiB by default.

The recursion limit is process-wide while compiles run on many threads (issue 31 (d)): it is raised
when the first thread enters `deep` and restored only when the last one leaves, so no thread lowers
it under another that is still deep in a compile."""
from __future__ import annotations

import functools
import sys
import threading

from ..errors import InvalidProgramError

LIMIT = 6000          # ~300 factors in one product

_LOCK = threading.Lock()
_inside = 0           # threads (and re-entries) inside `deep`
_saved: int | None = None   # the limit to restore when the last one leaves, if `deep` raised it


def _enter():
    global _inside, _saved
    with _LOCK:
        if _inside == 0:
            old = sys.getrecursionlimit()
            _saved = old if old < LIMIT else None
            if _saved is not None:
                sys.setrecursionlimit(LIMIT)
        _inside += 1


def _leave():
    global _inside, _saved
    with _LOCK:
        _inside -= 1
        if _inside == 0 and _saved is not None:
            # restore unless someone else changed the limit meanwhile (theirs stands)
            if sys.getrecursionlimit() == LIMIT:
                sys.setrecursionlimit(_saved)
            _saved = None


def deep(fn):
    """Decorator: run `fn` with a recursion limit of at least LIMIT; RecursionError inside it becomes
    InvalidProgramError."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _enter()
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise InvalidProgramError("the expression nests too deeply to compile (Python's recursion "
                                      "limit); split it into several einsums") from None
        finally:
            _leave()
    return wrapper
