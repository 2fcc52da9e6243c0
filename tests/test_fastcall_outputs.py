"""Tensor outputs through the fast call (`runtime.fastcall`, `runtime.runner`, `runtime.fastcall_out`):
for every output format the output built from the runner's bytes equals the checked path's
(`Kernel.pack` + `PackedCall.finish`, which adopts each kernel buffer: an independent build) in
values, format and closedness, and the reference interpreter's value in every cell of its
partition; outputs are read-only; large outputs (beyond `runner.LIMIT`), the ctypes path without
the runner, `ct.einsum(..., out=...)`, and many threads give the same."""
from __future__ import annotations

import itertools
import math
from array import array
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ctensor as ct
from ctensor.limits import Limit
from ctensor.runtime import runner
from ctensor.runtime.fastcall import FastCall

from .helpers import close, oracle

A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
B = ct.intervals([1.0], [6.0], values=[2.0])
BC = ct.intervals([1.0], [6.0], values=[2.0], closed="both")
INF = ct.intervals([-np.inf, 3.0], [1.0, np.inf], values=[2.0, 5.0])
S = ct.interval_set([0, 2, 5], [4, 6, 7])
V = ct.Tensor(ct.Dense(ct.Element(0)), np.array([1, 0, 3]))
M = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.arange(6.0).reshape(2, 3))
P = ct.points(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.5]]))
Q = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0, 2.0, 4.0])), ptr=np.array([0, 3]),
                            idx=np.array([0.5, 1.5, 6.5])))            # pinpoints on the real axis
BOX = ct.box([0, 0], [2, 2])
F32 = ct.Element(0.0, dtype=np.float32)

# (text, arguments, out=): every output format the compiler writes, and the closedness cases
CASES = [
    ("C[i] = S[i, x] * B[x] * d(x; lebesgue)", dict(S=S, B=B), None),                       # Dense
    ("C[i, j] = M[i, j] * w", dict(M=M, w=2.5), None),                                       # Dense 2-D
    ("C[i] = V[i] * n", dict(V=V, n=3), None),                                               # Dense int
    ("C[i] = V[i] > 0", dict(V=V), None),                                                    # Dense bool
    ("C[i, j] = M[i, j] * w", dict(M=M, w=2.5), ct.Dense(ct.Dense(F32))),                    # float32 leaf
    ("Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)", dict(Box=BOX, P=P),
     ct.SparseList(ct.Pattern(), real=False)),                                               # ids
    ("C[i] = V[i] * n", dict(V=V, n=3), ct.SparseList(ct.Element(0), real=False)),           # ids, values
    ("C[x] = Q[x] * A[x]", dict(Q=Q, A=A), ct.SparseList(ct.Element(0.0))),                  # pinpoints
    ("C[x] = A[x] * B[x]", dict(A=A, B=B), None),                                            # run list [a, b)
    ("C[x] = A[x] * BC[x]", dict(A=A, BC=BC), None),                                         # mixed ends
    ("C[x] = BC[x] * w", dict(BC=BC, w=2.0), None),                                          # [a, b]
    ("C[x] = A[x] * B[x]", dict(A=A, B=B), ct.SparseRunList(ct.Element(0.0), closed=None)),  # Limit ends
    ("C[x] = A[x] * B[x]", dict(A=A, B=B), ct.SparseRunList(ct.Element(0.0), closed="left")),
    ("C[x] = INF[x] * w", dict(INF=INF, w=2.0), None),                                       # ±inf ends
    ("C[x] = A[x] * w", dict(A=A, w=0.0), None),                                             # fills only
    ("C[i, x] = S[i, x] * B[x]", dict(S=S, B=B), None),                                      # Dense of runs
    ("C[x, i] = A[x] * V[i]", dict(A=A, V=V), None),                                         # runs of Dense
    ("C[x] = S[i, x] * d(i; counting)", dict(S=S), None),                                    # merged passes
    ("Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)", dict(Box=BOX, P=P),
     ct.SparseByteMap(ct.Pattern())),                                                        # byte map
    ("C[x] = B[x] * w", dict(B=B, w=2.0), ct.SparseInterval(ct.Element(0.0))),               # one interval
    ("C[x] = BC[x] * w", dict(BC=BC, w=2.0), ct.SparseInterval(ct.Element(0.0), closed="both")),
    ("C[x] = INF[x] * B[x]", dict(INF=INF, B=ct.intervals([-np.inf], [0.5], values=[1.0])),
     ct.SparseInterval(ct.Element(0.0))),                                                    # (-inf, 0.5)
    ("C[x] = Q[x] * B[x]", dict(Q=Q, B=ct.intervals([1.0], [2.0], values=[3.0])),
     ct.SparsePoint(ct.Element(0.0))),                                                       # one point
]
IDS = [f"{text} out={out!r}" for text, _, out in CASES]


