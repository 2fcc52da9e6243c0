"""`Tensor`: a fibertree — a root level (position 0) with its children.

Index order is row-major: `T[x, y, id]` reads the root level with x, its child with y, and so on
(DESIGN.md §2).  A tensor is immutable once built; constructors validate their input and raise
`FormatError` naming the argument and the first offending index.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import FormatError
from ..limits import Limit
from .dense import Dense
from .element import Element, Pattern
from .level import Level, as_flag, numeric_array, writable_alias
from .sparse_byte_map import SparseByteMap
from .sparse_list import SparseList


class Tensor:
    """A continuous (or discrete) tensor stored as a tree of levels.

    Parameters
    ----------
    format : Level
        The root level, e.g. ``SparseRunList(Element(0.0), ptr=..., left=..., right=...)``.  A level
        tree without buffers is an empty tensor (all fill), usable as an output format (``out=``).
    data : numpy array, optional
        Dense data to convert into `format` (integer modes only: Dense, SparseByteMap or integer
        SparseList levels; the leaf's fill value decides what is stored).
    name : str
        Used in error messages.
    validate : bool
        Check the buffers (default), then copy every writeable one (see `owned`).  Internal builders
        that construct canonical buffers skip both.
    owned : bool
        The caller hands its buffers over and will not write to them.  By default every writeable
        buffer is copied after validation, so that a later write to the caller's array cannot make
        the tensor invalid (or send a kernel outside its buffers).

    Raises
    ------
    FormatError
        The buffers violate the format (unsorted, overlapping, NaN, wrong lengths, ...).
    """

    def __init__(self, format: Level, data=None, name: str = "tensor", validate: bool = True,
                 owned: bool = False):
        if not isinstance(format, Level):
            raise TypeError(f"{name}: format must be a level such as ct.Dense(ct.Element(0.0)), got {format!r}")
        validate, owned = as_flag(validate, "validate"), as_flag(owned, "owned")
        check_nest(format, name)
        if data is not None:
            format = from_dense(format, data, name)
        self.level = format
        self.name = name
        _assign_tile_axes(format, name)
        # buffers for some levels but not all is an error, not an empty tensor: validate says
        # which level lacks them
        if validate and (format.has_data() or _any_buffer(format)):
            format.validate(1, name)
        if validate and not owned:       # unchecked buffers are the caller's responsibility anyway
            _detach(format)

    @classmethod
    def frozen(cls, level: Level, name: str) -> "Tensor":
        """A tensor over canonical, read-only buffers that ctensor built itself (a kernel's output,
        `runtime.output_format`): nothing to validate or copy, and no tile level to number."""
        t = cls.__new__(cls)
        t.level, t.name = level, name
        return t

    # ---- structure
    @property
    def format(self) -> Level:
        return self.level.empty()

    @property
    def ndim(self) -> int:
        return self.level.ndim

    @property
    def fill(self):
        return self.level.fill

    @property
    def leaf_kind(self) -> str:
        return self.level.leaf.kind

    def levels(self) -> list:
        return self.level.levels()

    def modes(self) -> list:
        """The level of each mode (index position), outermost first; tile levels are skipped."""
        return self.level.modes()

    @property
    def is_empty_format(self) -> bool:
        return not self.level.has_data()

    @property
    def nbytes(self) -> int:
        return self.level.nbytes()

    # ---- evaluation
    def __getitem__(self, coords):
        """The value at a point: ints for integer modes, floats or `Limit`s for real modes."""
        if not isinstance(coords, tuple):
            coords = (coords,)
        if len(coords) != self.ndim:
            raise IndexError(f"{self.name} has {self.ndim} modes, got {len(coords)} coordinates")
        bad = [c for c in coords if isinstance(c, bool) or not isinstance(c, (numbers.Real, Limit))]
        if bad:
            raise TypeError(f"{self.name}: coordinates must be numbers or ct.Limit, got {bad[0]!r}")
        for d, (c, lvl) in enumerate(zip(coords, self.modes())):
            if lvl.coord == "int" and not isinstance(c, (int, np.integer)):
                raise TypeError(f"{self.name}: mode {d} is an integer mode, its coordinate must be an int, "
                                f"got {c!r}")
            if lvl.coord == "int" and lvl.shape is not None and not 0 <= c < lvl.shape:
                raise IndexError(f"{self.name}: index {int(c)} out of range for mode {d} of shape {lvl.shape}")
        if self.is_empty_format:
            return self.fill
        return self.level.eval(0, tuple(c if isinstance(c, (int, Limit)) else
                                        int(c) if isinstance(c, np.integer) else float(c) for c in coords))

    def pieces(self) -> list:
        """Stored pieces as (coords, value): an int per integer mode, a closed Limit interval
        (lo, hi) per real mode.  Everything else is the fill value."""
        if self.is_empty_format:
            return []
        return list(self.level.pieces(0))

    def to_numpy(self) -> np.ndarray:
        """Dense numpy array of a tensor whose modes are all integer (Dense, SparseByteMap or integer
        SparseList)."""
        shape = []
        for lvl in self.levels():
            if lvl.is_leaf:
                break
            if lvl.coord != "int":
                raise TypeError(f"{self.name} has a real-indexed mode ({type(lvl).__name__}); use .pieces()")
            shape.append(lvl.shape)
        kind = self.leaf_kind
        dtype = {"bool": np.bool_, "int": np.int64, "float": np.float64}[kind]
        lvls = list(self.levels())
        leaf = lvls[-1]
        if all(type(lv).__name__ == "Dense" for lv in lvls[:-1]) and getattr(leaf, "val", None) is not None:
            return np.asarray(leaf.val, dtype=dtype).reshape(shape).copy()   # fast path: all Dense
        out = np.full(shape, self.fill, dtype=dtype)
        for c, v in self.pieces():
            out[c] = v
        return out

    def __repr__(self):
        return f"Tensor({self.level.format_str()}, ndim={self.ndim})"


def _detach(root: Level):
    """Copy every buffer of the tree that someone may still write to (the caller's arrays, views of
    them): a tensor is validated once, here, so a later write through the caller's reference must
    not reach it (a ptr changed to 10**9 sent a kernel outside its buffers).  Read-only buffers
    (kernel outputs) are kept.  The levels are the caller's objects too: this rebinds their arrays."""
    for lvl in root.levels():
        for attr, v in list(vars(lvl).items()):
            if isinstance(v, np.ndarray) and writable_alias(v):
                setattr(lvl, attr, v.copy())


def _any_buffer(root: Level) -> bool:
    return any(isinstance(v, np.ndarray) for lvl in root.levels() for v in vars(lvl).values())


def check_nest(root: Level, name: str):
    """Every non-leaf level's child is a level instance (TypeError naming the first that is not)."""
    lvl = root
    while not lvl.is_leaf:
        if not isinstance(lvl.child, Level):
            raise TypeError(f"{name}: the child of {type(lvl).__name__} must be a level such as "
                            f"ct.Element(0.0) or ct.Pattern(), got {lvl.child!r}")
        lvl = lvl.child


def _assign_tile_axes(root: Level, name: str):
    """Tile levels (UniformGrid) form a chain at the top; tile k bins mode k."""
    lvls = root.levels()
    m = 0
    while m < len(lvls) and lvls[m].tile:
        lvls[m].axis = m
        m += 1
    if any(lv.tile for lv in lvls[m:]):
        raise FormatError(f"{name}: UniformGrid levels must all sit at the top of the tensor, above the "
                          "coordinate levels they bin")
    if m and m > len(root.modes()):
        raise FormatError(f"{name}: {m} UniformGrid levels but only {len(root.modes())} modes to bin")


def from_dense(fmt: Level, data, name: str) -> Level:
    arr = numeric_array(data, f"{name}: data")
    depth = fmt.ndim
    if arr.ndim != depth:
        raise FormatError(f"{name}: format has {depth} modes but data has shape {arr.shape}")
    return _build(fmt, [arr], name, arr.shape)


def _build(fmt: Level, fibers: list, name: str, shape: tuple) -> Level:
    """`shape`: the data's shape below this level (taken from the array, not from `fibers`,
    which is empty when every fiber above is empty)."""
    if isinstance(fmt, Element):
        return Element(fmt.fill, val=np.array([f.item() for f in fibers]), dtype=
                       {"bool": np.bool_, "int": np.int64, "float": np.float64}[fmt.kind])
    if isinstance(fmt, Pattern):
        # every entry that reaches a Pattern leaf is stored, hence true: a false one (below a Dense
        # level, which stores every entry) cannot be represented
        bad = next((k for k, f in enumerate(fibers) if np.any(f != True)), None)   # noqa: E712
        if bad is not None:
            raise FormatError(f"{name}: a Pattern leaf stores true entries only, but stored entry {bad} "
                              f"(row-major among the stored ones) is {fibers[bad].item()!r}; use "
                              "SparseList(Pattern()) or Dense(Element(False))")
        return Pattern()
    fill = fmt.fill
    if getattr(fmt, "shape", None) is not None and fmt.coord == "int" and fmt.shape != shape[0]:
        raise FormatError(f"{name}: {type(fmt).__name__} level of shape {fmt.shape} but the data's mode "
                          f"has {shape[0]} entries (data shape {shape})")
    if isinstance(fmt, Dense):
        n = shape[0]
        return Dense(_build(fmt.child, [f[i] for f in fibers for i in range(n)], name, shape[1:]), n)
    if isinstance(fmt, SparseByteMap):
        # the child holds every slot (p*n + i), as under Dense; tbl is derived from ptr/idx
        n = shape[0]
        stored = [[i for i in range(n) if np.any(f[i] != fill)] for f in fibers]
        ptr = np.cumsum([0] + [len(s) for s in stored])
        idx = np.array([i for s in stored for i in s], dtype=np.int64)
        slots = [f[i] for f, s in zip(fibers, stored) for i in s] if isinstance(fmt.child, Pattern) else \
            [f[i] for f in fibers for i in range(n)]
        return SparseByteMap(_build(fmt.child, slots, name, shape[1:]), n, ptr, idx)
    if isinstance(fmt, SparseList) and fmt.coord == "real" and fmt.real_given:
        raise FormatError(f"{name}: dense data has integer coordinates, but the SparseList level was asked "
                          "for a real axis (real=True); use ct.points or the level's ptr/idx buffers")
    if isinstance(fmt, SparseList) and (fmt.coord == "int" or fmt.shape is None):
        # dense data has integer coordinates: an unshaped SparseList takes them with the data's shape
        n = shape[0]
        ptr, idx, kids = [0], [], []
        for f in fibers:
            for i in range(n):
                if np.any(f[i] != fill):
                    idx.append(i)
                    kids.append(f[i])
            ptr.append(len(idx))
        if isinstance(fmt.leaf, Pattern) and any(np.any((k != True) & (k != False)) for k in kids):
            raise FormatError(f"{name}: a Pattern leaf holds booleans only")
        return SparseList(_build(fmt.child, kids, name, shape[1:]), ptr=np.array(ptr), idx=np.array(idx, dtype=np.int64), shape=n)
    raise FormatError(f"{name}: cannot build {type(fmt).__name__} from a dense array; use ct.intervals, "
                      "ct.points or the level's buffers")
