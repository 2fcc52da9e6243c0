"""A reduction ⊕ over numpy arrays, for the runtime's merge of a revisited output
(`runtime.merge_output`): a built-in one is its numpy ufunc; a user one (`ct.Semiring`) is its
`add` expression evaluated elementwise with numpy, with the declared laws applied first as the
kernel applies them (`lower.user_reduction.combine_user`: x ⊕ zero = x, x ⊕ z = z).

`Reducer` offers what the merge uses of a ufunc: a call, `at` (unbuffered in-place ⊕ at repeated
indices) and `reduceat` (⊕ over consecutive groups), and the identity in a dtype.
"""
from __future__ import annotations

import numpy as np

UFUNCS = {"+": np.add, "or": np.logical_or, "and": np.logical_and, "min": np.minimum, "max": np.maximum}

_BIN = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "**": np.power,
        "min": np.minimum, "max": np.maximum, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
_UN = {"neg": np.negative, "sqrt": np.sqrt, "abs": np.abs, "exp": np.exp, "log": np.log}


def _eval(e, env):
    from ..lang.nodes import ECall, ELit, EScalar
    from ..lower.ops import small_power
    if isinstance(e, ELit):
        return e.value
    if isinstance(e, EScalar):
        return env[e.name]
    if not isinstance(e, ECall):
        raise ValueError(f"cannot evaluate {e!r}")
    xs = [_eval(a, env) for a in e.args]
    op = e.op
    if op == "ifelse":
        return np.where(np.asarray(xs[0]) != 0, xs[1], xs[2])
    if op in ("and", "or", "xor"):
        f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
        return f(np.asarray(xs[0]) != 0, np.asarray(xs[1]) != 0)
    if op == "not":
        return np.logical_not(np.asarray(xs[0]) != 0)
    if op in ("/", "sqrt", "exp", "log") or op == "**" and not small_power(e.args[1]):
        xs = [np.asarray(x, np.float64) for x in xs]
    if op in _UN:
        return _UN[op](xs[0])
    if op in ("+", "-", "*") and all(np.asarray(x).dtype == np.bool_ for x in xs):
        xs = [np.asarray(x, np.int64) for x in xs]       # bool arithmetic is on 0/1, as in the kernel
    return _BIN[op](xs[0], xs[1])


class Reducer:
    """⊕ of a `ct.Semiring` on numpy arrays (module docstring)."""

    def __init__(self, sr):
        self.sr = sr

    def __call__(self, x, y):
        x, y = np.asarray(x), np.asarray(y)
        with np.errstate(all="ignore"):
            out = np.asarray(_eval(self.sr.add, {"a": x, "b": y})).astype(x.dtype, copy=False)
        out = np.where(y == self.sr.zero, x, np.where(x == self.sr.zero, y, out))
        z = self.sr.annihilator
        if z is not None:
            out = np.where((x == z) | (y == z), np.asarray(z).astype(x.dtype), out)
        return out.astype(x.dtype, copy=False)

    def identity(self, dtype):
        return np.asarray(self.sr.zero).astype(dtype)

    def at(self, arr, idx, vals):
        """arr[idx[k]] = arr[idx[k]] ⊕ vals[k] for every k, repeated indices included: in rounds,
        each applying the first remaining value of every index."""
        idx, vals = np.asarray(idx), np.asarray(vals)
        order = np.argsort(idx, kind="stable")
        idx, vals = idx[order], vals[order]
        rank = np.arange(len(idx)) - np.searchsorted(idx, idx, side="left")   # k-th value of its index
        for r in range(int(rank.max()) + 1 if len(rank) else 0):
            sel = rank == r
            arr[idx[sel]] = self(arr[idx[sel]], vals[sel])

    def reduceat(self, vals, starts):
        """⊕ of vals[starts[g]:starts[g+1]] for each group g (groups non-empty, starts increasing)."""
        vals = np.asarray(vals)
        ends = np.append(starts[1:], len(vals))
        out = vals[starts].copy()
        for r in range(1, int((ends - starts).max()) + 1 if len(starts) else 0):
            live = starts + r < ends
            out[live] = self(out[live], vals[starts[live] + r])
        return out


def reducer(op):
    """The numpy ⊕ of a reduction operator: a ufunc for a built-in name, else a `Reducer`."""
    return UFUNCS[op] if isinstance(op, str) else Reducer(op)