def checked(k, kw):
    call = k.pack(**kw)
    return call.finish(k.compiled.packed(call.address))


def assert_same(got, want):
    assert got.level.format_key() == want.level.format_key()
    assert got.format.format_str() == want.format.format_str()
    assert got.pieces() == want.pieces()
    assert type(got) is type(want) and vars(got).keys() == vars(want).keys()
    for lv, lw in zip(got.levels(), want.levels()):
        assert type(lv) is type(lw) and vars(lv).keys() == vars(lw).keys()    # built inline: same attributes
        assert getattr(lv, "closed", None) == getattr(lw, "closed", None)
        assert getattr(lv, "shape", None) == getattr(lw, "shape", None)
        for name, v in vars(lv).items():
            if isinstance(v, np.ndarray):
                w = getattr(lw, name)
                assert v.dtype == w.dtype and np.array_equal(v, w), name


def assert_read_only(t):
    for lv in t.levels():
        for name, v in vars(lv).items():
            if isinstance(v, np.ndarray) and v.size:
                assert not v.flags.writeable, name
                with pytest.raises(ValueError):
                    v[0] = v[0]


def assert_oracle(got, text, kw):
    """The output in every cell of the reference interpreter's partition (its lower end, or a
    point inside an unbounded cell) equals the interpreter's value there."""
    want = oracle(text, **{k: v for k, v in kw.items() if not isinstance(v, ct.Measure)})
    axes = []
    for i, kind in zip(want.indices, want.dims):
        cells = want.partitions[i]
        if kind == "int":
            axes.append([(c, c) for c in cells if isinstance(c, int)])
        else:
            axes.append([(c, _inside(c)) for c in cells])
    for combo in itertools.product(*axes):
        key, point = tuple(c for c, _ in combo), tuple(p for _, p in combo)
        expect = want.cells.get(key, want.fill)
        assert close(got[point], expect), (point, got[point], expect)


def _inside(cell):
    (lo, le), (hi, he) = cell
    if math.isfinite(lo):
        return Limit(lo, le)
    return Limit(hi, he) if math.isfinite(hi) else Limit(0.0)


@pytest.mark.parametrize("text, kw, out", CASES, ids=IDS)
def test_every_output_format_through_the_fast_call(text, kw, out):
    k = ct.compile(text, out=out, **kw)
    got = k(**kw)
    again = k(**kw)
    assert got.level is not again.level                      # each call its own output
    if "merged" in k._siblings:                              # the revisited output runs its sibling
        k = k._siblings["merged"]
        assert_same(k(**kw), got)
    assert_same(got, checked(k, kw))
    assert_same(ct.einsum(text, out=out, **kw), got)
    assert_read_only(got)
    assert_oracle(got, text, kw)


def test_the_runner_is_used():
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    run = k._fast.__globals__["run"]
    assert run.__name__.startswith("ctensor_run_")
    n = len(k.getters) + 3 * sum(g[0] == "grow" for g in k.getters)
    for bad in ([0] * n, n, array("d", [0.0] * n), array("b", [0] * n), array("q", [0] * (n - 1)), array("q", [0] * (n + 1))):
        with pytest.raises(SystemError):          # nothing but a block of its length: no stray write
            run(bad)
    assert type(k).__call__ is k._fast and isinstance(k, ct.Kernel)      # the generated call is k(...)
    assert "frombuffer(b," in FastCall(k).source             # built from the runner's bytes


