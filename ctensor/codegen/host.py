"""Which machine code this host runs, named without llvmlite (issue 27 item 5: a warm start must not
import llvmlite.binding, ~20 ms, nor create the JIT engine, ~15 ms more).

`host_id()` is part of every cache key and symbol (`driver.kernel_store.key_of`,
`codegen.engine`): two hosts that may need different code must get different ids.  LLVM picks the
host CPU name and features from CPUID; on Linux the kernel reports the same CPUID data in
``/proc/cpuinfo`` (vendor, family, model, stepping, model name, and one flag per feature bit), so
that text of the first processor, the machine name and llvmlite's version (``import llvmlite``
alone loads no LLVM: ~0.5 ms) identify the code as well as LLVM's own names do, for ~0.1 ms.
Where ``/proc/cpuinfo`` is absent or unreadable, the id falls back to LLVM's CPU name and feature
string (creating the engine, as before).  Computed once per process.
"""
from __future__ import annotations

import os
import threading

from .objcache import digest

_FIELDS = (b"vendor_id", b"cpu family", b"model", b"model name", b"stepping", b"flags", b"Features",
           b"CPU implementer", b"CPU architecture", b"CPU variant", b"CPU part", b"isa", b"uarch")
_ID: str | None = None
_LOCK = threading.Lock()


def _cpuinfo() -> bytes | None:
    """The CPUID-derived lines of the first processor in /proc/cpuinfo, or None."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            text = f.read()
    except OSError:
        return None
    first = text.split(b"\n\n", 1)[0]
    lines = [ln for ln in first.splitlines() if ln.split(b":", 1)[0].strip() in _FIELDS]
    return b"\n".join(lines) if lines else None


def host_id() -> str:
    """A hex digest naming this host's code generation target (module docstring)."""
    global _ID
    if _ID is None:
        with _LOCK:
            if _ID is None:
                import llvmlite                     # its version only: no LLVM is loaded
                info = _cpuinfo()
                if info is None:
                    from .engine import get_engine
                    eng = get_engine()
                    info = f"llvm {eng.cpu} {eng.features}".encode()
                if hasattr(os, "uname"):
                    machine = os.uname().machine
                else:                               # Windows
                    import platform
                    machine = platform.machine()
                _ID = digest(b"\0".join((machine.encode(), llvmlite.__version__.encode(), info)))[:32]
    return _ID


__all__ = ["host_id"]
