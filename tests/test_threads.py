"""Thread safety (issue 27 item 2, issue 31 a): kernels and every app call path used from many
threads at once, compared with the single-threaded answers (themselves checked against the
reference interpreter, bioframe-style oracles or Shapely elsewhere: `test_genomics`,
`test_spatial`); `workers=` splits of the apps' batches equal `workers=1`.  No timings here: the
speed-ups are in `benchmarks/bench_threads.py`.
"""
from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ctensor as ct
from ctensor.apps import genomics, spatial, workers as app_workers

from .helpers import breakpoints_1d, close, oracle, probes

DATA = Path(ct.__file__).parent / "examples" / "data"


def _hammer(fn, jobs, threads):
    """Run fn(job) for every job, `threads` at a time, all threads released together; results in
    job order (an exception in any thread is raised)."""
    start = threading.Barrier(threads)

    def run(chunk):
        start.wait()
        return [fn(j) for j in chunk]

    per = [jobs[t::threads] for t in range(threads)]
    with ThreadPoolExecutor(threads) as ex:
        done = list(ex.map(run, per))
    out = [None] * len(jobs)
    for t, res in enumerate(done):
        out[t::threads] = res
    return out


# ------------------------------------------------------------------ kernels
def _runs(rng, n):
    edges = np.cumsum(rng.integers(1, 4, 2 * n)).astype(float)
    return edges[0::2], edges[1::2]


def _inputs(kind, seed):
    """Small random inputs (a different data set per seed, the same formats) of kernel `kind`."""
    rng = np.random.default_rng(seed)
    if kind in ("scalar", "runlist"):
        (s1, e1), (s2, e2) = _runs(rng, 40), _runs(rng, 40)
        return dict(A=ct.intervals(s1, e1, values=rng.integers(-3, 4, 40).astype(float)),
                    B=ct.intervals(s2 + 0.5, e2 + 0.5, values=rng.integers(-3, 4, 40).astype(float)))
    if kind == "dense":
        s = rng.integers(0, 60, 30).astype(float)
        A = _runs(rng, 25)
        return dict(S=ct.interval_set(s, s + rng.integers(1, 9, 30)),
                    A=ct.intervals(*A, values=rng.integers(1, 5, 25).astype(float)))
    xy, lo, hi = _box_data(seed)
    return dict(P=ct.points(xy), B=ct.box(lo, hi))


def _box_data(seed):
    rng = np.random.default_rng(seed)
    xy = rng.integers(0, 20, (60, 2)).astype(float)          # ties: shared x and y fibers
    lo = rng.integers(0, 12, 2).astype(float)
    return xy, lo, lo + rng.integers(0, 9, 2)


KERNELS = {
    "scalar": ("s[] = A[x] * B[x] * d(x; lebesgue)", {}),
    "dense": ("C[i] = S[i, x] * A[x] * d(x; lebesgue)", {}),
    "sparselist": ("O[j] = (B[x, y] & P[x, y, j]) * d(x, y; boolean, boolean)",
                   {"out": ct.SparseList(ct.Pattern(), shape=60)}),
    "runlist": ("C[x] = A[x] * B[x]", {}),
}


def _canon(out):
    """A comparable form of a kernel's result: the scalar, or the tensor's pieces."""
    if isinstance(out, ct.Tensor):
        return [(tuple(c if not isinstance(c, tuple) else (c[0].value, c[0].eps, c[1].value, c[1].eps)
                       for c in coords), v) for coords, v in out.pieces()]
    return out


def test_kernel_entry_releases_the_gil():
    """The packed entry is a ctypes CFUNCTYPE (not PYFUNCTYPE): ctypes releases the GIL around it."""
    k = ct.compile(KERNELS["scalar"][0], **_inputs("scalar", 0))
    assert not type(k.ctypes_function)._flags_ & ctypes._FUNCFLAG_PYTHONAPI


