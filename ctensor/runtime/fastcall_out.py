"""The output of a fast call (`runtime.fastcall`) built from the one `bytes` object the native
runner copied the kernel's buffers into (`runtime.runner`), as straight-line Python generated once
per kernel from its output format, so a call does no format dispatch and no per-buffer ctypes.

`output_lines(kernel, cell_at, shape_of)` returns the lines (and their globals) that build the
output Tensor from `b` (the bytes) and `blk` (the argument block, whose grown cell at slot c holds
{0, capacity, byte offset of the buffer in b}).  Every array is `np.frombuffer(b, ...)`: read-only,
and it keeps `b` alive, so an output owns its memory and nobody can write it.

Inlined: nests of Dense, SparseList and SparseRunList levels over an Element or Pattern leaf, or a
SparseByteMap at the root, not merged (the common outputs).  A run list left at the default
closedness is stored homogeneous when every endpoint has one ε and its first run's endpoints are
finite, or when every ε is (0, -1) (then `merge_output.store_closed` would say the same), with
Limit endpoints when one fiber's endpoints are all finite and their ε differ; any other run
list, and every other output format (SparsePoint, SparseInterval, a merged output, a
SparseByteMap below another level), goes through `output_format.rebuild_output` with
`bytes_taker`, which is the checked path's code.  A count beyond a buffer's capacity raises
RuntimeError (the kernel's promise broken), as `buffers.adopt_array` does.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from ..formats.dense import Dense
from ..formats.element import Element, Pattern
from ..formats.level import CLOSED, DefaultClosed
from ..formats.sparse_byte_map import SparseByteMap
from ..formats.sparse_interval import SparseInterval
from ..formats.sparse_point import SparsePoint
from ..formats.sparse_list import SparseList
from ..formats.sparse_run_list import SparseRunList
from ..formats.tensor import Tensor
from .merge_output import store_closed
from .output_format import NP_DTYPE

_SIZES = {"ptr": 8, "idx": 8, "left": 8, "right": 8, "left_eps": 1, "right_eps": 1, "tbl": 1, "srt": 8,
          "count": 8}
_KNOWN = {"SparseList": ("ptr", "idx"), "SparseRunList": ("ptr", "left", "right", "left_eps", "right_eps"),
          "SparsePoint": ("ptr", "idx"), "SparseInterval": ("ptr", "idx", "left", "right", "left_eps", "right_eps"),
          "SparseByteMap": ("tbl", "srt", "count"), "Element": ("val",)}


def element_size(out_fmt, depth: int, attr: str):
    """Bytes per element of grown buffer `attr` of output level `depth` (as the level's lowering
    allocates it: `lower.context.GrowBuffer`), or None when not known here."""
    lvls = out_fmt.levels()
    lvl = lvls[depth] if depth < len(lvls) else None
    if lvl is None or attr not in _KNOWN.get(type(lvl).__name__, ()):
        return None
    if attr == "val":
        return 4 if getattr(lvl, "single", False) else np.dtype(NP_DTYPE[lvl.kind]).itemsize
    return _SIZES[attr]


# ptr of a one-fiber level of q < 64 entries, [0, q]: read-only (bytes-backed), so outputs share them
_PTR1 = [np.frombuffer(np.array([0, q], np.int64).tobytes(), np.int64) for q in range(64)]  # _ptr1


def _ptr1(q):
    """[0, q] as a read-only int64 array."""
    return np.frombuffer(np.array([0, q], np.int64).tobytes(), np.int64)


def _short(n, capacity):
    raise RuntimeError(f"kernel output buffer holds fewer than {n} elements ({capacity})")


def bytes_taker(b, blk, cell_at):
    """`take` of `output_format.rebuild_output` over the bytes of a runner call."""
    def take(depth, attr, n, dtype):
        c = cell_at[(depth, attr)]
        if not 0 <= n <= blk[c + 1]:
            _short(n, blk[c + 1])
        return np.frombuffer(b, dtype, n, blk[c + 2])
    return take


def inlined(out_fmt, merge: bool) -> bool:
    """Is this output built by generated lines (module docstring), not by `rebuild_output`?"""
    if out_fmt is None or merge:
        return False
    for d, lvl in enumerate(out_fmt.levels()):
        if type(lvl) not in (Dense, SparseList, SparseRunList, Element, Pattern) and \
                not (d == 0 and type(lvl) is SparseByteMap) and \
                not (d == 0 and type(lvl) in (SparsePoint, SparseInterval) and lvl.coord == "real"):
            return False                  # (at the root: one fiber)
    return True


def output_lines(kernel, cell_at: dict, shape_of) -> tuple[list, dict]:
    """(lines, globals) building the output of `kernel` from `b` and `blk` into a `return`.
    `cell_at`: (depth, attr) -> block slot of the grown cell; `shape_of(depth)`: an expression of
    the shape of integer output level `depth` (from the inputs' cached modes)."""
    env = dict(frombuffer=np.frombuffer, short=_short, q_at=struct.Struct("<q").unpack_from,
               d_at=struct.Struct("<d").unpack_from, isfinite=math.isfinite, TENSOR=Tensor, NEW=object.__new__,
               ELEMENT=Element, RUNS=SparseRunList, PTR1=_PTR1, PTR=_ptr1, BYTEMAP=SparseByteMap,
               SORT=np.sort, BOOL=np.dtype(np.bool_), POINT=SparsePoint, INTERVAL=SparseInterval,
               DENSE=Dense.frozen, SRL=SparseRunList.frozen, SL=_sparse_list, PATTERN=Pattern,
               BYTE=[bytes([i]) for i in range(256)], ZERO=b"\x00", MINUS=b"\xff", I64=np.dtype(np.int64), F64=np.dtype(np.float64),
               I8=np.dtype(np.int8), NAME=kernel.es.out)
    lines, counted = [], set()

    def check(depth, cells, n):
        """One test that n elements fit in each (depth, attr) buffer (a kernel's promise:
        RuntimeError if not)."""
        caps = [f"blk[{cell_at[key] + 1}]" for key in cells]
        lines.extend([f"if not (0 <= {n} <= {caps[0]}{''.join(f' and {n} <= {c}' for c in caps[1:])}):",
                      f"    short({n}, {caps[0] if len(caps) == 1 else f'min({chr(44).join(caps)})'})"])

    def buf(var, depth, attr, n, dtype, checked=False):
        c = cell_at[(depth, attr)]
        if not checked:
            check(depth, [(depth, attr)], n)
        lines.append(f"{var} = frombuffer(b, {dtype}, {n}, blk[{c + 2}])")
        return c

    def build(lvl, depth, npos):
        if isinstance(lvl, Pattern):
            lines.append(f"L{depth} = PATTERN()")
        elif isinstance(lvl, Element):
            single = getattr(lvl, "single", False)
            env[f"LEAF{depth}"] = (lvl.kind, lvl._fill, single)
            env[f"DT{depth}"] = np.dtype(np.float32 if single else NP_DTYPE[lvl.kind])
            buf(f"val{depth}", depth, "val", npos, f"DT{depth}", checked=npos in counted)
            # Element.frozen inline (its dtype test costs more than the rest)
            lines.extend([f"L{depth} = NEW(ELEMENT)", f"L{depth}.kind, L{depth}._fill, L{depth}.single = LEAF{depth}",
                          f"L{depth}.val = val{depth}"])
        elif isinstance(lvl, (SparsePoint, SparseInterval)):
            _one_entry(lvl, depth, buf, check, build, lines, env, cell_at)
        elif isinstance(lvl, SparseByteMap):
            # the root (`inlined`): one fiber, whose slots are its ids; Finch's freeze sorts them
            c, t = cell_at[(depth, "srt")], cell_at[(depth, "tbl")]
            check(depth, [(depth, "count")], 1)
            lines.extend([f"n{depth} = {shape_of(depth)}",
                          f"q{depth} = q_at(b, blk[{cell_at[(depth, 'count')] + 2}])[0]"])
            check(depth, [(depth, "srt")], f"q{depth}")
            check(depth, [(depth, "tbl")], f"n{depth}")
            lines.extend([f"idx{depth} = SORT(frombuffer(b, I64, q{depth}, blk[{c + 2}]))",
                          f"idx{depth}.flags.writeable = False",
                          f"ptr{depth} = PTR1[q{depth}] if q{depth} < 64 else PTR(q{depth})",
                          f"tbl{depth} = frombuffer(b, BOOL, n{depth}, blk[{t + 2}])"])
            build(lvl.child, depth + 1, f"n{depth}")
            lines.extend([f"L{depth} = NEW(BYTEMAP)",
                          f"L{depth}.child, L{depth}.shape, L{depth}.ptr, L{depth}.idx, L{depth}.tbl = "
                          f"L{depth + 1}, n{depth}, ptr{depth}, idx{depth}, tbl{depth}"])
        elif isinstance(lvl, Dense):
            lines.append(f"n{depth} = {shape_of(depth)}")
            build(lvl.child, depth + 1, f"{npos} * n{depth}" if npos != "1" else f"n{depth}")
            lines.append(f"L{depth} = DENSE(L{depth + 1}, n{depth})")
        else:
            q = f"q{depth}"
            if npos == "1":       # one fiber: ptr = [0, q] (ptr[0] = 0: the ABI), shared read-only arrays
                c = cell_at[(depth, "ptr")]
                check(depth, [(depth, "ptr")], 2)
                lines.extend([f"{q} = q_at(b, blk[{c + 2}] + 8)[0]",
                              f"ptr{depth} = PTR1[{q}] if {q} < 64 else frombuffer(b, I64, 2, blk[{c + 2}])"])
            else:
                c = buf(f"ptr{depth}", depth, "ptr", f"{npos} + 1", "I64")
                lines.append(f"{q} = q_at(b, blk[{c + 2}] + 8 * {npos})[0]")
            leaf = [(depth + 1, "val")] if type(lvl.child) is Element else []
            counted.add(q)               # a leaf of q values is checked with the level's buffers
            if isinstance(lvl, SparseList):
                check(depth, [(depth, "idx")] + leaf, q)
                buf(f"idx{depth}", depth, "idx", q, "F64" if lvl.coord == "real" else "I64", checked=True)
                build(lvl.child, depth + 1, q)
                shape = shape_of(depth) if lvl.coord == "int" else "None"
                lines.append(f"L{depth} = SL(L{depth + 1}, ptr{depth}, idx{depth}, {shape}, "
                             f"{lvl.coord == 'real'})")
            else:
                check(depth, [(depth, a) for a in ("left", "right", "left_eps", "right_eps")] + leaf, q)
                _run_list(lvl, depth, q, buf, build, lines, env, cell_at, npos == "1")
        return lines

    build(kernel.out_fmt, 0, "1")
    lines += ["T = NEW(TENSOR)", "T.level, T.name = L0, NAME", "return T"]       # Tensor.frozen inline
    return lines, env


def _run_list(lvl, depth, q, buf, build, lines, env, cell_at, one_fiber):
    d = depth
    cl = buf(f"left{d}", d, "left", q, "F64", checked=True)
    cr = buf(f"right{d}", d, "right", q, "F64", checked=True)
    build(lvl.child, d + 1, q)
    # the ε arrays are views only where the list is stored heterogeneous
    ce, cf = cell_at[(d, "left_eps")], cell_at[(d, "right_eps")]
    eps = f"frombuffer(b, I8, {q}, blk[{ce + 2}]), frombuffer(b, I8, {q}, blk[{cf + 2}])"
    hetero = f"SRL(L{d + 1}, ptr{d}, left{d}, right{d}, None, {eps})"
    if lvl.closed is None:
        lines.append(f"L{d} = {hetero}")
        return
    default = isinstance(lvl.closed, DefaultClosed)
    # (left ε byte, right ε byte) -> the closedness store_closed gives a homogeneous list
    env[f"CLOSEDBY{d}"] = {(a % 256, c % 256): name for name, (a, c) in CLOSED.items()
                           if default or name == lvl.closed}
    env[f"EMPTY{d}"] = "left" if default else lvl.closed          # store_closed of no runs
    env[f"STORE{d}"] = lambda out, closed=lvl.closed: store_closed(out, closed)
    finite = (f" and isfinite(d_at(b, blk[{cl + 2}])[0]) and isfinite(d_at(b, blk[{cr + 2}])[0])"
              if default else "")
    ends = (f"e = blk[{ce + 2}]", f"f = blk[{cf + 2}]")
    if default and one_fiber:
        # the usual [a, b) result first, without a table; every ε (0, -1) is 'left' whatever the
        # endpoints (an infinite one's ε is free, store_closed defaults it to 'left' too), no runs
        # is 'left' as well.  Otherwise, when every endpoint is finite (the extremes of one fiber's
        # sorted runs are), store_closed's rule on all of them: one ε a side, homogeneous, else Limits
        x = lambda k: f"d_at(b, blk[{k}] + 8 * ({q} - 1))[0]"               # noqa: E731
        lines.extend([*ends,
                      f"if b.count(ZERO, e, e + {q}) == {q} and b.count(MINUS, f, f + {q}) == {q}:",
                      f"    L{d} = NEW(RUNS)",                              # SparseRunList.frozen inline
                      f"    L{d}.child, L{d}.closed, L{d}.ptr, L{d}.left, L{d}.right = L{d + 1}, 'left', "
                      f"ptr{d}, left{d}, right{d}",
                      f"    L{d}.left_eps = L{d}.right_eps = None",
                      f"elif isfinite(d_at(b, blk[{cl + 2}])[0]) and isfinite({x(cl + 2)}) and "
                      f"isfinite(d_at(b, blk[{cr + 2}])[0]) and isfinite({x(cr + 2)}):",
                      "    x, y = b[e], b[f]",
                      f"    if b.count(BYTE[x], e, e + {q}) == {q} and b.count(BYTE[y], f, f + {q}) == {q}:",
                      f"        cl = CLOSEDBY{d}.get((x, y))",
                      f"        L{d} = SRL(L{d + 1}, ptr{d}, left{d}, right{d}, cl) if cl is not None else "
                      f"STORE{d}({hetero})",
                      "    else:",
                      f"        L{d} = {hetero}",
                      "else:",
                      f"    L{d} = STORE{d}({hetero})"])
        return
    finite = (f" and isfinite(d_at(b, blk[{cl + 2}])[0]) and isfinite(d_at(b, blk[{cr + 2}])[0])"
              if default else "")
    lines.extend([
        f"if {q} == 0:",
        f"    L{d} = SRL(L{d + 1}, ptr{d}, left{d}, right{d}, EMPTY{d})",
        "else:",
        *("    " + ln for ln in ends),
        f"    cl = CLOSEDBY{d}.get((b[e], b[f]))",
        f"    if cl is not None and b.count(BYTE[b[e]], e, e + {q}) == {q} and "
        f"b.count(BYTE[b[f]], f, f + {q}) == {q}{finite}:",
        f"        L{d} = SRL(L{d + 1}, ptr{d}, left{d}, right{d}, cl)",
        "    else:",
        f"        L{d} = STORE{d}({hetero})"])


def _one_entry(lvl, d, buf, check, build, lines, env, cell_at):
    """A real SparsePoint / SparseInterval at the root: its one fiber holds one pinpoint or run
    (written as a SparseList / SparseRunList, `narrow_output`), else `rebuild_output` raises the
    FormatError naming it.  A SparseInterval's closedness is `narrow_output.to_sparse_interval`'s:
    its finite endpoints' ε, a side with none taking 'left''s; an explicit one must hold there."""
    c = cell_at[(d, "ptr")]
    check(d, [(d, "ptr")], 2)
    lines.extend([f"if q_at(b, blk[{c + 2}] + 8)[0] != 1 or q_at(b, blk[{c + 2}])[0]:",
                  "    return generic(kw, blk, b)"])
    leaf = [(d + 1, "val")] if type(lvl.child) is Element else []
    if isinstance(lvl, SparsePoint):
        check(d, [(d, "idx")] + leaf, 1)
        buf(f"idx{d}", d, "idx", 1, "F64", checked=True)
        build(lvl.child, d + 1, "1")
        lines.extend([f"L{d} = NEW(POINT)", f"L{d}.child, L{d}.shape, L{d}.coord, L{d}.positions, L{d}.idx = "
                      f"L{d + 1}, None, 'real', False, idx{d}"])
        return
    check(d, [(d, a) for a in ("left", "right", "left_eps", "right_eps")] + leaf, 1)
    cl = buf(f"left{d}", d, "left", 1, "F64", checked=True)
    cr = buf(f"right{d}", d, "right", 1, "F64", checked=True)
    build(lvl.child, d + 1, "1")
    ce, cf = cell_at[(d, "left_eps")], cell_at[(d, "right_eps")]
    env["SIGNED"] = [i - 256 if i > 127 else i for i in range(256)]
    env["CLOSED_OF"] = {ends: name for name, ends in CLOSED.items()}
    lines.extend([f"ea = SIGNED[b[blk[{ce + 2}]]] if isfinite(d_at(b, blk[{cl + 2}])[0]) else None",
                  f"ec = SIGNED[b[blk[{cf + 2}]]] if isfinite(d_at(b, blk[{cr + 2}])[0]) else None"])
    if isinstance(lvl.closed, DefaultClosed):
        lines.extend(["ea = 0 if ea is None else ea", "ec = (-1 if ea == 0 else 0) if ec is None else ec",
                      "cl = CLOSED_OF.get((ea, ec), 'left')"])
    else:
        env[f"ENDS{d}"] = CLOSED[lvl.closed]
        lines.extend([f"if (ea is not None and ea != ENDS{d}[0]) or (ec is not None and ec != ENDS{d}[1]):",
                      "    return generic(kw, blk, b)", f"cl = {lvl.closed!r}"])
    lines.extend([f"L{d} = NEW(INTERVAL)",
                  f"L{d}.child, L{d}.closed, L{d}.coord, L{d}.shape = L{d + 1}, cl, 'real', None",
                  f"L{d}.left, L{d}.right = left{d}, right{d}"])


def _sparse_list(child, ptr, idx, shape, real):
    """A SparseList over arrays a kernel wrote (no conversion or check), as `SparseList(...)` with
    `real=` given would build it."""
    lv = SparseList.__new__(SparseList)
    lv.child, lv.real_given, lv.coord, lv.shape, lv.ptr, lv.idx = child, True, "real" if real else "int", shape, ptr, idx
    return lv
