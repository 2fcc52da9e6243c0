"""Tiered compilation (`ctensor.driver.tiering`, issue 27 item 5): a large kernel is returned at a
first tier and promoted to its optimised code in the background.  Results never depend on the tier;
what a kernel exposes as code waits for the optimised tier; the first tier's entry forwards to the
optimised one; the disk cache gets the optimised kernel.  `CTENSOR_TIER_WORK=0` tiers every kernel,
so small programs exercise the machinery; the upgrade is held back where a test needs a call to run
at the first tier for certain.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ctensor as ct
from ctensor.codegen import compile_function
from ctensor.driver import tiering

from .helpers import breakpoints_1d, close, oracle, probes

TEXT = "C[x] = A[x] * B[x]"
DOT = "s[] = A[x] * B[x] * d(x; lebesgue)"


def _runs(seed, n=30):
    rng = np.random.default_rng(seed)
    edges = np.cumsum(rng.integers(1, 4, 2 * n)).astype(float)
    return ct.intervals(edges[0::2], edges[1::2], values=rng.integers(-3, 4, n).astype(float))


@pytest.fixture
def every_kernel_tiered(monkeypatch, tmp_path):
    monkeypatch.setenv("CTENSOR_TIERED", "1")
    monkeypatch.setenv("CTENSOR_TIER_WORK", "0")
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    ct.kernel_cache().clear()
    yield
    tiering.wait()
    ct.kernel_cache().clear()


@pytest.fixture
def held(monkeypatch):
    """Upgrades captured instead of started: `held.release()` starts them (the real `upgrade`)."""
    captured = []
    real = tiering.upgrade
    monkeypatch.setattr(tiering, "upgrade", lambda *a: captured.append(a))

    class Held:
        items = captured
        upgrade = staticmethod(real)

        @staticmethod
        def release():
            for a in captured:
                real(*a)
            tiering.wait()
    return Held


def _pieces(t):
    return t.pieces() if isinstance(t, ct.Tensor) else t


def _agrees(text, got, **tensors):
    """Does a result equal the reference interpreter's (at probes around every breakpoint)?"""
    ref = oracle(text, **tensors)
    if not isinstance(got, ct.Tensor):
        return close(got, ref.value)
    return all(close(got[p], ref.at((p.value, p.eps))) for p in probes(breakpoints_1d(*tensors.values(), got)))


@pytest.mark.parametrize("text", [TEXT, DOT])
def test_first_tier_and_optimised_give_the_reference_result(every_kernel_tiered, held, text):
    A, B = _runs(1), _runs(2)
    k = ct.compile(text, A=A, B=B)
    assert k.tier == "quick-cg0" and len(held.items) == 1
    first = k(A=A, B=B)
    held.release()
    assert k.wait_optimized() and k.tier == "O3" and k.tier_error is None
    second = k(A=A, B=B)
    assert _pieces(first) == _pieces(second) and _agrees(text, first, A=A, B=B)
    # the code a kernel exposes is the optimised one: no forward slot, its guard proofs done
    assert "_next" not in k.llvm_ir and k.guard_stats is not None
    assert k.address == k.compiled.packed_address and k.compiled.forward_address == 0


def test_the_first_tier_entry_forwards_to_the_optimised_code(every_kernel_tiered, held):
    A, B = _runs(3), _runs(4)
    k = ct.compile(DOT, A=A, B=B)
    first = k.compiled
    call = k.pack(A=A, B=B)
    assert first.packed(call.address) == 0
    want = call.finish(0)
    held.release()
    assert k.compiled is not first and first.forward_address
    # the first tier's slot holds the optimised entry (the result alone cannot tell: both compute it)
    assert ctypes.c_void_p.from_address(first.forward_address).value == k.compiled.packed_address
    call = k.pack(A=A, B=B)
    assert first.packed(call.address) == 0          # the old address, now the optimised code
    assert call.finish(0) == want