@pytest.mark.parametrize("text, kw, out", CASES, ids=IDS)
def test_without_the_runner_the_ctypes_path_agrees(text, kw, out, monkeypatch):
    k = ct.compile(text, out=out, **kw)
    want = k(**kw)
    monkeypatch.setenv("CTENSOR_NATIVE_ENTRY", "0")
    fast = FastCall(k)
    assert fast.call.__globals__["run"].__name__ == "<lambda>"
    if not k.merge_output and "merged" not in k._siblings:
        assert_same(fast.call(k, **kw), want)


def test_large_outputs_are_adopted_not_copied():
    """Beyond runner.LIMIT bytes the runner leaves the buffers in the cells: adopted as they are."""
    n = 3000
    start = np.arange(n) * 2.0
    X = ct.intervals(start, start + 1.0, values=np.arange(1.0, n + 1))
    Y = ct.intervals([-1.0], [2.0 * n], values=[2.0])
    k = ct.compile("C[x] = X[x] * Y[x]", X=X, Y=Y)
    got = k(X=X, Y=Y)
    assert len(got.level.left) == n and 8 * n > runner.LIMIT
    assert got.level.closed == "left" and np.array_equal(got.level.child.val, 2.0 * np.arange(1.0, n + 1))
    assert_same(got, checked(k, dict(X=X, Y=Y)))
    assert_read_only(got)
    D = ct.Tensor(ct.Dense(ct.Element(0.0)), np.arange(5000.0))
    kd = ct.compile("C[i] = D[i] * w", D=D, w=0.5)
    dense = kd(D=D, w=0.5)
    assert np.array_equal(dense.to_numpy(), np.arange(5000.0) * 0.5)
    assert_same(dense, checked(kd, dict(D=D, w=0.5)))


def test_heterogeneous_and_empty_run_lists():
    """One closed point beside half-open runs stays heterogeneous; no runs is 'left', as the
    checked path stores them."""
    pt = ct.intervals([3.0], [3.0], values=[4.0], closed="both")
    k = ct.compile("C[x] = A[x] + P[x]", A=A, P=pt)
    got = k(A=A, P=pt)
    assert got.level.closed is None and got[3.0] == 4.0 and got[ct.Limit(3.0, 1)] == 0.0
    assert_same(got, checked(k, dict(A=A, P=pt)))
    far = ct.intervals([100.0], [101.0], values=[1.0])
    empty = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)(A=A, B=far)
    assert empty.pieces() == [] and empty.level.closed == "left"
    assert_same(empty, checked(ct.compile("C[x] = A[x] * B[x]", A=A, B=B), dict(A=A, B=far)))


def test_one_entry_formats_refuse_what_they_cannot_hold():
    """A SparsePoint / SparseInterval root holding two entries, none, or another closedness than
    asked: the fast call raises the checked path's FormatError."""
    for text, kw, out, match in [
            ("C[x] = A[x] * B[x]", dict(A=A, B=B), ct.SparseInterval(ct.Element(0.0)), "holds 2 entries"),
            ("C[x] = BC[x] * w", dict(BC=BC, w=2.0), ct.SparseInterval(ct.Element(0.0), closed="left"),
             "closed='left' was asked for"),
            ("C[x] = Q[x] * w", dict(Q=Q, w=2.0), ct.SparsePoint(ct.Element(0.0)), "holds 3 entries"),
            ("C[x] = Q[x] * B[x]", dict(Q=Q, B=ct.intervals([3.0], [4.0], values=[3.0])),
             ct.SparsePoint(ct.Element(0.0)), "is empty")]:
        k = ct.compile(text, out=out, **kw)
        for call in (lambda: k(**kw), lambda: checked(k, kw)):
            with pytest.raises(ct.FormatError, match=match):
                call()


