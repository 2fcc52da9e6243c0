"""The per-call fast path of a `Kernel` (issue 27: a microsecond call path).

A call writes one int64 argument block (slot k = parameter k of the kernel, `driver.build`'s
getters; `Kernel.abi` documents it) and runs the packed entry point.  Everything about a tensor
that goes into the block — its buffers' addresses and lengths, its modes' shapes — is fixed once
the tensor is built (tensors are immutable), so it is computed and checked against the compiled
format key once per (kernel, tensor) and kept in `FastCall.seen`, keyed by the tensor's id and
guarded by a weak reference (no address outlives its tensor, nothing is stored on the tensor, so
nothing stale survives a pickle or a copy).  A call then only concatenates those tuples, adds the
scalars and the output cells, and builds the block as one `array('q')`: a fresh block per call, so
calls from many threads share no mutable memory; the native code runs without the GIL (ctypes
releases it around the call).

The result cell of a 0-d output and the [address, capacity] cells of grown output buffers sit
after the argument slots in the same block.  Anything unusual — a tensor of other facts (a sibling
kernel), a missing or mistyped argument, a numpy scalar of another kind — returns `SLOW`, a
non-zero status `Failed`, and `Kernel.__call__` takes the checked path, which raises the right
error or runs the right sibling.
"""
from __future__ import annotations

import struct
import weakref
from array import array
from ctypes import string_at

import numpy as np
from numpy import frombuffer

from ..formats.dense import Dense
from ..formats.element import Element
from ..formats.tensor import Tensor
from ..lang.affine import form
from ..lang.program import accesses
from .buffers import SMALL, adopt_array, free, free_ptr
from .output_format import NP_DTYPE

SLOW = object()          # "take the checked path"


class Failed:
    """A fast call whose kernel returned a non-zero status (its grown buffers already freed)."""
    __slots__ = ("status",)

    def __init__(self, status):
        self.status = status


_D = struct.Struct("<d")
_Q = struct.Struct("<q")
_INT64 = range(-2 ** 63, 2 ** 63)


