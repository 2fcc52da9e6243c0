"""Cost of the validity check (continuous paper §4.3; digest §3.6): a verdict served from the
pattern cache, the syntactic fast path, and a cold z3 decision, side by side.

    PYTHONPATH=. pytest benchmarks/bench_validity.py --benchmark-columns=min,median,mean,rounds

`check_program` is what `make_plan` runs on every compile (the program already parsed and bound);
`check` adds parsing and the front end (what a user calling it directly pays).
"""
from __future__ import annotations

import numpy as np
import pytest

import ctensor as ct
from ctensor.analysis import smt
from ctensor.analysis.pattern import build_pattern
from ctensor.analysis.validity import check, check_program, verdict_cache
from ctensor.lang.parser import parse
from ctensor.lang.program import front_end

A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, 2.0])
B = ct.intervals([0.0], [1.5], values=[4.0])
M = ct.Tensor(ct.SparseList(ct.Element(0.0), np.array([0, 2]), np.array([0.5, 1.5])))
PTS = ct.points(np.array([[0.0, 1.0], [2.0, 3.0]]))
BOX = ct.box([0.0, 0.0], [3.0, 3.0])

MASKED_CONV = ("C[y] = M[y] * A[y + x] * B[x] * d(x; lebesgue)", dict(M=M, A=A, B=B))
RADIUS = ("Out[id] = (Box[x, y] & Points[x, y, id] & ((x - ox)**2 + (y - oy)**2 <= r**2)) "
          "* d(x, y; boolean, boolean)", dict(Box=BOX, Points=PTS, ox=0.0, oy=0.0, r=1.0))


def bound(text, args):
    tensors = {k: v for k, v in args.items() if isinstance(v, ct.Tensor)}
    fe = front_end(parse(text), tensors, {k: v for k, v in args.items() if k not in tensors})
    return (fe.rhs, tensors, fe.kinds, fe.measures, fe.op, text)


@pytest.mark.parametrize("name, prog", [("masked conv (cached z3 verdict)", MASKED_CONV),
                                        ("radius search (fast path)", RADIUS)])
def test_check_program(benchmark, name, prog):
    benchmark.group = "validity per compile: check_program"
    benchmark.name = name
    args = bound(*prog)
    check_program(*args)                       # warm: the z3 verdict is now cached
    v = benchmark(check_program, *args)
    assert v.valid


@pytest.mark.parametrize("name, prog", [("masked conv (cached z3 verdict)", MASKED_CONV),
                                        ("radius search (fast path)", RADIUS)])
def test_check_text(benchmark, name, prog):
    benchmark.group = "validity from text: check (parse + front end + verdict)"
    benchmark.name = name
    check(prog[0], **prog[1])
    assert benchmark(check, prog[0], **prog[1]).valid


def test_pattern_only(benchmark):
    """The part of a cached check that is not the dictionary lookup: building the access pattern."""
    benchmark.group = "validity per compile: check_program"
    benchmark.name = "masked conv: build_pattern alone"
    rhs, tensors, kinds, measures, op, _ = bound(*MASKED_CONV)
    benchmark(build_pattern, rhs, tensors, kinds, measures, op)


def test_cold_z3(benchmark):
    """What the cache saves: one z3 decision of the masked convolution (z3 already imported)."""
    benchmark.group = "validity cold"
    benchmark.name = "masked conv: z3 decision"
    rhs, tensors, kinds, measures, op, _ = bound(*MASKED_CONV)
    pattern, _ = build_pattern(rhs, tensors, kinds, measures, op)
    smt.solve(pattern)
    out = benchmark.pedantic(smt.solve, args=(pattern,), rounds=20, iterations=1)
    assert out.status == "valid"
    verdict_cache().clear()
