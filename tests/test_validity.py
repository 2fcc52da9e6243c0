"""Affine access dimensions (paper Fig. 2) and program validity (continuous paper §4.3, Fig. 7;
digest §3.6, §3.7): the paper's examples, the radius search, the syntactic fast path, the verdict
cache, counterexamples in the messages, the z3 `unknown` policy, and properties of the check."""
from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ctensor as ct
from ctensor.analysis import smt
from ctensor.analysis.validity import check, verdict_cache
from ctensor.lang.affine import affine_poly
from ctensor.lang.nodes import EAccess, EAffine, ELit, EScalar
from ctensor.lang.parser import parse

from ctensor.runtime import api

from .helpers import close, oracle
from .test_differential import SETTINGS

A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, 2.0])
B = ct.intervals([0.0], [1.5], values=[4.0])
M = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.ones(2)), np.array([0, 2]), np.array([0.5, 1.5])))     # pinpoints over y
PTS = ct.points(np.array([[0.0, 1.0], [2.0, 3.0], [1.0, 1.0]]))
BOX = ct.box([0.0, 0.0], [3.0, 3.0])
# the same 2-D boolean shape as PTS, but storing intervals: x, y pieces are not points
IVL = ct.Tensor(ct.SparseInterval(ct.SparseInterval(ct.Dense(ct.Pattern(), 3), [0.0], [1.0]), [0.0], [1.0]))

CONV = "C[y] = A[y + x] * B[x] * d(x; lebesgue)"
MASKED_CONV = "C[y] = M[y] * A[y + x] * B[x] * d(x; lebesgue)"
RADIUS = ("Out[id] = (Box[x, y] & Points[x, y, id] & ((x - ox)**2 + (y - oy)**2 <= r**2)) "
          "* d(x, y; boolean, boolean)")


@pytest.fixture
def fresh_cache():
    """An empty verdict cache during the test, emptied again afterwards (also on failure)."""
    verdict_cache().clear()
    yield verdict_cache()
    verdict_cache().clear()


@pytest.fixture
def no_z3(monkeypatch):
    """Fail the test if the z3 entry point is called."""
    def boom(pattern):
        raise AssertionError(f"z3 was called for {pattern}")
    monkeypatch.setattr(smt, "solve", boom)


def dim_of(form: str) -> EAffine:
    es = parse(f"s[] = A[{form}] * B[x] * C[y] * d(x, y; lebesgue, lebesgue)")
    return es.rhs.args[0].args[0].dims[0]


