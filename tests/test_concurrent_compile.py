"""Concurrent compilation (issue 31 (d)): `ct.einsum` on different programs from several threads at
once, cold and warm disk cache.  z3 objects built under the analysis lock but freed after it was
released crashed the process in about one run of three (every dump started in z3), and `deep`'s
recursion limit, restored by one thread while another still compiled, could turn a deep
expression into a spurious InvalidProgramError.  Each run is a subprocess, so a segfault or a hang
at exit is a failed run, not a lost test session; results are compared with the same programs
compiled on one thread (the oracle here is the serial path, itself checked against the reference
interpreter by the rest of the suite) and with numpy where the answer is a closed form."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ten programs whose compiles prove guards with z3 (interval merges, pinpoints, counting) and, for
# the affine ones, check validity with z3; `deep` (a 40-factor product) exercises the recursion limit
SCRIPT = textwrap.dedent("""
    import sys, threading, json
    import numpy as np
    import ctensor as ct

    rng = np.random.default_rng(7)
    s_a = np.sort(rng.uniform(0, 100, 40)); A = ct.intervals(s_a[0::2], s_a[1::2], values=np.arange(20.0) + 1)
    s_b = np.sort(rng.uniform(0, 100, 40)); B = ct.intervals(s_b[0::2], s_b[1::2], closed="both")
    P = ct.points(np.sort(rng.uniform(0, 100, 15))[:, None])
    Q = ct.points(rng.uniform(0, 10, (12, 2)))
    M = ct.Tensor(ct.Dense(ct.Element(0.0)), np.arange(5.0))
    S = ct.interval_set([1.0, 30.0, 50.0], [20.0, 60.0, 90.0])
    deep = "s[] = " + " * ".join(["A[x]"] * 40) + " * d(x; lebesgue)"
    PROGRAMS = [
        ("s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=A, B=B)),
        ("s[] = A[x] * P[x, i] * d(x, i; counting, counting)", dict(A=A, P=P)),
        ("C[x] = A[x] * B[x]", dict(A=A, B=B)),
        ("C[i] = S[i, x] * A[x] * d(x; lebesgue)", dict(S=S, A=A)),
        ("s[] = A[x + y] * B[x] * P[y, i] * d(x, y, i; lebesgue, counting, counting)", dict(A=A, B=B, P=P)),
        ("s[] = A[x] * B[x] * d(x; boolean)", dict(A=A, B=B)),
        ("C[x] = A[x] + B[x]", dict(A=A, B=B)),
        ("s[] = B[x] * P[x, i] * d(x, i; counting, counting)", dict(B=B, P=P)),
        ("C[i] = (Q[x, y, i] & (x + y <= 8)) * d(x, y; counting, counting)", dict(Q=Q)),
        (deep, dict(A=A)),
    ]

    def value(r):
        if not isinstance(r, ct.Tensor):
            return r
        try:
            return r.to_numpy().tolist()
        except TypeError:                   # a real-indexed output: compare its pieces
            return repr(r.pieces())

    def run(order, out, errors):
        try:
            for k in order:
                text, kw = PROGRAMS[k]
                out[k] = value(ct.einsum(text, **kw))
        except BaseException as e:          # reported, so a failure is not a silent hang
            errors.append(f"{type(e).__name__}: {e}")

    n = len(PROGRAMS)
    results, errors, threads = [{} for _ in range(6)], [], []
    for t in range(6):
        order = [(t * 3 + k) % n for k in range(n)][::(1 if t % 2 else -1)]
        threads.append(threading.Thread(target=run, args=(order, results[t], errors)))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    ct.kernel_cache().clear()
    serial = {k: value(ct.einsum(text, **kw)) for k, (text, kw) in enumerate(PROGRAMS)}
    # closed forms from the constructors' own arrays (numpy, no ctensor code): the interval dot
    # product and the integral of A**40
    a0, a1, av = s_a[0::2], s_a[1::2], np.arange(20.0) + 1
    b0, b1 = s_b[0::2], s_b[1::2]
    dot = float((av[:, None] * np.clip(np.minimum(a1[:, None], b1) - np.maximum(a0[:, None], b0), 0, None)).sum())
    power = float(((a1 - a0) * av ** 40).sum())
    json.dump({"errors": errors, "same": all(r == serial for r in results), "serial": serial,
               "numpy": [dot, power]}, sys.stdout)
""")


def _run(env, timeout=120):
    import json
    o = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT)
    assert o.returncode == 0, f"exit {o.returncode}: {o.stderr[-3000:]}"
    return json.loads(o.stdout)


@pytest.mark.parametrize("cache", ["off", "disk", "tiered"])
def test_ten_programs_on_six_threads(tmp_path, cache):
    """Four runs per cache state (before the fix about one run in four crashed or hung), each a fresh process: no crash, no hang at exit (timeout), no
    error, and every thread's results equal the serial ones.  With a disk cache, the first run
    fills it (cold) and the next three load from it (warm).  "tiered": every kernel is compiled at
    the first tier and upgraded in the background, so the threads' LLVM pipelines and code
    generations (run outside llvmlite's lock, `engine._unlocked`) overlap with the upgrades'."""
    env = dict(os.environ, CTENSOR_CACHE_DIR="off" if cache != "disk" else str(tmp_path / "objcache"))
    if cache == "tiered":
        env.update(CTENSOR_TIERED="1", CTENSOR_TIER_WORK="0")
    for _ in range(4):
        got = _run(env)
        assert got["errors"] == [] and got["same"], got
    assert got["serial"]["0"] == pytest.approx(got["numpy"][0], rel=1e-12)
    assert got["serial"]["9"] == pytest.approx(got["numpy"][1], rel=1e-9)


def test_deep_restores_the_recursion_limit_only_when_the_last_thread_leaves():
    """`deep` raises the process-wide recursion limit; a thread leaving it must not lower the limit
    under another thread still inside (the limit is restored when the last one leaves)."""
    import threading

    from ctensor.runtime.recursion import LIMIT, deep
    before = sys.getrecursionlimit()
    inside, release = threading.Event(), threading.Event()
    seen = []

    @deep
    def long_step():
        inside.set()
        release.wait(10)
        seen.append(sys.getrecursionlimit())

    @deep
    def short_step():
        return sys.getrecursionlimit()

    th = threading.Thread(target=long_step)
    th.start()
    assert inside.wait(10)
    assert short_step() >= LIMIT
    release.set()
    th.join()
    assert seen[0] >= LIMIT                     # still raised after the short step left
    assert sys.getrecursionlimit() == before    # restored once both have left
