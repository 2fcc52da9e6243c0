"""The on-disk object cache treats every damaged entry as a miss (issue 31 (b), (e)): the next process
compiles afresh, gets the right answer (numpy is the oracle) and rewrites the entry; it never
raises, crashes or runs the wrong kernel.  Cases: a header whose size is not a number, a truncated
object, a bit-flipped object, a bit-flipped ``.ll`` (a high bit: not UTF-8), two kernels' object
files swapped (each header valid, naming the other kernel), one kernel's object under a valid
header naming the other (forged: size and sha256 match), a missing ``.ll``, a wrong magic, an
empty file, and read-only or unwritable cache directories.  `load_compiled` (loading an entry by
symbol, for the runtime's warm cache) gets the same checks and returns None on damage.

Every run is a fresh process (the engine keeps what it compiled in memory) with a private
CTENSOR_CACHE_DIR."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# two IR kernels (a dot product and a scaled sum), compiled or loaded by symbol, each run on fixed
# data; prints {name: [symbol, source, tier, result]}
SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from ctensor.codegen import compile_function, load_compiled
    from ctensor.ir import F64, I64, Assign, Bin, Const, For, Function, Let, Load, PtrType, Read, Return, Store, Var

    def kernel(name, scale):
        a, b = Var("a", PtrType(F64), "param"), Var("b", PtrType(F64), "param")
        n, out = Var("n", I64, "param"), Var("out", PtrType(F64), "param")
        acc, i, x = Var("acc", F64, "mut"), Var("i", I64, "let"), Var("x", F64, "let")
        term = Bin("mul", Read(x), Load(Read(b), Read(i))) if scale is None else Bin("mul", Read(x), Const(scale, F64))
        return Function(name, [a, b, n, out], [
            Assign(acc, Const(0.0, F64)),
            For(i, Const(0, I64), Read(n), [Let(x, Load(Read(a), Read(i))), Assign(acc, Bin("add", Read(acc), term))]),
            Store(Read(out), Const(0, I64), Read(acc)),
            Return(0)])

    a, b = np.arange(10.0), np.linspace(1.0, 2.0, 10)
    out = {}
    for name, scale in (("dot", None), ("scaled", 3.0)):
        if sys.argv[1] == "compile":
            cf = compile_function(kernel(name, scale))
        else:
            cf = load_compiled(json.loads(sys.argv[2])[name][0])
            if cf is None:
                out[name] = None
                continue
        res = np.zeros(1)
        block = np.array([a.ctypes.data, b.ctypes.data, a.size, res.ctypes.data], dtype=np.int64)
        assert cf.packed(block.ctypes.data) == 0
        out[name] = [cf.name, cf.source, cf.tier, float(res[0]), cf.llvm_ir is not None and "define" in cf.llvm_ir]
    print(json.dumps(out))
""")
A, B = np.arange(10.0), np.linspace(1.0, 2.0, 10)
WANT = {"dot": float(A @ B), "scaled": float((A * 3.0).sum())}


def run(cache, mode="compile", symbols=None):
    env = dict(os.environ, CTENSOR_CACHE_DIR=str(cache))
    cmd = [sys.executable, "-c", SCRIPT, mode] + ([json.dumps(symbols)] if symbols else [])
    o = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert o.returncode == 0, o.stderr[-3000:]
    return json.loads(o.stdout)


def check(got, source):
    for name, want in WANT.items():
        assert got[name][3] == pytest.approx(want, rel=1e-12), got
        assert got[name][1] == source, got


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache holding both kernels' entries, and their symbols."""
    d = tmp_path_factory.mktemp("filled")
    got = run(d)
    check(got, "compiled")
    check(run(d), "disk")
    return d, got


def _entry(d, symbols, name, ext):
    return d / f"{symbols[name][0]}.{ext}"


def _flip(path, where, bit=0x80):
    data = bytearray(path.read_bytes())
    data[where] ^= bit
    path.write_bytes(bytes(data))


def _size_not_a_number(d, s):
    p = _entry(d, s, "dot", "o")
    magic, header, obj = p.read_bytes().split(b"\n", 2)
    fields = header.split()
    fields[2] = b"12x4"
    p.write_bytes(magic + b"\n" + b" ".join(fields) + b"\n" + obj)


def _truncated(d, s):
    p = _entry(d, s, "dot", "o")
    p.write_bytes(p.read_bytes()[:-100])


