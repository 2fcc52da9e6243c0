"""Interval dot product s = ∫ A(x)·B(x) dx of 1e6 + 1e6 intervals: ctensor vs a hand-written
branchless numba two-pointer merge (the paper's Fig. 1(e)), in the same run.

    pytest benchmarks/bench_interval_dot.py --benchmark-columns=min,median,mean

Compile time is measured separately (cold: parse → native, kernel and object caches cleared).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest

import ctensor as ct

N = 1_000_000


def make(n, seed):
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(10.0, 2 * n)
    edges = np.cumsum(gaps)
    start, end = edges[0::2], edges[1::2]
    return start, end, rng.random(n)


@numba.njit(cache=True, fastmath=False)
def numba_dot(la, ra, va, lb, rb, vb):
    """Branchless two-pointer merge of half-open intervals [l, r)."""
    i = j = 0
    s = 0.0
    na, nb = la.shape[0], lb.shape[0]
    while i < na and j < nb:
        lo = max(la[i], lb[j])
        hi = min(ra[i], rb[j])
        s += max(hi - lo, 0.0) * va[i] * vb[j]
        a_done = ra[i] <= rb[j]
        b_done = rb[j] <= ra[i]
        i += a_done
        j += b_done
    return s


@pytest.fixture(scope="module")
def data():
    a, b = make(N, 1), make(N, 2)
    A = ct.intervals(a[0], a[1], values=a[2])
    B = ct.intervals(b[0], b[1], values=b[2])
    return a, b, A, B


def test_numba_reference(benchmark, data):
    a, b, _, _ = data
    args = (a[0], a[1], a[2], b[0], b[1], b[2])
    numba_dot(*args)  # compile outside the timing
    benchmark.group = "interval dot 1e6+1e6"
    s = benchmark(numba_dot, *args)
    assert s > 0


def test_ctensor(benchmark, data):
    a, b, A, B = data
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    benchmark.group = "interval dot 1e6+1e6"
    s = benchmark(k, A=A, B=B)
    ref = numba_dot(a[0], a[1], a[2], b[0], b[1], b[2])
    assert abs(s - ref) <= 1e-9 * abs(ref)


def test_cold_compile_time():
    """Cold compile in a fresh process with the object cache off: parse → plan → looplets → IR →
    LLVM O3 → MCJIT.  Printed, not asserted (timings never go into assertions)."""
    code = (
        "import time, numpy as np, ctensor as ct\n"
        "A = ct.intervals([0.0], [1.0], values=[1.0]); B = ct.intervals([0.5], [2.0], values=[2.0])\n"
        "t0 = time.perf_counter(); k = ct.compile('s[] = A[x] * B[x] * d(x; lebesgue)', A=A, B=B)\n"
        "t = time.perf_counter() - t0\n"
        "print(f'{t * 1e3:.1f} ms;', ', '.join(f'{a}={b * 1e3:.1f}ms' for a, b in k.compile_seconds.items()))\n")
    env = dict(os.environ, CTENSOR_CACHE_DIR="off")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    print("\ncold compile (fresh process, no caches):", out.stdout.strip())
