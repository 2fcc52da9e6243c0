"""ctensor: a compiler for continuous tensors (tensors indexed by real numbers).

Reimplements "The Continuous Tensor Abstraction: Where Indices Are Real" (Won et al., OOPSLA 2025):
piecewise-constant tensors stored in fibertree levels, a continuous einsum, lowering through
Looplets into a typed SSA-style IR, and native code through llvmlite.  See DESIGN.md §6 for the API.
"""
from .errors import FormatError, InvalidProgramError, KernelError, ValidityUnknown
from .formats import (Dense, Element, Level, Pattern, SparseByteMap, SparseInterval, SparseList,
                      SparsePoint, SparseRunList, Tensor, UniformGrid, UnitCells, box, interval_index, interval_set,
                      intervals, points)
from .lang.measure import Measure
from .lang.semiring import Semiring
from .limits import EPS, Limit, drop_eps, minus_eps, plus_eps
from .runtime import Kernel, compile, einsum, kernel_cache, wait_optimized

__all__ = ["FormatError", "InvalidProgramError", "KernelError", "ValidityUnknown", "Dense", "Element", "Level",
           "Pattern", "SparseByteMap", "SparseInterval", "SparseList", "SparsePoint", "SparseRunList", "Tensor",
           "UniformGrid", "UnitCells", "box", "interval_index", "interval_set", "intervals", "points", "Limit", "EPS",
           "drop_eps", "plus_eps",
           "minus_eps", "Kernel", "compile", "einsum", "kernel_cache", "wait_optimized", "Measure", "Semiring"]
__version__ = "0.1.0"