def test_thread_hammer_kernels():
    """8 threads x 1,000 calls over four kernels (scalar, Dense, SparseList and SparseRunList
    outputs) on different inputs per thread, through `Kernel.__call__` and `ct.einsum`."""
    seeds = range(16)
    inputs = {kind: [_inputs(kind, s) for s in seeds] for kind in KERNELS}
    kernels = {kind: ct.compile(text, **opts, **inputs[kind][0]) for kind, (text, opts) in KERNELS.items()}
    serial = {kind: [_canon(kernels[kind](**a)) for a in inputs[kind]] for kind in KERNELS}
    # the serial answers against the reference interpreter (one data set per kernel)
    assert close(serial["scalar"][0], oracle(KERNELS["scalar"][0], **inputs["scalar"][0]).value)
    dense, ref = kernels["dense"](**inputs["dense"][0]), oracle(KERNELS["dense"][0], **inputs["dense"][0])
    assert all(close(dense[i], ref.at(i)) for i in range(30))
    runs, ref = kernels["runlist"](**inputs["runlist"][0]), oracle(KERNELS["runlist"][0], **inputs["runlist"][0])
    for p in probes(breakpoints_1d(*inputs["runlist"][0].values(), runs)):
        assert close(runs[p], ref.at((p.value, p.eps)))
    xy, lo, hi = _box_data(0)
    assert [j for (j,), _ in serial["sparselist"][0]] == list(np.flatnonzero(((xy >= lo) & (xy <= hi)).all(1)))

    kinds = list(KERNELS)
    jobs = [(kinds[n % 4], (n // 4) % len(seeds), n % 3 == 0) for n in range(8 * 1000)]

    def call(job):
        kind, s, via_einsum = job
        text, opts = KERNELS[kind]
        out = ct.einsum(text, **opts, **inputs[kind][s]) if via_einsum else kernels[kind](**inputs[kind][s])
        return _canon(out)

    got = _hammer(call, jobs, 8)
    wrong = [j for j, g in zip(jobs, got) if g != serial[j[0]][j[1]]]
    assert not wrong, f"{len(wrong)} of {len(jobs)} threaded calls differ, first {wrong[0]}"


# ------------------------------------------------------------------ spatial
@pytest.fixture(scope="module")
def cloud():
    rng = np.random.default_rng(5)
    xy = rng.uniform(0, 100, (60_000, 2))
    lo = rng.uniform(-5, 100, (2_000, 2))
    return xy, lo, lo + rng.uniform(0, 6, (2_000, 2)), rng.uniform(0, 4, 2_000)


def _brute_box(xy, lo, hi):
    return np.flatnonzero(((xy >= lo) & (xy <= hi)).all(axis=1))


@pytest.mark.parametrize("native", ["1", "0"])
def test_spatial_single_queries_from_4_threads(cloud, monkeypatch, native):
    """box and radius single queries from 4 threads on one shared index, on the native entry and on
    the Python path (CTENSOR_NATIVE_ENTRY=0: one argument block per thread), equal the serial
    answers; the serial answers equal a brute-force scan."""
    monkeypatch.setenv("CTENSOR_NATIVE_ENTRY", native)
    xy, lo, hi, r = cloud
    idx = spatial.index(xy)
    n = 1_000
    serial = [idx.box(lo[i], hi[i]) for i in range(n)] + [idx.radius(lo[i], r[i]) for i in range(n)]
    for i in range(0, n, 97):
        assert np.array_equal(serial[i], _brute_box(xy, lo[i], hi[i]))
    assert (idx._native["box"] is not False) == (native == "1")

    def query(i):
        return idx.box(lo[i], hi[i]) if i < n else idx.radius(lo[i - n], r[i - n])

    got = _hammer(query, list(range(2 * n)), 4)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, serial))


def test_spatial_large_single_queries_from_4_threads(cloud):
    """Boxes and disks expected to hold more than `spatial_entry.RELEASE_AT` points: the native
    entry runs their kernel without the GIL, and a query arriving meanwhile takes the Python path;
    every answer equals the serial one and a brute-force scan."""
    from ctensor.apps.spatial_entry import RELEASE_AT
    xy, lo, _, _ = cloud
    idx = spatial.index(xy)
    side, radius = 25.0, 14.0                       # ~3,750 and ~3,700 points of 60,000 in 100 x 100
    assert side * side * 6 > RELEASE_AT and np.pi * radius ** 2 * 6 > RELEASE_AT
    m = 150
    serial = [idx.box(lo[i], lo[i] + side) for i in range(m)] + [idx.radius(lo[i], radius) for i in range(m)]
    for i in range(0, m, 31):
        assert np.array_equal(serial[i], _brute_box(xy, lo[i], lo[i] + side))
        near = np.flatnonzero(np.sqrt(((xy - lo[i]) ** 2).sum(1)) <= radius)
        assert np.array_equal(serial[m + i], near)
    got = _hammer(lambda i: idx.box(lo[i], lo[i] + side) if i < m else idx.radius(lo[i - m], radius),
                  list(range(2 * m)), 4)
    assert all(np.array_equal(a, b) for a, b in zip(got, serial))


def test_spatial_native_and_python_paths_at_once(cloud):
    """Threads on the native entry and threads on the Python path of one index at the same time:
    the entry's argument block is its own."""
    xy, lo, hi, _ = cloud
    idx = spatial.index(xy)
    serial = [idx.box(lo[i], hi[i]) for i in range(800)]
    assert idx._native["box"] is not False

    def query(i):
        if i % 2:
            return idx.box(lo[i], hi[i])                           # native entry
        box = idx._clip(*lo[i], *hi[i])                            # the Python path, as box() runs it
        return np.zeros(0, np.int64) if box is None else idx._run(idx._call("box"), *box, True)

    got = _hammer(query, list(range(800)), 4)
    assert all(np.array_equal(a, b) for a, b in zip(got, serial))


def test_spatial_batches_from_4_threads_and_first_use(cloud):
    """Batched queries on a fresh index from 4 threads at once (kernels compiled and entries built
    under the apps' lock), each batch also split over workers."""
    xy, lo, hi, r = cloud
    idx = spatial.index(xy)
    batches = [(lo[k::4], hi[k::4], r[k::4]) for k in range(4)]
    got = _hammer(lambda b: (spatial.box_query(idx, b[0], b[1], workers=2),
                             spatial.radius_query(idx, b[0], b[2], workers=3)), batches, 4)
    for (l, h, rr), (boxes, disks) in zip(batches, got):
        assert np.array_equal(boxes, spatial.box_query(idx, l, h))
        assert np.array_equal(disks, spatial.radius_query(idx, l, rr))
        assert boxes.dtype == disks.dtype == np.int64


@pytest.mark.parametrize("min_chunk", [None, 1])
def test_spatial_workers_equal_one_worker(cloud, monkeypatch, min_chunk):
    """workers=2, 3, -1 give the pairs of workers=1; min_chunk=1 also cuts tiny batches (chunks of
    one query, queries missing the points' bounds, an empty batch)."""
    if min_chunk is not None:
        monkeypatch.setattr(app_workers, "MIN_CHUNK", min_chunk)
    xy, _, _, _ = cloud
    idx = spatial.index(xy)
    rng = np.random.default_rng(8)
    m = 9_000 if min_chunk is None else 7
    lo = rng.uniform(-20, 110, (m, 2))
    hi, rr = lo + rng.uniform(0, 4, (m, 2)), rng.uniform(0, 3, m)
    for w in (2, 3, -1):
        for one, many in ((spatial.box_query(idx, lo, hi), spatial.box_query(idx, lo, hi, workers=w)),
                          (spatial.radius_query(idx, lo, rr), spatial.radius_query(idx, lo, rr, workers=w)),
                          (spatial.radius_query(idx, lo, 2.0), spatial.radius_query(idx, lo, 2.0, workers=w))):
            assert one.dtype == many.dtype and np.array_equal(one, many)
    empty = np.zeros((0, 2))
    assert spatial.box_query(idx, empty, empty, workers=2).shape == (2, 0)


# ------------------------------------------------------------------ genomics
@pytest.fixture(scope="module")
def tracks():
    exons = genomics.read_intervals(DATA / "refseq.chr1.exons.bed.gz")
    gerp = genomics.read_intervals(DATA / "gerp.chr1.bed.gz")
    return exons, gerp


OPS = ["count_overlaps", "overlap", "coverage", "intersect", "any_overlap", "no_overlap", "subtract", "closest"]


def _random_frames(seed, n_data, n_query):
    rng = np.random.default_rng(seed)
    chroms = np.array(["chr1", "chr2", "chrX"])
    s = rng.integers(0, 200_000, n_data)
    data = pd.DataFrame({"chrom": rng.choice(chroms[:2], n_data), "start": s,
                         "end": s + rng.integers(0, 300, n_data)})           # zero-length ones too
    q = rng.integers(0, 200_000, n_query)
    query = pd.DataFrame({"chrom": rng.choice(chroms, n_query), "start": q, "end": q + rng.integers(0, 600, n_query),
                          "name": [f"q{i}" for i in range(n_query)]})
    return query.set_index(np.arange(n_query)[::-1] * 3), data


@pytest.mark.parametrize("layout", ["sorted", "grid"])
def test_genomics_workers_equal_one_worker_real_tracks(tracks, layout):
    """Exons (43,424 queries) against GERP elements: every operation with workers=2 and -1 equals
    workers=1, columns, dtypes and index included."""
    exons, gerp = tracks
    idx = genomics.index(gerp, layout=layout)
    for op in OPS:
        one = getattr(genomics, op)(exons, idx)
        for w in (2, -1):
            pd.testing.assert_frame_equal(getattr(genomics, op)(exons, idx, workers=w), one, check_exact=True)


@pytest.mark.parametrize("min_chunk", [None, 1])
def test_genomics_workers_equal_one_worker_random(monkeypatch, min_chunk):
    """Random intervals on three chromosomes (one absent from the data, zero-length intervals);
    min_chunk=1 cuts a small batch into chunks of one or two queries; an empty query."""
    if min_chunk is not None:
        monkeypatch.setattr(app_workers, "MIN_CHUNK", min_chunk)
    query, data = _random_frames(3, 20_000, 12_000 if min_chunk is None else 9)
    idx = genomics.index(data)
    for op in OPS:
        one = getattr(genomics, op)(query, idx)
        for w in (2, 5):
            pd.testing.assert_frame_equal(getattr(genomics, op)(query, idx, workers=w), one, check_exact=True)
        pd.testing.assert_frame_equal(getattr(genomics, op)(query.iloc[:0], idx, workers=3),
                                      getattr(genomics, op)(query.iloc[:0], idx), check_exact=True)
    ties = [genomics.closest(query, idx, ties=t, workers=4) for t in ("first", "last")]
    for t, got in zip(("first", "last"), ties):
        pd.testing.assert_frame_equal(got, genomics.closest(query, idx, ties=t), check_exact=True)


@pytest.mark.parametrize("w", [2, 3])
def test_take_rows_equals_iloc(w):
    """The output frames' row gather on threads equals `iloc` + `reset_index` for every column kind
    pair outputs carry (Arrow strings, objects, categoricals, nullable and plain integers, floats,
    bools, datetimes), with a reversed, non-default index and repeated rows; IndexError for a row
    out of range (np.take clips)."""
    from ctensor.apps.frame_take import take_rows
    rng = np.random.default_rng(1)
    n = 20_000
    df = pd.DataFrame({"chrom": pd.array(rng.choice(["chr1", "chr2"], n), dtype="str"),
                       "start": rng.integers(0, 9, n), "f": rng.random(n),
                       "o": np.array([str(i) for i in range(n)], object),
                       "cat": pd.Categorical(rng.choice(list("abc"), n)),
                       "ni": pd.array(rng.integers(0, 5, n), dtype="Int64"), "b": rng.random(n) > 0.5,
                       "t": pd.to_datetime(rng.integers(0, 10**9, n), unit="s")}, index=np.arange(n)[::-1])
    rows = rng.integers(0, n, 50_000)
    pd.testing.assert_frame_equal(take_rows(df, rows, w), df.iloc[rows].reset_index(drop=True), check_exact=True)
    with pytest.raises(IndexError):
        take_rows(df, np.append(rows, n), w)


@pytest.mark.parametrize("layout", ["sorted", "grid"])
def test_genomics_from_4_threads_on_one_index(tracks, layout):
    """Every operation from 4 threads at once on one fresh index (its tensors built and kernels
    compiled on first use, under its lock), equal to the serial answers."""
    exons, gerp = tracks
    parts = [exons.iloc[k::4] for k in range(4)]
    idx = genomics.index(gerp, layout=layout, ops=())
    jobs = [(op, k) for op in OPS for k in range(4)]
    got = _hammer(lambda j: getattr(genomics, j[0])(parts[j[1]], idx), jobs, 4)
    for (op, k), g in zip(jobs, got):
        pd.testing.assert_frame_equal(g, getattr(genomics, op)(parts[k], idx), check_exact=True)


@pytest.mark.parametrize("bad, err", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError),
                                      ("2", TypeError), (None, TypeError)])
