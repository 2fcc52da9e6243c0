"""Hand-computed examples for the reference interpreter in tests/oracle (no ctensor import)."""
import math

import pytest

try:
    from tests.oracle import PieceTensor, evaluate, interval, point, probe_points
except ModuleNotFoundError:  # plain `pytest` run: tests/ itself is on sys.path
    from oracle import PieceTensor, evaluate, interval, point, probe_points

INF = math.inf


def line(*pieces, fill=0.0):
    """1-D real tensor from (interval, value) pairs."""
    return PieceTensor(("real",), [((iv,), v) for iv, v in pieces], fill)


def test_interval_dot_product():
    # [0,2)·3 and [1,4)·2 overlap on [1,2): 3 * 2 * 1
    A, B = line((interval(0, 2), 3.0)), line((interval(1, 4), 2.0))
    assert evaluate("s[] = A[x] * B[x] * d(x; lebesgue)", {"A": A, "B": B}).value == 6.0


def test_pointwise_product_pieces():
    A, B = line((interval(0, 2), 3.0)), line((interval(1, 4), 2.0))
    r = evaluate("C[x] = A[x] * B[x]", {"A": A, "B": B})
    assert r.pieces() == [((point(1),), 6.0), ((((1.0, 1), (2.0, -1)),), 6.0)]
    assert r.at(1.0) == 6.0 and r.at(1.999) == 6.0 and r.at((2.0, -1)) == 6.0
    assert r.at(2.0) == 0.0 and r.at((1.0, -1)) == 0.0 and r.at(-1e300) == 0.0


def test_counting_pinpoints_in_half_open_interval():
    # points 0, 1, 2 against [0, 2): the point at b = 2 is not counted
    P = line((point(0), True), (point(1), True), (point(2), True), fill=False)
    E = line((interval(0, 2), True), fill=False)
    assert evaluate("n[] = P[x] * E[x] * d(x; counting)", {"P": P, "E": E}).value == 2.0
    P2 = PieceTensor(("real", "int"), [((point(0.5), 0), True), ((point(2.0), 1), True),
                                        ((point(1.0), 2), True), ((point(-1), 3), True)], False)
    n = evaluate("n[] = P[x, id] * E[x] * d(x, id; counting, counting)", {"P": P2, "E": E})
    assert n.value == 2.0


def test_counting_is_zero_on_intervals():
    A = line((interval(0, 2), 7.0), (point(3), 5.0))
    assert evaluate("s[] = A[x] * d(x; counting)", {"A": A}).value == 5.0


def test_boolean_measure_or():
    S = PieceTensor(("int", "real"), [((0, interval(0, 1)), True), ((1, interval(2, 3, "both")), True),
                                      ((2, interval(5, 6)), True)], False)
    B = line((interval(1, 2, "both"), True), fill=False)
    r = evaluate("o[i] = (S[i, x] & B[x]) * d(x; boolean)", {"S": S, "B": B})
    assert r.semiring == "or" and r.fill is False
    assert [r.at(i) for i in (0, 1, 2, 7)] == [False, True, False, False]
    assert r.pieces() == [((1,), True)]
    # under + the boolean index reduces with ∨ inside the sum (∑ over no other index: the ∨ itself)
    r = evaluate("o[i] = (S[i, x] & B[x]) * d(x; boolean)", {"S": S, "B": B}, semiring="+")
    assert [r.at(i) for i in (0, 1, 2, 7)] == [0.0, 1.0, 0.0, 0.0]


def test_2d_interval_set_times_line():
    S = PieceTensor(("int", "real"), [((0, interval(0, 2)), 1.0), ((1, interval(1, 5)), 2.0)])
    B = line((interval(1, 3), 10.0))
    r = evaluate("C[i] = S[i, x] * B[x] * d(x; lebesgue)", {"S": S, "B": B})
    assert r.pieces() == [((0,), 10.0), ((1,), 40.0)]  # 1*10*|[1,2)|, 2*10*|[1,3)|
    assert r.at(5) == 0.0


def test_paper_example_lebesgue_times_counting():
    # §3.2.1: s = 1*(3-1) + 2*(3-2) + 3*(2.5-0.5) = 10; with lebesgue on y the area is 0
    A = PieceTensor(("real", "real"), [((interval(1, 3), point(1)), 1.0),
                                       ((interval(2, 3), point(2)), 2.0),
                                       ((interval(0.5, 2.5), point(3)), 3.0)])
    assert evaluate("s[] = A[x, y] * d(x, y; lebesgue, counting)", {"A": A}).value == 10.0
    assert evaluate("s[] = A[x, y] * d(x, y; lebesgue, lebesgue)", {"A": A}).value == 0.0


