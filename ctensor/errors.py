"""Exceptions raised by ctensor.  Both subclass ValueError so callers can catch bad input broadly."""


class FormatError(ValueError):
    """Input data does not satisfy a level format's invariants (unsorted, overlapping, NaN, ...).

    The message names the offending argument and the first offending index."""


class InvalidProgramError(ValueError):
    """A continuous einsum is malformed or invalid under the piecewise-constant semantics
    (continuous paper §4.3), or cannot be compiled for the given formats."""


class KernelError(RuntimeError):
    """A compiled kernel returned a non-zero status (e.g. out of memory while growing an output)."""


class ValidityUnknown(InvalidProgramError):
    """z3 could not decide whether a program is valid within its resource limit (digest §3.7).

    Programs are refused rather than silently accepted; pass `assume_valid=True` to `ct.compile`
    / `ct.einsum` / `ctensor.analysis.validity.check` to accept one anyway (a warning is logged)."""
