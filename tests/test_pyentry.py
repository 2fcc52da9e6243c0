"""`ctensor.runtime.pyentry`: the native CPython entry of a packed kernel.

Spatial single queries through it must equal the Python path (`CTENSOR_NATIVE_ENTRY=0`) exactly, in
layout order, on random boxes and radii with edges on points and infinite bounds; every bad input
must fall back and raise what the Python path raises; outputs that grow past the kernel's buffers
must be followed; nothing may leak.  Generic kernels: a scalar output of each kind, ids without
perm, the prologue's arithmetic against math.nextafter and Python's min/max.
"""
from __future__ import annotations

import ctypes
import math
from decimal import Decimal
from fractions import Fraction
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctensor as ct
import ctensor.apps.spatial as sp
from ctensor.formats.element import Pattern
from ctensor.formats.sparse_list import SparseList
from ctensor.runtime.pyentry import native_entry, scalar_address

HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _points():
    rng = np.random.default_rng(3)
    lattice = rng.integers(0, 31, size=(1500, 2)).astype(np.float64)   # duplicates, edges on points
    return np.concatenate([lattice, rng.uniform(-2, 32, size=(1500, 2))])


XY = _points()


def _python_path(xy):
    idx = sp.index(xy)
    idx._native = {"box": False, "radius": False}       # as with CTENSOR_NATIVE_ENTRY=0
    return idx


@pytest.fixture(scope="module")
def pair():
    return sp.index(XY), _python_path(XY)


coord = st.one_of(st.integers(-3, 33).map(float), st.integers(-6, 66).map(lambda v: v / 2),
                  st.floats(-40, 40, allow_nan=False), st.sampled_from([math.inf, -math.inf, 1e308, -1e308, -0.0]))


@HYP
@given(x0=coord, y0=coord, x1=coord, y1=coord)
def test_box_matches_python_path(pair, x0, y0, x1, y1):
    fast, slow = pair
    lo, hi = (min(x0, x1), min(y0, y1)), (max(x0, x1), max(y0, y1))
    got = fast._native.get("box") or fast._native_entry("box")
    raw = got(*lo, *hi)
    assert raw is not None and raw.dtype == np.int64                    # the native path answered
    want = slow.box(lo, hi, sort=False)
    assert np.array_equal(raw, want)                                    # same ids, same layout order
    assert np.array_equal(fast.box(lo, hi), np.sort(want))
    inside = (XY[:, 0] >= lo[0]) & (XY[:, 0] <= hi[0]) & (XY[:, 1] >= lo[1]) & (XY[:, 1] <= hi[1])
    assert np.array_equal(np.sort(want), np.flatnonzero(inside))


@HYP
@given(ox=coord, oy=coord, r=st.one_of(st.integers(0, 40).map(float), st.floats(0, 50), st.just(1e308)))
def test_radius_matches_python_path(pair, ox, oy, r):
    fast, slow = pair
    got = fast._native.get("radius") or fast._native_entry("radius")
    raw = got(ox, oy, r)
    assert raw is not None
    assert np.array_equal(raw, slow.radius((ox, oy), r, sort=False))
    assert np.array_equal(fast.radius((ox, oy), r), slow.radius((ox, oy), r))


@pytest.mark.parametrize("lo,hi,want", [
    ((np.float32(2.5), np.int64(3)), (np.float64(20), 25), ((2.5, 3.0), (20.0, 25.0))),
    ((True, 0), (np.int32(17), np.uint8(9)), ((1.0, 0.0), (17.0, 9.0))),
    ((2, 3), (20, 25), ((2.0, 3.0), (20.0, 25.0))),
    (np.array([2.0, 3.0]), np.array([20.0, 25.0]), ((2.0, 3.0), (20.0, 25.0))),
    ((Decimal("2.5"), 3), (Fraction(20), 25), ((2.5, 3.0), (20.0, 25.0))),   # numbers by __float__
    ((v for v in (2.0, 3.0)), [20.0, 25.0], ((2.0, 3.0), (20.0, 25.0)))])
def test_argument_kinds(pair, lo, hi, want):
    fast, slow = pair
    assert np.array_equal(fast.box(lo, hi), slow.box(*want))
    assert np.array_equal(fast.radius((np.float32(7.5), 8), np.int64(5)), slow.radius((7.5, 8.0), 5.0))