def test_workers_are_checked(bad, err):
    query, data = _random_frames(4, 50, 10)
    with pytest.raises(err, match="workers: expected a positive int or -1"):
        genomics.count_overlaps(query, data, workers=bad)
    with pytest.raises(err, match="workers: expected a positive int or -1"):
        spatial.box_query(np.zeros((3, 2)), np.zeros((2, 2)), np.ones((2, 2)), workers=bad)


def test_indexes_pickle_without_their_locks_and_blocks(cloud, tracks):
    """Locks, per-thread blocks and native entries are per process: a pickled index is rebuilt
    without them and answers as the original, also split over workers."""
    import pickle
    xy, lo, hi, _ = cloud
    idx = spatial.index(xy)
    idx.box(lo[0], hi[0])
    again = pickle.loads(pickle.dumps(idx))
    assert np.array_equal(again.box(lo[0], hi[0]), idx.box(lo[0], hi[0]))
    assert np.array_equal(spatial.box_query(again, lo, hi, workers=2), spatial.box_query(idx, lo, hi))
    exons, gerp = tracks
    g = genomics.index(gerp)
    want = genomics.count_overlaps(exons, g)
    pd.testing.assert_frame_equal(genomics.count_overlaps(exons, pickle.loads(pickle.dumps(g)), workers=2), want)
