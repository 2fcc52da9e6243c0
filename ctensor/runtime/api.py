"""`ct.compile` and `ct.einsum`: the entry points of the compiler (DESIGN.md §6).

Kernels are cached in memory by (einsum text, input formats, scalar kinds, semiring, order, output
format); the generated object code is also cached on disk by the codegen engine, so a new process
compiling the same kernel skips LLVM optimisation and code generation.
"""
from __future__ import annotations

from ..formats.level import Level, as_flag
from ..lang.measure import Measure
from ..lang.semiring import Semiring
from ..formats.tensor import Tensor, check_nest
from ..analysis.guards import enabled_by_default
from ..lang.program import check_order
from .args import split_args, user_measures
from .kernel import Kernel
from .accumulate import split_accumulate
from .output_format import check_output_shape, output_key
from ..errors import InvalidProgramError


class _KernelCache(dict):
    """The kernel cache: a dict whose removals also forget ct.einsum's first look (`_EINSUM_KEYS`,
    which maps straight to kernels, so a repeated einsum hashes no nested format key)."""

    def clear(self):
        _EINSUM_KEYS.clear()
        super().clear()

    def __delitem__(self, key):
        _EINSUM_KEYS.clear()
        super().__delitem__(key)

    def pop(self, *args):
        _EINSUM_KEYS.clear()
        return super().pop(*args)

    def popitem(self):
        _EINSUM_KEYS.clear()
        return super().popitem()


_CACHE: dict = _KernelCache()
# ct.einsum's first look: (text, options, out= token, argument names, then each tensor's format key
# token or each scalar's type) -> (the kernel cache it was found in, the kernel).  A Tensor's token
# is computed once per tensor (`_arg_key`), so a repeated einsum costs a dict lookup and the call.
_EINSUM_KEYS: dict = {}
_INTERNED: dict = {}


def kernel_cache() -> dict:
    """The in-memory kernel cache (key -> Kernel); clear it to force recompilation."""
    return _CACHE


def wait_optimized() -> None:
    """Wait until every kernel compiled so far runs its optimised code.  A large kernel is returned
    at a first tier, correct but 1.3-3x slower, while its optimised code compiles in the background
    (`ctensor.driver.tiering`; `Kernel.wait_optimized` waits for one kernel): call this before
    timing steady-state speed.  `CTENSOR_TIERED=0` compiles every kernel in full before returning it."""
    from ..driver.tiering import wait
    wait()


def _key(text, kwargs, semiring, order, out, assume_valid=False, prove_guards=None):
    if not isinstance(text, str):
        raise TypeError(f"einsum text must be a str, got {type(text).__name__}")
    tensors, scalars = split_args(kwargs)
    fmt = tuple(sorted((k, t.level.format_key()) for k, t in tensors.items()))
    sk = tuple(sorted((k, s[1]) for k, s in scalars.items()))
    of = None
    if isinstance(out, Tensor):
        out = out.level
    if isinstance(out, Level):
        check_nest(out, "out")
        of = output_key(out)
    elif out is not None:       # checked here too: the cache must not map it to the default output
        raise TypeError(f"out= must be a ct.Tensor or a level format such as ct.Dense(ct.Element(0.0)), "
                        f"got {type(out).__name__}")
    check_order(order)
    if semiring is not None and not isinstance(semiring, (str, Semiring)):    # before it reaches the cache's dict
        hint = (" (per-index semirings are not accepted: the boolean measure's indices reduce with ∨ inside a "
                "non-idempotent ⊕, d(x, j; boolean, counting) is ∑_j ∨_x)") if isinstance(semiring, dict) else ""
        raise TypeError(f"semiring= must be a name such as '+', 'min' or '(min,+)', or a ct.Semiring, "
                        f"got {semiring!r}{hint}")
    as_flag(assume_valid, "assume_valid")
    guards = enabled_by_default() if prove_guards is None else as_flag(prove_guards, "prove_guards")
    ms = tuple(sorted((k, m.weight) for k, m in user_measures(kwargs).items()))
    return (" ".join(text.split()), fmt, sk, semiring, tuple(order) if order is not None else None, of,
            bool(assume_valid), guards, ms)


