"""Typed, structured SSA-style IR of ctensor kernels: nodes, types, printer, verifier and a
reference interpreter (DESIGN.md §5)."""
from .errors import InterpError, IRError
from .nodes import *  # noqa: F401,F403  (node classes, EXTERNALS, status codes)
from .nodes import __all__ as _nodes_all
from .nodes import STATUS_LOOKUP_ON_INTERVAL, STATUS_NAMES, STATUS_OK, STATUS_OUT_OF_MEMORY
from .printer import format_expr, format_function
from .types import F32, SCALARS, ptr, from_numpy
from .verify import verify

__all__ = list(_nodes_all) + [
    "F32", "SCALARS", "ptr", "from_numpy", "format_function", "format_expr", "verify", "IRError",
    "InterpError", "run", "STATUS_OK", "STATUS_OUT_OF_MEMORY", "STATUS_LOOKUP_ON_INTERVAL",
    "STATUS_NAMES",
]


def __getattr__(name):
    # the reference interpreter (tests, debugging) is imported on first use: `import ctensor`
    # stays fast
    if name == "run":
        from .interp import run
        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
