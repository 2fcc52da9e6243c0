"""Bad input found by an adversarial audit of the public API (session 17): each was a segfault, a
wrong answer, an internal exception or a silently ignored argument before.  Crashing cases run in a
subprocess so a regression fails its test instead of the suite."""
from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import ctensor as ct
import ctensor.apps.genomics as g
import ctensor.apps.spatial as sp


def _run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


def test_outputs_too_large_for_memory_fail_cleanly():
    """Dense outputs of 2**32 x 2**32 and 2**61 entries: the buffer sizes wrapped around int64 and the
    kernel wrote past a small buffer (SIGSEGV)."""
    out = _run("""
        import numpy as np, ctensor as ct
        e = ct.Element(0.0, val=np.array([1.0]))
        T = ct.Tensor(ct.SparseList(ct.SparseList(e, [0, 1], [7], shape=2**32), [0, 1], [5], shape=2**32))
        for text, t, out in [("C[i,j] = T[i,j]", T, ct.Dense(ct.Dense(ct.Element(0.0)))),
                             ("C[i] = T[i]", ct.Tensor(ct.SparseList(e, [0, 1], [10**6], shape=2**61)), None)]:
            try:
                ct.einsum(text, T=t, out=out)
            except ct.KernelError as err:
                print("KernelError", err)
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("out of memory") == 2


@pytest.mark.parametrize("how", ["flag", "bytearray"])
def test_a_read_only_input_is_copied_unless_it_is_a_kernel_output(how):
    """A read-only array was kept without a copy, but its owner can write it again: ptr[1] = 10**9
    sent a kernel outside its buffers."""
    out = _run(f"""
        import numpy as np, ctensor as ct
        if {how!r} == "flag":
            ptr = np.array([0, 2]); ptr.flags.writeable = False
        else:
            raw = bytearray(np.array([0, 2], np.int64).tobytes()); ptr = np.frombuffer(raw, np.int64)
        T = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0, 2.0])), ptr, np.array([0, 2]), shape=3))
        if {how!r} == "flag":
            ptr.flags.writeable = True; ptr[1] = 10**9
        else:
            raw[8:16] = np.array([10**9], np.int64).tobytes()
        print(ct.einsum("s[] = T[i] * d(i; counting)", T=T))
    """)
    assert out.returncode == 0 and out.stdout.strip() == "3.0", (out.stdout, out.stderr)
    A = ct.intervals([0.0], [2.0], values=[3.0])
    C = ct.einsum("C[x] = A[x] * 2", A=A)
    assert ct.Tensor(C.level).level.left is C.level.left        # kernel outputs are still shared


def test_infinite_pinpoints_are_refused():
    with pytest.raises(ct.FormatError, match="starts at \\+inf or ends at -inf"):
        ct.interval_set([-np.inf], [-np.inf], closed="both")
    with pytest.raises(ct.FormatError, match="starts at \\+inf or ends at -inf"):
        ct.box([np.inf], [np.inf])
    B = ct.box([-np.inf], [np.inf])                                # the whole line is still fine
    assert ct.einsum("s[] = B[x] * d(x; lebesgue)", B=B) == np.inf


def test_integers_outside_int64_are_refused():
    v = ct.Tensor(ct.Dense(ct.Element(0)), np.array([1, 2]))
    with pytest.raises(ct.InvalidProgramError, match="9223372036854775808 .* does not fit"):
        ct.einsum("C[i] = v[i] < 9223372036854775808", v=v)
    with pytest.raises(ct.InvalidProgramError, match="does not fit in a 64-bit integer"):
        ct.einsum("C[i] = coalesce(v[~(i + 4611686018427387904 * 4)], 5) * v[i]", v=v)
    assert ct.einsum("C[i] = v[i] < 9223372036854775807", v=v).to_numpy().tolist() == [True, True]


def test_genome_index_queries_are_checked():
    df = pd.DataFrame(dict(chrom=["chr1", "chr1", "chr2"], start=[0, 10, 5], end=[5, 15, 8]))
    idx = g.index(df)
    with pytest.raises(ct.FormatError, match=r"start\[0\] = 2199023255555 is outside"):
        idx.count_overlaps(np.array([2**41 + 3]), np.array([2**41 + 12]), ["chr1"])   # reached chr2
    with pytest.raises(ct.FormatError, match=r"start\[0\] = 3.7 is not an integer"):
        idx.count_overlaps([3.7], [12.9], ["chr1"])
    with pytest.raises(ct.FormatError, match="chrom: expected one name per query"):
        idx.count_overlaps([3, 4], [12, 13], ["chr1"])
    with pytest.raises(TypeError, match="start: expected integer coordinates"):
        idx.count_overlaps(["a"], ["b"], ["chr1"])
    assert idx.count_overlaps([3, 4], [12, 13], "chr1").tolist() == [2, 2]
    assert idx.count_overlaps([3.0], [12.0], ["chr1"]).tolist() == [2]
    assert pickle.loads(pickle.dumps(idx)).count_overlaps([3], [12], "chr1").tolist() == [2]


@pytest.mark.parametrize("data", [np.array([None, 1.0], dtype=object), np.array([1j, 2 + 3j]), ["1", "2"]])
def test_tensor_data_must_be_numbers(data):
    with pytest.raises(ct.FormatError, match="expected bool, integer or float values"):
        ct.Tensor(ct.Dense(ct.Element(0.0)), data)


def test_complex_leaf_values_are_refused():
    with pytest.raises(ct.FormatError, match="got dtype complex128"):
        ct.Element(0.0, val=np.array([1j]))
    assert ct.Tensor(ct.Dense(ct.Element(0)), np.array([1, 2], dtype=object)).to_numpy().tolist() == [1, 2]


def test_dense_data_must_match_the_declared_shape():
    with pytest.raises(ct.FormatError, match="Dense level of shape 5 but the data's mode has 3"):
        ct.Tensor(ct.Dense(ct.Element(0.0), 5), np.zeros(3))


def test_too_many_dimensions_are_a_format_error():
    with pytest.raises(ct.FormatError, match="2000 dimensions"):
        ct.points(np.zeros((5, 2000)))
    with pytest.raises(ct.FormatError, match="2000 dimensions"):
        ct.box(np.zeros(2000), np.ones(2000))


def test_spatial_arguments_are_named():
    idx = sp.index(np.random.default_rng(0).random((100, 2)))
    c = np.array([[0.5, 0.5], [0.1, 0.1]])
    for r in (["a", "b"], [1j, 1j]):
        with pytest.raises(TypeError, match="^r: "):
            sp.radius_query(idx, c, r)
    with pytest.raises(ct.FormatError, match="^points: "):
        sp.index([[1, 2], [3]])
    for lo in (("0.1", "0.2"), (None, 0.2), (1j, 0.2)):             # as the batched queries and r
        with pytest.raises(TypeError, match="^lo: expected two numbers"):
            sp.box_query(idx, lo, (0.5, 0.6))
    with pytest.raises(TypeError, match="^center: "):
        sp.radius_query(idx, ("0", 0), 1.0)
    with pytest.raises(ct.FormatError, match="^hi: expected two coordinates"):
        sp.box_query(idx, (0, 0), (1, 1, 1))
    with pytest.raises(TypeError, match="sort= must be True or False"):
        sp.box_query(idx, (0, 0), (1, 1), sort="no")
    assert sp.index(np.array([[1, 2], [3, 4]], dtype=object)).n == 2


def test_kernels_do_not_pickle_with_a_clear_message():
    k = ct.compile("s[] = A[x] * d(x; lebesgue)", A=ct.intervals([0.0], [1.0]))
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(k)


def test_arguments_the_program_does_not_read_are_ignored_but_a_scalar_named_like_an_index_is_refused():
    """Unread arguments are ignored (parametrized code passes one set of arguments to many programs);
    the kernel does not record them, so it does not require them in later calls either."""
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    assert ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, B=B, q=3.0) == 8.0
    k = ct.compile("s[] = A[x] * d(x; lebesgue)", A=A, B=B)
    assert k(A=A) == 8.0 and k(A=A, Z=B) == 8.0
    with pytest.raises(ct.InvalidProgramError, match="'x' is a loop index"):
        ct.einsum("s[] = A[x] * x * d(x; counting)", A=A, x=5.0)


@pytest.mark.parametrize("kw", [dict(order=5), dict(order="x"), dict(assume_valid="no"), dict(prove_guards="no")])
def test_option_types_are_checked(kw):
    A = ct.intervals([0.0], [2.0], values=[3.0])
    with pytest.raises(TypeError, match=f"{next(iter(kw))}= must be"):
        ct.einsum("s[] = A[x] * d(x; lebesgue)", A=A, **kw)
    with pytest.raises(TypeError, match="sort= must be True or False"):
        ct.intervals([3.0, 0.0], [4.0, 1.0], sort="no")


def test_multi_line_einsum_text():
    A = ct.intervals([0.0], [2.0], values=[3.0])
    assert ct.einsum("s[] = A[x]\n     * d(x; lebesgue)", A=A) == 6.0
    assert ct.einsum("""
        s[] = A[x]
              * d(x; lebesgue)
    """, A=A) == 6.0
