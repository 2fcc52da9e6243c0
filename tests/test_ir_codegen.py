"""IR, verifier, printer, interpreter and LLVM backend on hand-built kernels.

Every kernel runs three ways — numpy (expected), the IR interpreter, and the JIT-compiled packed
entry point — and all three must agree.
"""
import ctypes
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ctensor.codegen import compile_function, emit_module
from ctensor.ir import (F32, F64, I1, I8, I32, I64, Assign, Bin, Call, Cast, Cmp, Const, Eval,
                        For, Function, If, IRError, Let, Load, PtrType, Read, Return, Select,
                        Store, Un, Var, While, format_function, interp, run, verify)
from ctensor.ir.errors import InterpError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBC = ctypes.CDLL(None)
LIBC.free.argtypes = [ctypes.c_void_p]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    # never write into the user's ~/.cache from tests
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "objcache"))


def param(name, t):
    return Var(name, t, "param")


def c(v, t=I64):
    return Const(v, t)


def r(v):
    return Read(v)


def pack(fn, args):
    """int64 argument block for the packed entry point."""
    block = np.zeros(max(len(args), 1), dtype=np.int64)
    for k, (p, a) in enumerate(zip(fn.params, args)):
        if isinstance(p.type, PtrType):
            block[k] = a.ctypes.data
        elif p.type.is_float:
            block[k] = np.array(a, dtype=np.float64 if p.type == F64 else np.float32).view(
                np.int64 if p.type == F64 else np.int32).astype(np.int64)
        else:
            block[k] = a
    return block


def run_both(fn, args):
    """Verify, print, interpret and JIT `fn`; return (status, arrays) for interp and jit."""
    verify(fn)
    assert format_function(fn) == format_function(fn)
    copy = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ia, ja = copy(), copy()
    ist = run(fn, ia)
    cf = compile_function(fn)
    block = pack(fn, ja)
    jst = cf.packed(block.ctypes.data)
    assert ist == jst
    return ist, ia, ja, cf


# ---------------------------------------------------------------- kernels

def dot_fn():
    a, b = param("a", PtrType(F64)), param("b", PtrType(F64))
    n, out = param("n", I64), param("out", PtrType(F64))
    acc, i, x = Var("acc", F64, "mut"), Var("i", I64, "let"), Var("x", F64, "let")
    return Function("dot", [a, b, n, out], [
        Assign(acc, c(0.0, F64)),
        For(i, c(0), r(n), [
            Let(x, Load(r(a), r(i))),
            Assign(acc, Bin("add", r(acc), Bin("mul", r(x), Load(r(b), r(i))))),
        ]),
        Store(r(out), c(0), r(acc)),
        Return(0),
    ])


DOT_TEXT = """\
func dot(%a: ptr<f64>, %b: ptr<f64>, %n: i64, %out: ptr<f64>) -> i32 {
  mut %acc: f64
  %acc = 0.0
  for %i in [0, %n) {
    let %x: f64 = load %a[%i]
    %acc = %acc + (%x * (load %b[%i]))
  }
  store %out[0] = %acc
  return 0
}
"""


def test_dot_product():
    fn = dot_fn()
    assert format_function(fn) == DOT_TEXT
    rng = np.random.default_rng(0)
    a, b = rng.random(1001), rng.random(1001)
    st, ia, ja, cf = run_both(fn, [a, b, a.size, np.zeros(1)])
    assert st == 0
    assert ia[3][0] == pytest.approx(a @ b, rel=1e-12)
    assert ja[3][0] == pytest.approx(a @ b, rel=1e-12)
    assert set(cf.compile_seconds) == {"emit", "optimize", "jit"}
    assert "fmul" in cf.llvm_ir and "alloca" not in cf.llvm_ir   # mem2reg promoted %acc
    # the unpacked entry is callable by address too
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_void_p)(cf.address)
    out = np.zeros(1)
    assert proto(a.ctypes.data, b.ctypes.data, 10, out.ctypes.data) == 0
    assert out[0] == pytest.approx(a[:10] @ b[:10])
    # same function again: served from memory, same code
    again = compile_function(dot_fn())
    assert again.source == "memory" and again.address == cf.address