def compile(text: str, *, semiring=None, order=None, out=None, assume_valid=False, prove_guards=None,
            **tensors) -> Kernel:
    """Compile a continuous einsum for the formats of the given tensors.

    Parameters
    ----------
    text : str
        ``Out[i, ...] = expr * d(j, ...; measure, ...)`` (continuous paper Fig. 2).  Measures:
        lebesgue, counting, boolean, or the name of a `ct.Measure` passed as a keyword argument
        (a user measure: a weight of the partition's bounds, ``m=ct.Measure("hi**2 - lo**2")``).
    semiring : '+' (default), 'or', 'min', 'max' (or a paper name such as '(min,+)'), or a
        `ct.Semiring` (⊕ as an expression of a and b, with its identity and laws): the reduction
        operator ⊕, whose identity is the output's fill value.  Default 'or' when every measure is
        boolean.  Under a non-idempotent ⊕ the boolean measure's indices reduce with ∨ innermost
        (∑_j ∨_x, `ctensor.lang.nesting`).  A semiring is part of the kernel's key by its
        definition.
    order : sequence of index names, outermost first; default: the storage order of the tensors.
    out : a Tensor or Level giving the output format; default Dense for integer output modes and
        SparseRunList for real ones, over Element(identity of ⊕).
    assume_valid : accept a program whose validity z3 cannot decide (logged); default: refuse it
        with ValidityUnknown (digest §3.7).  Invalid programs are always refused.
    prove_guards : remove the interval guards z3 proves always true or false (continuous paper
        §6.3, Fig. 19; `ctensor.analysis.guards`).  Default: on, unless the environment variable
        CTENSOR_PROVE_GUARDS is 0.  Results never depend on it; only the generated code does.
    **tensors : ct.Tensor arguments, named numeric scalars and named user measures (ct.Measure).

    Returns a `Kernel`, reusable for any tensors of the same formats.  A large kernel is returned at
    a first tier while its optimised code compiles in the background (`ctensor.driver.tiering`:
    same results, `Kernel.wait_optimized` / `ct.wait_optimized` wait for it).

    Raises InvalidProgramError (malformed program, or invalid under continuous paper §4.3 — see
    `ctensor.analysis.validity` — with the offending access and a counterexample), ValidityUnknown
    (a subclass), TypeError (bad argument types), FormatError (an integer out= level whose shape
    differs from the shape its index has in the inputs).
    """
    key = _key(text, tensors, semiring, order, out, assume_valid, prove_guards)
    k = _CACHE.get(key)
    if k is None and "+=" in text and split_accumulate(text):
        raise InvalidProgramError(f"{text!r}: an accumulating einsum (+=, thaw) runs through ct.einsum(text, "
                                  f"{text.split('[')[0].strip()}=<tensor>, ...); compile the '=' form instead")
    if k is None:
        from ..driver import compile_kernel       # the driver builds kernels (and imports this package)
        k = _CACHE.setdefault(key, compile_kernel(text, tensors, semiring=semiring, order=order, out=out,
                                                  assume_valid=assume_valid, prove_guards=prove_guards))
    if out is not None:
        check_output_shape(out, k, tensors)
    return k