def test_infinite_lengths():
    A = line((((-INF, 1), (0.0, -1)), 2.0))  # (-inf, 0)·2
    assert evaluate("s[] = A[x] * d(x; lebesgue)", {"A": A}).value == INF
    Z = line((((-INF, 0), (INF, 0)), 0.0))   # zero over the whole line: 0 × ∞ = 0
    F = line((((-INF, 1), (INF, -1)), 5.0))
    assert evaluate("s[] = Z[x] * F[x] * d(x; lebesgue)", {"Z": Z, "F": F}).value == 0.0
    E = line()  # empty tensor: fill-only value 1 over the whole line
    assert evaluate("s[] = (E[x] + 1) * d(x; lebesgue)", {"E": E}).value == INF
    assert F.at(1e300) == 5.0 and F.at((INF, -1)) == 5.0


def test_min_semiring_respects_measures():
    A = line((interval(0, 1), 3.0), (point(2), 1.0), (interval(4, 5), 2.0), fill=INF)
    ev = lambda m: evaluate(f"m[] = A[x] * d(x; {m})", {"A": A}, semiring="min").value
    assert ev("lebesgue") == 2.0  # the pinpoint has measure 0
    assert ev("boolean") == 1.0
    assert ev("counting") == 1.0  # only the pinpoint has counting measure
    assert evaluate("m[] = A[x] * d(x; lebesgue)", {"A": A}, semiring="max").value == INF


def test_touching_intervals():
    A = line((interval(0, 1, "both"), 1.0))
    B = line((interval(1, 2), 1.0))
    r = evaluate("C[x] = A[x] * B[x]", {"A": A, "B": B})
    assert r.pieces() == [((point(1),), 1.0)]
    assert evaluate("s[] = A[x] * B[x] * d(x; counting)", {"A": A, "B": B}).value == 1.0
    assert evaluate("s[] = A[x] * B[x] * d(x; lebesgue)", {"A": A, "B": B}).value == 0.0
    A2 = line((interval(0, 1), 1.0))  # [0,1) and [1,2) share nothing
    assert evaluate("C[x] = A[x] * B[x]", {"A": A2, "B": B}).pieces() == []
    # (0,1] and [1,2) meet at 1; (0,1) and (1,2) do not
    A3, B3 = line((interval(0, 1, "right"), 2.0)), line((interval(1, 2, "neither"), 2.0))
    assert evaluate("s[] = A[x] * B[x] * d(x; counting)", {"A": A3, "B": B}).value == 2.0
    assert evaluate("s[] = A[x] * B[x] * d(x; counting)", {"A": A3, "B": B3}).value == 0.0


def test_sum_with_fill_and_pinpoint_inside_interval():
    A = line((interval(0, 4), 1.0))
    P = line((point(2), 5.0))
    r = evaluate("C[x] = A[x] + P[x]", {"A": A, "P": P})
    assert [r.at(x) for x in (-1.0, 0.0, 1.0, (2.0, -1), 2.0, (2.0, 1), 4.0)] == \
        [0.0, 1.0, 1.0, 1.0, 6.0, 1.0, 0.0]
    assert evaluate("s[] = (A[x] + P[x]) * d(x; lebesgue)", {"A": A, "P": P}).value == 4.0
    assert evaluate("s[] = (A[x] + P[x]) * d(x; counting)", {"A": A, "P": P}).value == 6.0


def test_max_function_and_empty_tensor():
    A, B = line((interval(0, 2), 1.0)), line((interval(1, 3), 2.0))
    m = evaluate("m[] = max(A[x], B[x]) * d(x; lebesgue)", {"A": A, "B": B})
    assert m.value == 5.0  # 1*1 + 2*1 + 2*1
    E = line()
    assert evaluate("s[] = A[x] * E[x] * d(x; lebesgue)", {"A": A, "E": E}).value == 0.0
    assert evaluate("C[x] = A[x] * E[x]", {"A": A, "E": E}).pieces() == []


def test_affine_index_and_scalars():
    A, B = line((interval(0, 2), 3.0)), line((interval(0, 4), 1.0))
    # A[x + 1] is 3 on x in [-1, 1): overlap with B is [0, 1)
    assert evaluate("s[] = A[x + 1] * B[x] * d(x; lebesgue)", {"A": A, "B": B}).value == 3.0
    # A[2x] is 3 on [0, 1); c * A[x - t] with t = 3 is 3c on [3, 5)
    assert evaluate("s[] = A[2*x] * d(x; lebesgue)", {"A": A}).value == 3.0
    s = evaluate("s[] = c * A[x - t] * B[x] * d(x; lebesgue)", {"A": A, "B": B}, {"c": 2.0, "t": 3})
    assert s.value == 6.0  # 2 * 3 * |[3, 4)|