def merge_fn():
    """Two-pointer merge: the common values of two sorted arrays, and their count."""
    a, na = param("a", PtrType(I64)), param("na", I64)
    b, nb = param("b", PtrType(I64)), param("nb", I64)
    out, cnt = param("out", PtrType(I64)), param("cnt", PtrType(I64))
    i, j, k = (Var(n, I64, "mut") for n in "ijk")
    x, y = Var("x", I64, "let"), Var("y", I64, "let")
    inc = lambda v: Assign(v, Bin("add", r(v), c(1)))
    return Function("merge", [a, na, b, nb, out, cnt], [
        Assign(i, c(0)), Assign(j, c(0)), Assign(k, c(0)),
        While(Bin("and", Cmp("lt", r(i), r(na)), Cmp("lt", r(j), r(nb))), [
            Let(x, Load(r(a), r(i))),
            Let(y, Load(r(b), r(j))),
            If(Cmp("lt", r(x), r(y)), [inc(i)], [
                If(Cmp("gt", r(x), r(y)), [inc(j)], [
                    Store(r(out), r(k), r(x)), inc(k), inc(i), inc(j)]),
            ]),
        ]),
        Store(r(cnt), c(0), r(k)),
    ])


def test_two_pointer_merge():
    rng = np.random.default_rng(1)
    a = np.unique(rng.integers(-500, 500, 300))
    b = np.unique(rng.integers(-500, 500, 200))
    expect = np.intersect1d(a, b)
    out = np.zeros(min(a.size, b.size), dtype=np.int64)
    st, ia, ja, _ = run_both(merge_fn(), [a, a.size, b, b.size, out, np.zeros(1, np.int64)])
    for res in (ia, ja):
        assert res[5][0] == expect.size
        np.testing.assert_array_equal(res[4][: expect.size], expect)


def test_if_else_and_unary_ops():
    xp, yp, mp, n = (param("x", PtrType(F64)), param("y", PtrType(F64)),
                     param("m", PtrType(I8)), param("n", I64))
    i, v, pos = Var("i", I64, "let"), Var("v", F64, "let"), Var("pos", I1, "let")
    fn = Function("branchy", [xp, yp, mp, n], [
        For(i, c(0), r(n), [
            Let(v, Load(r(xp), r(i))),
            Let(pos, Cmp("gt", r(v), c(0.0, F64))),
            Store(r(mp), r(i), Cast(I8, r(pos))),                  # i1 -> i8 zero-extends
            If(r(pos),
               [Store(r(yp), r(i), Un("sqrt", r(v)))],
               [Store(r(yp), r(i), Bin("max", Un("abs", r(v)),
                                       Un("floor", Bin("mul", r(v), c(-2.5, F64)))))]),
        ]),
    ])
    x = np.random.default_rng(2).normal(size=257)
    expect = np.where(x > 0, np.sqrt(np.abs(x)), np.maximum(np.abs(x), np.floor(x * -2.5)))
    _, ia, ja, _ = run_both(fn, [x, np.zeros_like(x), np.zeros(x.size, np.bool_), x.size])
    for res in (ia, ja):
        np.testing.assert_array_equal(res[1], expect)
        np.testing.assert_array_equal(res[2], x > 0)


def grow_fn():
    """Append i/2 for every i in [0, n) not divisible by 3 to a buffer grown with realloc; the
    buffer lives in cell = [address, capacity, count]."""
    n, cell = param("n", I64), param("cell", PtrType(I64))
    buf, cap, cnt = Var("buf", PtrType(F64), "mut"), Var("cap", I64, "mut"), Var("cnt", I64, "mut")
    i, newcap, nb = Var("i", I64, "let"), Var("newcap", I64, "let"), Var("nb", PtrType(F64), "let")
    null = Cast(PtrType(F64), c(0))
    return Function("grow", [n, cell], [
        Assign(buf, Cast(PtrType(F64), Load(r(cell), c(0)))),
        Assign(cap, Load(r(cell), c(1))),
        Assign(cnt, c(0)),
        For(i, c(0), r(n), [
            If(Cmp("ne", Bin("rem", r(i), c(3)), c(0)), [
                If(Cmp("eq", r(cnt), r(cap)), [
                    Let(newcap, Bin("max", Bin("mul", r(cap), c(2)), c(4))),
                    Let(nb, Call("realloc", (r(buf), Bin("mul", r(newcap), c(8))), PtrType(F64))),
                    If(Cmp("eq", r(nb), null), [Return(1)]),
                    Assign(buf, r(nb)), Assign(cap, r(newcap)),
                ]),
                Store(r(buf), r(cnt), Bin("div", Cast(F64, r(i)), c(2.0, F64))),
                Assign(cnt, Bin("add", r(cnt), c(1))),
            ]),
        ]),
        Store(r(cell), c(0), Cast(I64, r(buf))),
        Store(r(cell), c(1), r(cap)),
        Store(r(cell), c(2), r(cnt)),
    ])


