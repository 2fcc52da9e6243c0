"""Public-API edge cases found by adversarial testing (session 15): each was a wrong answer, a crash
or an unrelated exception before."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ctensor as ct
import ctensor.apps.spatial as sp


def test_writes_to_the_callers_arrays_do_not_reach_a_tensor():
    """A tensor was validated once and kept the caller's arrays: s[1] = -10 afterwards made the
    intervals overlap (integral 11 instead of 8), and ptr[1] = 10**9 sent the kernel outside its
    buffers (SIGSEGV).  Run in a subprocess so a crash fails the test instead of the suite."""
    code = textwrap.dedent("""
        import numpy as np, ctensor as ct
        s = np.array([0., 5.]); A = ct.intervals(s, [2., 7.], values=[3., 1.])
        s[1] = -10.
        print(ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A))
        ptr, val = np.array([0, 2]), np.array([1., 3.])
        T = ct.Tensor(ct.SparseList(ct.Element(0., val=val), ptr, [0, 2], shape=3))
        ptr[1] = 10**9; val[0] = 100.
        print(ct.einsum("s[] = T[i] * d(i; counting)", T=T))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["8.0", "4.0"]


def test_owned_buffers_and_kernel_outputs_are_not_copied():
    P = ct.points(np.random.default_rng(0).uniform(0, 1, (100, 2)))
    ids = P.levels()[-2]
    assert ct.Tensor(P.level, owned=True).level.levels()[-2].idx is ids.idx
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    C = ct.einsum("C[x] = A[x] * 2", A=A)
    left = C.level.left
    assert not left.flags.writeable and ct.Tensor(C.level).level.left is left


def test_dense_pattern_from_data_refuses_false_entries():
    """Every entry reached True: [True, False, False] counted 3."""
    with pytest.raises(ct.FormatError, match="stored entry 1"):
        ct.Tensor(ct.Dense(ct.Pattern()), np.array([True, False, False]))
    with pytest.raises(ct.FormatError, match="Pattern leaf"):
        ct.Tensor(ct.Dense(ct.Pattern()), np.array([0.0, 0.0, 5.0]))
    T = ct.Tensor(ct.Dense(ct.Pattern()), np.array([True, True]))
    assert ct.einsum("s[] = T[i] * d(i; counting)", T=T) == 2


@pytest.mark.parametrize("text", [3, None, b"s[] = A[x] * d(x; lebesgue)"])
def test_einsum_text_must_be_a_str(text):
    with pytest.raises(TypeError, match="einsum text must be a str"):
        ct.einsum(text, A=ct.intervals([0.0], [1.0]))


def test_long_products_compile_or_are_refused_cleanly():
    """55 factors raised RecursionError."""
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    text = "s[] = " + " * ".join(["A[x]"] * 55) + " * d(x; lebesgue)"
    assert ct.einsum(text, A=A) == pytest.approx(2 * 3.0 ** 55 + 2)
    with pytest.raises(ct.InvalidProgramError, match="nests operators 999 deep"):
        ct.compile("s[] = " + " * ".join(["A[x]"] * 1000) + " * d(x; lebesgue)", A=A)


def test_integer_endpoints_past_2_53_are_refused():
    """2**53 + 1 was stored as 2**53: the integral of [2**53+1, 2**53+2) came out 2."""
    with pytest.raises(ct.FormatError, match=r"start\[0\] = 9007199254740993"):
        ct.intervals(np.array([2**53 + 1]), np.array([2**53 + 2]))
    A = ct.intervals(np.array([2**53]), np.array([2**53 + 2]))
    assert ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A) == 2.0


def test_grid_with_far_more_cells_than_points_is_refused():
    """grid=10**5 on 2 points tried to allocate 74.5 GiB (10**9: the process was killed)."""
    with pytest.raises(ct.FormatError, match="10000000000 cells for 2 points"):
        ct.points(np.array([[1.0, 1.0], [2.0, 2.0]]), grid=10**5)


@pytest.mark.parametrize("make, err", [
    (lambda: ct.intervals([0, 2], [1, 3], closed=["left", ["x"]]), ct.FormatError),
    (lambda: ct.Limit("a", 0), TypeError),
    (lambda: ct.Limit(None, 0), TypeError),
    (lambda: ct.Limit(1.0, 2), ct.FormatError),
    (lambda: ct.intervals([0.0], [2.0])["a"], TypeError),
    (lambda: ct.intervals([0.0], [2.0])[None], TypeError),
    (lambda: sp.radius_query(np.array([[0.0, 0.0], [1.0, 1.0]]), (0, 0), "1"), TypeError),
    (lambda: sp.index(np.array([[0.0, 0.0]]), cell_points=0), ct.FormatError),
    (lambda: sp.index(np.array([[0.0, 0.0]]), cell_points="a"), TypeError),
])
def test_bad_arguments_raise_the_documented_errors(make, err):
    with pytest.raises(err):
        make()


def test_an_out_shape_that_differs_from_the_inputs_is_refused():
    """out=Dense(Element(0.0), 7) over a 5-element input was silently ignored (5 values came back);
    a matching shape, no shape, and a cached kernel reused for other sizes still work."""
    V = ct.Tensor(ct.Dense(ct.Element(0.0, val=np.arange(5.0)), 5))
    with pytest.raises(ct.FormatError, match=r"out= level 0 \(Dense\) has shape 7 but C's index 'i' has 5"):
        ct.einsum("C[i] = V[i] * 2", V=V, out=ct.Dense(ct.Element(0.0), 7))
    assert list(ct.einsum("C[i] = V[i] * 2", V=V, out=ct.Dense(ct.Element(0.0), 5)).to_numpy()) == [0, 2, 4, 6, 8]
    W = ct.Tensor(ct.Dense(ct.Element(0.0, val=np.ones(3)), 3))
    assert list(ct.einsum("C[i] = V[i] * 2", V=W, out=ct.Dense(ct.Element(0.0))).to_numpy()) == [2, 2, 2]


def test_a_fractional_coordinate_on_an_integer_mode_is_a_type_error():
    V = ct.Tensor(ct.Dense(ct.Element(0.0, val=np.arange(5.0)), 5))
    with pytest.raises(TypeError, match="mode 0 is an integer mode.*got 1.7"):
        V[1.7]
    assert V[np.int64(3)] == 3.0
