"""SparseByteMap: a sparse integer level that takes writes in any order (Finch's SparseByteMap).

Outputs written through it are compared with the reference interpreter and with the same program
into a Dense output; inputs built from numpy, from ptr/idx and from the table are read back by
`T[...]`, `pieces()`, `to_numpy()` and einsums (plain, affine and reversed reads).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct

from .helpers import close, oracle
from .test_fuzz_multidim import INT_LEVELS, REAL_LEVELS, POINTLIKE, compare, nest, seeds, tolerated, weights

_P = settings()
few = settings(_P, max_examples=max(1, _P.max_examples // 20))


# --------------------------------------------------------------------------------- outputs
def test_box_query_ids_written_in_spatial_order():
    """Out[id] from a loop over x then y: ids arrive out of order, the byte map sorts them."""
    rng = np.random.default_rng(1)
    c = rng.integers(0, 20, size=(300, 2)).astype(float)       # shared coordinates, points on edges
    P = ct.points(c)
    B = ct.box([3, 4], [12, 9])
    text = "O[id] = (B[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)"
    want = np.flatnonzero((c[:, 0] >= 3) & (c[:, 0] <= 12) & (c[:, 1] >= 4) & (c[:, 1] <= 9))
    for leaf in (ct.Pattern(), ct.Element(False)):
        out = ct.einsum(text, B=B, P=P, out=ct.SparseByteMap(leaf))
        assert isinstance(out.level, ct.SparseByteMap)
        np.testing.assert_array_equal(out.level.idx, want)
        np.testing.assert_array_equal(np.flatnonzero(out.to_numpy()), want)
        assert out.level.tbl.sum() == want.size and out.level.ptr.tolist() == [0, want.size]
        assert [c for (c,), v in out.pieces()] == want.tolist()


def test_counting_into_a_byte_map_matches_dense_and_the_oracle():
    """Counts per id with every id revisited (a sum over shifted copies of the points)."""
    rng = np.random.default_rng(2)
    c = rng.integers(0, 6, size=(40, 1)).astype(float)
    P = ct.points(c)
    A = ct.intervals([0.0, 2.0, 4.5], [1.0, 3.5, 6.0], values=[1.0, 2.0, 3.0])
    S = ct.interval_set([0.0, 1.0, 2.0], [2.0, 4.0, 5.0])
    for text, args in [("O[id] = P[x, id] * A[x] * d(x; counting)", dict(P=P, A=A)),
                       ("O[id] = S[j, x] * P[x, id] * d(j, x; counting, counting)", dict(S=S, P=P))]:
        got = ct.einsum(text, out=ct.SparseByteMap(ct.Element(0.0)), **args)
        ref = ct.einsum(text, out=ct.Dense(ct.Element(0.0)), **args)
        np.testing.assert_allclose(got.to_numpy(), ref.to_numpy())
        o = oracle(text, **args)
        assert all(close(got[i], o.at(i)) for i in range(len(c)))


@pytest.mark.parametrize("semiring, fill", [(None, 0.0), ("min", np.inf), ("max", -np.inf)])
def test_reductions_over_a_revisited_byte_map(semiring, fill):
    """O[j] written once per i (order i, j, x): each visit ⊕-adds into the stored slot."""
    A = nest(5, ["D", "SRL", "E"], "left")
    B = nest(6, ["BM", "SRL", "E"], "left")
    text = "O[j] = A[i, x] * B[j, x] * d(i, x; counting, boolean)" if semiring else \
        "O[j] = A[i, x] * B[j, x] * d(i, x; counting, lebesgue)"
    for order in (None, ["i", "j", "x"]):
        got = compare(text, semiring=semiring, order=order, out=ct.SparseByteMap(ct.Element(fill)), A=A, B=B)
        assert isinstance(got.level, ct.SparseByteMap)


@few
@given(seeds, st.sampled_from(INT_LEVELS), st.sampled_from(REAL_LEVELS), st.sampled_from(["E", "P"]),
       st.sampled_from(INT_LEVELS), st.sampled_from(REAL_LEVELS), weights())
def test_byte_map_outputs_in_every_valid_order(seed, ka, ra, la, kb, rb, W):
    """Every nesting of byte maps and Dense as the output of joins, against the oracle."""
    A = nest(seed, [ka, ra, la])
    B = nest(seed + 7, [kb, rb, "E"])
    meas = "counting" if {ra, rb} & POINTLIKE else "lebesgue"
    outs = [ct.SparseByteMap(ct.SparseByteMap(ct.Element(0.0))), ct.Dense(ct.SparseByteMap(ct.Element(0.0))),
            ct.SparseByteMap(ct.Dense(ct.Element(0.0)))]
    for order in (None, ["i", "j", "x"], ["j", "i", "x"]):
        for out in outs:
            try:
                compare(f"O[i, j] = A[i, x] * B[j, x] * W[x] * d(x; {meas})", order=order, out=out, A=A, B=B, W=W)
            except ct.InvalidProgramError as e:
                assert tolerated(e), e
        compare(f"O[j] = A[i, x] * B[j, x] * d(i, x; counting, {meas})", order=order,
                out=ct.SparseByteMap(ct.Element(0.0)), A=A, B=B)


def test_byte_map_under_a_sparse_list_output():
    A = nest(11, ["SLi", "SRL", "E"], "left")
    B = nest(12, ["D", "SRL", "E"], "left")
    got = compare("O[i, j] = A[i, x] * B[j, x] * d(x; lebesgue)", A=A, B=B,
                  out=ct.SparseList(ct.SparseByteMap(ct.Element(0.0)), shape=4))
    ref = ct.einsum("O[i, j] = A[i, x] * B[j, x] * d(x; lebesgue)", A=A, B=B)
    np.testing.assert_allclose(got.to_numpy(), ref.to_numpy())


@pytest.mark.parametrize("op", ["|", "+", "min"])
def test_long_pointwise_chain_into_byte_map_of_run_lists_is_split_and_merged(op):
    """A pointwise ⊕ of terms the union protocol cannot read, into SparseByteMap(SparseRunList), is
    compiled one nest per term and merged as under Dense (one nest of 5 terms took a minute)."""
    rng = np.random.default_rng(3)
    sets = {}
    for j in range(5):
        s = rng.integers(-4, 6, size=3).astype(float)
        sets[f"S{j}"] = ct.interval_set(s, s + rng.integers(1, 4, size=3), closed="left")
    terms = [f"S{j}[i, {'-x' if j % 2 else 'x'}]" for j in range(5)]
    text = "C[i, x] = " + (f"min({', '.join(terms)})" if op == "min" else f" {op} ".join(terms))
    fill = 0 if op == "+" else False
    out = ct.SparseByteMap(ct.SparseRunList(ct.Element(fill)))
    k = ct.compile(text, out=out, **sets)
    assert k.merge_output or op == "min"        # min(..) of booleans: one nest (a ∧ of the terms)
    got = compare(text, out=out, **sets)
    assert isinstance(got.level, ct.SparseByteMap)
    ref = ct.einsum(text, out=ct.Dense(ct.SparseRunList(ct.Element(fill))), **sets)
    assert got.pieces() == ref.pieces()


def test_byte_map_output_kernel_reused_and_shapes():
    k = ct.compile("O[i] = A[i] + B[i]", A=ct.Tensor(ct.SparseByteMap(ct.Element(0.0)), [0, 1.0, 0]),
                   B=ct.Tensor(ct.Dense(ct.Element(0.0)), [2.0, 0, 0]), out=ct.SparseByteMap(ct.Element(0.0)))
    for n in (0, 1, 7):
        rng = np.random.default_rng(n)
        a, bb = rng.choice([0.0, 1.5], n), rng.choice([0.0, -2.0], n)
        got = k(A=ct.Tensor(ct.SparseByteMap(ct.Element(0.0)), a), B=ct.Tensor(ct.Dense(ct.Element(0.0)), bb))
        assert got.to_numpy().shape == (n,)
        np.testing.assert_allclose(got.to_numpy(), a + bb)
        assert got.level.shape == n


# ---------------------------------------------------------------------------------- inputs
def test_inputs_from_numpy_table_and_ptr_idx_agree():
    a = np.array([[0.0, 1.5, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.0, -1.0]])
    T1 = ct.Tensor(ct.Dense(ct.SparseByteMap(ct.Element(0.0))), a)
    tbl = (a != 0).ravel()
    T2 = ct.Tensor(ct.Dense(ct.SparseByteMap(ct.Element(0.0, val=a.ravel()), 4, tbl=tbl), 3))
    q = np.flatnonzero(tbl)
    T3 = ct.Tensor(ct.Dense(ct.SparseByteMap(ct.Element(0.0, val=a.ravel()), 4, np.searchsorted(q, [0, 4, 8, 12]),
                                             q % 4), 3))
    for T in (T1, T2, T3):
        np.testing.assert_array_equal(T.to_numpy(), a)
        assert T[2, 3] == -1.0 and T[1, 2] == 0.0
        assert T.level.child.idx.tolist() == [1, 3, 0, 3]
        with pytest.raises(IndexError):
            T[0, 4]
    P = ct.Tensor(ct.SparseByteMap(ct.Pattern()), [True, False, True])
    assert P.to_numpy().tolist() == [True, False, True] and P.pieces() == [((0,), True), ((2,), True)]


@pytest.mark.parametrize("text", [
    "s[] = T[i, j] * d(i, j; counting, counting)",
    "C[j] = T[i, j] * d(i; counting)",
    "C[i] = T[i, j] * V[j] * d(j; counting)",
    "C[i, j] = T[i, j] * V[~(j + 1)]",
    "C[i, j] = V[j] * T[i, ~(3 - j)]",
    "C[i] = max(T[i, j], V[j]) * d(j; counting)",
])
def test_reading_byte_maps_against_the_oracle(text):
    rng = np.random.default_rng(7)
    a = rng.choice([0.0, 0.0, 1.0, -2.5], size=(3, 4))
    T = ct.Tensor(ct.Dense(ct.SparseByteMap(ct.Element(0.0))), a)
    V = ct.Tensor(ct.SparseByteMap(ct.Element(0.0)), rng.choice([0.0, 2.0, 0.5], size=4))
    compare(text, T=T, V=V)


# a ⊕-chain over terms shaped like these reads each byte map by id (`VSparseByteMap.unfurl_union`)
CHAIN_NESTS = [["BM", "SRL", "E"], ["BM", "SRLh", "E"], ["BM", "SLr", "E"], ["BM", "BM", "SRL", "E"]]
CHAIN_FORMS = ["{t}[i, x]", "{t}[i, -x]", "{t}[i, 2*x + 1]", "{t}[i, a*x]"]


@few
@given(seeds, st.sampled_from(CHAIN_NESTS), st.integers(4, 6), st.sampled_from(["+", "max", "|"]),
       st.sampled_from([-1.5, 2.0]), st.data())
def test_chains_of_byte_map_inputs_read_by_id(seed, spec, k, op, a, data):
    """T0[i, x] ⊕ … ⊕ T{k-1}[i, x] over byte maps whose unstored slots hold random children (the
    builder fills every slot): read by id as Dense levels with the slot's tbl bit as the fiber's
    presence; one stepper per term over ids would compile a path per combination (k = 5: a minute)."""
    ts = {f"T{j}": nest(seed + j, spec[:-1] + ["P" if op == "|" else "E"]) for j in range(k)}
    idx = "i, j, x" if len(spec) == 4 else "i, x"
    terms = [data.draw(st.sampled_from(CHAIN_FORMS)).format(t=f"T{j}").replace("i, ", idx[:-1]) for j in range(k)]
    text = f"C[{idx}] = " + (f"max({', '.join(terms)})" if op == "max" else f" {op} ".join(terms))
    kernel = ct.compile(text, semiring="max" if op == "max" else None, a=a, **ts)
    assert len(kernel.ir.splitlines()) < 400 * k, len(kernel.ir.splitlines())       # linear, not 2^k
    compare(text, semiring="max" if op == "max" else None, a=a, **ts)


def test_dense_under_a_byte_map_hands_down_presence():
    """SparseByteMap(Dense(SparseRunList)): the Dense level passes its parent's tbl bit to each
    child fiber; every unstored slot's run lists hold runs (garbage the read must skip)."""
    ts = {}
    for j in range(4):
        rng = np.random.default_rng(j)
        n = 3 * 2                                   # 3 ids x Dense shape 2, one fiber each
        ptr = np.arange(n + 1) * 2
        left = np.tile([0.0, 4.0], n) + rng.integers(0, 3, 2 * n)
        runs = ct.SparseRunList(ct.Element(0.0, val=rng.integers(1, 9, 2 * n).astype(float)), ptr, left, left + 1.5)
        ts[f"T{j}"] = ct.Tensor(ct.SparseByteMap(ct.Dense(runs, 2), 3, tbl=np.arange(3) != j % 3))
    text = "C[i, j, x] = " + " + ".join(f"T{j}[i, j, -x]" for j in range(4))
    got = compare(text, **ts)
    assert got[0, 0, -0.5] == sum(ts[f"T{j}"][0, 0, 0.5] for j in range(4))


