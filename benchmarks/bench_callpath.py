"""Per-call overhead of compiled kernels on tiny inputs (issue 27), each next to a numba ``@njit``
function doing the same work called from Python, in the same run:

* ``dot``: the interval dot product ``s[] = A[x] * B[x] * d(x; lebesgue)`` on 3 + 2 runs:
  ``k(A=A, B=B)``, ``ct.einsum(...)`` with its cached kernel, a `PackedCall.run` (the packed block
  reused), and numba's two-pointer merge;
* ``genomics count``: ``genomics.count_overlaps`` of 10 queries against a prebuilt index of 1,000
  intervals (the DataFrame API and the index's array API) and numba's two binary searches a query;
* ``spatial box``: ``spatial.box_query`` of one box over 10,000 points (~25 hits, sorted ids) and a
  numba x-slab scan over points sorted by x;
* ``Dense / ids / run list output``: one call returning a tensor (``C[i] = S[i, x] * B[x] *
  d(x; lebesgue)`` over 3 ids, the ids of 3 of 4 points in a box, ``C[x] = A[x] * B[x]`` on 3 + 2
  runs): ``k(**tensors)``, ``ct.einsum(...)``, the kernel alone (``kernel_native``), and a numba
  function returning the same arrays;
* ``loop 1e6``: a numba loop making 1e6 tiny calls of ``s[] = A[x + c] * B[x] * d(x; lebesgue)``
  (``c`` changes every call, so no call is loop-invariant): the kernel through its ctypes function
  (an external call), the kernel inlined (`ctensor.runtime.embed.numba_inline`), and a numba
  function doing the same merge.

    python -m pytest benchmarks/bench_callpath.py --benchmark-json=callpath.json
    python benchmarks/callpath_report.py callpath.json

Every result is checked against the numba one before timing.
"""
from __future__ import annotations

import numba
import numpy as np
import pandas as pd
import pytest

import ctensor as ct
import ctensor.apps.genomics as g
import ctensor.apps.spatial as sp
from ctensor.runtime.embed import numba_inline

DOT = "s[] = A[x] * B[x] * d(x; lebesgue)"
SHIFTED = "s[] = A[x + c] * B[x] * d(x; lebesgue)"
A_RUNS = (np.array([0.0, 5.0, 9.0]), np.array([2.0, 7.0, 9.5]), np.array([3.0, 1.0, 2.0]))
B_RUNS = (np.array([1.0, 8.0]), np.array([6.0, 12.0]), np.array([2.0, 0.5]))
LOOP = 1_000_000


@numba.njit(cache=False)
def numba_dot(la, ra, va, lb, rb, vb, c):
    """∫ A(x + c)·B(x) dx: branchless two-pointer merge of half-open runs (A's shifted by -c)."""
    i = j = 0
    s = 0.0
    while i < la.shape[0] and j < lb.shape[0]:
        al, ar = la[i] - c, ra[i] - c
        s += max(min(ar, rb[j]) - max(al, lb[j]), 0.0) * va[i] * vb[j]
        a_done = ar <= rb[j]
        b_done = rb[j] <= ar
        i += a_done
        j += b_done
    return s


def _tensors():
    return ct.intervals(*A_RUNS[:2], values=A_RUNS[2]), ct.intervals(*B_RUNS[:2], values=B_RUNS[2])