def test_forward_to_runs_the_other_function():
    # two programs with the same argument block: after forward_to, the first's entry computes the second
    A, B = _runs(5), _runs(6)
    k1 = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B, prove_guards=False)
    k2 = ct.compile("s[] = (A[x] + B[x]) * d(x; lebesgue)", A=A, B=B, prove_guards=False)
    k1.wait_optimized(), k2.wait_optimized()
    assert k1.spec.getters == k2.spec.getters
    quick = compile_function(k1.fn, quick=True)
    assert quick.tier == "quick-cg0" and quick.forward_address
    call = k1.pack(A=A, B=B)
    assert quick.packed(call.address) == 0 and close(call.finish(0), k1(A=A, B=B))
    assert not close(k1(A=A, B=B), k2(A=A, B=B))
    quick.forward_to(k2.compiled)
    call = k1.pack(A=A, B=B)
    assert quick.packed(call.address) == 0 and close(call.finish(0), k2(A=A, B=B))
    with pytest.raises(ValueError, match="not a first-tier function"):
        k2.compiled.forward_to(k1.compiled)


def test_calls_from_many_threads_across_the_promotion(every_kernel_tiered, held):
    inputs = [(_runs(10 + j), _runs(50 + j)) for j in range(16)]
    k = ct.compile(TEXT, A=inputs[0][0], B=inputs[0][1])
    want = [_pieces(k(A=a, B=b)) for a, b in inputs]          # at the first tier, before any thread
    assert all(_agrees(TEXT, k(A=a, B=b), A=a, B=b) for a, b in inputs[:3])
    go, errors, seen = threading.Event(), [], []

    def hammer(t):
        go.wait()
        for n in range(200):
            a, b = inputs[(t + n) % len(inputs)]
            got = _pieces(k(A=a, B=b))
            if got != want[(t + n) % len(inputs)]:
                errors.append((t, n))
            seen.append(k.tier)

    threads = [threading.Thread(target=hammer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    go.set()
    held.release()                   # promoted while the threads call
    for t in threads:
        t.join()
    assert not errors and k.tier == "O3"


def test_a_failed_upgrade_keeps_the_first_tier(every_kernel_tiered, held):
    A, B = _runs(7), _runs(8)
    k = ct.compile(DOT, A=A, B=B)
    kernel, _build, on_final = held.items.pop()

    def broken():
        raise RuntimeError("no optimised code")
    held.upgrade(kernel, broken, on_final)
    tiering.wait()
    assert not k.wait_optimized() and isinstance(k.tier_error, RuntimeError)
    assert k.tier == "quick-cg0" and _agrees(DOT, k(A=A, B=B), A=A, B=B)


def test_small_kernels_and_tiering_off_compile_in_full(monkeypatch, tmp_path):
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    A, B = _runs(9), _runs(10)
    for env in ({"CTENSOR_TIERED": "1"}, {"CTENSOR_TIERED": "0", "CTENSOR_TIER_WORK": "0"}):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        ct.kernel_cache().clear()
        k = ct.compile(DOT, A=A, B=B)
        assert k.tier == "O3" and k.wait_optimized(timeout=0) and k.guard_stats is not None
    ct.kernel_cache().clear()


CHILD = """
import numpy as np, ctensor as ct
e = np.cumsum(np.arange(1, 41)).astype(float)
A = ct.intervals(e[0::2], e[1::2], values=np.arange(20.0))
k = ct.compile("C[x] = A[x] * A[x]", A=A)
print(k.source, k.tier, sum(v for _, v in k(A=A).pieces()))
"""


def test_an_exiting_process_stores_the_optimised_kernel(tmp_path):
    # the first process returns a first tier and exits at once: its upgrade finishes first (not a
    # daemon thread) and stores the optimised kernel, which the second process loads from disk
    env = dict(os.environ, CTENSOR_CACHE_DIR=str(tmp_path), CTENSOR_TIERED="1", CTENSOR_TIER_WORK="0")
    runs = [subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.split() for r in runs)
    assert first[:2] == ["compiled", "quick-cg0"] and second[:2] == ["disk", "O3"] and first[2] == second[2]