@pytest.mark.parametrize("kw, match", [
    (dict(tbl=[True, False]), r"tbl: expected 3 entries"),
    (dict(tbl=[True, False, True], ptr=[0, 1], idx=[0]), r"tbl\[2\] = True but id 2 of fiber 0 is not in idx"),
    (dict(ptr=[0, 2], idx=[2, 1]), r"idx\[1\] = 1 is not greater"),
    (dict(ptr=[0, 1], idx=[3]), r"idx\[0\] = 3 outside \[0, 2\]"),
    (dict(ptr=[0, 2], idx=[0]), r"ptr\[-1\] = 2 but there are 1 entries"),
])
def test_malformed_byte_maps_are_refused(kw, match):
    with pytest.raises(ct.FormatError, match=match):
        ct.Tensor(ct.SparseByteMap(ct.Element(0.0, val=[1.0, 2.0, 3.0]), 3, **kw))


def test_byte_map_construction_errors():
    with pytest.raises(ct.FormatError, match="ptr and idx go together"):
        ct.SparseByteMap(ct.Element(0.0), 3, ptr=[0, 1])
    with pytest.raises(ct.FormatError, match="no shape"):
        ct.Tensor(ct.SparseByteMap(ct.Element(0.0, val=[1.0]), tbl=[True]))
    with pytest.raises(ct.FormatError, match="shape must be a non-negative integer"):
        ct.SparseByteMap(ct.Element(0.0), -1)
    with pytest.raises(ct.InvalidProgramError, match="has int coordinates but C.s index .x. is a real index"):
        ct.einsum("C[x] = A[x]", A=ct.intervals([0.0], [1.0], values=[1.0]), out=ct.SparseByteMap(ct.Element(0.0)))


