"""Program analyses.  `validity`: is a continuous einsum valid under the piecewise-constant
semantics (continuous paper §4.3)?  `check(text, **tensors)` answers without compiling.
`guards`: the z3 guard prover the lowering asks.  The names below are imported on first use, so
`import ctensor` (which needs `guards.enabled_by_default`) does not load the validity checker."""

__all__ = ["Verdict", "check", "verdict_cache"]


def __getattr__(name):
    if name in __all__:
        from . import validity
        return getattr(validity, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