# ---------------------------------------------------------------------------------- parser
FORMS = {   # written form -> (terms as {index: coefficient polynomial}, constant polynomial)
    "x": ({"x": {(): 1}}, {}),
    "x + c": ({"x": {(): 1}}, {("c",): 1}),
    "x - c": ({"x": {(): 1}}, {("c",): -1}),
    "c + x": ({"x": {(): 1}}, {("c",): 1}),
    "a*x + b": ({"x": {("a",): 1}}, {("b",): 1}),
    "x*a - b": ({"x": {("a",): 1}}, {("b",): -1}),
    "-x": ({"x": {(): -1}}, {}),
    "x + y": ({"x": {(): 1}, "y": {(): 1}}, {}),
    "y - x": ({"y": {(): 1}, "x": {(): -1}}, {}),
    "2*x + y + c": ({"x": {(): 2}, "y": {(): 1}}, {("c",): 1}),
    "~x": ({"x": {(): 1}}, {}),
    "~(x + c)": ({"x": {(): 1}}, {("c",): 1}),
    "x - 3": ({"x": {(): 1}}, {(): -3}),
    "(a + 1)*x": ({"x": {(): 1, ("a",): 1}}, {}),
    "x/2 + 0.25": ({"x": {(): 0.5}}, {(): 0.25}),
    "a*(x - b)": ({"x": {("a",): 1}}, {("a", "b"): -1}),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_parser_affine_forms_round_trip(form):
    from ctensor.lang.affine import coef_poly, const_poly
    es = parse(f"s[] = A[{form}] * B[x] * C[y] * d(x, y; lebesgue, lebesgue)")
    acc = es.rhs.args[0].args[0]
    assert acc.text == f"A[{form}]"
    assert acc.permissive == (form.startswith("~"),)
    dim = acc.dims[0]
    terms, const = FORMS[form]
    assert coef_poly(dim) == terms and const_poly(dim) == const
    assert list(dim.indices) == list(terms)              # terms in written order
    again = dim_of(str(dim))
    assert again == dim and str(again) == str(dim)
    # an access without its source text prints as einsum text that parses back to it
    printed = str(EAccess(acc.tensor, acc.idxs, acc.permissive, acc.offsets, acc.dims))
    back = parse(f"s[] = {printed} * B[x] * C[y] * d(x, y; lebesgue, lebesgue)").rhs.args[0].args[0]
    assert back == acc


@pytest.mark.parametrize("form, idx, offset", [
    ("x", "x", None), ("x + c", "x", (1, EScalar("c"))), ("x - c", "x", (-1, EScalar("c"))),
    ("c + x", "x", (1, EScalar("c"))), ("x - 3", "x", (-1, ELit(3))), ("x + 2.5", "x", (1, ELit(2.5))),
    ("2*x", "x", None), ("y - x", "y", None), ("-x", "x", None)])
def test_idxs_and_offsets_keep_their_meaning(form, idx, offset):
    """idxs/offsets mean what they meant before affine dimensions (read by the lowering); for the
    new forms idxs is the first index and offsets is None."""
    acc = parse(f"s[] = A[{form}] * B[x] * C[y] * d(x, y; lebesgue, lebesgue)").rhs.args[0].args[0]
    assert acc.idxs == (idx,) and acc.offsets == (offset,)


@pytest.mark.parametrize("bad", ["x*y", "x**2", "sqrt(x)", "x / c", "3", "B[x]"])
def test_parser_rejects_non_affine_dimensions(bad):
    with pytest.raises(ct.InvalidProgramError):
        ct.compile(f"s[] = A[{bad}] * B[x] * C[y] * d(x, y; lebesgue, lebesgue)", A=A, B=B, C=B, c=2.0)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(["", "2*", "-3*", "a*", "0.5*a*"])),
                min_size=1, max_size=4),
       st.lists(st.sampled_from(["1", "c", "2.5*b", "a*c"]), max_size=2),
       st.lists(st.sampled_from(["+", "-"]), min_size=6, max_size=6))
def test_parser_round_trip_random_affine(terms, consts, signs):
    parts = [f"{c}{i}" for i, c in terms] + consts
    text = parts[0] + "".join(f" {s} {p}" for s, p in zip(signs, parts[1:]))
    try:
        es = parse(f"s[] = A[{text}] * d(x, y, z; lebesgue, lebesgue, lebesgue)")
    except ct.InvalidProgramError as err:          # every index cancelled out (x - x)
        assert "has no index" in str(err)
        assume(False)
    dim = es.rhs.dims[0]
    again = parse(f"s[] = A[{dim}] * d(x, y, z; lebesgue, lebesgue, lebesgue)").rhs.dims[0]
    assert affine_poly(again) == affine_poly(dim)


def test_names_not_passed_as_scalars_are_indices():
    """In a dimension that names no known index, the names not passed as scalars are indices."""
    v = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1.0, 2.0, 3.0]))
    k = ct.compile("s[] = v[i]", v=v)
    assert k.plan.rhs.dims[0].indices == ("i",)
    with pytest.raises(ct.InvalidProgramError, match="read only through ~ or index expressions"):
        ct.compile("s[] = v[i + j] * d(i, j; counting, counting)", v=v)
    with pytest.raises(ct.InvalidProgramError, match="names no loop index"):
        ct.compile("s[] = v[c + 1]", v=v, c=1)