def test_nextup_nextdown_match_nextafter_past_the_edges():
    """nextup/nextdown (extents.lim_le compares against them) agree with math.nextafter on ±0,
    subnormals, ±DBL_MAX and ordinary values, and give NaN past ±inf, in the interpreter and
    in the JIT, so `x <= nextdown(v)` is exactly `x < v`."""
    xp, up, dn, n = (param("x", PtrType(F64)), param("up", PtrType(F64)), param("dn", PtrType(F64)),
                     param("n", I64))
    i = Var("i", I64, "let")
    fn = Function("nudge", [xp, up, dn, n], [
        For(i, c(0), r(n), [
            Store(r(up), r(i), Un("nextup", Load(r(xp), r(i)))),
            Store(r(dn), r(i), Un("nextdown", Load(r(xp), r(i)))),
        ]),
    ])
    big = np.finfo(np.float64).max
    x = np.array([0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0, 1e308, -2.5e-300, big, -big,
                  np.inf, -np.inf] + list(np.random.default_rng(5).normal(size=64) * 1e3))
    expect_up = np.array([np.nan if v == np.inf else math.nextafter(v, math.inf) for v in x])
    expect_dn = np.array([np.nan if v == -np.inf else math.nextafter(v, -math.inf) for v in x])
    _, ia, ja, _ = run_both(fn, [x, np.zeros_like(x), np.zeros_like(x), x.size])
    for res in (ia, ja):
        np.testing.assert_array_equal(res[1], expect_up)
        np.testing.assert_array_equal(res[2], expect_dn)
    # the comparison identities lim_le relies on, for every pair of these values
    for res in (ia, ja):
        assert ((x[:, None] <= res[2][None, :]) == (x[:, None] < x[None, :])).all()
        assert ((res[1][:, None] <= x[None, :]) == (x[:, None] < x[None, :])).all()


def test_realloc_growth():
    n = 100
    expect = np.array([i / 2 for i in range(n) if i % 3], dtype=np.float64)
    st, ia, ja, _ = run_both(grow_fn(), [n, np.zeros(3, np.int64)])
    assert st == 0
    # interpreter: the address resolves through the handle table
    addr, cap, cnt = ia[1]
    assert cnt == expect.size and cap >= cnt and cap == 128
    np.testing.assert_array_equal(interp.resolve(int(addr))[:cnt], expect)
    interp.release(int(addr))
    # JIT: real malloc'd memory, owned by the caller now
    addr, cap, cnt = ja[1]
    assert cnt == expect.size and cap == 128
    got = np.ctypeslib.as_array((ctypes.c_double * int(cnt)).from_address(int(addr))).copy()
    LIBC.free(ctypes.c_void_p(int(addr)))
    np.testing.assert_array_equal(got, expect)


def test_casts():
    xp, ip, n = param("x", PtrType(F64)), param("ints", PtrType(I64)), param("n", I64)
    o64, o32, o8 = param("o64", PtrType(I64)), param("o32", PtrType(I32)), param("o8", PtrType(I8))
    of32, of64, obits = param("of32", PtrType(F32)), param("of64", PtrType(F64)), param("obits", PtrType(I64))
    i, v, k = Var("i", I64, "let"), Var("v", F64, "let"), Var("k", I64, "let")
    alias = Var("alias", PtrType(F64), "let")
    fn = Function("casts", [xp, ip, n, o64, o32, o8, of32, of64, obits], [
        Let(alias, Cast(PtrType(F64), Cast(I64, r(xp)))),          # ptr -> i64 -> ptr
        For(i, c(0), r(n), [
            Let(v, Load(r(alias), r(i))),
            Let(k, Load(r(ip), r(i))),
            Store(r(o64), r(i), Bin("add", Cast(I64, r(v)),          # fptosi truncates to 0
                                    Cast(I64, Cmp("lt", r(v), c(0.0, F64))))),
            Store(r(o32), r(i), Cast(I32, r(k))),                    # wraps
            Store(r(o8), r(i), Cast(I8, r(k))),
            Store(r(of32), r(i), Cast(F32, r(v))),
            Store(r(of64), r(i), Cast(F64, Cast(I8, r(k)))),        # sext then sitofp
            Store(r(obits), r(i), Load(Cast(PtrType(I64), r(xp)), r(i))),  # reinterpret bytes
        ]),
    ])
    rng = np.random.default_rng(3)
    x = rng.normal(scale=1e3, size=64)
    ints = rng.integers(-2**62, 2**62, size=64)
    m = x.size
    args = [x, ints, m, np.zeros(m, np.int64), np.zeros(m, np.int32), np.zeros(m, np.int8),
            np.zeros(m, np.float32), np.zeros(m), np.zeros(m, np.int64)]
    _, ia, ja, _ = run_both(fn, args)
    for res in (ia, ja):
        np.testing.assert_array_equal(res[3], x.astype(np.int64) + (x < 0))
        np.testing.assert_array_equal(res[4], ints.astype(np.int32))
        np.testing.assert_array_equal(res[5], ints.astype(np.int8))
        np.testing.assert_array_equal(res[6], x.astype(np.float32))
        np.testing.assert_array_equal(res[7], ints.astype(np.int8).astype(np.float64))
        np.testing.assert_array_equal(res[8], x.view(np.int64))


