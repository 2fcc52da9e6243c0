"""The level interface shared by every fibertree level format.

Source: Finch paper §3 (Table 3), Finch.jl `src/tensors/abstract_level.jl`; DESIGN.md §3.

A runtime `Level` owns numpy buffers for all fibers of one mode (plus its child level).  The root
fiber of a tensor is position 0.  At compile time `virtualize(ctx)` turns a level into a
`VirtualLevel` whose buffers are kernel parameters; the virtual level implements the Finch
lifecycle used by the lowering:

  declare(ctx, npos)            make fibers 0..npos-1 empty (fill) and writable
  assemble(ctx, start, stop)    make child slots start..stop exist, holding the fill value
  freeze(ctx, npos)             finish writes (counts -> prefix sums); read-only afterwards
  unfurl(ctx, pos, ext, mode)   the looplet nest of fiber `pos` along this level's index
  read_leaf / write_leaf        leaf levels only: read the value / write x = op(x, rhs)

`thaw` is the inverse of freeze (Finch §3).  A kernel only writes outputs it declared; an
accumulating einsum (`Out[...] += expr`) thaws an existing tensor in the runtime instead
(`runtime.accumulate`): its stored entries are the first pass of the output, the kernel's writes
the second, and the freeze is the ⊕-merge of the passes (Dense, SparseList, SparseRunList levels).
"""
from __future__ import annotations

import operator

import numpy as np

from ..errors import FormatError


class Facts(tuple):
    """Facts of a level's data inside its `format_key` (SparseInterval: every start finite, every
    start -inf; integer ranges tiling 0..n-1): the generated code is specialised for them, but
    they are not part of the format a user chooses, so `Kernel` compiles a sibling kernel for a
    tensor of the same format whose facts differ (`strip_facts`)."""


def strip_facts(key):
    """`key` without its `Facts`: equal for two tensors of one format (T.format)."""
    if isinstance(key, Facts):
        return None
    if isinstance(key, tuple):
        return tuple(strip_facts(k) for k in key if not isinstance(k, Facts))
    return key


class Level:
    """Base class of runtime levels."""

    child: "Level | None" = None
    coord: str = "int"            # 'int' or 'real': the kind of this level's index
    # True when every stored coordinate is a single point (a pinpoint or an integer), so the
    # effectual pieces along this level's index are points (continuous paper §4.3, Fig. 7)
    pinpoints: bool = False
    # True for tile levels (UniformGrid) that bin the axis of a coordinate level below them and
    # read no index of their own
    tile: bool = False

    # ---- structure
    @property
    def ndim(self) -> int:
        return (0 if self.is_leaf else 1) + (self.child.ndim if self.child is not None else 0)

    @property
    def is_leaf(self) -> bool:
        return False

    @property
    def leaf(self) -> "Level":
        lvl = self
        while not lvl.is_leaf:
            lvl = lvl.child
        return lvl

    @property
    def fill(self):
        return self.leaf.fill

    def levels(self) -> list:
        out, lvl = [], self
        while lvl is not None:
            out.append(lvl)
            lvl = lvl.child
        return out

    def modes(self) -> list:
        """The levels that read an index, outermost first (every level but tiles and the leaf):
        mode k of the tensor is `modes()[k]`."""
        return [lv for lv in self.levels() if not lv.is_leaf and not lv.tile]

    def format_key(self) -> tuple:
        """Everything the generated code depends on: level kinds, dtypes, closedness, fills, and
        facts of the data the code is specialised for (wrapped in `Facts`)."""
        raise NotImplementedError

    def format_str(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.format_str()

    def empty(self) -> "Level":
        """A level of the same format holding no data (used as an output format)."""
        raise NotImplementedError

    def has_data(self) -> bool:
        raise NotImplementedError

    # ---- data
    def child_count(self, npos: int) -> int:
        """Number of child positions used by `npos` fibers of this level."""
        raise NotImplementedError

    def arrays(self) -> list:
        """Buffers in kernel-parameter order (this level's, then the child's)."""
        raise NotImplementedError

    def validate(self, npos: int, name: str):
        raise NotImplementedError

    def eval(self, pos: int, coords: tuple):
        raise NotImplementedError

    def pieces(self, pos: int):
        """Yield (coords, value) of the stored (non-fill-region) pieces of fiber `pos`."""
        raise NotImplementedError

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays() if isinstance(a, np.ndarray))

    def virtualize(self, ctx, name: str):
        raise NotImplementedError


