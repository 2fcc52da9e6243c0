"""Long ⊕-chains of tensors compile to code linear in the terms: read by the union protocol
(`ctensor.formats.run_union`), or, for a pointwise chain of other terms, one loop nest per term,
a sparse output merged by the runtime (`ctensor.runtime.merge_output`).  Unions, sums, min and
max of k interval tracks and pinpoint tensors, under measures and products, into scalar, Dense
and Dense-over-runs outputs.  Oracle: the reference interpreter, and numpy for integer vectors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor.lower.nest import UNION_MIN
from ctensor.driver import compile_kernel
from ctensor.driver.build import POINTWISE_SPLIT

from .helpers import breakpoints_1d, close, oracle, probes
from .test_differential import interval_tensor
from .test_fuzz_multidim import compare
from .test_merged_output import canonical


def check_1d(text, semiring=None, **tensors):
    kernel = ct.compile(text, semiring=semiring, **tensors)
    out = kernel(**tensors)
    ref = oracle(text, semiring=semiring, **tensors)
    for p in probes(breakpoints_1d(*[t for t in tensors.values() if isinstance(t, ct.Tensor)], out)):
        want = ref.at((p.value, p.eps))
        assert close(out[p], want), (text, semiring, p, out[p], want)
    canonical(out)
    return kernel, out


# op -> (how terms are joined, semiring, boolean tensors)
JOIN = {"+": (lambda ts: " + ".join(ts), None, False),
        "-": (lambda ts: ts[0] + "".join(f" - {t}" if k % 2 else f" + {t}" for k, t in enumerate(ts[1:])), None, False),
        "|": (lambda ts: " | ".join(ts), None, True),
        "min": (lambda ts: f"min({', '.join(ts)})", "min", False),
        "max": (lambda ts: f"max({', '.join(ts)})", "max", False)}


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.sampled_from(sorted(JOIN)), st.integers(UNION_MIN, 6), st.data())
def test_union_protocol(op, k, data):
    """C[x] = T0[x] ⊕ T1[x] ⊕ …, every closedness kind, ±inf ends, pinpoints, touching runs: one
    pass reading every track by the union protocol (`formats.run_union`), no merge."""
    join, semiring, boolean = JOIN[op]
    ts = {f"T{j}": data.draw(interval_tensor(boolean=boolean)) for j in range(k)}
    terms = [f"T{j}[x]" for j in range(k)]
    if data.draw(st.booleans()) and op in "+-":
        terms.append("2.5")               # a literal term covers the whole line
    kernel, _ = check_1d("C[x] = " + join(terms), semiring=semiring, **ts)
    assert not kernel.merge_output


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.integers(POINTWISE_SPLIT, 5), st.data())
def test_split_into_merged_passes(k, data):
    """Terms the union protocol cannot read (a comparison, a product) are split into one nest
    each, the passes merged by the runtime."""
    ts = {f"T{j}": data.draw(interval_tensor()) for j in range(k + 1)}
    kernel, _ = check_1d("C[x] = " + " | ".join(f"(T{j}[x] > T{j + 1}[x])" for j in range(k)), **ts)
    assert kernel.merge_output
    ts = {f"T{j}": data.draw(interval_tensor()) for j in range(k + 1)}
    kernel, _ = check_1d("C[x] = " + " + ".join(f"T{j}[x] * T{j + 1}[x]" for j in range(k)), **ts)
    assert kernel.merge_output


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.sampled_from([("|", "lebesgue", "+"), ("|", "boolean", "or"), ("+", "lebesgue", "+"),
                        ("+", "counting", "+"), ("max", "lebesgue", "+")]), st.integers(UNION_MIN, 5), st.data())
def test_union_under_a_measure_and_a_product(case, k, data):
    """s[] = (T0[x] ⊕ …) * d(x; measure) and C[x] = (T0[x] ⊕ …) * M[x]: the chain is not at the
    top, so it cannot be split; the union protocol keeps it linear."""
    op, measure, semiring = case
    join = JOIN[op][0]
    ts = {f"T{j}": data.draw(interval_tensor(boolean=op == "|", allow_inf=measure != "lebesgue"))
          for j in range(k)}
    chain = join([f"T{j}[x]" for j in range(k)])
    text = f"s[] = ({chain}) * d(x; {measure})"
    got = ct.einsum(text, semiring=semiring, **ts)
    assert close(got, oracle(text, semiring=semiring, **ts).value), text
    M = data.draw(interval_tensor())
    check_1d(f"C[x] = ({chain}) * M[x]", M=M, **ts)


@st.composite
def interval_sets(draw, k):
    """k interval_sets S[i, x] over the same n ids (one interval per id, overlaps allowed)."""
    n = draw(st.integers(1, 4))
    out = []
    for _ in range(k):
        a = [draw(st.integers(-6, 10)) for _ in range(n)]
        b = [x + draw(st.integers(1, 6)) for x in a]
        out.append(ct.interval_set(np.array(a, float), np.array(b, float), closed=draw(st.sampled_from(["left", "both"]))))
    return n, out


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.integers(POINTWISE_SPLIT, 5).flatmap(interval_sets))
def test_union_of_interval_sets(sets):
    """C[i, x] = S0[i, x] | S1[i, x] | …: a Dense id level over merged run lists, one fiber per id."""
    n, sets = sets
    text = "C[i, x] = " + " | ".join(f"S{j}[i, x]" for j in range(len(sets)))
    args = {f"S{j}": s for j, s in enumerate(sets)}
    out = ct.einsum(text, **args)
    ref = oracle(text, **args)
    for i in range(n):
        for p in probes(breakpoints_1d(*sets, out)):
            assert close(out[i, p], ref.at(i, (p.value, p.eps))), (i, p)


@st.composite
def pinpoints_1d(draw):
    """A 1-D tensor of float values at sorted distinct real pinpoints (SparseList of reals)."""
    xs = sorted(draw(st.sets(st.integers(-6, 12), max_size=6)))
    vals = [draw(st.sampled_from([1.0, 2.0, -1.5, 0.0])) for _ in xs]
    return ct.Tensor(ct.SparseList(ct.Element(0.0, val=np.array(vals, float)), np.array([0, len(xs)]),
                                   np.array(xs, float), real=True))


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.sampled_from([("+", "counting", None), ("|", "counting", None), ("|", "boolean", "or"),
                        ("max", "counting", None)]), st.integers(UNION_MIN, 6), st.data())
def test_union_protocol_on_pinpoints(case, k, data):
    """Pinpoint lists read as alternating gap and point chunks: a scalar under a measure, and a
    continuous output (`formats.run_union` on a SparseList of reals)."""
    op, measure, semiring = case
    ts = {f"P{j}": data.draw(pinpoints_1d()) for j in range(k)}
    chain = JOIN[op][0]([f"P{j}[x]" for j in range(k)])
    text = f"s[] = ({chain}) * d(x; {measure})"
    got = ct.einsum(text, semiring=semiring, **ts)
    assert close(got, oracle(text, semiring=semiring, **ts).value), text
    if op != "max":
        kernel, _ = check_1d(f"C[x] = {chain}", **ts)
        assert not kernel.merge_output


@pytest.mark.parametrize("k", [3, 6])
def test_sum_of_pinpoint_tensors(k):
    """C[x] = P0[x] + …: pinpoints (SparseList of real coordinates) merged by coordinate."""
    rng = np.random.default_rng(k)
    args, want = {}, {}
    for j in range(k):
        xs = np.unique(rng.integers(0, 12, 6)).astype(float)
        vals = rng.integers(-3, 4, len(xs)).astype(float)
        args[f"P{j}"] = ct.Tensor(ct.SparseList(ct.Element(0.0, val=vals), np.array([0, len(xs)]), xs, real=True))
        for x, v in zip(xs, vals):
            want[x] = want.get(x, 0.0) + v
    out = ct.einsum("C[x] = " + " + ".join(f"P{j}[x]" for j in range(k)), **args)
    got = {((c[0]) if not isinstance(c[0], tuple) else c[0][0].value): v for c, v in out.pieces()}
    assert got == want


@pytest.mark.parametrize("k", [3, 7])
def test_dense_sum_of_sparse_vectors(k):
    """C[i] = V0[i] + …: integer vectors summed exactly into a Dense output."""
    rng = np.random.default_rng(k)
    args, want = {}, np.zeros(40, np.int64)
    for j in range(k):
        idx = np.unique(rng.integers(0, 40, 12))
        vals = rng.integers(-2**59, 2**59, len(idx))         # partial sums fit: an overflow raises
        args[f"V{j}"] = ct.Tensor(ct.SparseList(ct.Element(0, val=vals), np.array([0, len(idx)]), idx, shape=40))
        want[idx] += vals
    out = ct.einsum("C[i] = " + " + ".join(f"V{j}[i]" for j in range(k)), **args)
    np.testing.assert_array_equal(out.to_numpy(), want)


@settings(max_examples=max(10, settings().max_examples // 3), deadline=None)
@given(st.integers(2, 5), st.sampled_from(["A[x] * ({sum}) * d(x; counting)", "({sum}) * A[x] * 2 * d(x; counting)",
                                           "(A[x] - B[x]) * ({sum}) * d(x; counting)",
                                           "A[x] * ({sum}) * d(x, j; counting, counting)"]), st.integers(0, 2**32 - 1))
def test_products_of_sums_of_point_sets_are_expanded_and_split(k, form, seed):
    """A[x] * (P0[x, j] + … + P{k-1}[x, j]) under the counting measure: distributed into A*P0 + …,
    each term pinned by its point set, then one nest per term (float outputs as integer ones).
    One nest took 2 s at k = 3, 23 s at k = 4, minutes at k = 5."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))                # ids j in [0, n): the same shape in every point set
    Ps = {f"P{m}": ct.points(rng.integers(0, 5, (n, 1)).astype(float) + 0.5 * (m % 2)) for m in range(k)}
    A = ct.intervals([-3.0, 1.0], [-1.0, 4.0], values=[1.5, 2.0], closed=str(rng.choice(["left", "both"])))
    B = ct.intervals([0.0], [2.0], values=[0.5])
    terms = " - ".join(f"P{m}[x, j]" for m in range(k)) if seed % 2 else " + ".join(f"P{m}[x, j]" for m in range(k))
    text = ("s[] = " if "j;" in form else "O[j] = ") + form.format(sum=terms)
    kernel = ct.compile(text, A=A, B=B, **Ps)
    assert kernel.split_sums and len(kernel.ir.splitlines()) < 300 * k
    compare(text, A=A, B=B, **Ps)