def einsum(text: str, *, semiring=None, order=None, out=None, assume_valid=False, prove_guards=None, **tensors):
    """Compile (or fetch from the cache) and run a continuous einsum.

    Returns a Python scalar for a 0-d output (``s[] = ...``), otherwise a `ct.Tensor`.
    See `compile` for the parameters and errors.

    ``Out[i, ...] += expr`` accumulates into the tensor (or scalar) passed as ``Out=``: the
    result is ``Out_old ⊕ expr`` with ⊕ the reduction (`semiring=`), in Out's format, returned as
    a new tensor (Out itself is not modified); Finch §3 thaw, `runtime.accumulate`.
    ``out=`` a `UniformGrid` with edges over a real SparseList bins the output into its cells
    (`runtime.grid_output`).
    """
    if type(text) is str and "+=" in text or out is not None and getattr(getattr(out, "level", out), "tile", False):
        special = _special_einsum(text, semiring, order, out, assume_valid, prove_guards, tensors)
        if special is not NotImplemented:
            return special
    if type(text) is str:
        try:
            fast = (text, semiring, order if order is None else tuple(order), assume_valid, prove_guards,
                    None if out is None else _out_key(out), *tensors, *map(_arg_key, tensors.values()))
            hit = _EINSUM_KEYS.get(fast)
            k = hit[1] if hit is not None and hit[0] is _CACHE else None     # (a test may swap the cache)
        except TypeError:           # unhashable options, a bad out=: the checked path says what is wrong
            fast, k = None, None
        if k is None:
            key = _key(text, tensors, semiring, order, out, assume_valid, prove_guards)
            compile(text, semiring=semiring, order=order, out=out, assume_valid=assume_valid,
                    prove_guards=prove_guards, **tensors)
            k = _CACHE[key]
            if fast is not None:
                _EINSUM_KEYS[fast] = (_CACHE, k)
        elif out is not None and fast[5][1]:
            check_output_shape(out, k, tensors)
        return k(**tensors)
    return compile(text, semiring=semiring, order=order, out=out, assume_valid=assume_valid,
                   prove_guards=prove_guards, **tensors)(**tensors)


def _special_einsum(text, semiring, order, out, assume_valid, prove_guards, tensors):
    """An accumulating einsum (`runtime.accumulate`) or a UniformGrid output (`runtime.grid_output`);
    NotImplemented for any other."""
    options = dict(semiring=semiring, order=order, out=out, assume_valid=assume_valid, prove_guards=prove_guards)
    from .accumulate import einsum_accumulate
    from .grid_output import bin_output, split_grid
    acc = split_accumulate(text) if isinstance(text, str) else None
    if acc is not None:
        return einsum_accumulate(acc[1], acc[0], compile, options, tensors)
    grid = split_grid(out)
    if grid is None:
        return NotImplemented
    k = compile(text, **{**options, "out": grid[1]}, **tensors)
    written = k(**tensors)
    return Tensor.frozen(bin_output(grid[0], written.level, k.es.out), k.es.out)


def _arg_key(v):
    """What the kernel of an einsum depends on in argument v: a tensor's format key (as a token,
    `_interned`, kept on the tensor: it is immutable), a scalar's type (a measure's weight)."""
    if type(v) is Tensor:
        token = v.__dict__.get("_format_token")
        if token is None:               # (also after a pickle: a token unpickles as None)
            token = v._format_token = _interned(_format_key(v))
        return token
    if isinstance(v, Measure):
        return (Measure, v.weight)
    return type(v)


def _out_key(out):
    """(output_key, has an integer level with a shape to check) of an out= Tensor or Level, computed
    once per object (a format object is not changed once built); TypeError for anything else."""
    lvl = out.level if type(out) is Tensor else out
    key = getattr(lvl, "_ctensor_out_key", None)
    if key is not None and key[0] is not None:          # (a token unpickles as None)
        return key
    if not isinstance(lvl, Level):
        raise TypeError("out= must be a ct.Tensor or a level format")
    check_nest(lvl, "out")
    shaped = any(lv.coord == "int" and getattr(lv, "shape", None) is not None for lv in lvl.modes())
    key = (_interned(output_key(lvl)), shaped)
    try:
        lvl._ctensor_out_key = key
    except AttributeError:          # a level class without a __dict__: computed each call
        pass
    return key


class _Token(int):
    """The id of an interned format key: valid in this process only, so it unpickles (and deep-copies)
    as None, which makes `_arg_key` / `_out_key` compute it again: an id carried into another
    process could equal the token of another format there."""
    __slots__ = ()

    def __reduce__(self):
        return _no_token, ()


def _no_token():
    return None


def _interned(key) -> int:
    """A token for a format key in ct.einsum's first look: the id of the one copy of it kept here
    (never dropped, so ids are never reused), cheap to hash where the nested key is not."""
    return _Token(id(_INTERNED.setdefault(key, key)))


def _format_key(t: Tensor):
    # a tensor is immutable once built: its format key is computed once
    try:
        return t._format_key
    except AttributeError:
        key = t._format_key = t.level.format_key()
        return key