def real_coords(x, name: str) -> np.ndarray | None:
    """Real coordinates of a level: a float32 array is kept as given (no copy; kernels read it
    widened to float64, which is exact), anything else becomes float64.  None stays None."""
    if x is None:
        return None
    single = getattr(x, "dtype", None) == np.float32
    return as_array(x, name, np.float32 if single else np.float64)


def real_endpoints(left, right, names=("left", "right")):
    """(left, right) interval endpoints of a real level: float32 kept when both are float32 (one
    width per level: the format key names it), float64 otherwise."""
    if getattr(left, "dtype", None) == np.float32 and getattr(right, "dtype", None) == np.float32:
        return real_coords(left, names[0]), real_coords(right, names[1])
    return (None if left is None else as_array(left, names[0], np.float64),
            None if right is None else as_array(right, names[1], np.float64))


def coord_suffix(*arrays) -> tuple:
    """The format-key suffix of real coordinate arrays: ('float32',) when stored in single
    precision (a kernel reads its buffers at the compiled width), () otherwise."""
    return ("float32",) if any(a is not None and a.dtype == np.float32 for a in arrays) else ()


def as_array(x, name: str, dtype=None, ndim=1) -> np.ndarray:
    """Coerce user input to a contiguous numpy array, raising FormatError on bad shape/dtype."""
    try:
        a = np.asarray(x)
    except Exception as exc:  # pragma: no cover - numpy raises many kinds
        raise FormatError(f"{name}: cannot be converted to an array ({exc})") from None
    if a.ndim != ndim:
        raise FormatError(f"{name}: expected a {ndim}-D array, got shape {a.shape}")
    if a.dtype == object or a.dtype.kind not in "biuf":
        raise FormatError(f"{name}: expected a numeric array, got dtype {a.dtype}")
    if dtype is not None:
        if np.dtype(dtype).kind in "iu" and a.dtype.kind == "f":
            if a.size and not np.all(np.isfinite(a)):
                raise FormatError(f"{_first(a, ~np.isfinite(a), name)} is not a finite integer")
            if a.size and not np.all(a == np.round(a)):
                raise FormatError(f"{_first(a, a != np.round(a), name)} is not an integer")
        if np.dtype(dtype).kind == "f" and a.dtype.kind in "iu" and a.dtype.itemsize == 8 and a.size:
            ok = float_exact(a, a.astype(dtype))
            if not ok.all():
                raise FormatError(f"{_first(a, ~ok, name)} is not exactly a float64 (integers past "
                                  "2**53 are rounded): pass floats")
        a = a.astype(dtype, copy=False)
    return np.ascontiguousarray(a)


def _first(a: np.ndarray, bad: np.ndarray, name: str) -> str:
    """'name[i] = v' (or 'name[i, j] = v') for the first true entry of `bad`, in row-major order."""
    at = np.unravel_index(int(np.flatnonzero(bad)[0]), a.shape)
    return f"{name}[{', '.join(str(int(i)) for i in at)}] = {a[at].item()!r}"


def float_exact(src: np.ndarray, conv: np.ndarray) -> np.ndarray:
    """Where converting 64-bit integers `src` to floats `conv` kept the value (past 2**53 it rounds;
    past the int range the cast back is undefined, so those count as changed)."""
    with np.errstate(invalid="ignore"):
        lim = 2.0 ** (64 if src.dtype.kind == "u" else 63)
        return (conv.astype(src.dtype) == src) & (conv < lim) & (conv >= -2.0 ** 63)


def writable_alias(a: np.ndarray) -> bool:
    """May anyone write to `a`'s memory?  False only for a kernel output: read-only views all the way
    down to a buffer object that declares itself frozen (`runtime.buffers`, `FROZEN_BUFFER`), or
    to an immutable `bytes` object.  A
    read-only array the caller owns can be made writeable again (`flags.writeable = True`), and a
    read-only view of a bytearray or mmap shares memory someone else writes, so both count as
    writable."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return True
        a = a.base
    # bytes are immutable: a small kernel output is copied into one (`runtime.buffers.adopt_array`)
    return not (type(a) is bytes or getattr(a, FROZEN_BUFFER, False))


FROZEN_BUFFER = "ctensor_frozen_buffer"     # attribute of the kernel-output buffer owners


def numeric_array(x, name: str) -> np.ndarray:
    """`x` as a bool, integer or float array; an object array of numbers takes their own dtype, and
    anything else (complex values, strings, None) raises FormatError naming `name`."""
    a = np.asarray(x)
    if a.dtype.kind == "O":
        try:
            a = np.asarray(a.tolist())
        except (ValueError, TypeError):
            pass
    if a.dtype.kind not in "biuf":
        raise FormatError(f"{name}: expected bool, integer or float values, got dtype {a.dtype}")
    return a


def as_flag(v, name: str) -> bool:
    """A yes/no argument: a bool (or numpy bool); anything else, such as the truthy string 'no',
    raises TypeError naming the argument."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name}= must be True or False, got {v!r}")
    return bool(v)


