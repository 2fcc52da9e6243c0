"""Errors raised by the IR tools (verifier, interpreter)."""
from __future__ import annotations


class IRError(ValueError):
    """An ill-formed IR program, found by `ctensor.ir.verify.verify`."""


class InterpError(RuntimeError):
    """A well-formed program did something undefined while being interpreted (out-of-bounds
    access, division by zero, reading an unset variable, unknown address...)."""


__all__ = ["IRError", "InterpError"]