# ---------------------------------------------------------------- dot: one call from Python
@pytest.mark.parametrize("impl", ["ctensor_call", "ctensor_einsum", "ctensor_packed_run", "kernel_native", "numba"])
def test_dot(benchmark, impl):
    benchmark.group = "dot (3 + 2 runs)"
    A, B = _tensors()
    k = ct.compile(DOT, A=A, B=B)
    want = numba_dot(*A_RUNS, *B_RUNS, 0.0)
    args, kwargs = (), {}              # timed as fn(*args, **kwargs): no wrapper frame in the time
    if impl == "ctensor_call":
        fn, kwargs = k, dict(A=A, B=B)
    elif impl == "ctensor_einsum":
        fn, args, kwargs = ct.einsum, (DOT,), dict(A=A, B=B)
    elif impl == "ctensor_packed_run":
        call = k.pack(A=A, B=B)

        def fn():
            call.run()
            return call.out_cell[0]
    elif impl == "kernel_native":
        call = k.pack(A=A, B=B)
        benchmark.extra_info["calls"] = NATIVE_CALLS
        benchmark.pedantic(_native_loop, args=(k.ctypes_function, call.block, NATIVE_CALLS), rounds=30,
                           warmup_rounds=2)
        assert call.out_cell[0] == pytest.approx(want)
        return
    else:
        fn, args = numba_dot, (*A_RUNS, *B_RUNS, 0.0)
    assert fn(*args, **kwargs) == pytest.approx(want)
    benchmark(fn, *args, **kwargs)


# ---------------------------------------------------------------- tensor outputs: one call from Python
@numba.njit(cache=False)
def numba_dense(s_left, s_right, lb, rb, vb):
    """C[i] = ∫ S[i, x]·B[x] dx: each interval of S against B's runs."""
    out = np.zeros(s_left.shape[0])
    for i in range(s_left.shape[0]):
        for j in range(lb.shape[0]):
            out[i] += max(min(s_right[i], rb[j]) - max(s_left[i], lb[j]), 0.0) * vb[j]
    return out


@numba.njit(cache=False)
def numba_ids(xs, ys, x0, y0, x1, y1):
    """Ids of the points in the closed box, increasing."""
    out = np.empty(xs.shape[0], np.int64)
    n = 0
    for i in range(xs.shape[0]):
        if x0 <= xs[i] <= x1 and y0 <= ys[i] <= y1:
            out[n] = i
            n += 1
    return out[:n].copy()


@numba.njit(cache=False)
def numba_runs(la, ra, va, lb, rb, vb):
    """C[x] = A[x]·B[x] as runs (left, right, value): the two-pointer merge of half-open runs."""
    n = la.shape[0] + lb.shape[0]
    left, right, val = np.empty(n), np.empty(n), np.empty(n)
    i = j = k = 0
    while i < la.shape[0] and j < lb.shape[0]:
        lo, hi = max(la[i], lb[j]), min(ra[i], rb[j])
        if lo < hi:
            left[k], right[k], val[k] = lo, hi, va[i] * vb[j]
            k += 1
        if ra[i] <= rb[j]:
            i += 1
        else:
            j += 1
    return left[:k].copy(), right[:k].copy(), val[:k].copy()


S_IV = (np.array([0.0, 2.0, 5.0]), np.array([4.0, 6.0, 7.0]))
PTS = np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.5], [1.5, 2.0]])
OUTPUTS = {
    "Dense": ("C[i] = S[i, x] * B[x] * d(x; lebesgue)", None),
    "ids": ("Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)", "ids"),
    "run list": ("C[x] = A[x] * B[x]", None),
}


def _output_case(kind):
    A, B = _tensors()
    if kind == "Dense":
        kw = dict(S=ct.interval_set(*S_IV), B=B)
        peer = (numba_dense, (*S_IV, *B_RUNS[:2], B_RUNS[2]), {})
        check = lambda got, want: np.testing.assert_allclose(got.to_numpy(), want)          # noqa: E731
    elif kind == "ids":
        kw = dict(Box=ct.box([0, 0], [2, 2]), P=ct.points(PTS))
        peer = (numba_ids, (PTS[:, 0].copy(), PTS[:, 1].copy(), 0.0, 0.0, 2.0, 2.0), {})
        check = lambda got, want: np.testing.assert_array_equal(got.level.idx, want)        # noqa: E731
    else:
        kw = dict(A=A, B=B)
        peer = (numba_runs, (*A_RUNS, *B_RUNS), {})

        def check(got, want):
            lv = got.level
            assert lv.closed == "left"
            for a, b in zip((lv.left, lv.right, lv.child.val), want):
                np.testing.assert_array_equal(a, b)
    text, out = OUTPUTS[kind]
    out = ct.SparseList(ct.Pattern(), real=False) if out == "ids" else None
    return text, kw, out, peer, check