OPS = ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor"]


def test_integer_semantics_and_scalar_params():
    ap, bp, n, op, s, w = (param("a", PtrType(I64)), param("b", PtrType(I64)), param("n", I64),
                           param("out", PtrType(I64)), param("scale", F64), param("w", I32))
    fo = param("fout", PtrType(F64))
    i, x, y = Var("i", I64, "let"), Var("x", I64, "let"), Var("y", I64, "let")
    body = [Let(x, Load(r(ap), r(i))), Let(y, Load(r(bp), r(i)))]
    for k, name in enumerate(OPS):
        body.append(Store(r(op), Bin("add", Bin("mul", r(i), c(len(OPS) + 3)), c(k)),
                          Bin(name, r(x), r(y))))
    for k, e in enumerate([Un("neg", r(x)), Un("not", r(x)), Un("abs", r(x))]):
        body.append(Store(r(op), Bin("add", Bin("mul", r(i), c(len(OPS) + 3)), c(len(OPS) + k)), e))
    body.append(Store(r(fo), r(i), Bin("mul", Cast(F64, r(x)),
                                       Bin("add", r(s), Cast(F64, r(w))))))
    fn = Function("intops", [ap, bp, n, op, s, w, fo], [For(i, c(0), r(n), body)])
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.integers(-2**63, 2**63 - 1, 40), [-7, 7, -7, 7, -2**63]])
    b = np.concatenate([rng.integers(-1000, 1000, 40), [2, -2, -2, 2, 1]])
    b[b == 0] = 3
    m = a.size
    _, ia, ja, _ = run_both(fn, [a, b, m, np.zeros(m * 13, np.int64), 0.25, -3, np.zeros(m)])
    with np.errstate(over="ignore"):
        q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)   # truncating division
        cols = [a + b, a - b, a * b, q, a - b * q, np.minimum(a, b), np.maximum(a, b),
                a & b, a | b, a ^ b, -a, ~a, np.abs(a)]
    expect = np.stack(cols, axis=1).ravel()
    for res in (ia, ja):
        np.testing.assert_array_equal(res[3], expect)
        np.testing.assert_array_equal(res[6], a.astype(np.float64) * (0.25 - 3))


def test_float_nan_semantics_and_early_return():
    ap, n, op = param("a", PtrType(F64)), param("n", I64), param("out", PtrType(F64))
    i, x = Var("i", I64, "let"), Var("x", F64, "let")
    one = c(1.0, F64)
    fn = Function("nan", [ap, n, op], [
        For(i, c(0), r(n), [
            Let(x, Load(r(ap), r(i))),
            If(Cmp("eq", r(x), c(-1.0, F64)), [Return(7)]),
            Store(r(op), Bin("mul", r(i), c(4)), Bin("min", r(x), one)),
            Store(r(op), Bin("add", Bin("mul", r(i), c(4)), c(1)), Bin("max", r(x), one)),
            Store(r(op), Bin("add", Bin("mul", r(i), c(4)), c(2)),
                  Select(Cmp("ne", r(x), r(x)), c(5.0, F64), c(6.0, F64))),
            Store(r(op), Bin("add", Bin("mul", r(i), c(4)), c(3)),
                  Select(Cmp("ge", r(x), one), c(5.0, F64), c(6.0, F64))),
        ]),
    ])
    a = np.array([0.5, np.nan, 2.0, np.inf, -np.inf, -1.0, 3.0])
    st, ia, ja, _ = run_both(fn, [a, a.size, np.full(4 * a.size, -9.0)])
    assert st == 7
    expect = np.full(4 * a.size, -9.0)
    for k, v in enumerate(a[:5]):   # stops at the -1.0
        expect[4 * k:4 * k + 4] = [v if v < 1 else 1.0, v if v > 1 else 1.0,
                                   5.0 if v != v else 6.0, 5.0 if v >= 1 else 6.0]
    for res in (ia, ja):
        np.testing.assert_array_equal(res[2], expect)