class _Boom:
    def __float__(self):
        raise ZeroDivisionError("boom")


BAD_BOX = [((np.nan, 0.0), (1.0, 1.0)), ((0.0, 0.0), (1.0, np.nan)), ((2.0, 0.0), (1.0, 1.0)),
           ((0.0, 5.0), (1.0, 1.0)), ((1.0, 2.0, 3.0), (4.0, 5.0)), ("ab", (1.0, 1.0)), (None, (1.0, 1.0)),
           (("a", 1.0), (2.0, 2.0)), ((1j, 0.0), (1.0, 1.0)), ((0.0, 0.0), 5.0), ((_Boom(), 0.0), (1.0, 1.0)),
           ((10**400, 0), (1.0, 1.0))]
BAD_RADIUS = [((0.0, 0.0), -1.0), ((0.0, 0.0), np.nan), ((0.0, 0.0), math.inf), ((0.0, 0.0), "x"),
              ((0.0, 0.0), None), ((np.nan, 0.0), 1.0), ((0.0,), 1.0), ("ab", 1.0), ((0.0, 0.0), _Boom()),
              ((0.0, 0.0), -0.5)]


def _outcome(f, *args):
    try:
        return ("ok", f(*args).tolist())
    except Exception as e:                          # noqa: BLE001 - compared as (type, message)
        return (type(e), str(e))


@pytest.mark.parametrize("lo,hi", BAD_BOX)
def test_bad_box_falls_back_with_the_same_error(pair, lo, hi):
    fast, slow = pair
    got, want = _outcome(fast.box, lo, hi), _outcome(slow.box, lo, hi)
    assert got == want and got[0] != "ok"
    assert fast._native["box"] is not False          # still the native entry afterwards


@pytest.mark.parametrize("center,r", BAD_RADIUS)
def test_bad_radius_falls_back_with_the_same_error(pair, center, r):
    fast, slow = pair
    got, want = _outcome(fast.radius, center, r), _outcome(slow.radius, center, r)
    assert got == want and got[0] != "ok"


def test_entry_returns_none_on_bad_calls(pair):
    fast, _ = pair
    fn = fast._native.get("box") or fast._native_entry("box")
    assert fn(1.0, 2.0, 3.0) is None and fn() is None and fn(1.0, 2.0, 3.0, 4.0, 5.0) is None
    assert fn("a", 0.0, 1.0, 1.0) is None and fn(None, 0.0, 1.0, 1.0) is None
    assert fn(_Boom(), 0.0, 1.0, 1.0) is None and sys.exc_info() == (None, None, None)
    assert fn(2.0, 0.0, 1.0, 1.0) is None                               # lo > hi
    with pytest.raises(TypeError):                                      # CPython's own check
        fn(1.0, 2.0, 3.0, x=4.0)
    assert fn(-1.0, -1.0, -1.0, -1.0).size == 0


def test_generator_error_is_raised():
    """An iterator consumed by the native path is replayed as a tuple for the Python path's error."""
    with pytest.raises(ct.FormatError, match=r"lo\[0\] = 2.0 is greater than hi\[0\] = 1.0"):
        sp.index(XY).box((v for v in (2.0, 0.0)), (1.0, 1.0))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_perm_dtypes(dtype):
    fast, slow = sp.index(XY), _python_path(XY)
    fast.perm = fast.perm.astype(dtype)
    assert np.array_equal(fast.box((3.0, 4.0), (20.0, 22.5), sort=False), slow.box((3.0, 4.0), (20.0, 22.5), sort=False))
    assert np.array_equal(fast.radius((15.0, 15.0), 9.5), slow.radius((15.0, 15.0), 9.5))