def as_shape(shape, level: str):
    """A level's `shape`: None, or a non-negative integer (int, numpy integer, or a float equal to
    one, e.g. 3.0).  Raises FormatError naming the level otherwise (2.5 was silently cut to 2)."""
    if shape is None:
        return None
    try:
        n = operator.index(shape)
    except TypeError:
        if not (isinstance(shape, (float, np.floating)) and float(shape).is_integer()):
            raise FormatError(f"{level} shape must be a non-negative integer, got {shape!r}") from None
        n = int(shape)
    if n < 0:
        raise FormatError(f"{level} shape must be a non-negative integer, got {shape!r}")
    if n >= 2**63:     # shapes and positions are int64 in the generated code
        raise FormatError(f"{level} shape must be below 2**63, got {shape!r}")
    return int(n)


def check_no_nan(a: np.ndarray, name: str):
    if a.dtype.kind == "f" and a.size:
        nan = np.isnan(a)
        if nan.any():
            raise FormatError(f"{name}[{int(np.flatnonzero(nan)[0])}] is NaN")


def check_coords(idx: np.ndarray, coord: str, shape, name: str):
    """Stored coordinates: finite pinpoints on a real axis, ids in [0, shape-1] on an integer one."""
    if coord == "real":
        check_no_nan(idx, f"{name}.idx")
        bad = np.flatnonzero(np.isinf(idx))
        if bad.size:
            raise FormatError(f"{name}.idx[{int(bad[0])}] is infinite")
    elif idx.size:
        if shape is None:
            raise FormatError(f"{name}: an integer level needs a shape")
        bad = np.flatnonzero((idx < 0) | (idx >= shape))
        if bad.size:
            raise FormatError(f"{name}.idx[{int(bad[0])}] = {idx[bad[0]].item()} outside [0, {shape - 1}]")


def check_ptr(ptr: np.ndarray, npos: int, nnz: int, name: str):
    if ptr.shape != (npos + 1,):
        raise FormatError(f"{name}.ptr: expected length {npos + 1}, got {ptr.shape[0]}")
    if ptr[0] != 0:
        raise FormatError(f"{name}.ptr[0] must be 0, got {ptr[0]}")
    d = np.diff(ptr)
    if (d < 0).any():
        raise FormatError(f"{name}.ptr[{int(np.flatnonzero(d < 0)[0]) + 1}] decreases")
    if ptr[-1] != nnz:
        raise FormatError(f"{name}.ptr[-1] = {ptr[-1]} but there are {nnz} entries")


def check_sorted_fibers(idx: np.ndarray, ptr: np.ndarray, name: str, what: str = "coordinate"):
    """Coordinates strictly increasing inside each fiber (neighbours compared except across fiber
    starts); raises FormatError naming the first that is not greater than the previous one."""
    if idx.size > 1:
        bad = np.diff(idx) <= 0
        starts = ptr[1:-1]
        bad[starts[(starts > 0) & (starts < idx.size)] - 1] = False
        bad = np.flatnonzero(bad)
        if bad.size:
            k = int(bad[0] + 1)
            raise FormatError(f"{name}.idx[{k}] = {idx[k].item()!r} is not greater than the previous "
                              f"{what} ({what}s must be sorted and distinct within a fiber)")


CLOSED = {"left": (0, -1), "right": (1, 0), "both": (0, 0), "neither": (1, -1)}


class DefaultClosed(str):
    """The closedness 'left' when nobody asked for it: equal to 'left' everywhere (input levels
    read it as [a, b)), but an output level left at the default may store its result in whatever
    closedness it has, while an output given `closed=` explicitly must hold exactly that one."""

    def __repr__(self):
        return "'left'"

    def __reduce__(self):
        return DefaultClosed, ("left",)


DEFAULT_CLOSED = DefaultClosed("left")


def closed_eps(closed: str, name="closed"):
    """(left ε, right ε) of a closedness name: 'left' = [a, b) = [a, b-ε]."""
    if not isinstance(closed, str) or closed not in CLOSED:
        raise FormatError(f"{name}: expected one of {sorted(CLOSED)}, got {closed!r}")
    return CLOSED[closed]
