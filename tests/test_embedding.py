"""Embedding kernels in other JIT code: call the packed entry point from numba @njit."""
import pytest

import ctensor as ct

numba = pytest.importorskip("numba")


def test_call_from_numba():
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    f = k.ctypes_function

    @numba.njit
    def run(address, times):
        status = 0
        for _ in range(times):
            status |= f(address)
        return status

    call = k.pack(A=A, B=B)
    assert call.finish(run(call.address, 3)) == 8.0


def test_continuous_output_through_packed_call():
    A = ct.intervals([0.0], [4.0], values=[2.0])
    B = ct.intervals([1.0, 3.0], [2.0, 5.0], values=[1.0, 3.0], closed="both")
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    call = k.pack(A=A, B=B)
    C = call.finish(k.ctypes_function(call.address))
    assert [(c[0][0], c[0][1], v) for c, v in C.pieces()] == [
        (ct.Limit(1.0), ct.Limit(2.0), 2.0), (ct.Limit(3.0), ct.Limit(4.0, -1), 6.0)]


def test_dropped_packed_call_frees_its_buffers():
    """Buffers a run grew (and nobody adopted) are freed when the PackedCall is collected."""
    import gc

    A = ct.intervals([0.0, 3.0], [1.0, 4.0], values=[2.0, 5.0])
    B = ct.intervals([0.5], [3.5], values=[1.0])
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    call = k.pack(A=A, B=B)
    call.run()
    assert call.buffer(1, "val", 2, float).tolist() == [2.0, 5.0]     # [0.5, 1) and [3, 3.5)
    cells = list(call.cells.values())
    assert any(int(c[0]) for c in cells)
    del call
    gc.collect()
    assert all(int(c[0]) == 0 and int(c[1]) == 0 for c in cells)