# ---------------------------------------------------------------- verifier

def _bad_programs():
    p, q = param("p", PtrType(F64)), param("q", PtrType(I64))
    x, y, i = Var("x", F64, "let"), Var("y", I64, "let"), Var("i", I64, "let")
    m, stranger = Var("m", I64, "mut"), param("stranger", I64)
    ld = Load(r(p), c(0))
    cases = {
        "different types": [Let(x, Bin("add", ld, c(1, I64)))],
        "defined twice": [Let(x, ld), Let(x, ld)],
        "outside its scope": [If(Const(True, I1), [Let(x, ld)]), Store(r(p), c(0), r(x))],
        "for var|outside its scope": [For(i, c(0), c(3), []), Store(r(q), c(0), r(i))],
        "not a 'mut'": [Let(y, c(1)), Assign(y, c(2))],
        "not a parameter": [Store(r(q), c(0), r(stranger))],
        "unsupported cast": [Let(x, Cast(PtrType(F64), ld))],
        "unknown binary op": [Let(y, Bin("frobnicate", c(1), c(2)))],
        "unknown unary op": [Let(x, Un("frobnicate", ld))],
        "stored value has type": [Store(r(p), c(0), c(1))],
        "index has type i32": [Let(x, Load(r(p), c(0, I32)))],
        "condition is not i1": [While(c(1), [])],
        "select arms": [Let(x, Select(Const(True, I1), ld, c(1)))],
        "read before it is assigned": [Store(r(q), c(0), r(m)), Assign(m, c(1))],
        "void call": [Let(y, Cast(I64, Call("free", (r(p),), None)))],
        "non-pointer": [Let(x, Load(c(0), c(0)))],
        "does not fit": [Let(y, c(2**70))],
    }
    # key: "<test id>|<expected message>" or just the expected message
    return [(k, Function("bad", [p, q], body)) for k, body in cases.items()]


@pytest.mark.parametrize("key,fn", _bad_programs(), ids=[k.split("|")[0] for k, _ in _bad_programs()])
def test_verify_rejects(key, fn):
    with pytest.raises(IRError, match=key.split("|")[-1]) as err:
        verify(fn)
    assert "bad:" in str(err.value) and "`" in str(err.value)   # names the statement
    with pytest.raises(IRError):
        emit_module(fn)                                          # the backend verifies too


def test_verify_accepts_scoped_reuse_and_mut_pointers():
    verify(grow_fn())
    verify(merge_fn())
    p = param("p", PtrType(F64))
    x1, x2 = Var("x", F64, "let"), Var("x", F64, "let")   # same name, distinct vars, disjoint scopes
    fn = Function("ok", [p], [If(Const(True, I1), [Let(x1, Load(r(p), c(0)))],
                                 [Let(x2, Load(r(p), c(1)))]),
                              Eval(Call("free", (Cast(PtrType(F64), c(0)),), None))])
    verify(fn)
    assert "} else {" in format_function(fn)


def test_interpreter_is_strict():
    fn = dot_fn()
    with pytest.raises(InterpError, match="out of bounds"):
        run(fn, [np.zeros(3), np.zeros(2), 3, np.zeros(1)])
    with pytest.raises(TypeError, match="dtype"):
        run(fn, [np.zeros(3, np.float32), np.zeros(3), 3, np.zeros(1)])
    # realloc of caller memory would crash compiled code; the interpreter refuses it
    cell = np.array([np.zeros(4).ctypes.data, 4, 0], dtype=np.int64)
    with pytest.raises(InterpError):
        run(grow_fn(), [10, cell])


@pytest.mark.parametrize("env, tier", [({}, "O3"), ({"CTENSOR_LARGE_MODULE": "0"}, "light-cg1"),
                                       ({"CTENSOR_LARGE_MODULE": "0", "CTENSOR_HUGE_MODULE": "0"}, "light-cg0")])