@numba.njit(cache=False)
def _native_loop(ext, block, n):
    for _ in range(n):
        if ext(block.ctypes.data):
            return 1
    return 0


NATIVE_CALLS = 10_000


@pytest.mark.parametrize("impl", ["ctensor_call", "ctensor_einsum", "kernel_native", "numba"])
@pytest.mark.parametrize("kind", list(OUTPUTS))
def test_output(benchmark, kind, impl):
    """k(**tensors) and ct.einsum returning a tensor; `kernel_native` is the kernel alone (a numba
    loop of NATIVE_CALLS calls on one packed block, its buffers reused; the report divides), so
    call − native is the time spent outside native code."""
    benchmark.group = f"{kind} output (tiny)"
    text, kw, out, peer, check = _output_case(kind)
    k = ct.compile(text, out=out, **kw)
    want = peer[0](*peer[1])
    # each timed as fn(*args, **kwargs) by pytest-benchmark itself: no wrapper frame in the time
    if impl == "ctensor_call":
        fn, args, kwargs = k, (), kw
    elif impl == "ctensor_einsum":
        fn, args, kwargs = ct.einsum, (text,), dict(out=out, **kw)
    elif impl == "kernel_native":
        call = k.pack(**kw)
        ext = k.ctypes_function
        assert _native_loop(ext, call.block, 3) == 0
        benchmark.extra_info["calls"] = NATIVE_CALLS
        benchmark.pedantic(_native_loop, args=(ext, call.block, NATIVE_CALLS), rounds=30, warmup_rounds=2)
        call.release()
        return
    else:
        fn, args, kwargs = peer
    got = fn(*args, **kwargs)
    if impl != "numba":
        check(got, want)
    benchmark(fn, *args, **kwargs)


# ---------------------------------------------------------------- genomics: 10 queries
@numba.njit(cache=False)
def numba_count(starts, ends, qs, qe):
    """Data intervals [s, e) (s < e) overlapping each [qs, qe): starts < qe minus ends <= qs."""
    out = np.empty(qs.shape[0], np.int64)
    for i in range(qs.shape[0]):
        out[i] = np.searchsorted(starts, qe[i], "left") - np.searchsorted(ends, qs[i], "right")
    return out


@pytest.fixture(scope="module")
def genome():
    rng = np.random.default_rng(11)
    start = np.sort(rng.integers(0, 1_000_000, 1000))
    end = start + rng.integers(1, 5000, 1000)
    data = pd.DataFrame({"chrom": "chr1", "start": start, "end": end})
    qs = np.sort(rng.integers(0, 1_000_000, 10))
    query = pd.DataFrame({"chrom": "chr1", "start": qs, "end": qs + rng.integers(1, 20_000, 10)})
    idx = g.index(data)
    peer = (np.sort(start).astype(np.int64), np.sort(end).astype(np.int64),
            query["start"].to_numpy(np.int64), query["end"].to_numpy(np.int64))
    return data, query, idx, peer


@pytest.mark.parametrize("impl", ["ctensor", "ctensor_index_arrays", "numba"])
def test_genomics_count(benchmark, impl, genome):
    benchmark.group = "genomics count (10 queries, 1000 intervals)"
    data, query, idx, peer = genome
    want = numba_count(*peer)
    if impl == "ctensor":
        fn = lambda: g.count_overlaps(query, idx)["count"].to_numpy()      # noqa: E731
    elif impl == "ctensor_index_arrays":
        qs, qe, chrom = query["start"].to_numpy(), query["end"].to_numpy(), query["chrom"].to_numpy(dtype=object)
        fn = lambda: idx.count_overlaps(qs, qe, chrom)                      # noqa: E731
    else:
        fn = lambda: numba_count(*peer)                                     # noqa: E731
    np.testing.assert_array_equal(fn(), want)
    benchmark(fn)


