"""`PackedCall.set_output`: a Dense output written into the caller's array (`runtime.lend`).

Oracle: the same kernel's ordinary call (`Kernel.__call__`, whose output buffers the kernel grows
and the runtime adopts) — equal values and dtype, for float64, float32, int64 and bool leaves, 1-D
and 2-D; rows of a larger array; many threads at once, each with its own PackedCall and its own
rows of one array; and the errors, each naming `out` or `row`."""
from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ctensor as ct
from ctensor.apps import graphics as g
from ctensor.driver import compile_kernel

S = ct.interval_set([0, 2, 5], [4, 6, 7])
A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
B = ct.intervals([1.0], [6.0], values=[2.0])
M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.arange(6.0).reshape(2, 3))
V = ct.Tensor(ct.Dense(ct.Element(0)), np.array([1, 0, 3]))
F32 = ct.Dense(ct.Dense(ct.Element(0.0, dtype=np.float32)))

CASES = [
    ("C[i] = S[i, x] * B[x] * d(x; lebesgue)", dict(S=S, B=B), None),           # float64, 1-D
    ("C[i, j] = M[i, j] * w", dict(M=M, w=2.5), None),                           # float64, 2-D
    ("C[i, j] = M[i, j] * w", dict(M=M, w=2.5), F32),                            # float32 leaf
    ("C[i] = V[i] * k", dict(V=V, k=3), None),                                   # int64
    ("C[i, j] = M[i, j] > 2.0", dict(M=M), None),                                # bool
]


def _kernel(text, kw, out):
    return ct.compile(text, **kw, **({} if out is None else {"out": out}))


def _expected(k, kw):
    """The ordinary call's output as an array of its leaf's dtype (to_numpy widens float32)."""
    t = k(**kw)
    shape = tuple(m.shape for m in t.modes())
    return t.levels()[-1].val.reshape(shape)


@pytest.mark.parametrize("text, kw, out", CASES)
def test_output_written_into_the_array_equals_the_call(text, kw, out):
    k = _kernel(text, kw, out)
    want = _expected(k, kw)
    call = k.pack(**kw)
    got = np.full(want.shape, 7, want.dtype)          # garbage before: every element is overwritten
    assert call.set_output(got) is got
    call.run()
    assert call.finish(0) is got
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("text, kw, out", CASES)
def test_rows_of_a_larger_array(text, kw, out):
    k = _kernel(text, kw, out)
    want = _expected(k, kw)
    n = want.shape[0]
    mark = np.array(5).astype(want.dtype)                # True for the bool leaf
    big = np.full((4 * n,) + want.shape[1:], mark, want.dtype)
    call = k.pack(**kw)
    for row in (n, 3 * n):                             # one PackedCall, its output moved between runs
        call.set_output(big, row)
        call.run()
    call.release()
    assert np.array_equal(big[n:2 * n], want) and np.array_equal(big[3 * n:], want)
    assert (big[:n] == mark).all() and (big[2 * n:3 * n] == mark).all()      # other rows left alone


def test_lent_array_is_not_freed_with_the_call():
    """The call's finaliser and `release` free kernel-grown buffers only: a lent array freed by
    them would abort the process (free of memory numpy owns) or be reused under numpy's feet."""
    k = _kernel(*CASES[1])
    kw = CASES[1][1]
    want = _expected(k, kw)
    outs = []
    for _ in range(50):
        call = k.pack(**kw)
        out = np.empty(want.shape)
        call.set_output(out)
        call.run()
        outs.append(out)
        del call                                       # dropped with the array still lent
    gc.collect()
    churn = [np.ones(want.shape) for _ in range(200)]  # reuse of freed memory would overwrite outs
    assert all(np.array_equal(o, want) for o in outs) and len(churn) == 200


def test_grown_buffer_then_lent_array():
    """A call read through `buffer` first (the kernel grew its own values), then lent an array:
    the grown buffer is freed, the array receives the output."""
    text, kw, _ = CASES[1]
    k = _kernel(text, kw, None)
    want = _expected(k, kw)
    call = k.pack(**kw)
    call.run()
    assert np.array_equal(call.buffer(2, "val", 6, np.float64).reshape(2, 3), want)
    out = call.set_output(np.zeros((2, 3)))
    call.run()
    assert np.array_equal(call.finish(0), want) and np.array_equal(out, want)