def test_disk_object_cache(tmp_path, env, tier):
    """A second process loads the object code from the cache instead of compiling, for each size
    tier (the light tiers make their object outside MCJIT and write it to the cache themselves)."""
    script = textwrap.dedent("""
        import numpy as np, sys
        sys.path.insert(0, sys.argv[1])
        sys.path.insert(0, sys.argv[2])
        from test_ir_codegen import dot_fn, pack
        from ctensor.codegen import compile_function
        fn = dot_fn()
        cf = compile_function(fn)
        a = np.arange(10.0); out = np.zeros(1)
        assert cf.packed(pack(fn, [a, a, 10, out]).ctypes.data) == 0
        assert out[0] == (a @ a), out
        print(cf.source, cf.tier, sorted(cf.compile_seconds.items()))
    """)
    env = dict(os.environ, CTENSOR_CACHE_DIR=str(tmp_path), **env)
    cmd = [sys.executable, "-c", script, ROOT, os.path.join(ROOT, "tests")]
    outs = [subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
            for _ in range(2)]
    for o in outs:
        assert o.returncode == 0, o.stderr
    assert outs[0].stdout.split()[:2] == ["compiled", tier] and outs[1].stdout.split()[:2] == ["disk", tier]
    # a damaged entry is ignored, never handed to MCJIT
    for f in tmp_path.glob("*.o"):
        f.write_bytes(f.read_bytes()[:-100])
    o = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert o.returncode == 0 and o.stdout.startswith("compiled"), o.stderr


@pytest.mark.parametrize("env, tier", [({"CTENSOR_LARGE_MODULE": "0"}, "light-cg1"),
                                       ({"CTENSOR_LARGE_MODULE": "0", "CTENSOR_HUGE_MODULE": "0"}, "light-cg0")])
def test_light_tiers_compute_what_o3_computes(monkeypatch, env, tier):
    """A kernel forced into a light tier (its thresholds at 0) gives O3's and the oracle's answer:
    two point tensors and a run list under counting, the shape whose size the tiers exist for."""
    import ctensor as ct
    from ctensor.runtime import api
    from tests.helpers import oracle
    P = ct.points(np.array([[3.0, -1.0], [3.0, 0.0], [2.0, -2.0], [1.0, 3.0]]))
    Q = ct.points(np.array([[-1.0, -2.0], [-2.0, 0.0], [1.0, -2.0], [3.0, 0.0]]))
    E = ct.intervals([-2.0, 0.0], [-1.0, 1.0], values=[0.5, 2.0], closed="right")
    text = "C[j] = (E[y] + max(P[x, y, j], Q[x, y, j])) * d(x, y; counting, counting)"
    want = ct.einsum(text, P=P, Q=Q, E=E).to_numpy()
    ref = oracle(text, P=P, Q=Q, E=E)
    assert want.tolist() == [ref.at(j) for j in range(4)]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(api, "_CACHE", {})          # a kernel compiled afresh, not the O3 one
    k = ct.compile(text, P=P, Q=Q, E=E)
    assert k.wait_optimized() and k.compiled.tier == tier      # (after a first tier, `driver.tiering`)
    assert k(P=P, Q=Q, E=E).to_numpy().tolist() == want.tolist()


def test_light_tier_on_a_fuzzed_3d_counting_kernel():
    """Fuzz seed 2502 #146: three point dimensions under counting give 108k lines of LLVM IR and 1,700
    loops, so the kernel takes a light tier by size (no threshold forced).  With NewGVN in the light
    pipeline, the bundled LLVM's assertion in `verifyIterationSettled` aborted the whole process."""
    import ctensor as ct
    from tests.helpers import oracle
    from tests.test_fuzz_multidim import nest
    P = ct.points(np.array([[2.0, 3.5, 0.0], [2.0, 2.5, 3.0], [0.0, 0.5, -1.0]]))
    Q = ct.points(np.array([[2.5, 1.0, 2.0], [-1.5, -2.0, 3.0], [0.5, -2.0, -2.0]]))
    B = ct.intervals([-2.0, -1.0, 1.0], [-1.0, 0.0, 2.0], values=[2.0, 0.5, 2.0], closed="neither", fill=1.0)
    E = nest(1350142945, ["SPr", "E"])
    text = ("C[j] = min((1 - E[y]), (P[x, y, z, j] + Q[x, y, z, j]) + (B[x] == 1)) "
            "* d(x, y, z; counting, counting, counting)")
    k = ct.compile(text, P=P, Q=Q, B=B, E=E)
    assert k.wait_optimized() and k.compiled.tier.startswith("light")
    ref = oracle(text, P=P, Q=Q, B=B, E=E)
    assert k(P=P, Q=Q, B=B, E=E).to_numpy().tolist() == [ref.at(j) for j in range(3)]
