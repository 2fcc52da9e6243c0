"""What compile latency rests on (issue 27 item 5), checked without timings (those are in
benchmarks/compile_report.py): `import ctensor` loads neither llvmlite, z3, OpenSSL's hashlib, the
reference interpreter, logging nor subprocess, yet every public name stays importable; the textual
LLVM emitter that replaced llvmlite's IR builder is exact on constants and float steps (numpy is
the oracle); the engine starts on first use."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAZY = ("llvmlite", "z3", "hashlib", "ctensor.ir.interp", "logging", "subprocess", "ctensor.codegen.llvm_emit")


def _fresh(code: str, env=None) -> dict:
    o = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=dict(os.environ, **(env or {})))
    assert o.returncode == 0, o.stderr[-3000:]
    return json.loads(o.stdout.strip().splitlines()[-1])


def test_import_loads_no_compiler_backend():
    got = _fresh(f"""
        import json, sys
        import ctensor
        loaded = [m for m in {LAZY!r} if m in sys.modules]
        missing = [n for n in ctensor.__all__ if not hasattr(ctensor, n)]
        print(json.dumps({{"loaded": loaded, "missing": missing}}))
    """)
    assert got == {"loaded": [], "missing": []}


def test_lazy_names_resolve_and_engine_starts_on_first_compile(tmp_path):
    got = _fresh("""
        import json, sys
        import numpy as np
        import ctensor as ct
        from ctensor.codegen import emit_module, load_compiled, get_engine
        from ctensor.ir import run, interp
        before = "llvmlite" in sys.modules
        A = ct.intervals([0.0, 2.0], [1.0, 3.5], values=[2.0, 3.0])
        s = ct.einsum("s[] = A[x] * A[x] * d(x; lebesgue)", A=A)
        print(json.dumps({"before": before, "after": "llvmlite" in sys.modules, "s": s,
                          "run": callable(run) and callable(emit_module)}))
    """, {"CTENSOR_CACHE_DIR": str(tmp_path)})
    assert got["before"] is False and got["after"] is True and got["run"] is True
    assert got["s"] == pytest.approx(1.0 * 4.0 + 1.5 * 9.0, rel=1e-15)


def _steps_fn(t):
    """out[k] = nextup(a[k]), out[n + k] = nextdown(a[k]) (f64 only: the IR defines them there),
    out[2n + k] = a[k] * c (c a constant that is not a short decimal), for element type `t`."""
    from ctensor.ir import (Bin, Const, For, Function, I64, Let, Load, PtrType, Read, Return,
                            Store, Un, Var)
    a, out, n = Var("a", PtrType(t), "param"), Var("out", PtrType(t), "param"), Var("n", I64, "param")
    i, x = Var("i", I64, "let"), Var("x", t, "let")
    c = Const(0.1 + 2.0 ** -40, t)
    steps = [Store(Read(out), Read(i), Un("nextup", Read(x))),
             Store(Read(out), Bin("add", Read(i), Read(n)), Un("nextdown", Read(x)))] if t.bits == 64 else []
    return Function(f"steps_{t.name}", [a, out, n], [
        For(i, Const(0, I64), Read(n), [
            Let(x, Load(Read(a), Read(i))),
            *steps,
            Store(Read(out), Bin("add", Read(i), Bin("mul", Read(n), Const(2, I64))), Bin("mul", Read(x), c)),
        ]),
        Return(0)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emitter_float_steps_and_constants_are_exact(tmp_path, monkeypatch, dtype):
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    from ctensor.codegen import compile_function
    from ctensor.ir import F32, F64
    t = F64 if dtype == np.float64 else F32
    a = np.array([0.0, -0.0, 1.0, -1.0, 1e-300 if t == F64 else 1e-40, np.inf, -np.inf, 3.5], dtype=dtype)
    out = np.full(3 * a.size, np.nan, dtype=dtype)
    cf = compile_function(_steps_fn(t))
    block = np.array([a.ctypes.data, out.ctypes.data, a.size], dtype=np.int64)
    assert cf.packed(block.ctypes.data) == 0
    n = a.size
    tiny = np.nextafter(dtype(0), dtype(1))
    up = np.where(a == 0, tiny, np.nextafter(a, dtype(np.inf)))
    down = np.where(a == 0, -tiny, np.nextafter(a, dtype(-np.inf)))
    finite = np.isfinite(a)
    if t == F64:
        assert np.array_equal(out[:n][finite], up[finite]) and np.array_equal(out[n:2 * n][finite], down[finite])
    c = dtype(0.1 + 2.0 ** -40)
    assert np.array_equal(out[2 * n:], a * c)
