"""What the z3 guard prover (`ctensor.analysis.guards`, continuous paper §6.3 Fig. 19) does to real
kernels: the guards it decided or narrowed, the number of guards left in the IR, and lowering time
with the prover off, on with an empty verdict cache (cold) and on with a warm cache.

    python benchmarks/guards_report.py            # table
    python benchmarks/guards_report.py --log      # and every rewrite, before -> after
    python benchmarks/guards_report.py --ir fig19_sparse_point   # IR with the prover off, then on

Lowering time only (parse → IR): LLVM is unaffected except for the smaller input.  Medians of
`--repeat` runs; the machine is shared, so read differences of a few ms as noise.
"""
from __future__ import annotations

import argparse
import difflib
import statistics

import numpy as np

import ctensor as ct
import ctensor.apps.spatial as sp
from ctensor.analysis import guards
from ctensor.apps.genome_index import EINSUMS as GENOME
from ctensor.apps.genome_layout import BUILD, interval_tensor, values
from ctensor.ir import nodes as ir
from ctensor.ir.printer import format_expr
from ctensor.driver import compile_kernel


def cases():
    """(name, einsum, tensors, keywords) for the kernels of the apps and the paper's examples."""
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 100, (2000, 2))
    P, Pg = ct.points(xy), ct.points(xy, grid=(8, 8))
    B = ct.box([10, 10], [30, 40])
    yield "spatial_box", sp.EINSUMS["box"], dict(B=B, P=P), {}
    yield "spatial_box_grid", sp.EINSUMS["box"], dict(B=B, P=Pg), {}
    yield "spatial_radius_grid", sp.EINSUMS["radius"], dict(B=B, P=Pg, ox=20.0, oy=25.0, r=5.0), {}
    s = np.sort(rng.integers(0, 10000, 300)).astype(float)
    e = s + rng.integers(1, 200, 300)
    qs = np.sort(rng.integers(0, 10000, 50)).astype(float)
    qe = qs + 100
    ninf = np.full(len(qs), -np.inf)
    S, E = BUILD["S"](s, e), BUILD["E"](s, e)
    yield "genome_count", GENOME["count"], dict(A=interval_tensor(ninf, qe, "left"), S=S,
                                                 B=interval_tensor(ninf, qs, "both"), E=E), {}
    yield "genome_overlap", GENOME["overlap"], dict(W=interval_tensor(qs - 200, qe, "left"), S=S,
                                                     End=values(e, "End"), QS=values(qs, "QS")), {}
    A = ct.intervals([0.0, 4.0], [3.0, 6.0], values=[2.0, 1.0])
    Bv = ct.intervals([1.0], [5.0], values=[3.0])
    yield "interval_dot", "s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=A, B=Bv), {}
    Ah = ct.intervals([0.0, 4.0], [3.0, 6.0], values=[2.0, 1.0], closed=["left", "both"])
    yield "interval_dot_hetero", "s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=Ah, B=Bv), {}
    yield "interval_count", "s[] = A[x] * B[x] * d(x; counting)", dict(A=A, B=Bv), {}
    P1 = ct.points(np.array([[1.0], [2.0], [5.0]]))
    yield "fig19_points", "s[] = P[x, i] * A[x] * d(x, i; counting, counting)", dict(P=P1, A=A), {}
    T = ct.Tensor(ct.Dense(ct.SparsePoint(ct.Element(0.0, val=np.array([1.0, -2.0, 0.5])),
                                          idx=np.array([1.0, 3.0, 7.0])), 3))
    yield "fig19_sparse_point", "C[i] = T[i, x] * A[x] * d(x; counting)", dict(T=T, A=Ah), {}


def conds(stmts, out):
    for s in stmts:
        if isinstance(s, ir.If):
            out.append(s.cond)
            conds(s.then, out)
            conds(s.orelse, out)
        elif isinstance(s, (ir.While, ir.For)):
            conds(s.body, out)
    return out


def lower(text, tensors, kw, flag, clear):
    if clear:
        guards.guard_cache.clear()
    k = compile_kernel(text, tensors, prove_guards=flag, use_store=False, **kw)
    return k, k.compile_seconds["lower"] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--log", action="store_true")
    ap.add_argument("--ir", default=None, help="print the IR diff of this case (prover off -> on)")
    args = ap.parse_args()
    lower("s[] = A[x] * d(x; lebesgue)", dict(A=ct.intervals([0.0], [1.0])), {}, True, True)   # import z3
    print(f"{'kernel':22s} {'ifs off':>7s} {'ifs on':>6s} {'decided':>7s} {'narrowed':>8s} {'z3 checks':>9s} "
          f"{'lower off ms':>12s} {'on cold':>8s} {'on warm':>8s}")
    for name, text, tensors, kw in cases():
        if args.ir and name != args.ir:
            continue
        off = [lower(text, tensors, kw, False, True) for _ in range(args.repeat)]
        cold = [lower(text, tensors, kw, True, True) for _ in range(args.repeat)]
        warm = [lower(text, tensors, kw, True, False) for _ in range(args.repeat)]
        k_off, k_on = off[-1][0], cold[-1][0]
        st = k_on.guard_stats
        med = lambda xs: statistics.median(x[1] for x in xs)
        print(f"{name:22s} {len(conds(k_off.fn.body, [])):7d} {len(conds(k_on.fn.body, [])):6d} "
              f"{st['true'] + st['false']:7d} {st['refined']:8d} {st['z3_checks']:9d} "
              f"{med(off):12.1f} {med(cold):8.1f} {med(warm):8.1f}")
        if args.log:
            for before, after in st["log"]:
                print(f"    {format_expr(before)}\n      -> {format_expr(after)}")
        if args.ir:
            print("\n".join(difflib.unified_diff(k_off.ir.splitlines(), k_on.ir.splitlines(), "prover off",
                                                 "prover on", lineterm="", n=4)))


if __name__ == "__main__":
    main()