# ------------------------------------------------------------------------ the paper's examples
def test_interval_convolution_is_invalid():
    """Fig. 6(b): A, B intervals; partitions are parallelograms, C is piecewise linear in y."""
    with pytest.raises(ct.InvalidProgramError) as err:
        ct.einsum(CONV, A=A, B=B)
    msg = str(err.value)
    assert "A[y + x]" in msg and "not axis-aligned boxes" in msg
    # a concrete counterexample: two points of one partition and the swapped point outside
    assert "contains (y=" in msg and "but not (y=" in msg and "lies outside [" in msg


def test_masked_convolution_is_valid_and_computes_the_oracle_numbers():
    """Fig. 6(c): a pinpoint mask M[y] makes every partition a segment at one y; A[y + x] is
    lowered as a Toeplitz access (an Offset of A by the current y inside the loop over x)."""
    v = check(MASKED_CONV, M=M, A=A, B=B)
    assert v.valid and v.method == "z3"
    Mv = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0, 3.0])), np.array([0, 2]), np.array([0.5, 1.5])))
    C = ct.einsum(MASKED_CONV, M=Mv, A=A, B=B)
    ref = oracle(MASKED_CONV, M=Mv, A=A, B=B)
    # C(0.5) = 1 * ∫ A(0.5 + x) B(x) dx = 4 * 0.5; C(1.5) = 3 * 4 * (length of [0.5, 1.5)) = 24
    assert C.pieces() == [(((ct.Limit(0.5), ct.Limit(0.5)),), 2.0), (((ct.Limit(1.5), ct.Limit(1.5)),), 24.0)]
    for y in (0.5, 1.5, 1.0, ct.Limit(1.5, -1)):
        y = ct.Limit.of(y)
        assert close(C[y], ref.at((y.value, y.eps)))


def test_mask_must_annihilate_to_make_the_convolution_valid():
    """M's gaps are effectual when M is added, not multiplied: the parallelograms are back."""
    with pytest.raises(ct.InvalidProgramError, match=r"A\[y \+ x\]"):
        check("C[y] = (M[y] + A[y + x]) * B[x] * d(x; lebesgue)", M=M, A=A, B=B)


def test_radius_search_over_points_is_valid_without_z3(no_z3):
    v = check(RADIUS, Box=BOX, Points=PTS, ox=1.0, oy=1.0, r=1.0)
    assert v.valid and v.method == "syntactic"
    out = ct.einsum(RADIUS, Box=BOX, Points=PTS, ox=1.0, oy=1.0, r=1.0).to_numpy()
    assert out.tolist() == [True, False, True]


def test_radius_search_over_intervals_is_invalid():
    with pytest.raises(ct.InvalidProgramError) as err:
        check(RADIUS, Box=BOX, Points=IVL, ox=1.0, oy=1.0, r=1.0)
    msg = str(err.value)
    assert "(x - ox) ** 2 + (y - oy) ** 2 <= r ** 2" in msg and "outside any tensor access" in msg
    assert "contains (x=" in msg and ("where it is True and False" in msg or "where it is False and True" in msg)


@pytest.mark.parametrize("form", ["2*x", "x + c", "-x", "a*x + b", "~x", "~(x + c)"])
def test_single_index_accesses_are_boxes(form, no_z3):
    v = check(f"s[] = A[{form}] * d(x; lebesgue)", A=A, a=2.0, b=1.0, c=0.5)
    assert v.valid and v.method == "syntactic"


def test_single_index_forms_compile():
    """Offset, Scale (also reversing), compound offsets and ~ on a real mode (where it changes
    nothing: the extent is the whole line); ∫ A = 3."""
    for form, want in (("x + c", 3.0), ("2*x", 1.5), ("-x", 3.0), ("x + 1 + c", 3.0), ("~x", 3.0),
                       ("~(0.5*x - c)", 6.0), ("a*x", 1.5), ("-a*x + c", 1.5)):
        assert ct.einsum(f"s[] = A[{form}] * d(x; lebesgue)", A=A, c=0.5, a=2.0) == pytest.approx(want), form


