"""llvmlite backend: IR -> LLVM module (`emit_module`) -> O3 + MCJIT (`compile_function`)."""
from .engine import CompiledFunction, compile_function, get_engine
from .llvm_emit import emit_module

__all__ = ["emit_module", "compile_function", "CompiledFunction", "get_engine"]
