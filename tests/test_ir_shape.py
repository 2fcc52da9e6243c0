"""Structure of generated code: the interval dot product is one two-pointer merge loop (the
paper's Fig. 1(e)) — no per-point loop, no quadratic pair loop — and a scalar-output kernel
allocates nothing."""
from __future__ import annotations

import numpy as np

import ctensor as ct
from ctensor.ir import nodes as ir


def _walk(stmts, depth=0):
    for s in stmts:
        yield s, depth
        if isinstance(s, ir.If):
            yield from _walk(s.then, depth)
            yield from _walk(s.orelse, depth)
        elif isinstance(s, (ir.While, ir.For)):
            yield from _walk(s.body, depth + 1)


def _exprs(e):
    yield e
    for f in ("a", "b", "cond", "ptr", "index"):
        if hasattr(e, f):
            yield from _exprs(getattr(e, f))
    if isinstance(e, ir.Call):
        for a in e.args:
            yield from _exprs(a)


def _dot_kernel(closed="left"):
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0], closed=closed)
    B = ct.intervals([1.0], [6.0], values=[2.0], closed=closed)
    return ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)


def test_dot_product_is_one_two_pointer_loop():
    k = _dot_kernel()
    loops = [(s, d) for s, d in _walk(k.fn.body) if isinstance(s, (ir.While, ir.For))]
    # the loop that accumulates into the output is a While at depth 0 with no loop inside it
    acc_loops = [s for s, d in loops if any(isinstance(t, ir.Assign) and t.var.name == "acc"
                                            for t, _ in _walk(s.body))]
    assert len(acc_loops) == 1
    merge = acc_loops[0]
    assert isinstance(merge, ir.While)
    assert not any(isinstance(t, (ir.While, ir.For)) for t, _ in _walk(merge.body))
    # every other loop is a seek (gallop / binary search) run once before the merge, not nested in it
    assert all(d == 0 for s, d in loops if isinstance(s, ir.While) and s is not merge and
               not any(t is s for t, _ in _walk(merge.body)))
    # the merge advances both cursors branchlessly by comparing right endpoints with the step end
    text = k.ir
    assert "%A_q = %A_q + cast<i64>(%A_full)" in text and "%B_q = %B_q + cast<i64>(%B_full)" in text
    # homogeneous closedness: no ε byte is loaded inside the merge loop
    for s, _ in _walk(merge.body):
        if isinstance(s, ir.Let):
            for e in _exprs(s.value):
                if isinstance(e, ir.Load):
                    assert e.ptr.var.name in ("A_left", "A_right", "B_left", "B_right", "Ac_val", "Bc_val")


def test_scalar_kernel_allocates_nothing():
    k = _dot_kernel()
    for s, _ in _walk(k.fn.body):
        for f in ("value", "cond", "expr"):
            if hasattr(s, f):
                assert not any(isinstance(e, ir.Call) for e in _exprs(getattr(s, f)))
    assert "realloc" not in k.llvm_ir and "malloc" not in k.llvm_ir


def test_homogeneous_storage_is_two_floats_per_interval():
    n = 1000
    s = np.arange(n, dtype=float) * 2
    T = ct.intervals(s, s + 1, values=np.ones(n))
    lvl = T.level
    assert lvl.left_eps is None and lvl.right_eps is None
    assert T.nbytes == 2 * 8 + 8 * n * 2 + 8 * n      # ptr + left/right endpoints + values
    H = ct.intervals(s, s + 1, values=np.ones(n), closed=["left"] * n)   # heterogeneous
    assert H.nbytes == T.nbytes + 2 * n                # one ε byte per endpoint


def test_kernel_reused_across_calls():
    k1 = _dot_kernel()
    k2 = _dot_kernel()
    assert k1 is k2
    A = ct.intervals([0.0], [10.0], values=[1.0])
    B = ct.intervals([2.0, 4.0], [3.0, 8.0], values=[1.0, 0.5])
    assert k1(A=A, B=B) == 1.0 + 2.0


def test_repeated_access_reads_one_cursor():
    """An access written twice with the same indices is one cursor (`lower.program_notation`):
    `A[x] * A[x] * A[x]` is the code of `A[x]` plus two multiplies, not a three-way merge; a
    nested `a if c else b` over repeated accesses (a helper's hunt: 84-94 s to compile before)
    stays small.  Values against the reference interpreter."""
    from .helpers import close, oracle
    A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, -2.0])
    B = ct.intervals([0.0, 2.5], [1.0, 3.0], values=[1.0, 2.0])
    one = ct.compile("s[] = A[x] * d(x; lebesgue)", A=A)
    two = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    for text in ("s[] = A[x] * A[x] * A[x] * d(x; lebesgue)", "s[] = A[x] * (A[x] > 0) * d(x; lebesgue)"):
        k = ct.compile(text, A=A)
        # + 2 for the two multiplies, or + 4 for the sieve `(A[x] > 0)` made an `if` guard around the
        # update (`lower.hoist`): either way one cursor, far from the two-cursor merge
        assert len(k.ir.splitlines()) <= len(one.ir.splitlines()) + 4 < len(two.ir.splitlines())
        assert close(k(A=A), oracle(text, A=A).value)
    A = ct.intervals([-3.0, 1.0], [-1.0, 4.0], values=np.array([0, 2]), closed=["neither", "left"], fill=-1)
    S = ct.interval_set([1.0, -1.0, 3.0, 1.0], [2.0, 1.0, 4.0, 2.0])
    P = ct.points(np.array([[4.0], [1.0]]))
    text = ("O[i] = P[x, j] * ((S[i, x] if P[x, j] else S[i, x]) if max(S[i, x], A[x]) else P[x, j]) "
            "* d(j, x; boolean, boolean)")
    k = ct.compile(text, A=A, S=S, P=P)
    assert len(k.ir.splitlines()) < 3000
    ref = oracle(text, A=A, S=S, P=P)
    assert k(A=A, S=S, P=P).to_numpy().tolist() == [ref.at(i) for i in range(4)]
