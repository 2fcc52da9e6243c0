"""Warm start from the shared libraries of the disk cache (`ctensor.codegen.library`, issue 27 item 5):
a kernel compiled by one process is loaded by the next without llvmlite.binding (no JIT engine),
computes the same values, and still gives its IR, LLVM IR and an llvmlite module when asked.  A
damaged, truncated, swapped or forged library or header is a miss (the object goes to MCJIT, the
answer is right, the library is linked again); no linker means no library, never an error; many
threads loading one kernel at once get one library.  Every run is a fresh process with a private
CTENSOR_CACHE_DIR."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ctensor as ct
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    S = ct.interval_set([0, 2, 5], [4, 6, 7])
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    d = ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B)
    out = {"sources": [k.source, d.source], "symbols": [k.spec.symbol, d.spec.symbol],
           "values": [k(A=A, B=B), d(S=S, B=B).to_numpy().tolist()],
           "engine": "llvmlite.binding" in sys.modules}
    if sys.argv[1] == "ask":      # what needs the IR or llvmlite still works on a library-loaded kernel
        out["ir"] = "for" in k.ir or "while" in k.ir
        out["llvm_ir"] = "define" in k.llvm_ir and k.spec.symbol in k.llvm_ir
        out["module"] = k.llvm_module().get_function(k.abi.packed_symbol).name
        out["valid"] = k.plan.validity.valid
    print(json.dumps(out))
""")
VALUES = [8.0, [6.0, 8.0, 2.0]]


