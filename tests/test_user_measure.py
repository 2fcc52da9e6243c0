"""User measures: `d(x; m)` with `m=ct.Measure("<weight of lo and hi>")` (DESIGN.md §2, continuous
paper §3.2 and §4.2: a measure μ: Interval → R weighs each partition).  Oracle: the reference
interpreter with the same measure written as a Python function (tests/oracle), an implementation
that shares nothing with the compiled weight expression."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct

from .helpers import close, oracle
from .test_differential import interval_tensor

# (ct.Measure weight, the same measure in Python): non-negative, additive, no point masses
MEASURES = [("hi**3 - lo**3", lambda lo, hi: hi ** 3 - lo ** 3),
            ("(hi - lo) * 2.5", lambda lo, hi: (hi - lo) * 2.5),
            ("max(hi, 0) - max(lo, 0)", lambda lo, hi: max(hi, 0.0) - max(lo, 0.0)),
            ("min(hi, 3) - min(lo, 3)", lambda lo, hi: min(hi, 3.0) - min(lo, 3.0))]


@settings()
@given(interval_tensor(allow_inf=False), interval_tensor(), st.sampled_from(MEASURES),
       st.sampled_from([None, "max", "min"]))
def test_against_the_oracle(A, B, m, semiring):
    weight, f = m
    for text in ("s[] = A[x] * d(x; m)", "s[] = A[x] * (B[x] + 1) * d(x; m)", "s[] = (A[x] > 0) * d(x; m)"):
        got = ct.einsum(text, semiring=semiring, A=A, B=B, m=ct.Measure(weight))
        ref = oracle(text, semiring, {"m": f}, A=A, B=B)
        assert close(got, ref.value), (text, weight, semiring, got, ref.value)


@settings()
@given(st.lists(st.tuples(st.integers(-4, 6), st.integers(1, 4)), min_size=1, max_size=5), interval_tensor(allow_inf=False))
def test_interval_sets_and_integer_indices(rows, A):
    S = ct.interval_set([float(a) for a, _ in rows], [float(a + w) for a, w in rows])
    text = "C[i] = S[i, x] * A[x] * d(x; m)"
    got = ct.einsum(text, S=S, A=A, m=ct.Measure("hi**3 - lo**3")).to_numpy()
    ref = oracle(text, None, {"m": lambda lo, hi: hi ** 3 - lo ** 3}, S=S, A=A)
    assert all(close(got[i], ref.at(i)) for i in range(len(rows)))
    # on an integer index a run [lo, hi] holds hi - lo + 1 points: here each weighs 2
    text = "s[] = S[i, x] * A[x] * d(i, x; w, lebesgue)"
    got = ct.einsum(text, S=S, A=A, w=ct.Measure("(hi - lo + 1) * 2"))
    assert close(got, 2 * oracle(text.replace("w, ", "counting, "), S=S, A=A).value)


def test_kernel_reuse_cache_and_errors():
    A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, -2.0])
    k = ct.compile("s[] = A[x] * d(x; m)", A=A, m=ct.Measure("hi**3 - lo**3"))
    assert k(A=A) == 1.0 - 2.0 * (27 - 8)                     # the measure is part of the kernel
    B = ct.intervals([0.0], [4.0], values=[1.0])
    assert k(A=B) == 64.0
    # two measures with the same name are two kernels
    assert ct.einsum("s[] = A[x] * d(x; m)", A=A, m=ct.Measure("(hi - lo) * 2")) == 2.0 * (1.0 - 2.0)
    assert ct.einsum("s[] = A[x] * d(x; m)", A=A, m=ct.Measure("hi - lo"), semiring="max") == 1.0
    with pytest.raises(ct.InvalidProgramError, match=r"unknown measure 'q'.*q=ct.Measure"):
        ct.einsum("s[] = A[x] * d(x; q)", A=A)
    with pytest.raises(ct.InvalidProgramError, match=r"names 'x'"):
        ct.Measure("hi - x")
    with pytest.raises(ct.InvalidProgramError, match=r"reads a tensor"):
        ct.Measure("A[lo]")
    with pytest.raises(ct.InvalidProgramError, match=r"cannot parse"):
        ct.Measure("hi -")
    with pytest.raises(TypeError, match=r"as a str"):
        ct.Measure(lambda lo, hi: hi - lo)
    # an unbounded run of fill weighs nothing, whatever the weight there
    U = ct.Tensor(ct.SparseRunList(ct.Element(0.0, val=np.array([2.0])), [0, 1], [1.0], [2.0], "left"))
    assert ct.einsum("s[] = U[x] * d(x; m)", U=U, m=ct.Measure("hi**3 - lo**3")) == 2.0 * 7


def test_a_kernel_refuses_another_measure_of_the_same_name():
    A = ct.intervals([0.0], [2.0], values=[1.0])
    k = ct.compile("s[] = A[x] * d(x; m)", A=A, m=ct.Measure("hi - lo"))
    assert k(A=A, m=ct.Measure("hi  -  lo")) == 2.0
    with pytest.raises(TypeError, match=r"compiled for ct.Measure\('hi - lo'\)"):
        k(A=A, m=ct.Measure("(hi - lo) * 2"))
