"""The kernel call path (`ctensor.runtime.fastcall`): the generated fast call returns what the
checked path (`Kernel.pack` + `PackedCall.finish`) returns, for every output kind, and falls back
to the checked path — with its errors and sibling kernels — whenever it cannot vouch for a call."""
import gc

import numpy as np
import pytest

import ctensor as ct

from .helpers import oracle


def checked(k, **kw):
    call = k.pack(**kw)
    return call.finish(k.compiled.packed(call.address))


def same(a, b):
    if isinstance(a, ct.Tensor):
        return a.pieces() == b.pieces()
    return a == b


A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
B = ct.intervals([1.0], [6.0], values=[2.0])
S = ct.interval_set([0, 2, 5], [4, 6, 7])
V = ct.Tensor(ct.Dense(ct.Element(0)), np.array([1, 2, 3]))
M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.arange(6.0).reshape(2, 3))
P = ct.points(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.5]]))
PROGRAMS = [
    ("s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=A, B=B)),                     # float scalar
    ("s[] = A[x + c] * B[x] * d(x; lebesgue)", dict(A=A, B=B, c=0.5)),          # float scalar argument
    ("s[] = A[x + c] * B[x] * d(x; lebesgue)", dict(A=A, B=B, c=1)),            # int scalar argument
    ("s[] = V[i] * n * d(i; counting)", dict(V=V, n=3)),                        # int scalar output
    ("s[] = (V[i] > 2) * d(i; counting)", dict(V=V)),                           # int output of a bool
    ("s[] = (A[x] > 2) * d(x; boolean)", dict(A=A)),                            # bool output
    ("C[i] = S[i, x] * B[x] * d(x; lebesgue)", dict(S=S, B=B)),                  # Dense output
    ("C[i, j] = M[i, j] * w", dict(M=M, w=2.5)),                                 # 2-D Dense output
    ("C[x] = A[x] * B[x]", dict(A=A, B=B)),                                      # SparseRunList output
    ("C[x] = S[i, x] * d(i; counting)", dict(S=S)),                              # merged sibling
    ("Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)", dict(Box=ct.box([0, 0], [2, 2]), P=P)),
]


@pytest.mark.parametrize("text, kw", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_fast_call_equals_checked_call_and_oracle(text, kw):
    k = ct.compile(text, **kw)
    got = k(**kw)
    assert same(got, ct.einsum(text, **kw))
    if "merged" not in k._siblings:
        assert same(got, checked(k, **kw))
    want = oracle(text, **kw)
    if isinstance(got, ct.Tensor):
        if all(lv.coord == "int" for lv in got.modes()):
            arr = got.to_numpy()
            assert all(arr[idx] == want.at(*idx) for idx in np.ndindex(arr.shape))
    else:
        assert got == pytest.approx(want.value)


def test_numpy_and_widened_scalars_take_the_checked_path():
    k = ct.compile("s[] = A[x + c] * B[x] * d(x; lebesgue)", A=A, B=B, c=0.5)
    for c in (0.5, np.float64(0.5), np.float32(0.5), 1, True, np.int64(1)):
        assert k(A=A, B=B, c=c) == checked(k, A=A, B=B, c=c)
    ki = ct.compile("s[] = V[i] * n * d(i; counting)", V=V, n=3)
    assert ki(V=V, n=np.int32(2)) == 12 and ki(V=V, n=True) == 6
    with pytest.raises(TypeError, match="scalar 'n'"):
        ki(V=V, n=2.5)
    with pytest.raises(TypeError, match="64-bit"):
        ki(V=V, n=2 ** 70)


def test_errors_are_the_checked_paths():
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    with pytest.raises(TypeError, match="missing tensor argument 'B'"):
        k(A=A)
    with pytest.raises(TypeError, match="compiled for the format"):
        k(A=A, B=S)
    with pytest.raises(TypeError):
        k(A=A, B=np.zeros(3))
    ks = ct.compile("C[i] = V[i] * W[i]", V=V, W=V)
    with pytest.raises(ct.FormatError, match="index 'i'"):
        ks(V=V, W=ct.Tensor(ct.Dense(ct.Element(0)), np.array([1, 2])))


def test_other_facts_run_a_sibling():
    inf = ct.intervals([-np.inf, 5.0], [2.0, 7.0], values=[3.0, 1.0])     # a start that is not finite
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    assert k(A=inf, B=B).pieces() == ct.einsum("C[x] = A[x] * B[x]", A=inf, B=B).pieces()
    assert len(k._siblings) == (0 if k.accepts({"A": inf, "B": B}) else 1)


def test_cached_arguments_follow_their_tensors():
    """The slots of a tensor are kept behind a weak reference: a new tensor (even one that reuses
    a dead tensor's id) is read afresh, and a dropped tensor leaves no entry."""
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    seen = k._fast.__globals__["seen_get"].__self__       # the kernel is shared with other tests
    gc.collect()
    before = len(seen)
    for j in range(200):
        T = ct.intervals([0.0], [1.0 + j], values=[1.0])
        assert k(A=T, B=T) == 1.0 + j
        del T
    gc.collect()
    assert len(seen) <= before and all(ref() is not None for ref, *_ in seen.values())