def test_threads_each_write_their_own_rows():
    """8 threads, each with its own PackedCall (another scalar w) writing its own rows of one
    array, 200 runs each: no shared buffer, every row the ordinary call's."""
    text, kw, _ = CASES[1]
    k = _kernel(text, kw, None)
    wants = [_expected(k, dict(M=M, w=float(t))) for t in range(8)]
    big = np.zeros((8 * 2, 3))

    def work(t):
        call = k.pack(M=M, w=float(t))
        for _ in range(200):
            call.set_output(big, 2 * t)
            call.run()
        call.release()
        return t

    with ThreadPoolExecutor(8) as ex:
        assert sorted(ex.map(work, range(8))) == list(range(8))
    for t in range(8):
        assert np.array_equal(big[2 * t:2 * t + 2], wants[t])


def test_interpolate_chunks_through_set_output():
    """The graphics app writes each chunk's rows through set_output: several chunks (a
    non-multiple tail too) equal one interpolate call per point."""
    rng = np.random.default_rng(3)
    vals = rng.uniform(-1, 1, (6, 5, 4, 3)).astype(np.float32)
    grid = g.voxel_grid(vals)
    pts = rng.uniform(-1.5, 6.5, (2 * 1024 + 37, 3))
    got = g.interpolate(grid, pts)
    one = np.concatenate([g.interpolate(grid, p[None]) for p in pts[::97]])
    assert np.array_equal(got[::97], one)


def test_errors_name_the_argument():
    text, kw, _ = CASES[1]
    k = _kernel(text, kw, None)
    call = k.pack(**kw)
    with pytest.raises(TypeError, match="out: expected dtype float64"):
        call.set_output(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="out: expected a numpy array"):
        call.set_output([[0.0] * 3] * 2)
    with pytest.raises(ct.FormatError, match=r"out: expected shape \(2, 3\)"):
        call.set_output(np.zeros((2, 4)))
    with pytest.raises(ct.FormatError, match=r"out: expected shape \(2, 3\)"):
        call.set_output(np.zeros(6))
    with pytest.raises(ct.FormatError, match="out: the array must be C-contiguous"):
        call.set_output(np.zeros((3, 2)).T)
    ro = np.zeros((2, 3))
    ro.flags.writeable = False
    with pytest.raises(ct.FormatError, match="out: the array must be writeable"):
        call.set_output(ro)
    with pytest.raises(ct.FormatError, match="out: shares memory with the input buffer M"):
        call.set_output(M.levels()[-1].val.reshape(2, 3))
    big = np.zeros((5, 3))
    with pytest.raises(ct.FormatError, match="row: rows 4 .. 5"):
        call.set_output(big, 4)
    with pytest.raises(ct.FormatError, match="row: rows -1"):
        call.set_output(big, -1)
    with pytest.raises(TypeError, match="row: expected an int"):
        call.set_output(big, 1.0)
    call.release()


def test_outputs_that_cannot_be_lent():
    scalar = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    with pytest.raises(TypeError, match="scalar"):
        scalar.pack(A=A, B=B).set_output(np.zeros(()))
    sparse = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    with pytest.raises(TypeError, match="only a Dense output"):
        sparse.pack(A=A, B=B).set_output(np.zeros(3))
    text = "C[i] = S[i, x] * (A[x] + B[x]) * d(x; lebesgue)"
    split = ct.compile(text, S=S, A=A, B=B)
    assert split.split_sums
    with pytest.raises(TypeError, match="split_sums=False"):
        split.pack(S=S, A=A, B=B).set_output(np.zeros(3))
    whole = compile_kernel(text, dict(S=S, A=A, B=B), split_sums=False)
    assert not whole.split_sums
    call = whole.pack(S=S, A=A, B=B)
    call.set_output(np.zeros(3))
    call.run()
    assert np.array_equal(call.finish(0), whole(S=S, A=A, B=B).to_numpy())