def test_outputs_that_grow_are_followed():
    """Boxes growing from one point to everything: the kernel reallocs its idx buffer; the entry
    reads the new pointer from the cell each call.  Python-path calls interleave."""
    xy = np.random.default_rng(9).uniform(0, 100, size=(20_000, 2))
    idx = sp.index(xy)
    cells, seen = None, set()
    for k, w in enumerate(np.geomspace(0.5, 200, 40)):
        lo, hi = (50 - w / 2, 50 - w / 2), (50 + w / 2, 50 + w / 2)
        python_path = k % 7 == 3
        if python_path:                                  # as CTENSOR_NATIVE_ENTRY=0, this call only
            entry, idx._native["box"] = idx._native["box"], False
        got = idx.box(lo, hi)
        if python_path:
            idx._native["box"] = entry
        inside = ((xy >= lo) & (xy <= hi)).all(axis=1)
        assert np.array_equal(got, np.flatnonzero(inside))
        cells = idx._entry_calls["box"].cells[(0, "idx")]      # the native entry's own block
        seen.add(tuple(cells.tolist()))
    assert len(seen) > 3 and idx._native["box"] is not False


def test_no_leaks_over_many_calls(pair):
    fast, _ = pair
    fn = fast._native.get("box") or fast._native_entry("box")
    args, bad = (0.0, 0.0, 15.0, 15.0), (2.0, 0.0, 1.0, 1.0)
    a = fn(*args)
    assert a.size > 300 and sys.getrefcount(a) == 2 and a.base is None and a.flags.owndata
    dtype = np.dtype(np.int64)
    for _ in range(1000):
        fn(*args), fn(*bad), fn("x", 0.0, 0.0, 0.0)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        refs = sys.getrefcount(None), sys.getrefcount(dtype), sys.getrefcount(fn)
        for _ in range(100_000):
            fn(*args), fn(*bad), fn("x", 0.0, 0.0, 0.0)
        grown = tracemalloc.get_traced_memory()[0] - base
        after = sys.getrefcount(None), sys.getrefcount(dtype), sys.getrefcount(fn)
    finally:
        tracemalloc.stop()
    assert grown < 256 * 1024                       # one leaked int or array per call would be MBs
    assert all(abs(x - y) < 100 for x, y in zip(refs, after))


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("CTENSOR_NATIVE_ENTRY", "0")
    idx = sp.index(XY)
    assert np.array_equal(idx.box((1.0, 1.0), (5.0, 5.0)), _python_path(XY).box((1.0, 1.0), (5.0, 5.0)))
    assert idx._native["box"] is False
    assert sp.index(np.zeros((0, 2))).box((0, 0), (1, 1)).size == 0


# ---------------------------------------------------------------- generic kernels
def _stabbing():
    rng = np.random.default_rng(0)
    s = np.sort(rng.uniform(0, 100, 60))
    e = s + rng.uniform(0, 10, 60)
    S, B = ct.interval_set(s, e, closed="both"), ct.box([0.0], [1.0])
    k = ct.compile("Out[i] = (S[i, x] & B[x]) * d(x; boolean)", S=S, B=B, out=SparseList(Pattern(), shape=60))
    call, lv = k.pack(S=S, B=B), B.levels()[0]
    stores = [(lv.left.ctypes.data, ("arg", 0)), (lv.right.ctypes.data, ("arg", 1))]
    return s, e, call, stores, (lv.left, lv.right)


def test_generic_ids_without_and_with_perm():
    s, e, call, stores, keep = _stabbing()
    entry = native_entry(call, 2, stores, [("le", ("arg", 0), ("arg", 1))], keep=keep)
    for a, b in [(10.0, 20.0), (-5.0, 0.0), (55.5, 55.5), (-np.inf, np.inf)]:
        assert np.array_equal(entry(a, b), np.flatnonzero((s <= b) & (e >= a)))
    assert entry(2.0, 1.0) is None
    perm = np.arange(100, 103, dtype=np.int64)            # ids >= 3 are out of its range: None
    short = native_entry(call, 2, stores, perm=perm, keep=keep)
    first = np.flatnonzero((s <= 1.0) & (e >= 0.0))
    assert first.size and first.max() < 3 and np.array_equal(short(0.0, 1.0), perm[first])
    assert short(0.0, 100.0) is None


@pytest.mark.parametrize("text,kind", [("s[] = A[x] * B[x] * c * d(x; lebesgue)", "float"),
                                       ("s[] = (A[x] & B[x]) * d(x; boolean)", "bool"),
                                       ("n[] = (A[x] & P[x, i]) * d(x, i; counting, counting)", "int")])
