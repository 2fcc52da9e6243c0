"""Scalar and pointer types of the ctensor IR.

The IR is deliberately small: booleans (i1), bytes (i8, used for the ε part of a Limit), 32/64-bit
integers, 32/64-bit floats and typed pointers to one of those.  A Limit is not an IR type of its
own: the lowering keeps every Limit as a pair of scalars (value, i8 ε), which LLVM's SROA keeps in
registers (DESIGN.md §2, §5).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScalarType:
    name: str          # i1 i8 i32 i64 f32 f64
    bits: int
    is_float: bool

    def __repr__(self) -> str:
        return self.name

    @property
    def is_int(self) -> bool:
        return not self.is_float

    def __reduce__(self):
        # unpickled as the module's own instance: the IR builders test types by identity
        # (`ty is I1`), and a kernel's IR comes back from the disk cache by pickle
        return _scalar, (self.name,)


@dataclass(frozen=True)
class PtrType:
    elem: ScalarType

    def __repr__(self) -> str:
        return f"ptr<{self.elem.name}>"


def _scalar(name: str) -> ScalarType:
    return SCALARS[name]


I1 = ScalarType("i1", 1, False)
I8 = ScalarType("i8", 8, False)
I32 = ScalarType("i32", 32, False)
I64 = ScalarType("i64", 64, False)
F32 = ScalarType("f32", 32, True)
F64 = ScalarType("f64", 64, True)

Type = ScalarType | PtrType

SCALARS = {t.name: t for t in (I1, I8, I32, I64, F32, F64)}


def ptr(elem: ScalarType) -> PtrType:
    return PtrType(elem)


_NUMPY = {"bool": I8, "int8": I8, "uint8": I8, "int32": I32, "int64": I64,
          "float32": F32, "float64": F64}


def from_numpy(dtype) -> ScalarType:
    """IR element type of a numpy dtype (bool arrays are stored as one byte per element)."""
    import numpy as np

    name = np.dtype(dtype).name
    if name not in _NUMPY:
        raise TypeError(f"unsupported dtype {name!r}: use bool, int8, int32, int64, float32 or float64")
    return _NUMPY[name]