# ---------------------------------------------------------------- spatial: one box
@numba.njit(cache=False)
def numba_box(xs, ys, ids, x0, y0, x1, y1):
    """Ids of the points (sorted by x) in the closed box, sorted."""
    i0, i1 = np.searchsorted(xs, x0, "left"), np.searchsorted(xs, x1, "right")
    out = np.empty(i1 - i0, np.int64)
    n = 0
    for i in range(i0, i1):
        if y0 <= ys[i] <= y1:
            out[n] = ids[i]
            n += 1
    return np.sort(out[:n])


@pytest.fixture(scope="module")
def space():
    rng = np.random.default_rng(12)
    xy = rng.uniform(0, 100, (10_000, 2))
    order = np.argsort(xy[:, 0], kind="stable")
    peer = (xy[order, 0].copy(), xy[order, 1].copy(), order.astype(np.int64))
    return sp.index(xy), peer


@pytest.mark.parametrize("impl", ["ctensor", "numba"])
def test_spatial_box(benchmark, impl, space):
    benchmark.group = "spatial box (10,000 points, ~25 hits)"
    idx, peer = space
    lo, hi = (40.0, 40.0), (45.0, 45.0)
    want = numba_box(*peer, *lo, *hi)
    if impl == "ctensor":
        fn = lambda: sp.box_query(idx, lo, hi)                              # noqa: E731
    else:
        fn = lambda: numba_box(*peer, *lo, *hi)                             # noqa: E731
    np.testing.assert_array_equal(fn(), want)
    assert 10 <= want.size <= 60
    benchmark(fn)


# ---------------------------------------------------------------- 1e6 calls from a numba loop
@pytest.fixture(scope="module")
def shifted():
    A, B = _tensors()
    k = ct.compile(SHIFTED, A=A, B=B, c=0.0)
    call = k.pack(A=A, B=B, c=0.0)
    return k, call, k.abi.slot(role="scalar")


def _loops(k, slot):
    ext, inl = k.ctypes_function, numba_inline(k)

    @numba.njit(cache=False)
    def loop_ctypes(block, out, n):
        fb, s = block.view(np.float64), 0.0
        for i in range(n):
            fb[slot] = i * 1e-6                          # the scalar c, bit-cast into its slot
            ext(block.ctypes.data)
            s += out[0]                                  # the result cell
        return s

    @numba.njit(cache=False)
    def loop_inlined(block, out, n):
        fb, s = block.view(np.float64), 0.0
        for i in range(n):
            fb[slot] = i * 1e-6
            inl(block)
            s += out[0]
        return s

    @numba.njit(cache=False)
    def loop_numba(la, ra, va, lb, rb, vb, n):
        s = 0.0
        for i in range(n):
            s += numba_dot(la, ra, va, lb, rb, vb, i * 1e-6)
        return s
    return loop_ctypes, loop_inlined, loop_numba


@pytest.mark.parametrize("impl", ["ctensor_ctypes_call", "ctensor_inlined", "numba"])
def test_loop_1e6(benchmark, impl, shifted):
    benchmark.group = "numba loop, 1e6 calls"
    k, call, slot = shifted
    loop_ctypes, loop_inlined, loop_numba = _loops(k, slot)
    out = call.out_cell
    want = loop_numba(*A_RUNS, *B_RUNS, 1000)
    assert loop_inlined(call.block, out, 1000) == pytest.approx(want, rel=1e-12)
    assert loop_ctypes(call.block, out, 1000) == pytest.approx(want, rel=1e-12)
    if impl == "ctensor_ctypes_call":
        args = (call.block, out, LOOP)
        fn = loop_ctypes
    elif impl == "ctensor_inlined":
        args = (call.block, out, LOOP)
        fn = loop_inlined
    else:
        args = (*A_RUNS, *B_RUNS, LOOP)
        fn = loop_numba
    benchmark.pedantic(fn, args=args, rounds=7, warmup_rounds=1)


# ---------------------------------------------------------------- thread scaling
# in benchmarks/bench_threads.py (its inputs are large, and its report prints the load average):
# one kernel from two threads against serial calls, and the apps' workers=1 vs workers=2 on batched
# genomic counts / overlaps and spatial box / radius batches
