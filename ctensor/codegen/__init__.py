"""llvmlite backend: IR -> LLVM module (`emit_module`) -> O3 + MCJIT (`compile_function`); the
on-disk object cache (`load_compiled` loads an entry by symbol).  llvmlite is imported on first
use (by the engine, or by `emit_module` through `llvm_emit`), not with this package."""
from .engine import CompiledFunction, compile_function, get_engine, load_compiled

__all__ = ["emit_module", "compile_function", "CompiledFunction", "get_engine", "load_compiled"]


def __getattr__(name):
    # `emit_module` lives in llvm_emit, which imports llvmlite.ir at module level
    if name == "emit_module":
        from .llvm_emit import emit_module
        return emit_module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
