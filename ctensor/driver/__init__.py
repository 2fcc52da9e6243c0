"""The compiler driver (DESIGN.md §1): `compile_kernel` sequences parse → plan → validity → lower →
IR → LLVM → object, behind the on-disk kernel cache, and returns a `runtime.Kernel`."""
from .pipeline import compile_kernel

__all__ = ["compile_kernel"]