def test_invalid_is_reported_before_not_lowered():
    with pytest.raises(ct.InvalidProgramError) as err:
        ct.compile(CONV, A=A, B=B)
    assert "not lowered" not in str(err.value) and "not axis-aligned" in str(err.value)


# -------------------------------------------------------------------- pins, measures, scalars
def test_index_value_on_intervals_needs_pinpoints():
    with pytest.raises(ct.InvalidProgramError, match=r"expression x .*contains \(x=-?[\d.]+\) and \(x=-?[\d.]+\)"):
        check("s[] = A[x] * x * d(x; lebesgue)", A=A)
    # counting measures count pinpoints only, integer indices are discrete: both pin the index
    assert check("s[] = A[x] * x * d(x; counting)", A=A).method == "syntactic"
    v = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1.0, 2.0, 3.0]))
    assert ct.einsum("s[] = v[i] * i", v=v) == pytest.approx(8.0)


def test_expression_z3_cannot_express_is_refused_where_indices_vary():
    with pytest.raises(ct.InvalidProgramError, match=r"x \*\* 0.5 .*z3 cannot express it"):
        check("s[] = A[x] * x ** 0.5 * d(x; lebesgue)", A=A)
    assert check("s[] = M[x] * x ** 0.5 * d(x; lebesgue)", M=M).method == "syntactic"


def test_constant_expression_of_varying_indices_is_valid():
    """Condition (2) asks for constancy, not pinpoints: `x - x` is constant on any partition."""
    assert check("s[] = A[x] * (x - x) * d(x; lebesgue)", A=A).valid


def test_scalar_coefficients_hold_for_every_value():
    """Verdicts are cached per pattern, so they must hold for all scalar values a kernel accepts:
    P[a*x] pins x for every a but 0, which the kernel refuses at run time (a dimension reading one
    index is lowered at it); a counterexample needs another value."""
    assert check("C[y] = M[y] * A[a*y + x] * B[x] * d(x; lebesgue)", M=M, A=A, B=B, a=2.0).valid
    assert check("s[] = M[a*x] * x * d(x; lebesgue)", M=M, a=2.0).valid
    with pytest.raises(ct.InvalidProgramError, match=r"\(and a = -?[\d.]+\)"):
        check("C[y] = A[y + a*x] * B[x] * d(x; lebesgue)", A=A, B=B, a=2.0)


def test_two_dimensional_boxes():
    assert check("C[x, y] = A[x + y] * B[x] * M[y]", A=A, B=B, M=M).valid
    for text in ("C[x, y] = A[x + y] * B[x - y]", "C[x, y] = A[x + y] * B[x] * B[y]"):
        with pytest.raises(ct.InvalidProgramError, match=r"A\[x \+ y\]"):
            check(text, A=A, B=B)


def test_validity_needs_only_formats():
    assert check(MASKED_CONV, M=M.format, A=A.format, B=B.format).valid