def test_code_grows_linearly_in_the_terms():
    """One pass over k unions of runs has 2**k code paths; the union protocol and one nest per
    term, k."""
    rng = np.random.default_rng(0)

    def size(k):
        ts = {}
        for j in range(k):
            s = np.sort(rng.choice(50, 8, replace=False)).astype(float)
            ts[f"T{j}"] = ct.intervals(s, s + 0.5)
        return len(compile_kernel(text(k), ts).ir)

    for text in (lambda k: "C[x] = " + " | ".join(f"T{j}[x]" for j in range(k)),            # union protocol
                 lambda k: "s[] = (" + " + ".join(f"T{j}[x]" for j in range(k)) + ") * d(x; lebesgue)",
                 lambda k: "C[x] = " + " | ".join(f"(T{j}[x] > 0.5)" for j in range(k))):   # split
        assert size(8) < 2.5 * size(4)


MIXED = {   # k -> an expression of k + 1 tracks with 2k accesses under non-annihilating operators
    "sum of products": lambda k: " + ".join(f"T{j}[x] * T{j + 1}[x]" for j in range(k)),
    "or of comparisons": lambda k: " | ".join(f"(T{j}[x] * T{j + 1}[x] > 0)" for j in range(k)),
    "max of differences": lambda k: "max(" + ", ".join(f"T{j}[x] - T{j + 1}[x]" for j in range(k)) + ")",
    "product of shifted tracks": lambda k: " * ".join(f"(T{j}[x] + 2)" for j in range(k + 1)),   # no annihilation
}