def test_sparse_fibers_written_out_of_position_order_are_refused():
    """O[j, k] = T[i, j] * U[i, k] with T a permutation: rows j arrive 2, 0, 1.  A SparseList below
    the first output level appends its fibers' entries one after another, so rows written out of
    order were read back permuted (a silent wrong answer, found by a helper's hunt); it is now an
    error, and random-access levels (Dense, SparseByteMap) take the rows in any order."""
    T = ct.Tensor(ct.SparseList(ct.SparseList(ct.Element(0.0), shape=3), shape=3),
                  np.array([[0, 0, 1.0], [1.0, 0, 0], [0, 1.0, 0]]))
    U = ct.Tensor(ct.Dense(ct.Dense(ct.Element(0.0))), np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    text = "O[j, k] = T[i, j] * U[i, k] * d(i; counting)"
    want = np.array([[3.0, 4.0], [5.0, 6.0], [1.0, 2.0]])
    for out in (ct.SparseByteMap(ct.Dense(ct.Element(0.0))), ct.SparseByteMap(ct.SparseByteMap(ct.Element(0.0))),
                ct.Dense(ct.SparseByteMap(ct.Element(0.0))), None):
        np.testing.assert_array_equal(ct.einsum(text, T=T, U=U, out=out).to_numpy(), want)
    for out in (ct.SparseByteMap(ct.SparseList(ct.Element(0.0), real=False)),
                ct.Dense(ct.SparseList(ct.Element(0.0), real=False))):
        with pytest.raises(ct.InvalidProgramError, match="cannot be computed into this output format.*out of "
                                                         "position order.*SparseByteMap"):
            ct.einsum(text, T=T, U=U, out=out)
    # in order (T the identity), the same formats hold the result
    I3 = ct.Tensor(ct.SparseList(ct.SparseList(ct.Element(0.0), shape=3), shape=3), np.eye(3))
    got = ct.einsum(text, T=I3, U=U, out=ct.Dense(ct.SparseList(ct.Element(0.0), real=False)))
    np.testing.assert_array_equal(got.to_numpy(), U.to_numpy())


def test_byte_maps_built_without_validation_hold_every_buffer():
    """validate=False skips the checks, not the derivation: a byte map given tbl alone segfaulted
    when read (its ptr was null), and one given ptr/idx alone failed T[1] (found by a helper)."""
    E = ct.Element(0.0, val=np.array([1.0, 2.0, 3.0]))
    W = ct.Tensor(ct.Dense(ct.Element(0.0)), np.array([1.0, 1.0, 1.0]))
    for lvl in (ct.SparseByteMap(E, 3, tbl=[True, False, True]), ct.SparseByteMap(E, 3, ptr=[0, 2], idx=[0, 2])):
        T = ct.Tensor(lvl, validate=False)
        assert T.to_numpy().tolist() == [1.0, 0.0, 3.0] and T[1] == 0.0
        assert ct.einsum("O[i] = T[i] * W[i]", T=T, W=W).to_numpy().tolist() == [1.0, 0.0, 3.0]


@pytest.mark.parametrize("out", [ct.SparseByteMap(ct.Dense(ct.Pattern())),
                                 ct.SparseList(ct.Dense(ct.Pattern()), real=False),
                                 ct.Dense(ct.Dense(ct.Pattern()))])
def test_pattern_leaf_under_a_dense_output_level_is_refused(out):
    """One true entry made its whole row true (the Pattern leaf marks its parent's entry)."""
    a = np.array([[True, False], [False, False], [False, True]])
    T = ct.Tensor(ct.Dense(ct.Dense(ct.Element(False))), a)
    with pytest.raises(ct.InvalidProgramError, match="Pattern leaf needs a sparse parent level"):
        ct.einsum("O[i, j] = T[i, j] & T[i, j]", T=T, out=out)
    got = ct.einsum("O[i, j] = T[i, j] & T[i, j]", T=T, out=ct.SparseByteMap(ct.SparseByteMap(ct.Pattern())))
    np.testing.assert_array_equal(got.to_numpy(), a)
