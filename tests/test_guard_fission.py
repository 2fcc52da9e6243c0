"""Guard fission (`ctensor.lower.guard_fission`): the split loop does what the original did, status
and memory, checked by running both through the reference IR interpreter; the pass leaves alone
the loops it may not split; the KPConv kernel is split and still equals the numpy reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ctensor.ir import build as b
from ctensor.ir import nodes as ir
from ctensor.ir.interp import run
from ctensor.ir.printer import format_function
from ctensor.ir.types import F64, I64, PtrType
from ctensor.ir.verify import verify
from ctensor.lower.guard_fission import LANES, STRIP, fission_guards

INF = b.f64(math.inf)


def _kernel(t_stores_into_a=False, slow=True):
    """for k in [0, n):
           let x = A[k] - s
           if (!(|s| < inf)) return 5                    # loop-invariant exit
           if (x < inf) {
               if (A[k] == 7) { return 6 }              # data-dependent exit
               let g = max(0, 1 - sqrt(|x|) / w)        # (or 1 - |x| * w: no slow op)
               if (g != 0) { for c in [0, C): Out[k*C + c] += g * F[c] }
           }"""
    A, F, Out = (ir.Var(n, PtrType(F64), "param") for n in ("A", "F", "Out"))
    n, C = ir.Var("n", I64, "param"), ir.Var("C", I64, "param")
    s, w = ir.Var("s", F64, "param"), ir.Var("w", F64, "param")
    k, c = ir.Var("k", I64, "let"), ir.Var("c", I64, "let")
    x, g, base = ir.Var("x", F64, "let"), ir.Var("g", F64, "let"), ir.Var("base", I64, "let")
    R = ir.Read
    absx = ir.Un("abs", R(x))
    infl = ir.Bin("div", ir.Un("sqrt", absx), R(w)) if slow else ir.Bin("mul", absx, R(w))
    at = b.add(R(base), R(c))
    target = A if t_stores_into_a else Out
    inner = ir.For(c, b.i64(0), R(C), [
        ir.Store(R(target), at, b.add(ir.Load(R(target), at), b.mul(R(g), ir.Load(R(F), R(c)))))])
    body = [
        ir.Let(x, b.sub(ir.Load(R(A), R(k)), R(s))),
        ir.If(b.lnot(b.lt(ir.Un("abs", R(s)), INF)), [ir.Return(5)]),
        ir.If(b.lt(R(x), INF), [
            ir.If(b.eq(ir.Load(R(A), R(k)), b.f64(7.0)), [ir.Return(6)]),
            ir.Let(g, b.maximum(b.f64(0.0), b.sub(b.f64(1.0), infl))),
            ir.If(b.ne(R(g), b.f64(0.0)), [ir.Let(base, b.mul(R(k), R(C))), inner])])]
    return ir.Function("guarded", [A, F, Out, n, C, s, w], [ir.For(k, b.i64(0), R(n), body)])


def _run(fn, a, f, n, C, s, w):
    out = np.arange(len(a) * C, dtype=np.float64) * 0.25        # nonzero: the adds are checked
    status = run(fn, [a.copy(), f, out, n, C, s, w])
    return status, out


# LANES - 1 .. 2 LANES - 1: phase 1 padded to a multiple of LANES (masked lanes); 15 is KPConv's K
@pytest.mark.parametrize("n", [0, 1, 5, LANES - 1, LANES, 2 * LANES - 1, STRIP - 1, STRIP, STRIP + 1, 2 * STRIP + 7])
@pytest.mark.parametrize("case", ["plain", "data_exit", "invariant_exit"])
def test_split_loop_matches_original(n, case):
    rng = np.random.default_rng(n)
    a = rng.uniform(-1.5, 1.5, max(n, 1))           # |x| > 1: the guard is 0 there
    a[rng.random(len(a)) < 0.2] = math.inf          # x < inf fails there
    if case == "data_exit" and n > 2:
        a[n - 2] = 7.0
        a[n // 2] = 7.0                              # the first one (in k order) must win
    s = math.inf if case == "invariant_exit" else 0.25
    fn = _kernel()
    split = fission_guards(fn)
    assert split is not fn
    verify(split)
    f = rng.standard_normal(3)
    want = _run(fn, a, f, n, 3, s, 0.5)
    got = _run(split, a, f, n, 3, s, 0.5)
    assert got[0] == want[0]
    assert np.array_equal(got[1], want[1])          # same adds, same order: bitwise equal
    if case == "data_exit" and n > 2:
        assert want[0] == 6


def test_split_is_deterministic():
    # the kernel symbol is a hash of the LLVM text: the same program must split to the same text
    # whatever was compiled before it in the process (the on-disk cache is shared between processes)
    first = format_function(fission_guards(_kernel()))
    fission_guards(_kernel(slow=True))
    assert format_function(fission_guards(_kernel())) == first


def test_not_split_when_unsafe_or_not_worth_it():
    for fn in (_kernel(t_stores_into_a=True), _kernel(slow=False)):
        assert fission_guards(fn) is fn


def test_kpconv_kernel_is_split_and_correct():
    from scipy.spatial import cKDTree
    import ctensor.apps.pointcloud as pc

    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 1, (400, 3))
    feats = rng.standard_normal((400, 5))
    kps = rng.uniform(-0.05, 0.05, (15, 3))
    w = rng.standard_normal((15, 5, 4))
    r, sigma = 0.12, 0.05
    got = pc.kpconv(pts, feats, kps, w, r, sigma)
    kernel = pc._KERNELS["kpconv_scaled"]      # the einsum kpconv runs for a finite 1 / sigma
    assert "fis_state" in str(kernel.ir)
    want = np.zeros((400, 4))
    for i, nb in enumerate(cKDTree(pts).query_ball_point(pts, r)):
        d = np.linalg.norm(pts[nb][:, None, :] - pts[i] - kps[None], axis=2)      # (nb, K)
        h = np.maximum(0, 1 - d / sigma)
        want[i] = np.einsum("nk,nc,kcm->m", h, feats[nb], w)
    assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()