def test_int_reduction_and_bare_index():
    V = PieceTensor(("int",), [((0,), 1.0), ((3,), 2.0)])
    assert evaluate("s[] = V[i]", {"V": V}).value == 3.0  # counting by default
    with pytest.raises(ValueError):  # fill 1 summed over infinitely many ints
        evaluate("s[] = V[i]", {"V": PieceTensor(("int",), [((0,), 1.0)], fill=1.0)})
    P = line((point(1.5), True), (point(2), True), fill=False)
    assert evaluate("s[] = P[x] * x * d(x; counting)", {"P": P}).value == 3.5
    with pytest.raises(ValueError):  # x is not constant on a gap cell
        evaluate("C[x] = P[x] + x", {"P": P})


def test_errors_and_piece_tensor_checks():
    A = line((interval(0, 2), 1.0))
    with pytest.raises(ValueError):  # real reduction index without a measure
        evaluate("s[] = A[x]", {"A": A})
    with pytest.raises(ValueError):  # overlapping pieces
        evaluate("s[] = O[x] * d(x; lebesgue)",
                 {"O": line((interval(0, 2), 1.0), (interval(1, 3), 1.0))})
    with pytest.raises(ValueError):  # non-canonical epsilon
        line((((0.0, -1), (1.0, 0)), 1.0))
    with pytest.raises(ValueError):  # query straddles a piece boundary
        A.at(interval(1, 3))
    assert A.at(interval(0.5, 1.5)) == 1.0 and A.at((0.0, -1)) == 0.0 and A.at(0) == 1.0
    assert probe_points([1.0, 0.0]) == [(0.0, -1), (0.0, 0), (0.0, 1), (1.0, -1), (1.0, 0), (1.0, 1)]


def test_counting_follows_fig5_partitions_not_elementary_cells():
    # touching pieces [0,2) and [2,4): no pinpoint partition, so nothing is counted
    A = line((interval(0, 2), 1.0), (interval(2, 4), 1.0))
    assert evaluate("s[] = A[x] * d(x; counting)", {"A": A}).value == 0.0
    # the same function written with an explicit pinpoint piece at 2 counts it once
    A1 = line((interval(0, 2), 1.0), (point(2), 1.0), (interval(2, 4, "neither"), 1.0))
    assert evaluate("s[] = A[x] * d(x; counting)", {"A": A1}).value == 1.0
    # a one-point fill gap between [0,2) and (2,4) is a pinpoint partition (a run-list gap)
    G = line((interval(0, 2), 1.0), (interval(2, 4, "neither"), 1.0))
    assert evaluate("s[] = (G[x] + 1) * d(x; counting)", {"G": G}).value == 1.0


def test_random_dot_products_match_pairwise_overlaps():
    import random
    rng = random.Random(7)
    closed = ["left", "right", "both", "neither"]
    for _ in range(30):
        tens = []
        for _ in range(2):
            cuts = sorted(rng.sample(range(20), 6))
            tens.append([(interval(cuts[k], cuts[k + 1], rng.choice(closed)), float(rng.randint(1, 5)))
                         for k in range(0, 6, 2)])
        expect = sum(va * vb * max(0.0, min(a[1][0], b[1][0]) - max(a[0][0], b[0][0]))
                     for a, va in tens[0] for b, vb in tens[1])
        A, B = line(*tens[0]), line(*tens[1])
        assert evaluate("s[] = A[x] * B[x] * d(x; lebesgue)", {"A": A, "B": B}).value == expect
        r = evaluate("C[x] = A[x] * B[x]", {"A": A, "B": B})
        for p in probe_points(range(20)):
            assert r.at(p) == A.at(p) * B.at(p)
        # counting of the pointwise product = number of pinpoint intersections
        pins = sum(va * vb for a, va in tens[0] for b, vb in tens[1]
                   if max(a[0], b[0]) == min(a[1], b[1]))
        assert evaluate("s[] = A[x] * B[x] * d(x; counting)", {"A": A, "B": B}).value == pins


def test_min_over_every_id_of_a_known_shape_has_no_other_cell():
    """Under min, a reduction over all n ids of S[i, x] (declared shape n) must not fold in the
    fill of `OTHER` (the unused ids: none are left).  Rows [0, 2) and [1, 3): at x = 1.5 both
    hold, so min over i is True (the oracle said False before); at 2.5 only row 1 does."""
    S = PieceTensor(("int", "real"), [((0, interval(0, 2)), True), ((1, interval(1, 3)), True)], False, (2, None))
    r = evaluate("C[x] = S[i, x] * d(i; counting)", {"S": S}, None, "min")
    assert (r.at((1.5, 0)), r.at((2.5, 0)), r.at((0.5, 0))) == (True, False, False)
    r = evaluate("C[x] = S[i, x] * d(i; counting)", {"S": S}, None, "max")
    assert (r.at((1.5, 0)), r.at((2.5, 0)), r.at((3.5, 0))) == (True, True, False)
    # without a declared shape the ids are unbounded: some id is unused, and min is False
    S = PieceTensor(("int", "real"), S.pieces, False)
    assert not evaluate("C[x] = S[i, x] * d(i; counting)", {"S": S}, None, "min").at((1.5, 0))
