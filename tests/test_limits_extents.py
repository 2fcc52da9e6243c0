"""`ct.Limit` (value + infinitesimal sign) and the closed extents of `ctensor.extents`
(DESIGN.md §2: closed extents everywhere, emptiness under the full Limit order)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctensor as ct
from ctensor import Limit
from ctensor.extents import Extent, SymLimit, lim_le, lim_max, lim_min
from ctensor.ir.nodes import Const
from ctensor.ir.types import F64, I1, I8, I64

INF = math.inf


# ------------------------------------------------------------------------------------- Limit
class TestLimitConstruction:
    def test_fields(self):
        x = Limit(2.5, -1)
        assert x.value == 2.5 and x.eps == -1
        assert Limit(3).eps == 0

    @pytest.mark.parametrize("eps", [2, -2, 0.5, "1", None])
    def test_invalid_eps(self, eps):
        with pytest.raises(ValueError):
            Limit(1.0, eps)

    @pytest.mark.parametrize("nan", [math.nan, float("nan"), np.float64("nan")])
    def test_nan_value(self, nan):
        with pytest.raises(ValueError):
            Limit(nan)

    def test_nan_float32_value(self):
        with pytest.raises(ValueError):
            Limit(np.float32("nan"))

    def test_infinite_values_allowed(self):
        assert Limit(INF, -1) < Limit(INF) and Limit(-INF) < Limit(-INF, 1)

    def test_limit_of_limit_adds_eps_saturating(self):
        assert Limit(Limit(2.0, 1), 1) == Limit(2.0, 1)
        assert Limit(Limit(2.0, 1), -1) == Limit(2.0, 0)
        assert Limit(Limit(2.0, -1)) == Limit(2.0, -1)

    def test_of(self):
        x = Limit(1.0, 1)
        assert Limit.of(x) is x
        assert Limit.of(3.0) == Limit(3.0, 0)

    def test_repr_and_str(self):
        assert repr(Limit(2.0, -1)) == "Limit(2.0, -1)"
        assert repr(Limit(2.0)) == "Limit(2.0)"
        assert str(Limit(2.0, 1)) == "2.0+ε"


class TestLimitOrder:
    def test_chain(self):
        v, w = 1.0, 1.5
        chain = [Limit(v, -1), Limit(v), Limit(v, 1), Limit(w, -1), Limit(w)]
        for a, b in zip(chain, chain[1:]):
            assert a < b and b > a and a <= b and a != b
        assert sorted(reversed(chain)) == chain

    def test_against_plain_numbers(self):
        assert Limit(1.0, -1) < 1.0 < Limit(1.0, 1)
        assert 1.0 < Limit(1.0, 1) and 1.0 > Limit(1.0, -1)
        assert Limit(1.0, 1) < 1.0000001
        assert not Limit(1.0, 1) <= 1.0
        assert Limit(1.0) <= 1 and Limit(1.0) >= 1

    def test_equality_with_numbers(self):
        assert Limit(2.0) == 2.0 and 2.0 == Limit(2.0) and Limit(2) == 2.0
        assert Limit(2.0, 1) != 2.0 and Limit(2.0, -1) != 2
        assert Limit(1.0) != "1.0"

    def test_hash_consistent_between_limits(self):
        assert hash(Limit(1)) == hash(Limit(1.0))
        assert len({Limit(1.0), Limit(1), Limit(1.0, 0), Limit(1.0, 1)}) == 2

    def test_hash_consistent_with_numbers(self):
        assert hash(Limit(1.0)) == hash(1.0)
        assert Limit(1.0) in {1.0}
        assert 1.0 in {Limit(1.0)}


class TestLimitArithmetic:
    def test_add_saturates(self):
        assert Limit(1.0, 1) + Limit(2.0, 1) == Limit(3.0, 1)
        assert Limit(1.0, 1) + Limit(2.0, -1) == Limit(3.0, 0)
        assert Limit(1.0, -1) + Limit(2.0, -1) == Limit(3.0, -1)
        assert Limit(1.0, 1) + 2 == Limit(3.0, 1)
        assert 2 + Limit(1.0, -1) == Limit(3.0, -1)

    def test_sub_saturates(self):
        assert Limit(3.0, -1) - Limit(1.0, 1) == Limit(2.0, -1)
        assert Limit(3.0, 1) - Limit(1.0, -1) == Limit(2.0, 1)
        assert Limit(3.0, 1) - Limit(1.0, 1) == Limit(2.0, 0)
        assert 5 - Limit(1.0, 1) == Limit(4.0, -1)

    def test_neg(self):
        assert -Limit(2.0, 1) == Limit(-2.0, -1)
        assert -Limit(2.0, -1) == Limit(-2.0, 1)
        assert -Limit(2.0) == Limit(-2.0)

    def test_scale(self):
        assert Limit(2.0, 1) * 3 == Limit(6.0, 1)
        assert Limit(2.0, 1) * -3 == Limit(-6.0, -1)
        assert -0.5 * Limit(2.0, -1) == Limit(-1.0, 1)
        assert Limit(2.0, 1) * 0 == Limit(0.0, 0)

    def test_negative_scaling_reverses_order(self):
        xs = [Limit(1.0, -1), Limit(1.0), Limit(1.0, 1), Limit(2.0, -1)]
        ys = [x * -2 for x in xs]
        assert all(a > b for a, b in zip(ys, ys[1:]))

    def test_drop_plus_minus_eps(self):
        assert ct.drop_eps(Limit(2.0, -1)) == 2.0 and isinstance(ct.drop_eps(Limit(2.0, -1)), float)
        assert ct.drop_eps(3.5) == 3.5
        assert ct.plus_eps(2.0) == Limit(2.0, 1)
        assert ct.minus_eps(2.0) == Limit(2.0, -1)
        assert ct.plus_eps(Limit(2.0, -1)) == Limit(2.0, 0)
        assert ct.plus_eps(Limit(2.0, 1)) == Limit(2.0, 1)          # saturates
        assert ct.minus_eps(Limit(2.0, -1)) == Limit(2.0, -1)
        assert ct.EPS == Limit(0, 1)

    def test_closed_interval_convention(self):
        # [a, b) is [a, b - ε]; b - ε is below b and above every real below b
        a, b = 0.0, 2.0
        hi = ct.minus_eps(b)
        assert a <= hi < b and hi > np.nextafter(b, -INF)


limits = st.builds(Limit,
                   st.one_of(st.sampled_from([-INF, -1.0, 0.0, 0.5, 1.0, INF]),
                             st.floats(-1e6, 1e6, allow_nan=False)),
                   st.sampled_from([-1, 0, 1]))


@settings(max_examples=200, deadline=None)
@given(limits, limits)
def test_order_matches_tuple_order(a, b):
    ka, kb = (a.value, a.eps), (b.value, b.eps)
    assert (a < b) == (ka < kb)
    assert (a <= b) == (ka <= kb)
    assert (a == b) == (ka == kb)
    assert (a > b) == (ka > kb)
    assert (a < b) + (a == b) + (a > b) == 1               # trichotomy
    if a == b:
        assert hash(a) == hash(b)


@settings(max_examples=200, deadline=None)
@given(limits, limits, limits)
def test_order_is_transitive(a, b, c):
    if a <= b and b <= c:
        assert a <= c
    if a < b and b <= c:
        assert a < c
    assert sorted([a, b, c]) == sorted([a, b, c], key=lambda x: (x.value, x.eps))


@settings(max_examples=200, deadline=None)
@given(limits)
def test_eps_round_trip_only_when_unsaturated(a):
    back = ct.minus_eps(ct.plus_eps(a))
    assert (back == a) == (a.eps != 1)
    back2 = ct.plus_eps(ct.minus_eps(a))
    assert (back2 == a) == (a.eps != -1)
    assert ct.plus_eps(a) >= a and ct.minus_eps(a) <= a
    assert ct.drop_eps(ct.plus_eps(a)) == a.value


@settings(max_examples=200, deadline=None)
@given(limits, st.floats(-100, 100, allow_nan=False).filter(lambda c: c != 0))
def test_scaling_is_monotone(a, c):
    b = ct.plus_eps(a)
    if a < b and math.isfinite(a.value):
        assert (a * c < b * c) == (c > 0)


# ------------------------------------------------------------------------------------ extents
def is_const(e, value, ty):
    return isinstance(e, Const) and e.type == ty and e.value == value


def lim_const(s: SymLimit):
    assert isinstance(s.v, Const) and isinstance(s.e, Const)
    return Limit(s.v.value, s.e.value)


class TestRealExtent:
    def test_open_pinpoint_is_empty(self):
        e = Extent.real(Limit(1.0, 1), Limit(1.0))           # [a+ε, a]
        assert is_const(e.nonempty(), False, I1)
        assert is_const(e.is_pinpoint(), False, I1)

    def test_closed_pinpoint(self):
        e = Extent.real(Limit(1.0), Limit(1.0))              # [a, a]
        assert is_const(e.nonempty(), True, I1)
        assert is_const(e.is_pinpoint(), True, I1)
        assert is_const(e.length(), 0.0, F64)
        assert is_const(e.positive_length(), False, I1)

    def test_half_open(self):
        e = Extent.real(Limit(1.0), Limit(3.0, -1))          # [1, 3)
        assert is_const(e.nonempty(), True, I1)
        assert is_const(e.is_pinpoint(), False, I1)
        assert is_const(e.length(), 2.0, F64)                # ε dropped
        assert is_const(e.positive_length(), True, I1)

    def test_tiny_open_interval_nonempty(self):
        e = Extent.real(Limit(1.0, 1), Limit(1.0, 1))        # (1, 1+ε]: one infinitesimal point
        assert is_const(e.nonempty(), True, I1)
        assert is_const(e.is_pinpoint(), True, I1)

    def test_reversed_empty(self):
        assert is_const(Extent.real(Limit(2.0), Limit(1.0)).nonempty(), False, I1)
        assert is_const(Extent.real(Limit(1.0), Limit(1.0, -1)).nonempty(), False, I1)

    @pytest.mark.parametrize("v", [-INF, INF])
    def test_infinite_pinpoint_length_is_zero(self, v):
        assert is_const(Extent.real(Limit(v), Limit(v)).length(), 0.0, F64)

    def test_finite_pinpoint(self):
        assert is_const(Extent.real(Limit(1.0), Limit(1.0)).finite_pinpoint(), True, I1)
        assert is_const(Extent.real(Limit(-INF), Limit(-INF)).finite_pinpoint(), False, I1)
        assert is_const(Extent.real(Limit(1.0), Limit(2.0)).finite_pinpoint(), False, I1)

    def test_default_is_open_real_line(self):
        e = Extent.real()
        assert lim_const(e.start) == Limit(-INF, 1) and lim_const(e.stop) == Limit(INF, -1)
        assert is_const(e.nonempty(), True, I1)

    def test_intersect(self):
        x = Extent.real(Limit(0.0), Limit(2.0, -1))           # [0, 2)
        y = Extent.real(Limit(1.0), Limit(3.0))               # [1, 3]
        z = x.intersect(y)
        assert z.continuous
        assert (lim_const(z.start), lim_const(z.stop)) == (Limit(1.0), Limit(2.0, -1))   # [1, 2)
        assert is_const(z.length(), 1.0, F64)

    def test_intersect_same_value_different_eps(self):
        z = Extent.real(Limit(1.0, 1), Limit(5.0)).intersect(Extent.real(Limit(1.0), Limit(5.0, -1)))
        assert (lim_const(z.start), lim_const(z.stop)) == (Limit(1.0, 1), Limit(5.0, -1))

    def test_disjoint_intersection_is_empty(self):
        z = Extent.real(Limit(0.0), Limit(1.0, -1)).intersect(Extent.real(Limit(1.0), Limit(2.0)))
        assert is_const(z.nonempty(), False, I1)               # [0,1) ∩ [1,2] = ∅

    def test_touching_closed_intersection_is_pinpoint(self):
        z = Extent.real(Limit(0.0), Limit(1.0)).intersect(Extent.real(Limit(1.0), Limit(2.0)))
        assert is_const(z.nonempty(), True, I1) and is_const(z.is_pinpoint(), True, I1)

    def test_intersect_with_whole_line(self):
        x = Extent.real(Limit(0.0), Limit(2.0, -1))
        z = Extent.real().intersect(x)
        assert (lim_const(z.start), lim_const(z.stop)) == (Limit(0.0), Limit(2.0, -1))

    def test_union(self):
        u = Extent.real(Limit(0.0), Limit(2.0, -1)).union(Extent.real(Limit(1.0), Limit(3.0)))
        assert (lim_const(u.start), lim_const(u.stop)) == (Limit(0.0), Limit(3.0))
        assert is_const(u.length(), 3.0, F64)

    def test_units(self):
        e = Extent.real(Limit(0.0), Limit(2.0, -1))
        p = e.plus_unit(e.stop)
        assert is_const(p.v, 2.0, F64) and is_const(p.e, 0, I8)
        m = e.minus_unit(e.start)
        assert is_const(m.v, 0.0, F64) and is_const(m.e, -1, I8)
        sat = e.plus_unit(SymLimit.const(Limit(2.0, 1)))
        assert is_const(sat.v, 2.0, F64) and is_const(sat.e, 1, I8)
        sat = e.minus_unit(SymLimit.const(Limit(2.0, -1)))
        assert is_const(sat.e, -1, I8)

    def test_chaining(self):
        # consecutive sub-extents: next_start = prev_stop + unit; [0, 1-ε] then [1, 2]
        e = Extent.real(Limit(0.0), Limit(2.0))
        first = e.with_bounds(e.start, SymLimit.const(Limit(1.0, -1)))
        second = e.with_bounds(e.plus_unit(first.stop), e.stop)
        assert lim_const(second.start) == Limit(1.0)
        assert is_const(first.intersect(second).nonempty(), False, I1)


class TestIntegerExtent:
    def test_length_and_nonempty(self):
        e = Extent.integer(3, 5)
        assert not e.continuous
        assert is_const(e.length(), 3, I64)
        assert is_const(e.nonempty(), True, I1)
        assert is_const(e.is_pinpoint(), False, I1)
        assert is_const(e.positive_length(), True, I1)

    def test_pinpoint_and_empty(self):
        assert is_const(Extent.integer(4, 4).is_pinpoint(), True, I1)
        assert is_const(Extent.integer(4, 4).length(), 1, I64)
        assert is_const(Extent.integer(5, 4).nonempty(), False, I1)
        assert is_const(Extent.integer(5, 4).length(), 0, I64)

    def test_units(self):
        e = Extent.integer(3, 5)
        p = e.plus_unit(e.stop)
        m = e.minus_unit(e.start)
        assert is_const(p.v, 6, I64) and is_const(p.e, 0, I8)
        assert is_const(m.v, 2, I64) and is_const(m.e, 0, I8)

    def test_intersect_union(self):
        a, b = Extent.integer(3, 5), Extent.integer(4, 9)
        i, u = a.intersect(b), a.union(b)
        assert is_const(i.start.v, 4, I64) and is_const(i.stop.v, 5, I64) and is_const(i.length(), 2, I64)
        assert is_const(u.start.v, 3, I64) and is_const(u.stop.v, 9, I64) and is_const(u.length(), 7, I64)
        assert is_const(Extent.integer(0, 2).intersect(Extent.integer(3, 4)).nonempty(), False, I1)


@settings(max_examples=200, deadline=None)
@given(limits, limits, limits, limits)
def test_constant_extent_algebra_matches_limits(a, b, c, d):
    x, y = Extent.real(a, b), Extent.real(c, d)
    i, u = x.intersect(y), x.union(y)
    assert (lim_const(i.start), lim_const(i.stop)) == (max(a, c), min(b, d))
    assert (lim_const(u.start), lim_const(u.stop)) == (min(a, c), max(b, d))
    # a continuous extent ending at -inf is empty: the point -inf is not a real number
    real = lambda stop: stop.value > -math.inf
    assert is_const(x.nonempty(), a <= b and real(b), I1)
    assert is_const(i.nonempty(), max(a, c) <= min(b, d) and real(min(b, d)), I1)
    assert is_const(x.is_pinpoint(), a == b, I1)
    assert is_const(lim_le(SymLimit.const(a), SymLimit.const(c)), a <= c, I1)
    assert lim_const(lim_min(SymLimit.const(a), SymLimit.const(c))) == min(a, c)
    assert lim_const(lim_max(SymLimit.const(a), SymLimit.const(c))) == max(a, c)


@settings(max_examples=100, deadline=None)
@given(st.integers(-50, 50), st.integers(-50, 50))
def test_integer_extent_length(s, t):
    e = Extent.integer(s, t)
    assert is_const(e.nonempty(), s <= t, I1)
    assert is_const(e.length(), t - s + 1, I64)
    assert is_const(e.is_pinpoint(), s == t, I1)
