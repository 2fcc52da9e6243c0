"""`Limit`: a real number plus an infinitesimal sign, the coordinate type of continuous tensors.

Source: the continuous tensor paper, §5.1 ("Definition of Limit"); Finch.jl `src/util/limits.jl`.
`Limit(v, -1)` is v−ε (just below v), `Limit(v, 0)` is v, `Limit(v, +1)` is v+ε.  An open endpoint
is a closed endpoint moved by ε, so every interval is closed over Limits: `[a, b)` = `[a, b−ε]`.

* Order is lexicographic on (value, eps): v−ε < v < v+ε < w−ε for v < w.
* Addition and subtraction saturate the ε part to {-1, 0, +1}: (a+ε)+ε = a+ε.
* `drop_eps` forgets ε (used for Lebesgue lengths); `plus_eps` / `minus_eps` move by one ε.
"""
from __future__ import annotations

import numbers
from functools import total_ordering

from .errors import FormatError


def _sat(e: int) -> int:
    return -1 if e < 0 else (1 if e > 0 else 0)


@total_ordering
class Limit:
    """A real value with an infinitesimal sign.

    Parameters
    ----------
    value : float or int
        The real part.  ±inf are allowed; NaN raises ``ValueError``.
    eps : int
        -1, 0 or +1.  Any other value raises ``ValueError``.
    """

    __slots__ = ("value", "eps")

    def __init__(self, value, eps: int = 0):
        if isinstance(value, Limit):
            value, eps = value.value, _sat(value.eps + eps)
        if not isinstance(value, numbers.Real):
            raise TypeError(f"Limit value must be a real number, got {value!r}")
        if isinstance(eps, bool) or eps not in (-1, 0, 1):
            raise FormatError(f"Limit eps must be -1, 0 or +1, got {eps!r}")
        if value != value:
            raise FormatError("Limit value must not be NaN")
        self.value = value
        self.eps = int(eps)

    @staticmethod
    def of(x) -> "Limit":
        """Coerce a number or Limit to a Limit (numbers get eps 0)."""
        return x if isinstance(x, Limit) else Limit(x, 0)

    # ordering -----------------------------------------------------------------
    def _key(self):
        return (self.value, self.eps)

    def __eq__(self, other):
        if isinstance(other, (int, float)):
            other = Limit(other)
        if not isinstance(other, Limit):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        other = Limit.of(other)
        return self._key() < other._key()

    def __hash__(self):
        # equal to a plain number when eps == 0, so the hash must agree with the number's
        return hash(self.value) if self.eps == 0 else hash(self._key())

    # arithmetic ---------------------------------------------------------------
    def __add__(self, other):
        other = Limit.of(other)
        return Limit(self.value + other.value, _sat(self.eps + other.eps))

    __radd__ = __add__

    def __sub__(self, other):
        other = Limit.of(other)
        return Limit(self.value - other.value, _sat(self.eps - other.eps))

    def __rsub__(self, other):
        return Limit.of(other) - self

    def __neg__(self):
        return Limit(-self.value, -self.eps)

    def __mul__(self, c):
        """Scale by a real constant c: (a+sε)·c = ac + sign(c)·sε."""
        if isinstance(c, Limit):
            # (a+sε)(b+tε) = ab + (a t + b s) ε + s t ε²: the ε side is the sign of the first
            # non-zero coefficient
            a, s, b, t = self.value, self.eps, c.value, c.eps
            with_eps = a * t + b * s
            if with_eps != with_eps:         # inf·t + (-inf)·s: no sign to take
                with_eps = 0
            return Limit(a * b, _sign(with_eps) if with_eps else s * t)
        return Limit(self.value * c, _sat(self.eps * _sign(c)))

    __rmul__ = __mul__

    def __repr__(self):
        if self.eps == 0:
            return f"Limit({self.value!r})"
        return f"Limit({self.value!r}, {self.eps:+d})"

    def __str__(self):
        return {-1: f"{self.value}-ε", 0: f"{self.value}", 1: f"{self.value}+ε"}[self.eps]


def _sign(x) -> int:
    return (x > 0) - (x < 0)


def drop_eps(x) -> float:
    """The real part of a Limit (numbers pass through)."""
    return x.value if isinstance(x, Limit) else x


def plus_eps(x) -> Limit:
    """x + ε (saturating)."""
    return Limit.of(x) + Limit(0, 1)


def minus_eps(x) -> Limit:
    """x − ε (saturating)."""
    return Limit.of(x) - Limit(0, 1)


EPS = Limit(0, 1)