def run(cache, mode="plain", **env):
    e = dict(os.environ, CTENSOR_CACHE_DIR=str(cache), **env)
    o = subprocess.run([sys.executable, "-c", CHILD, mode], env=e, capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert o.returncode == 0, o.stderr[-3000:]
    return json.loads(o.stdout)


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    d = tmp_path_factory.mktemp("lib")
    cold = run(d)
    assert cold["sources"] == ["compiled", "compiled"] and cold["values"] == VALUES
    return d, cold["symbols"]


def test_warm_start_loads_libraries_without_llvmlite(filled):
    d, symbols = filled
    for s in symbols:
        assert (d / f"{s}.so").exists() and (d / f"{s}.lib").exists()
    warm = run(d)
    assert warm["sources"] == ["disk", "disk"] and warm["values"] == VALUES and warm["engine"] is False


def test_ir_llvm_ir_module_and_verdict_of_a_library_kernel(filled):
    got = run(filled[0], "ask")
    assert got["sources"] == ["disk", "disk"] and got["values"] == VALUES
    assert got["ir"] and got["llvm_ir"] and got["module"].endswith("_packed") and got["valid"] is True


def _lib(d, s, k, ext):
    return d / f"{s[k]}.{ext}"


def _flip(p):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x10
    p.write_bytes(bytes(b))


def _forged_header(d, s):
    # the header of kernel 0 made to describe kernel 1's library (size and digest match)
    so1 = _lib(d, s, 1, "so").read_bytes()
    _lib(d, s, 0, "so").write_bytes(so1)
    magic, fields = _lib(d, s, 0, "lib").read_bytes().split(b"\n", 1)
    f = fields.split()
    f[2], f[3] = str(len(so1)).encode(), hashlib.sha256(so1).hexdigest().encode()
    _lib(d, s, 0, "lib").write_bytes(magic + b"\n" + b" ".join(f) + b"\n")


def _swapped(d, s):
    p, q = _lib(d, s, 0, "so"), _lib(d, s, 1, "so")
    pb, qb = p.read_bytes(), q.read_bytes()
    p.write_bytes(qb)
    q.write_bytes(pb)


def _other_symbol(d, s):
    _lib(d, s, 0, "lib").write_bytes(_lib(d, s, 1, "lib").read_bytes())


DAMAGE = {
    "truncated_so": lambda d, s: _lib(d, s, 0, "so").write_bytes(_lib(d, s, 0, "so").read_bytes()[:-64]),
    "flipped_so": lambda d, s: _flip(_lib(d, s, 0, "so")),
    "missing_so": lambda d, s: _lib(d, s, 0, "so").unlink(),
    "empty_lib": lambda d, s: _lib(d, s, 0, "lib").write_bytes(b""),
    "garbage_lib": lambda d, s: _lib(d, s, 0, "lib").write_bytes(b"ctensor-lib-v1\n\xff\xfe x y z\n"),
    "not_elf": lambda d, s: (_lib(d, s, 0, "so").write_bytes(b"\0" * 64), _forged_header_self(d, s)),
    "forged_header": _forged_header,
    "swapped": _swapped,
    "other_symbol": _other_symbol,
}


def _forged_header_self(d, s):
    data = _lib(d, s, 0, "so").read_bytes()
    magic, fields = _lib(d, s, 0, "lib").read_bytes().split(b"\n", 1)
    f = fields.split()
    f[2], f[3] = str(len(data)).encode(), hashlib.sha256(data).hexdigest().encode()
    _lib(d, s, 0, "lib").write_bytes(magic + b"\n" + b" ".join(f) + b"\n")


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_library_is_a_miss(filled, tmp_path, case):
    import shutil
    src, symbols = filled
    d = tmp_path / "c"
    shutil.copytree(src, d)
    DAMAGE[case](d, symbols)
    got = run(d)                     # the damaged library is a miss: MCJIT loads the object
    assert got["sources"] == ["disk", "disk"] and got["values"] == VALUES and got["engine"] is True
    again = run(d)                   # ... and linked it again
    assert again["sources"] == ["disk", "disk"] and again["values"] == VALUES and again["engine"] is False


def test_a_damaged_object_makes_the_library_a_miss(filled, tmp_path):
    """The library is part of the object cache's entry: with its object damaged, the kernel is
    compiled again (as without a library), never loaded from the library alone."""
    import shutil
    src, symbols = filled
    d = tmp_path / "c"
    shutil.copytree(src, d)
    _flip(d / f"{symbols[0]}.o")
    from ctensor.codegen import library
    assert library._read(d, symbols[0]) is None and library._read(d, symbols[1]) is not None
    got = run(d)
    assert got["values"] == VALUES and got["engine"] is True
    assert library._read(d, symbols[0]) is not None          # compiled and linked again


def test_no_linker_no_library(tmp_path):
    """Without `ld` on PATH nothing is linked; compiles and warm loads (MCJIT) work."""
    cold = run(tmp_path, PATH="/nonexistent")
    warm = run(tmp_path, PATH="/nonexistent")
    assert cold["values"] == VALUES == warm["values"] and warm["sources"] == ["disk", "disk"]
    assert not list(tmp_path.glob("*.so")) and not list(tmp_path.glob("*.lib"))


THREADS = textwrap.dedent("""
    import sys, threading
    import ctensor as ct
    from ctensor.codegen import library
    from ctensor.driver import compile_kernel
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    barrier, got = threading.Barrier(8), []
    def work():
        barrier.wait()
        k = compile_kernel("s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=A, B=B))
        got.append((k.source, k.address, k(A=A, B=B), k.spec.symbol))
    ts = [threading.Thread(target=work) for _ in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert len(got) == 8 and len({g[1] for g in got}) == 1, got
    assert all(g[0] == "disk" and g[2] == 8.0 for g in got), got
    # one library for the kernel (the call path's native runner, `runtime.runner`, has its own)
    assert [s for s in library._LOADED if not s.startswith("ctensor_runner")] == [got[0][3]], library._LOADED
    assert "llvmlite.binding" not in sys.modules
    print("ok")
""")


def test_threads_warm_loading_one_kernel_get_one_library(tmp_path):
    run(tmp_path)                    # fills the cache
    o = subprocess.run([sys.executable, "-c", THREADS], env=dict(os.environ, CTENSOR_CACHE_DIR=str(tmp_path)),
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert o.returncode == 0 and o.stdout.strip() == "ok", o.stderr[-3000:]


def test_load_paths_are_unique_in_a_process(filled):
    """Two libraries never share a load path (the dynamic loader would return the first one)."""
    from ctensor.codegen import library
    d, symbols = filled
    before = set(library._LOADED)
    got = [library.load(d, s) for s in symbols]
    assert all(g is not None for g in got) and got[0][0] != got[1][0]
    assert not list(d.glob(".*.so"))          # the load copies are removed once loaded
    for s in set(symbols) - before:
        library._LOADED.pop(s, None)


def test_keyed_module_is_found_by_its_key_and_a_damaged_record_is_a_miss(tmp_path, monkeypatch):
    """`codegen.keyed` (native entries): the second request loads the module through its record and
    library without making the text; a damaged record makes it again."""
    import ctypes
    from ctensor.codegen import keyed, library
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    text = 'define i64 @"kt_base"(i64 %x) {\n  %y = add i64 %x, 7\n  ret i64 %y\n}\n'
    calls = []

    def make():
        calls.append(1)
        return text, "kt_base", ("kt_base",)

    def value(addresses):
        return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(addresses[0])(35)

    got, llvm_ir = keyed.compile_keyed(("test_keyed", 1), make)
    assert value(got) == 42 and "define" in llvm_ir and len(calls) == 1
    library.wait()
    (record,) = tmp_path.glob("m_*.sym")
    keyed._MEMO.clear()
    got, llvm_ir = keyed.compile_keyed(("test_keyed", 1), make)
    assert value(got) == 42 and "define" in llvm_ir and len(calls) == 1
    record.write_bytes(record.read_bytes()[:-4])
    keyed._MEMO.clear()
    got, _ = keyed.compile_keyed(("test_keyed", 1), make)
    assert value(got) == 42 and len(calls) == 2
    keyed._MEMO.clear()


def test_host_id_without_proc_cpuinfo_uses_llvm(monkeypatch):
    """Where /proc/cpuinfo is unreadable the host is named by LLVM's CPU name and features."""
    from ctensor.codegen import host
    monkeypatch.setattr(host, "_cpuinfo", lambda: None)
    monkeypatch.setattr(host, "_ID", None)
    fallback = host.host_id()
    monkeypatch.setattr(host, "_ID", None)
    monkeypatch.undo()
    assert len(fallback) == 32 and fallback != host.host_id()


SPATIAL = textwrap.dedent("""
    import json, sys
    import numpy as np
    from ctensor.apps import spatial
    ix = spatial.index(np.random.default_rng(0).uniform(0, 100, (500, 2)))
    got = ix.box([10, 10], [20, 20])
    print(json.dumps({"ids": sorted(int(i) for i in got), "native": ix._native_entry("box") is not None,
                      "llvmlite": sorted(m for m in ("llvmlite.binding", "llvmlite.ir") if m in sys.modules)}))
""")


def test_spatial_box_query_and_its_native_entry_start_without_llvmlite(tmp_path):
    """The box kernel and its native CPython entry (`runtime.pyentry`, through `codegen.keyed`)
    both come from the cache's libraries in a new process: neither llvmlite.binding nor llvmlite.ir."""
    def go():
        o = subprocess.run([sys.executable, "-c", SPATIAL], env=dict(os.environ, CTENSOR_CACHE_DIR=str(tmp_path)),
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert o.returncode == 0, o.stderr[-3000:]
        return json.loads(o.stdout)
    cold, warm = go(), go()
    assert cold["ids"] == warm["ids"] and warm["native"] and cold["native"]
    assert cold["llvmlite"] and warm["llvmlite"] == []