def test_generic_scalar_outputs(text, kind):
    A = ct.intervals(np.array([0.0]), np.array([1.0]))
    B = ct.intervals(np.array([-1.0]), np.array([10.0]))
    P = ct.points(np.array([[0.5], [1.5], [0.7]]))
    args = {"A": A, "B": B, "P": P, "c": 1.0}
    args = {k: v for k, v in args.items() if k + "[" in text or f" {k} " in text}
    k = ct.compile(text, **args)
    call = k.pack(**args)
    al = A.levels()[0]
    stores = [(al.left.ctypes.data, ("arg", 0)), (al.right.ctypes.data, ("arg", 1))]
    if "c" in args:
        stores.append((scalar_address(call, "c"), ("arg", 2)))
    entry = native_entry(call, 3, stores, [("lt", ("arg", 0), ("arg", 1))], keep=(al.left, al.right))  # [a, b)
    assert entry.output == kind
    for a, b, c in [(0.0, 2.0, 0.75), (0.6, 0.65, 2.0), (11.0, 12.0, 1.0), (-np.inf, 0.6, -3.0)]:
        got = entry(a, b, c)
        want = k(**{**args, "A": ct.intervals(np.array([a]), np.array([b]))} | ({"c": c} if "c" in args else {}))
        assert type(got) is type(want) and got == want
    assert entry(3.0, 2.0, 0.75) is None and entry(2.0, 2.0, 0.75) is None


SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.0, -1.0, 1.7976931348623157e308,
           -1.7976931348623157e308, math.inf, -math.inf, math.nan]


@pytest.fixture(scope="module")
def evaluator():
    """An entry over a trivial kernel whose stores write each expression into `out`."""
    s, e, call, _, keep = _stabbing()
    out = np.zeros(6)
    exprs = [("nextup", ("arg", 0)), ("nextdown", ("arg", 0)), ("min", ("arg", 0), ("arg", 1)),
             ("max", ("arg", 0), ("arg", 1)), ("sub", ("mul", ("arg", 0), ("const", 3.0)), ("arg", 1)),
             ("add", ("nextdown", ("nextdown", ("arg", 1))), ("const", -0.0))]
    entry = native_entry(call, 2, [(out.ctypes.data + 8 * j, x) for j, x in enumerate(exprs)], keep=keep + (out,))
    return entry, out


@settings(max_examples=300, deadline=None)
@given(a=st.one_of(st.sampled_from(SPECIAL), st.floats()), b=st.one_of(st.sampled_from(SPECIAL), st.floats()))
def test_prologue_arithmetic_is_pythons(evaluator, a, b):
    entry, out = evaluator
    assert entry(a, b) is not None
    want = [math.nextafter(a, math.inf), math.nextafter(a, -math.inf), min(a, b), max(a, b), a * 3.0 - b,
            math.nextafter(math.nextafter(b, -math.inf), -math.inf) + -0.0]
    for g, w in zip(out.tolist(), want):
        assert (g != g and w != w) or (g == w and math.copysign(1, g) == math.copysign(1, w))


def test_checks_and_malformed_prologues():
    s, e, call, stores, keep = _stabbing()
    entry = native_entry(call, 2, stores, [("finite", ("arg", 0)), ("notnan", ("arg", 1)),
                                           ("lt", ("const", -1.0), ("arg", 1))], keep=keep)
    assert entry(0.0, 1.0) is not None
    assert entry(math.inf, 1.0) is None and entry(math.nan, 1.0) is None
    assert entry(0.0, math.nan) is None and entry(0.0, -1.0) is None
    for bad in [("arg", 2), ("arg", -1), ("const", "x"), ("pow", ("arg", 0), ("arg", 1)), ("nextup",), ()]:
        with pytest.raises(ValueError):
            native_entry(call, 2, [(stores[0][0], bad)], keep=keep)
    with pytest.raises(ValueError):
        native_entry(call, 2, checks=[("ge", ("arg", 0), ("arg", 1))])
    with pytest.raises(ValueError):
        native_entry(call, 2, perm=np.arange(3.0))
    A = ct.intervals(np.array([0.0]), np.array([1.0]))
    k = ct.compile("C[x] = A[x] * A[x]", A=A)
    with pytest.raises(TypeError, match="SparseList"):
        native_entry(k.pack(A=A), 0)


