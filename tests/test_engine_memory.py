"""What a compiled kernel keeps in memory (issue 31 (g)).

The engine keeps no LLVM module once its object code is loaded (MCJIT holds the module after
finalizing it; the code does not need it), and holds compiled functions weakly, so a dropped
kernel's IR text goes with it.  What stays for the life of the process: the object code in MCJIT's
memory manager (the engine lives as long as the process, every function pointer points into it)
and, for a kernel optimised in this process, ~96 KiB that llvmlite's new-pass-manager run does not
free (measured: parse + O3 + dispose of a module, with no engine involved, keeps that much).
"""
from __future__ import annotations

import gc

import numpy as np

import ctensor as ct
from ctensor.codegen.engine import get_engine


def _tensors():
    A = ct.intervals(np.array([0.0, 2.0]), np.array([1.0, 3.0]), values=np.array([1.0, 2.0]))
    B = ct.intervals(np.array([0.5]), np.array([4.0]))
    return A, B


def test_the_engine_keeps_no_llvm_module_after_a_compile():
    A, B = _tensors()
    ct.einsum("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    engine = get_engine()
    before = len(engine.ee._modules)
    for k in range(5):
        assert ct.einsum(f"s[] = (A[x] + {k}.25) * B[x] * d(x; lebesgue)", A=A, B=B) > 0
    assert len(engine.ee._modules) == before


def test_a_dropped_kernel_is_not_held_and_compiles_again_with_its_ir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    A, B = _tensors()
    text = "s[] = (A[x] + 7.125) * B[x] * A[x] * d(x; lebesgue)"
    k = ct.compile(text, A=A, B=B)
    value, symbol, ir = k(A=A, B=B), k.compiled.name, k.llvm_ir
    del k
    ct.kernel_cache().clear()
    gc.collect()
    assert symbol not in get_engine().compiled
    again = ct.compile(text, A=A, B=B)                 # from the disk cache: code already resident
    assert again.compiled.name == symbol and again(A=A, B=B) == value
    assert again.llvm_ir == ir