def test_einsum_out_key_is_cached_per_format_object():
    out = ct.SparseList(ct.Pattern(), real=False)
    text = "Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"
    first = ct.einsum(text, Box=BOX, P=P, out=out)
    assert ct.einsum(text, Box=BOX, P=P, out=out).pieces() == first.pieces()
    assert hasattr(out, "_ctensor_out_key")
    with pytest.raises(TypeError, match="out="):
        ct.einsum(text, Box=BOX, P=P, out="SparseList")
    shaped = ct.Dense(ct.Element(0.0), shape=5)
    with pytest.raises(ct.FormatError, match="shape 5"):
        ct.einsum("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B, out=shaped)
    with pytest.raises(ct.FormatError, match="shape 5"):         # the cached key still checks the shape
        ct.einsum("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B, out=shaped)


def test_many_threads_each_get_their_own_output():
    """8 threads × 100 calls of kernels with Dense, ids and run-list outputs on different inputs,
    compared with one thread's results."""
    rng = np.random.default_rng(3)
    inputs = []
    for _ in range(16):
        s = np.sort(rng.choice(100, 6, replace=False)).astype(float)
        inputs.append(ct.intervals(s[0::2], s[1::2], values=rng.uniform(1, 2, 3)))
    kernels = [(ct.compile("C[x] = A[x] * B[x]", A=A, B=B), lambda t: dict(A=t, B=B)),
               (ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B), lambda t: dict(S=S, B=t)),
               (ct.compile("C[x] = A[x] + B[x]", A=A, B=B), lambda t: dict(A=t, B=A))]
    jobs = [(k, args(t)) for k, args in kernels for t in inputs]
    want = [k(**kw).pieces() for k, kw in jobs]

    def work(seed):
        order = np.random.default_rng(seed).permutation(len(jobs))
        return [(j, jobs[j][0](**jobs[j][1]).pieces()) for _ in range(2) for j in order]

    with ThreadPoolExecutor(8) as pool:
        for got in pool.map(work, range(8)):
            assert all(pieces == want[j] for j, pieces in got)


def _random_runs(rng):
    """1-4 disjoint runs with integer-ish ends, a random closedness, sometimes an infinite end."""
    n = int(rng.integers(1, 5))
    ends = np.sort(rng.choice(np.arange(-8, 9), 2 * n, replace=False)).astype(float)
    left, right = ends[0::2], ends[1::2]
    if rng.random() < 0.2:
        left[0] = -np.inf
    if rng.random() < 0.2:
        right[-1] = np.inf
    closed = str(rng.choice(["left", "right", "both", "neither"]))
    return ct.intervals(left, right, values=rng.integers(1, 4, n).astype(float), closed=closed)


@pytest.mark.parametrize("text", ["C[x] = A[x] * B[x]", "C[x] = A[x] + B[x]", "C[x] = max(A[x], B[x])"])
def test_random_closedness_equals_the_checked_path(text):
    """Run-list outputs of random closedness and infinite ends: the closedness the fast call picks
    (homogeneous, Limit endpoints, or store_closed's rule) is the checked path's."""
    rng = np.random.default_rng(7)
    kernels = {}
    for _ in range(150):
        X, Y = _random_runs(rng), _random_runs(rng)
        key = (X.level.format_key(), Y.level.format_key())
        k = kernels.get(key) or kernels.setdefault(key, ct.compile(text, A=X, B=Y))
        got = k(A=X, B=Y)
        assert_same(got, checked(k, dict(A=X, B=Y)))


def test_einsum_tokens_do_not_travel_through_pickle():
    """ct.einsum keeps a per-process token of each tensor's (and out= level's) format on the object;
    a pickled copy — another process's view of it — must not carry it (an id there could be another
    format's token): it unpickles as None and is computed again."""
    import pickle
    from ctensor.runtime import api
    A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, 2.0])
    out = ct.Dense(ct.Element(0.0))
    I = ct.Tensor(ct.Dense(ct.Element(0.0, val=np.array([1.0, 2.0, 3.0])), 3))
    assert ct.einsum("s[] = A[x] * A[x] * d(x; lebesgue)", A=A) == 5.0
    assert ct.einsum("TokOut[i] = I[i] * 2", I=I, out=out).to_numpy().tolist() == [2.0, 4.0, 6.0]
    assert A.__dict__.get("_format_token") is not None and out._ctensor_out_key[0] is not None
    A2, out2 = pickle.loads(pickle.dumps(A)), pickle.loads(pickle.dumps(out))
    assert A2.__dict__.get("_format_token") is None and out2._ctensor_out_key[0] is None
    assert api._arg_key(A2) == api._arg_key(A) and api._out_key(out2) == api._out_key(out)
    assert ct.einsum("s[] = A[x] * A[x] * d(x; lebesgue)", A=A2) == 5.0
