"""The on-disk kernel cache (`ctensor.driver.kernel_store`): a kernel compiled by one process is
loaded by the next without lowering, computes the same values, and a damaged entry is a miss."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import ctensor as ct
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    S = ct.interval_set([0, 2, 5], [4, 6, 7])
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    d = ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B)
    dep = ct.einsum("C[x] = S[i, x] * d(i; counting)", S=S)          # runs the merged sibling
    print(k.source, d.source, k(A=A, B=B), d(S=S, B=B).to_numpy().tolist(),
          [(p[0][0][0].value, p[1]) for p in dep.pieces()], len(k.ir.splitlines()) > 5, k.compiled.source)
""")


def run(cache):
    out = subprocess.run([sys.executable, "-c", CHILD], env=dict(os.environ, CTENSOR_CACHE_DIR=str(cache)),
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.split(maxsplit=2)


def test_a_new_process_loads_kernels_without_lowering(tmp_path):
    first = run(tmp_path)
    assert first[:2] == ["compiled", "compiled"]
    second = run(tmp_path)
    assert second[:2] == ["disk", "disk"] and second[2] == first[2].replace("compiled", "disk")
    assert "8.0 [6.0, 8.0, 2.0] [(0.0, 1), (2.0, 2), (4.0, 1), (5.0, 2), (6.0, 1)]" in second[2] and second[2].split()[-2] == "True"


def compile_three(tmp_path, monkeypatch):
    """(sources, values) of three kernels compiled through the store in `tmp_path`, in-process."""
    import ctensor as ct
    from ctensor.driver import compile_kernel
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    S = ct.interval_set([0, 2, 5], [4, 6, 7])
    ks = [compile_kernel("s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=A, B=B)),
          compile_kernel("C[i] = S[i, x] * B[x] * d(x; lebesgue)", dict(S=S, B=B)),
          compile_kernel("C[x] = A[x] * B[x]", dict(A=A, B=B))]
    values = [ks[0](A=A, B=B), ks[1](S=S, B=B).to_numpy().tolist(), ks[2](A=A, B=B).pieces()]
    return [k.source for k in ks], values, [k.ir for k in ks]


@pytest.mark.parametrize("damage", ["truncate", "flip", "swap", "garbage", "empty", "fn_missing", "fn_flip"])
def test_a_damaged_entry_is_a_miss(tmp_path, monkeypatch, damage):
    sources, values, irs = compile_three(tmp_path, monkeypatch)
    assert sources == ["compiled"] * 3
    specs = sorted(tmp_path.glob("k_*.spec"))
    assert len(specs) == 3
    if damage == "truncate":
        for f in specs:
            f.write_bytes(f.read_bytes()[:-7])
    elif damage == "flip":
        for f in specs:
            b = bytearray(f.read_bytes())
            b[len(b) // 2] ^= 0x80
            f.write_bytes(bytes(b))
    elif damage == "swap":          # each sealed for its own key: a swapped pair is two misses
        a, b = specs[0].read_bytes(), specs[1].read_bytes()
        specs[0].write_bytes(b)
        specs[1].write_bytes(a)
    elif damage == "garbage":
        for f in specs:
            f.write_bytes(b"ctensor-kernel-v1 x y z\n" + bytes(range(64, 128)))
    elif damage == "empty":
        for f in specs:
            f.write_bytes(b"")
    elif damage == "fn_missing":
        for f in tmp_path.glob("k_*.fn"):
            f.unlink()
    else:
        for f in tmp_path.glob("k_*.fn"):
            b = bytearray(f.read_bytes())
            b[-3] ^= 0x01
            f.write_bytes(bytes(b))
    again, values2, irs2 = compile_three(tmp_path, monkeypatch)
    assert values2 == values and irs2 == irs
    assert sorted(again) == (["compiled", "compiled", "disk"] if damage == "swap" else ["compiled"] * 3)
    assert compile_three(tmp_path, monkeypatch)[0] == ["disk"] * 3      # rewritten by the miss


def test_a_cache_that_cannot_be_written_is_only_slower(tmp_path, monkeypatch):
    """(Tests run as root, to whom file modes are no obstacle: the cache path runs through a file.)"""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    sources, values, _ = compile_three(blocker / "cache", monkeypatch)
    assert sources == ["compiled"] * 3 and values[0] == 8.0
    assert compile_three(blocker / "cache", monkeypatch)[0] == ["compiled"] * 3


def test_key_covers_what_determines_the_code(tmp_path, monkeypatch):
    """Another format, fact, scalar kind, option or measure is another entry."""
    import ctensor as ct
    from ctensor.driver import compile_kernel
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    A2 = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0], closed="both")
    B = ct.intervals([1.0], [6.0], values=[2.0])
    texts = [("s[] = A[x + c] * B[x] * d(x; lebesgue)", dict(A=A, B=B, c=0.5)),
             ("s[] = A[x + c] * B[x] * d(x; lebesgue)", dict(A=A, B=B, c=1)),
             ("s[] = A[x + c] * B[x] * d(x; lebesgue)", dict(A=A2, B=B, c=0.5)),
             ("s[] = A[x] * B[x] * d(x; m)", dict(A=A, B=B, m=ct.Measure("hi - lo"))),
             ("s[] = A[x] * B[x] * d(x; m)", dict(A=A, B=B, m=ct.Measure("hi**2 - lo**2")))]
    got = [compile_kernel(t, kw) for t, kw in texts]
    assert [k.source for k in got] == ["compiled"] * 5
    again = [compile_kernel(t, kw) for t, kw in texts]
    assert [k.source for k in again] == ["disk"] * 5
    assert [k(**kw) for k, (_, kw) in zip(again, texts)] == [k(**kw) for k, (_, kw) in zip(got, texts)]
    assert compile_kernel(texts[0][0], texts[0][1], semiring="max").source == "compiled"
    assert compile_kernel(texts[0][0], texts[0][1], use_store=False).source == "compiled"


def test_ir_types_unpickle_as_the_module_instances():
    """A kernel's IR comes back from the disk cache by pickle; its types must be the module's own
    instances (the IR builders and tools test `ty is I1`): a warm-loaded kernel's `fn` lost its ε
    tests to `type is I8` before (test_guards' Fig. 19 test failed on a second run of the suite)."""
    import pickle
    import ctensor as ct
    from ctensor.ir import nodes as ir
    from ctensor.ir.types import SCALARS, ptr
    for t in SCALARS.values():
        assert pickle.loads(pickle.dumps(t)) is t
        assert pickle.loads(pickle.dumps(ptr(t))).elem is t
    A = ct.intervals([0.0, 3.0], [3.0, 6.0], values=[2.0, 1.0], closed=["left", "both"])
    fn = pickle.loads(pickle.dumps(ct.compile("TypesBack[] = A[x] * d(x; counting)", A=A).fn))
    types = [s.cond.a.type for s in _walk_ifs(fn.body) if isinstance(s.cond, ir.Cmp) and hasattr(s.cond.a, "type")]
    assert types and all(any(t is u for u in SCALARS.values()) for t in types)


def _walk_ifs(stmts):
    from ctensor.ir import nodes as ir
    for s in stmts:
        if isinstance(s, ir.If):
            yield s
        for f in ("then", "orelse", "body"):
            yield from _walk_ifs(getattr(s, f, ()))
