"""llvmlite backend: IR -> LLVM module (`emit_module`) -> O3 + MCJIT (`compile_function`); the
on-disk object cache (`load_compiled` loads an entry by symbol: from its shared library,
`library`, or through the engine).  Neither llvmlite nor the engine is imported with this package:
`compile_function`, `compile_llvm` and `get_engine` import the engine (`engine`) on first use,
`emit_module` the emitter (`llvm_emit`), so a warm start (`compiled.load_compiled`) needs neither."""
from .compiled import CompiledFunction, load_compiled

__all__ = ["emit_module", "compile_function", "compile_llvm", "CompiledFunction", "get_engine", "load_compiled"]
_ENGINE_NAMES = ("compile_function", "compile_llvm", "get_engine")


def __getattr__(name):
    if name in _ENGINE_NAMES:
        from . import engine
        return getattr(engine, name)
    if name == "emit_module":       # llvm_emit imports the IR modules
        from .llvm_emit import emit_module
        return emit_module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