@settings(max_examples=max(10, settings().max_examples // 3), deadline=None)
@given(st.sampled_from(sorted(MIXED)), st.sampled_from([("counting", None), ("boolean", "or"), ("lebesgue", "max"),
                                                       ("counting", "min")]),
       st.integers(2, 4), st.data())
def test_mixed_expressions_read_by_the_union_protocol(form, measure, k, data):
    """A measure of a mixed expression of 2k accesses (no per-term split applies under a counting or
    boolean measure or a min/max semiring) compiled exponentially in k (sum of 3 products: 5 s, 4:
    a minute); every access is now read by the union protocol (`lower.nest.mark_all_unions`)."""
    m, semiring = measure
    ts = {f"T{j}": data.draw(interval_tensor(allow_inf=m != "lebesgue")) for j in range(k + 1)}
    text = f"s[] = ({MIXED[form](k)}) * d(x; {m})"
    got = ct.einsum(text, semiring=semiring, **ts)
    assert close(got, oracle(text, semiring=semiring, **ts).value), (text, semiring)


def test_mixed_expression_code_grows_linearly():
    ts = {f"T{j}": ct.intervals([j, j + 10.0], [j + 2.0, j + 11.0], values=[1.0, 2.0]) for j in range(9)}
    size = {k: len(compile_kernel(f"s[] = ({MIXED['sum of products'](k)}) * d(x; counting)",
                          {f"T{j}": ts[f"T{j}"] for j in range(k + 1)}).ir) for k in (4, 8)}
    assert size[8] < 2.5 * size[4], size


@pytest.mark.parametrize("k", [4, 6])
def test_products_of_tracks_whose_fill_does_not_annihilate(k):
    """A product of tracks with fill 1 under min, or of (track + c), took 2 s to minutes to compile:
    the fills do not annihilate, so every cursor state met every other; read by the union protocol."""
    ts = {f"T{j}": ct.intervals([j, j + 10.0], [j + 2.0, j + 11.0], values=[-1.0 - j, 2.0], fill=1.0,
                                closed=["left", "both"]) for j in range(k)}
    prod = " * ".join(f"T{j}[x]" for j in range(k))
    text = f"s[] = ({prod}) * d(x; boolean)"
    kernel = compile_kernel(text, ts, semiring="min")
    assert kernel(**ts) == oracle(text, semiring="min", **ts).value
    check_1d("C[x] = " + " * ".join(f"(T{j}[x] + 7)" for j in range(k)), **ts)


# affine maps of a term's real index; `a` is a runtime scale of either sign
AFFINE = ["{t}[-x]", "{t}[2*x + 1]", "{t}[0.5 - x/2]", "{t}[x - 3]", "{t}[a*x]", "{t}[x]"]


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.sampled_from(sorted(JOIN)), st.integers(UNION_MIN, 6), st.sampled_from([-1.5, 2.0]), st.data())
def test_union_protocol_through_affine_maps(op, k, a, data):
    """T0[a0*x + b0] ⊕ T1[…] ⊕ …: each term read by the union protocol on a view of its run list,
    walked backwards for a negative scale (a runtime scale: both walks, chosen by its sign).  Such
    chains took 12-40 s to compile at k = 5-6 (every cursor state against every other)."""
    join, semiring, boolean = JOIN[op]
    ts = {f"T{j}": data.draw(interval_tensor(boolean=boolean)) for j in range(k)}
    terms = [data.draw(st.sampled_from(AFFINE)).format(t=f"T{j}") for j in range(k)]
    kernel, _ = check_1d("C[x] = " + join(terms), semiring=semiring, a=a, **ts)
    assert not kernel.merge_output
    if op in "+-|":
        text = f"s[] = ({join(terms)}) * 1.5 * d(x; {'boolean' if op == '|' else 'counting'})"
        sr = "or" if op == "|" else None
        got = ct.einsum(text, semiring=sr, a=a, **ts)
        assert close(got, oracle(text, semiring=sr, a=a, **ts).value), text


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.integers(UNION_MIN, 6), st.sampled_from(["P{j}[-x]", "P{j}[3 - 2*x]", "P{j}[a*x]"]),
       st.sampled_from([-1.0, 0.5]), st.data())