# ------------------------------------------------------------------------- fast path, cache
def test_fast_path_never_imports_z3_entry_point(no_z3):
    for text, args in [("s[] = A[x] * B[x] * d(x; lebesgue)", dict(A=A, B=B)),
                       ("C[x] = A[x - c] * B[2*x]", dict(A=A, B=B, c=1.0)),
                       (RADIUS, dict(Box=BOX, Points=PTS, ox=0.0, oy=0.0, r=2.0))]:
        assert check(text, **args).method == "syntactic"
    assert ct.einsum("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B) == pytest.approx(4.0)


def test_verdicts_are_cached_by_access_pattern(monkeypatch, fresh_cache):
    cache = fresh_cache
    shifted = "C[y] = M[y] * A[y + x + c] * B[x] * d(x; lebesgue)"
    assert check(MASKED_CONV, M=M, A=A, B=B).valid
    assert check(shifted, M=M, A=A, B=B, c=1.0).valid
    assert cache.info()["misses"] == 2

    def boom(pattern):
        raise AssertionError("cached verdict expected")
    monkeypatch.setattr(smt, "solve", boom)
    # same pattern: other names, other scalar values, other data
    assert check("D[u] = N[u] * E[u + v] * F[v] * d(v; lebesgue)", N=M, E=B, F=A).valid
    assert check(shifted, M=M, A=A, B=B, c=-7.0).valid
    assert check(shifted.replace("c", "shift"), M=M, A=A, B=B, shift=3.0).valid
    assert cache.info()["hits"] == 3
    # an invalid verdict is cached too, and its message uses the names of the program at hand
    monkeypatch.undo()
    with pytest.raises(ct.InvalidProgramError):
        check(CONV, A=A, B=B)
    monkeypatch.setattr(smt, "solve", boom)
    with pytest.raises(ct.InvalidProgramError, match=r"Q\[t \+ s\].*contains \(t="):
        check("C[t] = Q[t + s] * R[s] * d(s; lebesgue)", Q=A, R=B)


def test_plan_records_the_verdict():
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    assert k.plan.validity.valid and k.plan.validity.method == "syntactic"


# --------------------------------------------------------------------------- unknown policy
def test_unknown_is_refused_unless_assumed_valid(monkeypatch, caplog, fresh_cache):
    monkeypatch.setattr(smt, "RLIMIT", 1)               # z3 gives up at once
    with pytest.raises(ct.ValidityUnknown, match="assume_valid=True"):
        check(MASKED_CONV, M=M, A=A, B=B)
    with caplog.at_level(logging.WARNING, logger="ctensor.validity"):
        v = check(MASKED_CONV, M=M, A=A, B=B, assume_valid=True)
    assert v.status == "unknown" and "assume_valid=True" in caplog.text
    # through the compiler (not from the kernel caches: the on-disk one would answer with the kernel
    # an earlier proof under the normal resource limit compiled): refused as unknown; with the
    # opt-in it compiles
    monkeypatch.setattr(api, "_CACHE", {})
    monkeypatch.setenv("CTENSOR_CACHE_DIR", "off")
    with pytest.raises(ct.ValidityUnknown):
        ct.compile(MASKED_CONV, M=M, A=A, B=B)
    assert ct.compile(MASKED_CONV, M=M, A=A, B=B, assume_valid=True).plan.validity.status == "unknown"


def test_invalid_cannot_be_assumed_valid():
    with pytest.raises(ct.InvalidProgramError, match="not axis-aligned"):
        ct.compile(CONV, A=A, B=B, assume_valid=True)


# ------------------------------------------------------------------------------- properties
FORMATS = {"intervals": A, "points": M, "box": ct.box([0.0], [1.0])}


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(sorted(FORMATS)), st.sampled_from(["x", "y"]),
                          st.sampled_from(["", "2*", "-", "a*"]), st.sampled_from(["", " + 1", " - c"])),
                min_size=1, max_size=4))
def test_single_index_programs_are_valid_without_z3(accesses):
    """Every dimension reads one index: each partition is a product of intervals."""
    def fail(pattern):
        raise AssertionError("z3 called")
    old, smt.solve = smt.solve, fail
    try:
        used = {i for _, i, _, _ in accesses}
        rhs = " * ".join(f"T{k}[{coef}{i}{off}]" for k, (_, i, coef, off) in enumerate(accesses))
        ms = sorted(used)
        text = f"s[] = {rhs} * d({', '.join(ms)}; {', '.join(['lebesgue'] * len(ms))})"
        tensors = {f"T{k}": FORMATS[f] for k, (f, _, _, _) in enumerate(accesses)}
        v = check(text, a=2.0, c=1.0, **tensors)
        assert v.valid and v.method == "syntactic"
    finally:
        smt.solve = old


LIN = st.lists(st.tuples(st.sampled_from(["x", "y"]), st.sampled_from(["", "2*", "-", "3*"])), min_size=1, max_size=2)
COEF = {"": 1, "2*": 2, "-": -1, "3*": 3}


def _dim_text(terms):
    return " + ".join(f"{c}{i}" for i, c in terms)