# ---------------------------------------------------------------- GIL release (release=)
def _busy(entry):
    """A writable int64 view of the entry's busy slot (its context array is read-only to Python)."""
    from ctensor.runtime.pyentry_emit import SLOT
    ctx = entry.fn.__self__
    return np.ctypeslib.as_array((ctypes.c_int64 * 1).from_address(ctx.ctypes.data + 8 * SLOT["busy"]))


def test_release_condition_runs_the_kernel_and_guards_the_block():
    """An entry that releases the GIL when b - a >= 50 gives the answers of one that never does; a
    call that finds the block busy (another thread inside, without the GIL) returns None, so its
    caller takes the Python path; the flag is cleared on every exit (good, failed check, bad id)."""
    s, e, call, stores, keep = _stabbing()
    holding = native_entry(call, 2, stores, [("le", ("arg", 0), ("arg", 1))], keep=keep)
    s2, e2, call2, stores2, keep2 = _stabbing()
    wide = ("le", ("const", 50.0), ("sub", ("arg", 1), ("arg", 0)))
    entry = native_entry(call2, 2, stores2, [("le", ("arg", 0), ("arg", 1))], keep=keep2, release=wide)
    busy = _busy(entry)
    for a, b in [(10.0, 20.0), (-5.0, 80.0), (55.5, 55.5), (-np.inf, np.inf), (3.0, 2.0)]:
        got, want = entry(a, b), holding(a, b)
        assert (got is None and want is None) or np.array_equal(got, want)
        assert busy[0] == 0
    busy[0] = 1                                 # as while another thread runs the kernel
    assert entry(0.0, 100.0) is None and entry(10.0, 20.0) is None
    busy[0] = 0
    assert np.array_equal(entry(0.0, 100.0), holding(0.0, 100.0))
    perm = np.arange(100, 103, dtype=np.int64)            # ids >= 3 out of its range: None, flag cleared
    short = native_entry(call2, 2, stores2, perm=perm, keep=keep2, release=wide)
    assert short(0.0, 100.0) is None and _busy(short)[0] == 0


def test_released_entry_lets_other_threads_run(monkeypatch):
    """While one thread's call runs a long kernel without the GIL, a Python thread runs (and sees the
    entry busy, which it never could if the entry held the GIL throughout); from 4 threads at once
    every answer is the serial one or None (busy: the caller's Python path answers)."""
    import threading
    rng = np.random.default_rng(4)
    n = 1_000_000
    s = np.sort(rng.uniform(0, 1e6, n))
    S, B = ct.interval_set(s, s + rng.uniform(0, 50, n), closed="both"), ct.box([0.0], [1.0])
    k = ct.compile("Out[i] = (S[i, x] & B[x]) * d(x; boolean)", S=S, B=B, out=SparseList(Pattern(), shape=n))
    lv = B.levels()[0]
    stores = [(lv.left.ctypes.data, ("arg", 0)), (lv.right.ctypes.data, ("arg", 1))]
    always = ("le", ("const", -1.0), ("arg", 0))
    entry = native_entry(k.pack(S=S, B=B), 2, stores, [("le", ("arg", 0), ("arg", 1))],
                         keep=(lv.left, lv.right), release=always)
    serial = {q: entry(*q) for q in [(0.0, 1e6), (1e5, 2e5), (5.0, 6.0)]}
    assert all(v is not None for v in serial.values())
    # another thread sees the entry's busy flag set only while the entry is inside its kernel
    # without the GIL: the flag is set and cleared under the GIL, within one call
    busy, seen, stop = _busy(entry), threading.Event(), threading.Event()

    def watch():
        while not stop.is_set():
            if busy[0]:
                seen.set()

    t = threading.Thread(target=watch)
    t.start()
    try:
        for _ in range(2000):                   # a few calls, unless the machine is very busy
            entry.fn(0.0, 1e6)
            if seen.is_set():
                break
    finally:
        stop.set()
        t.join()
    assert seen.is_set()
    out = [[] for _ in range(4)]

    def hammer(j):
        for m in range(60):
            q = list(serial)[(j + m) % 3]
            out[j].append((q, entry(*q)))

    threads = [threading.Thread(target=hammer, args=(j,)) for j in range(4)]
    [x.start() for x in threads]
    [x.join() for x in threads]
    for q, got in (r for rows in out for r in rows):
        assert got is None or np.array_equal(got, serial[q])
    assert _busy(entry)[0] == 0