def test_set_input_reads_a_window_of_a_longer_array():
    """A float input buffer read from elements [start, start + n) of another array, in place:
    the result of a call on a tensor holding those elements; after `release` the packed buffer
    is read again."""
    Vf = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1.0, 2.0, 3.0]))
    k = ct.compile("C[i] = V[i] * w", V=Vf, w=2.0)
    big = np.arange(10.0) ** 2
    call = k.pack(V=Vf, w=2.0)
    out = np.zeros(3)
    for start in (0, 4, 7):
        call.set_input("V", 1, "val", big, start)
        call.set_output(out)
        call.run()
        want = k(V=ct.Tensor(ct.Dense(ct.Element(0.0)), big[start:start + 3].copy()), w=2.0).to_numpy()
        assert np.array_equal(out, want)
    call.release()
    call.run()
    assert np.array_equal(call.buffer(1, "val", 3, np.float64), [2.0, 4.0, 6.0])
    call.release()


def test_set_input_errors_name_the_argument():
    k = ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B)
    call = k.pack(S=S, B=B)
    with pytest.raises(TypeError, match=r"set_input: S \(level 0 ptr\) is not a float buffer"):
        call.set_input("S", 0, "ptr", np.zeros(4, np.int64))              # an index: never rebound
    left = B.levels()[0].left
    with pytest.raises(TypeError, match="array: expected dtype float64"):
        call.set_input("B", 0, "left", left.astype(np.float32))
    with pytest.raises(ct.FormatError, match="array: expected a 1-D C-contiguous"):
        call.set_input("B", 0, "left", np.zeros(6)[::2])
    with pytest.raises(ct.FormatError, match="start: rows 2 .. 2"):
        call.set_input("B", 0, "left", np.zeros(2), 2)
    with pytest.raises(TypeError, match="array: expected a numpy array"):
        call.set_input("B", 0, "left", [0.0])
    call.release()


def test_set_input_refuses_nan_and_new_infinities():
    """A window holding a NaN, or an infinity where the packed buffer held only finite values (the
    code may be specialised for finite data), is refused with its index; an unbounded run's -inf is
    accepted where the packed buffer had one."""
    k = ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B)
    call = k.pack(S=S, B=B)
    left = B.levels()[0].left
    bad = np.concatenate([[0.0], left, [0.0]])
    bad[len(left)] = np.nan
    with pytest.raises(ct.FormatError, match=rf"array\[{len(left)}\] = nan is not finite"):
        call.set_input("B", 0, "left", bad, 1)
    bad[len(left)] = -np.inf
    with pytest.raises(ct.FormatError, match=rf"array\[{len(left)}\] = -inf is not finite"):
        call.set_input("B", 0, "left", bad, 1)
    call.set_input("B", 0, "left", np.concatenate([[np.nan], left]), 1)      # outside the window: fine
    call.release()
    U = ct.intervals([-np.inf, 4.0], [1.0, 6.0], values=[1.0, 2.0])
    k = ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=U)
    call = k.pack(S=S, B=U)
    call.set_input("B", 0, "left", np.array([-np.inf, 3.0]))
    with pytest.raises(ct.FormatError, match=r"array\[1\] = nan is not a number"):
        call.set_input("B", 0, "left", np.array([-np.inf, np.nan]))
    call.release()


def test_zeroed_rows_are_not_filled_again():
    """zeroed=True: the kernel does not set the rows to the fill value (0) before it accumulates —
    on np.zeros rows the ordinary call's result; on rows holding 7 (a broken promise) 7 more,
    which shows the fill pass is gone; without the flag the 7s are overwritten."""
    text, kw, _ = CASES[0]                                   # every C[i] accumulates a sum
    k = _kernel(text, kw, None)
    want = _expected(k, kw)
    call = k.pack(**kw)
    for zeroed, before, after in ((True, 0.0, want), (True, 7.0, want + 7.0), (False, 7.0, want)):
        out = np.full(want.shape, before)
        call.set_output(out, zeroed=zeroed)
        call.run()
        assert np.array_equal(out, after)
    call.release()


def test_zeroed_is_ignored_for_a_nonzero_fill():
    """Under min the fill is +inf, which np.zeros memory does not hold: the kernel fills anyway."""
    k = ct.compile("C[i, j] = M[i, j] * w", M=M, w=2.5, semiring="min")
    want = _expected(k, dict(M=M, w=2.5))
    call = k.pack(M=M, w=2.5)
    out = call.set_output(np.zeros((2, 3)), zeroed=True)
    call.run()
    assert np.array_equal(call.finish(0), want) and np.array_equal(out, want)