class FastCall:
    """The block plan of one kernel (module docstring), compiled into a straight-line Python
    function `call(kwargs)` (`source`: one `kw.get` per argument, the cached tuples concatenated,
    one ctypes call), as `dataclasses` writes its `__init__`.  It returns the result, `SLOW`, or
    `Failed`."""

    def __init__(self, kernel):
        self.kernel = kernel
        getters = kernel.getters
        n = len(getters)
        self.seen = {}               # id(tensor) -> (weakref, slots tuple, shapes tuple)
        sigs, lines, parts, cells, extra = {}, [], [], [], 0
        for slot, g in enumerate(getters):
            if g[0] == "in":
                sigs.setdefault(g[1], []).append((g[2], g[3]))
        # every input is checked, also one with no slot of its own; in block order
        names = list(sigs) + [name for name in kernel.formats if name not in sigs]
        self.inputs = [(name, kernel.formats[name], tuple(sigs.get(name, ()))) for name in names]
        for j, name in enumerate(names):
            lines += [f"t = kw.get({name!r})",
                      "h = seen_get(id(t))",
                      "if h is None or h[0]() is not t:",
                      f"    h = admit({j}, t)",
                      "    if h is None:",
                      "        return SLOW",
                      f"v{j}, sh{j} = h[1], h[2]"]
        pos = {name: j for j, name in enumerate(names)}
        # a user measure passed again must be the one compiled for (`Kernel.pack` says which)
        measures = tuple(kernel._measures.items())
        for j, (name, _) in enumerate(measures):
            lines += [f"m = kw.get({name!r})", f"if m is not None and m is not M{j}[1] and m != M{j}[1]:",
                      "    return SLOW"]
        for slot, g in enumerate(getters):
            if g[0] == "in":
                if not parts or parts[-1] != f"v{pos[g[1]]}":
                    parts.append(f"v{pos[g[1]]}")
            elif g[0] == "scalar":
                lines += _scalar_lines(f"s{slot}", g[1], kernel.scalar_kinds[g[1]])
                parts.append(f"(s{slot},)")
            elif g[0] == "outshape":
                parts.append(f"(sh{pos[g[1][0]]}[{g[1][1]}],)")
            else:       # a cell after the slots: ("out",) one value, ("grow", d, attr) two
                parts.append("(0,)")
                cells.append((slot, n + extra, None if g[0] == "out" else (g[1], g[2])))
                extra += 1 if g[0] == "out" else 2
        inputs = [p for p in parts if p[0] == "v"]
        if len(inputs) != len(set(inputs)):     # `driver.build` virtualises one tensor at a time
            raise AssertionError("an input's slots are not contiguous in the argument block")
        for _, ((a, da), *rest) in kernel.shape_groups:
            lines += [f"if sh{pos[b]}[{db}] != sh{pos[a]}[{da}]:\n    return SLOW" for b, db in rest]
        lines.append(f"blk = array('q', {' + '.join(parts + ['ZEROS']) if parts else 'ZEROS'})")
        lines.append("a = blk.buffer_info()[0]")
        lines += [f"blk[{slot}] = a + {8 * off}" for slot, off, _ in cells]
        lines += ["st = entry(a)", "if st:", "    return failed(blk, st)"]
        self.grows = [(off, key) for _, off, key in cells if key is not None]
        kind = kernel.plan.out_kind if kernel.out_fmt is None else None
        if kind is not None:
            off = cells[0][1]
            lines.append({"float": f"return unpack_d(blk, {8 * off})[0]", "int": f"return blk[{off}]",
                          "bool": f"return (blk[{off}] & 255) != 0"}[kind])
        elif _all_dense(kernel.out_fmt) and not kernel.merge_output:
            # the common Dense output (one value per id): its shapes are the inputs' modes
            es, plan = kernel.es, kernel.plan
            shapes = ", ".join(f"sh{pos[plan.source[i][0]]}[{plan.source[i][1]}]" for i in es.out_idxs)
            lines.append(f"return dense(blk, ({shapes},))")
        else:
            lines.append("return finish(kw, blk)")
        self.source = "def fast(kw):\n" + "\n".join("    " + ln.replace("\n", "\n    ") for ln in lines)
        env = dict(seen_get=self.seen.get, admit=self._admit, SLOW=SLOW, array=array, ZEROS=(0,) * extra,
                   entry=kernel.compiled.packed, failed=self._failed, finish=self._finish,
                   dense=self._dense_finisher() if kind is None and _all_dense(kernel.out_fmt) else None,
                   unpack_d=_D.unpack_from, pack_d=_D.pack, unpack_q=_Q.unpack, INT64=_INT64,
                   **{f"M{j}": m for j, m in enumerate(measures)})
        exec(compile(self.source, f"<fast call of {kernel.text!r}>", "exec"), env)
        self.call = env["fast"]

    def _admit(self, j, t):
        """(weakref, slots, shapes) of tensor `t` as input j, checked once and cached; None if it is
        not a non-empty tensor of the compiled format and facts."""
        name, key, sig = self.inputs[j]
        if type(t) is not Tensor or t.is_empty_format or t.level.format_key() != key:
            return None
        lvls = t.levels()
        slots = []
        for depth, attr in sig:
            v = getattr(lvls[depth], attr)
            slots.append(v.ctypes.data if isinstance(v, np.ndarray) else int(v or 0))
        shapes = tuple(getattr(lv, "shape", None) for lv in t.modes())
        seen, tid = self.seen, id(t)
        # the addresses are the tensor's own (immutable) buffers, alive while the caller holds it
        entry = seen[tid] = (weakref.ref(t, lambda _r, tid=tid: seen.pop(tid, None)), tuple(slots), shapes)
        return entry

    def _failed(self, blk, status):
        for off, _ in self.grows:
            free(blk[off])
        return Failed(status)

    def _finish(self, kw, blk):
        return self.kernel._finish_cells(kw, memoryview(blk), self.grows)

    def _dense_finisher(self):
        """dense(blk, shapes): the output Tensor of an all-Dense output format (`rebuild_output`'s
        Dense case, inlined), with what depends only on the format looked up once (the leaf, its
        dtype, the output name).  A small values buffer is copied out and freed here (adopt_array's
        small case, without re-checking what cannot vary); a large one is adopted."""
        (off, _), = self.grows
        leaf = self.kernel.out_fmt.leaf
        dtype = np.dtype(np.float32 if getattr(leaf, "single", False) else NP_DTYPE[leaf.kind])
        size, name, leaf_frozen = dtype.itemsize, self.kernel.es.out, leaf.frozen
        new_dense, new_tensor = Dense.frozen, Tensor.frozen

        def dense(blk, shapes):
            n = 1
            for s in shapes:
                n *= s
            address = blk[off]
            if 0 < n * size <= SMALL and address and blk[off + 1] >= n:
                val = frombuffer(string_at(address, n * size), dtype)
                blk[off] = 0
                free_ptr(address)
            else:
                val = adopt_array(memoryview(blk)[off:off + 2], n, dtype)
            lvl = leaf_frozen(val)
            for s in reversed(shapes):
                lvl = new_dense(lvl, s)
            return new_tensor(lvl, name)
        return dense


def _scalar_lines(var, name, kind):
    """Read scalar `name` into the int64 `var` (floats bit-cast), or return SLOW (the checked path
    converts numpy scalars of other kinds, or raises)."""
    get = f"v = kw.get({name!r})"
    if kind == "float":
        return [get, "if not isinstance(v, (float, int)):", "    return SLOW",
                f"{var} = unpack_q(pack_d(v))[0]"]
    ok = "(type(v) is int and v in INT64) or type(v) is bool" if kind == "int" else "type(v) is bool"
    return [get, f"if not ({ok}):", "    return SLOW", f"{var} = int(v)"]


def _all_dense(fmt) -> bool:
    """Is `fmt` Dense levels over an Element leaf (one grown buffer: the values)?"""
    if fmt is None:
        return False
    lvls = fmt.levels()
    return all(type(lv) is Dense for lv in lvls[:-1]) and type(lvls[-1]) is Element


def shape_groups(plan) -> list:
    """(index, [(tensor, mode), ...]) for each integer index that reads two or more modes without an
    offset or `~`: their shapes must agree (`Kernel.check`; an index read through an offset or `~`
    may cover other coordinates)."""
    groups = {}
    for acc in accesses(plan.rhs):
        for d, (i, dim) in enumerate(zip(acc.idxs, acc.dims)):
            if (acc.permissive and acc.permissive[d]) or form(dim) != "plain" or plan.kinds[i] != "int":
                continue
            groups.setdefault(i, []).append((acc.tensor, d))
    return [(i, g) for i, g in groups.items() if len(g) > 1]