def test_union_protocol_on_pinpoints_through_affine_maps(k, form, a, data):
    ts = {f"P{j}": data.draw(pinpoints_1d()) for j in range(k)}
    chain = " + ".join(form.format(j=j) for j in range(k))
    text = f"s[] = ({chain}) * d(x; counting)"
    got = ct.einsum(text, a=a, **ts)
    assert close(got, oracle(text, a=a, **ts).value), text
    kernel, _ = check_1d(f"C[x] = {chain}", a=a, **ts)
    assert not kernel.merge_output


def test_affine_union_code_grows_linearly():
    rng = np.random.default_rng(3)
    ts = {}
    for j in range(8):
        s = np.sort(rng.choice(50, 8, replace=False)).astype(float)
        ts[f"T{j}"] = ct.intervals(s, s + 0.5, values=np.arange(1.0, 9.0))
    for form in ("T{j}[-x]", "T{j}[2*x]", "T{j}[a*x]"):
        text = lambda k: "s[] = (" + " + ".join(form.format(j=j) for j in range(k)) + ") * 2 * d(x; lebesgue)"
        size = {k: len(compile_kernel(text(k), {**{f"T{j}": ts[f"T{j}"] for j in range(k)}, "a": -1.0}).ir) for k in (4, 8)}
        assert size[8] < 2.5 * size[4], (form, size)