def _net_indices(terms):
    net: dict = {}
    for i, c in terms:
        net[i] = net.get(i, 0) + COEF[c]
    return {i for i, c in net.items() if c}


@SETTINGS
@given(st.lists(LIN, min_size=1, max_size=3))
def test_interval_pieces_without_pins_are_valid_iff_single_index(dims):
    """With interval pieces only and no pins, a dimension reading two indices always admits a
    partition that is a slanted segment (take its piece to be one value): invalid; otherwise
    every partition is a box."""
    assume(all(_net_indices(d) for d in dims))
    verdict_cache().clear()        # decide every example with z3, not from an earlier verdict
    text = "C[x, y] = " + " * ".join(f"T{k}[{_dim_text(d)}]" for k, d in enumerate(dims)) + " * U[x] * U[y]"
    tensors = {f"T{k}": A for k in range(len(dims))}
    single = all(len(_net_indices(d)) == 1 for d in dims)
    try:
        v = check(text, U=B, **tensors)
        assert single and v.valid, text
    except ct.InvalidProgramError as err:
        assert not single, (text, err)


@SETTINGS
@given(st.lists(LIN, min_size=1, max_size=3))
def test_pinpoint_masks_on_every_index_make_any_program_valid(dims):
    """Every partition is at most one point once each index is read by a guard pinpoint level."""
    assume(all(_net_indices(d) for d in dims))
    text = "C[x, y] = Mx[x] * My[y] * " + " * ".join(f"T{k}[{_dim_text(d)}]" for k, d in enumerate(dims)) \
        + " * (x * y + 1)"
    tensors = {f"T{k}": A for k in range(len(dims))}
    assert check(text, Mx=M, My=M, **tensors).valid


@pytest.mark.parametrize("a", [2.0, -0.5])
def test_runtime_scale_is_nonzero_where_the_partition_is_evaluated(a):
    """C[x] = M[a*x] * x: valid for every a != 0 (the pinpoints pin x), and the kernel refuses
    a = 0 at run time, so the validity check assumes a != 0 (it was refused with 'a = 0')."""
    M = ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array([1.0, 3.0])), np.array([0, 2]), np.array([1.0, 2.0])))
    got = ct.einsum("C[x] = M[a*x] * x", M=M, a=a)
    ref = oracle("C[x] = M[a*x] * x", M=M, a=a)
    for p in [1 / a, 2 / a, 0.0, 1.0]:
        assert got[p] == ref.at((p, 0)), (p, got[p], ref.at((p, 0)))
    with pytest.raises(ct.InvalidProgramError, match="zero coefficient"):
        ct.einsum("C[x] = M[a*x] * x", M=M, a=0.0)


def test_a_run_list_of_points_is_refused_with_the_pinpoint_form_named():
    """Validity is decided from formats: closed point runs [p, p] are intervals to it (issue 31).
    The refusal says how to store them as pinpoints, and that form computes the oracle's answer."""
    A = ct.intervals(np.array([0.0, 2.0]), np.array([1.0, 3.0]), values=np.array([1.0, 2.0]))
    B = ct.intervals(np.array([0.0]), np.array([4.0]))
    p, v = np.array([0.5, 1.5]), np.array([1.0, 3.0])
    runs = ct.intervals(p, p, values=v, closed="both")
    text = "C[y] = M[y] * A[y + x] * B[x] * d(x; lebesgue)"
    with pytest.raises(ct.InvalidProgramError, match=r"every interval of M is a closed point \[p, p\].*"
                                                     r"ct\.Tensor\(ct\.SparseList\(ct\.Element"):
        ct.einsum(text, M=runs, A=A, B=B)
    pins = ct.Tensor(ct.SparseList(ct.Element(0.0, val=v), [0, len(p)], p))
    got = ct.einsum(text, M=pins, A=A, B=B)
    ref = oracle(text, M=pins, A=A, B=B)
    assert [got[float(c)] for c in p] == [ref.at((float(c), 0)) for c in p] == [2.5, 6.0]