def _flipped_object(d, s):
    p = _entry(d, s, "dot", "o")
    _flip(p, len(p.read_bytes()) // 2, 0x04)


def _flipped_ll(d, s):
    p = _entry(d, s, "dot", "ll")
    _flip(p, len(p.read_bytes()) // 3)          # a high bit: the text is no longer UTF-8


def _swapped(d, s):
    p, q = _entry(d, s, "dot", "o"), _entry(d, s, "scaled", "o")
    pb, qb = p.read_bytes(), q.read_bytes()
    p.write_bytes(qb)
    q.write_bytes(pb)


def _forged(d, s):
    # the scaled kernel's object under a valid header naming the dot kernel (size and sha256 of
    # what follows): only the symbols MCJIT finds after loading can tell
    p, q = _entry(d, s, "dot", "o"), _entry(d, s, "scaled", "o")
    magic, header, obj = q.read_bytes().split(b"\n", 2)
    fields = p.read_bytes().split(b"\n", 2)[1].split()
    fields[2], fields[3] = str(len(obj)).encode(), hashlib.sha256(obj).hexdigest().encode()
    p.write_bytes(magic + b"\n" + b" ".join(fields) + b"\n" + obj)


def _missing_ll(d, s):
    _entry(d, s, "dot", "ll").unlink()


def _wrong_magic(d, s):
    p = _entry(d, s, "dot", "o")
    p.write_bytes(b"ctensor-obj-v1\n" + p.read_bytes().split(b"\n", 1)[1])


def _empty(d, s):
    _entry(d, s, "dot", "o").write_bytes(b"")


DAMAGE = {f.__name__[1:]: f for f in (_size_not_a_number, _truncated, _flipped_object, _flipped_ll, _swapped,
                                      _forged, _missing_ll, _wrong_magic, _empty)}
# which kernels each damage touches (the other one must still load from disk)
TOUCHED = {"swapped": ("dot", "scaled")}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_entry_is_a_miss(filled, tmp_path, case):
    src, symbols = filled
    d = tmp_path / "cache"
    shutil.copytree(src, d)
    DAMAGE[case](d, symbols)
    touched = TOUCHED.get(case, ("dot",))
    # loading by symbol: None for a damaged object; a damaged .ll only loses the IR text
    loaded = run(d, "load", symbols)
    for name in WANT:
        if name in touched and case not in ("flipped_ll", "missing_ll"):
            assert loaded[name] is None, (case, loaded)
        else:
            assert loaded[name][3] == pytest.approx(WANT[name], rel=1e-12) and loaded[name][1] == "disk"
            assert loaded[name][4] == (name not in touched), (case, loaded)
    # compiling: the damaged entry is compiled afresh (right answer) and rewritten
    got = run(d)
    for name, want in WANT.items():
        assert got[name][3] == pytest.approx(want, rel=1e-12)
        assert got[name][1] == ("compiled" if name in touched else "disk"), (case, got)
        assert got[name][0] == symbols[name][0]
    check(run(d), "disk")


def test_read_only_cache_directory(filled, tmp_path):
    """A read-only directory: its valid entries are still used, a damaged one is compiled afresh
    (and cannot be rewritten), nothing raises.  (As root, permission bits do not stop writes; the
    unwritable case below covers that.)"""
    src, symbols = filled
    d = tmp_path / "ro"
    shutil.copytree(src, d)
    _truncated(d, symbols)
    mode = stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP
    for f in d.iterdir():
        f.chmod(stat.S_IRUSR)
    d.chmod(mode)
    try:
        got = run(d)
        assert got["dot"][1] == "compiled" and got["scaled"][1] == "disk"
        for name, want in WANT.items():
            assert got[name][3] == pytest.approx(want, rel=1e-12)
        assert run(d, "load", symbols)["scaled"][1] == "disk"
    finally:
        d.chmod(stat.S_IRWXU)


def test_unwritable_cache_path(tmp_path):
    """A cache path under a regular file (mkdir fails even as root): every compile works, nothing
    is written, nothing raises; loading by symbol is a miss."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    d = blocker / "cache"
    got = run(d)
    check(got, "compiled")
    check(run(d), "compiled")
    assert run(d, "load", got) == {"dot": None, "scaled": None}
    assert blocker.read_text() == "not a directory"


def test_disabled_cache_loads_nothing(filled):
    src, symbols = filled
    assert run("off", "load", symbols) == {"dot": None, "scaled": None}


def test_load_compiled_in_process(tmp_path, monkeypatch):
    """In the process that compiled it, `load_compiled` returns the same function from memory;
    names that are not symbols (paths, empty) are misses, a non-str is a TypeError."""
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    from ctensor.codegen import compile_function, load_compiled
    from tests.test_ir_codegen import dot_fn
    cf = compile_function(dot_fn())
    got = load_compiled(cf.name)
    assert got.address == cf.address and got.packed_address == cf.packed_address
    for bad in ("", "../etc/passwd", "a/b", "x" * 300, "ct_s_0000000000000000"):
        assert load_compiled(bad) is None
    with pytest.raises(TypeError, match="symbol"):
        load_compiled(b"ct_s")
