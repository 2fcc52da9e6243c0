"""The per-call fast path of a `Kernel` (issue 27: a microsecond call path).

A call writes one int64 argument block (slot k = parameter k of the kernel, `driver.build`'s
getters; `Kernel.abi` documents it) and runs the packed entry point through the native runner
(`runtime.runner`), which also copies the output buffers into one bytes object.  Everything about a tensor
that goes into the block — its buffers' addresses and lengths, its modes' shapes — is fixed once
the tensor is built (tensors are immutable), so it is computed and checked against the compiled
format key once per (kernel, tensor) and kept in `FastCall.seen`, keyed by the tensor's id and
guarded by a weak reference (no address outlives its tensor, nothing is stored on the tensor, so
nothing stale survives a pickle or a copy) as int64 bytes.  A call then only concatenates those
bytes with the scalars' and zeros for the output cells into one `array('q')`: a fresh block per
call, so calls from many threads share no mutable memory; the native code runs without the GIL.
The output is built by lines generated for its format (`runtime.fastcall_out`).

The result cell of a 0-d output and the {address, capacity, offset} cells of grown output buffers
sit after the argument slots in the same block.  Anything unusual — a tensor of other facts (a
sibling kernel), a missing or mistyped argument, a numpy scalar of another kind — takes the
checked path (`Kernel._checked_call`), a non-zero status `Kernel._failed`, which raise the right
error or run the right sibling.
"""
from __future__ import annotations

import re
import struct
import weakref
from array import array

import numpy as np

from ..formats.tensor import Tensor
from ..lang.affine import form
from ..lang.program import accesses
from .buffers import free
from .codecache import compiled_code
from .fastcall_out import bytes_taker, element_size, inlined, output_lines
from .output_format import rebuild_output
from .runner import runner

_D = struct.Struct("<d")
_Q = struct.Struct("<q")
_INT64 = range(-2 ** 63, 2 ** 63)


class FastCall:
    """The block plan of one kernel (module docstring), compiled into a straight-line Python
    function `call(kernel, **kwargs)` (`source`: one `kw.get` per argument, the cached bytes
    concatenated, one native call, the output's lines), as `dataclasses` writes its `__init__`:
    the kernel's `__call__` (`Kernel.__init__`).  It returns what `Kernel.__call__` returns, taking
    the checked path itself where it cannot vouch."""

    def __init__(self, kernel):
        self.kernel = kernel
        getters = kernel.getters
        n = len(getters)
        self.seen = {}               # id(tensor) -> (weakref, slots as int64 bytes, shapes, shapes as bytes)
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
                      "        return slow(kw)",
                      f"v{j}, sh{j}, psh{j} = h[1], h[2], h[3]"]
        pos = {name: j for j, name in enumerate(names)}
        # a user measure passed again must be the one compiled for (`Kernel.pack` says which)
        measures = tuple(kernel._measures.items())
        for j, (name, _) in enumerate(measures):
            lines += [f"m = kw.get({name!r})", f"if m is not None and m is not M{j}[1] and m != M{j}[1]:",
                      "    return slow(kw)"]
        for slot, g in enumerate(getters):
            if g[0] == "in":
                if not parts or parts[-1] != f"v{pos[g[1]]}":
                    parts.append(f"v{pos[g[1]]}")
            elif g[0] == "scalar":
                lines += _scalar_lines(f"s{slot}", g[1], kernel.scalar_kinds[g[1]])
                parts.append(f"s{slot}")
            elif g[0] == "outshape":
                parts.append(f"psh{pos[g[1][0]]}[{g[1][1]}]")
            else:       # a cell after the slots: ("out",) one value, ("grow", d, attr) three
                parts.append(None)
                cells.append((slot, n + extra, None if g[0] == "out" else (g[1], g[2])))
                extra += 1 if g[0] == "out" else 3
        parts.extend([None] * extra)
        # runs of zero slots become one constant: the block is one bytes concatenation (a memcpy
        # into the array), not an array built from a tuple of ints (~1 µs for 30 slots)
        joined, zeros, consts = [], 0, {}
        for p in parts + ["end"]:
            if p is None:
                zeros += 1
                continue
            if zeros:
                consts[f"Z{zeros}"] = bytes(8 * zeros)
                joined.append(f"Z{zeros}")
                zeros = 0
            if p != "end":
                joined.append(p)
        inputs = [p for p in parts if p and p[0] == "v"]
        if len(inputs) != len(set(inputs)):     # `driver.build` virtualises one tensor at a time
            raise AssertionError("an input's slots are not contiguous in the argument block")
        for _, ((a, da), *rest) in kernel.shape_groups:
            lines += [f"if sh{pos[b]}[{db}] != sh{pos[a]}[{da}]:\n    return slow(kw)" for b, db in rest]
        lines.append(f"blk = array('q', {' + '.join(joined)})")
        self.grows = [(off, key) for _, off, key in cells if key is not None]
        run = self._runner(n + extra, [(slot, off) for slot, off, _ in cells])
        if run is None:             # the kernel through ctypes: the cells' addresses written here
            entry = kernel.compiled.packed
            run = lambda blk: entry(blk.buffer_info()[0]) or None             # noqa: E731
            lines.append("a = blk.buffer_info()[0]")
            lines += [f"blk[{slot}] = a + {8 * off}" for slot, off, _ in cells]
        kind = kernel.plan.out_kind if kernel.out_fmt is None else None
        env, results = {}, []
        if kind is not None:
            lines += ["r = run(blk)", "if r.__class__ is int:", "    return failed(kw, blk, r)"]
            off = cells[0][1]
            results.append({"float": f"unpack_d(blk, {8 * off})[0]", "int": f"blk[{off}]",
                            "bool": f"(blk[{off}] & 255) != 0"}[kind])
        else:
            # the runner copied the buffers into bytes b, or left them in the cells (None: a large
            # output, adopted without a copy; or no runner), or failed (its status)
            lines += ["b = run(blk)", "if b.__class__ is not bytes:", "    if b is None:", "        return {finish(kw, blk)}",
                      "    return failed(kw, blk, b)"]
            if inlined(kernel.out_fmt, kernel.merge_output):
                es, plan = kernel.es, kernel.plan
                shape_of = lambda d: f"sh{pos[plan.source[es.out_idxs[d]][0]]}[{plan.source[es.out_idxs[d]][1]}]"
                out, env = output_lines(kernel, {key: off for off, key in self.grows}, shape_of)
                lines += out[:-1]
                results.append(out[-1].removeprefix("return "))
            else:
                results.append("generic(kw, blk, b)")
        lines.append("return {" + results[0] + "}")
        # a sum split into terms is recomputed pointwise where its result is not finite (`Kernel`)
        wrap = (lambda e: f"finite(kw, {e})") if kernel.split_sums else (lambda e: e)
        lines = [re.sub(r"\{(.*)\}$", lambda m: wrap(m.group(1)), ln) if ln.lstrip().startswith("return {") else ln
                 for ln in lines]
        # each tensor's cached (slots, shapes, packed shapes): only those the lines read
        lines = [_unpack_used(ln, lines) if ln.startswith("v") and ", sh" in ln else ln for ln in lines]
        self.source = "def fast(_kernel, /, **kw):\n" + "\n".join("    " + ln.replace("\n", "\n    ") for ln in lines)
        env.update(consts, seen_get=self.seen.get, admit=self._admit, slow=kernel._checked_call, array=array,
                   run=run, failed=self._failed, finish=self._finish, generic=self._generic,
                   finite=kernel._finite, unpack_d=_D.unpack_from, pack_d=_D.pack, pack_q=_Q.pack, INT64=_INT64,
                   **{f"M{j}": m for j, m in enumerate(measures)})
        exec(compiled_code(self.source, f"<fast call of {kernel.text!r}>"), env)
        self.call = env["fast"]

    def _runner(self, length, pointers):
        """`run(block)`: the native runner (`runtime.runner`: status, bytes or None), or None."""
        k = self.kernel
        sizes = [element_size(k.out_fmt, *key) for _, key in self.grows]
        cells = [(off, size) for (off, _), size in zip(self.grows, sizes)]
        return None if None in sizes else runner(k, length, pointers, cells)

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
        packed = tuple(_Q.pack(s) if type(s) is int else None for s in shapes)
        seen, tid = self.seen, id(t)
        # the addresses are the tensor's own (immutable) buffers, alive while the caller holds it
        entry = seen[tid] = (weakref.ref(t, lambda _r, tid=tid: seen.pop(tid, None)),
                             array("q", slots).tobytes(), shapes, packed)
        return entry

    def _failed(self, kw, blk, status):
        """A non-zero status: the grown buffers freed, then the kernel's answer to it (a sibling
        kernel, or the error: `Kernel._failed`)."""
        for off, _ in self.grows:
            free(blk[off])
        return self.kernel._failed(kw, status)

    def _finish(self, kw, blk):
        return self.kernel._finish_cells(kw, memoryview(blk), self.grows)

    def _generic(self, kw, blk, b):
        """The output of an uncommon format from the runner's bytes, by `rebuild_output`."""
        k = self.kernel
        take = bytes_taker(b, blk, {key: off for off, key in self.grows})
        tensors = {name: kw[name] for name in k.formats}
        return Tensor.frozen(rebuild_output(k.out_fmt, k.plan, k.merge_output, tensors, take), k.es.out)


def _unpack_used(line, lines):
    """`v{j}, sh{j}, psh{j} = h[1], h[2], h[3]` reduced to the names other lines read."""
    names = line.split(" = ")[0].split(", ")
    text = "\n".join(ln for ln in lines if ln is not line)
    used = [(nm, k) for k, nm in enumerate(names, 1) if re.search(rf"\b{nm}\b", text)]
    if not used:
        return "pass"
    return f"{', '.join(nm for nm, _ in used)} = {', '.join(f'h[{k}]' for _, k in used)}"


def _scalar_lines(var, name, kind):
    """Read scalar `name` into `var`, its 8 bytes in the block (floats as float64), or take the
    checked path (which converts numpy scalars of other kinds, or raises)."""
    get = f"v = kw.get({name!r})"
    if kind == "float":
        return [get, "if not isinstance(v, (float, int)):", "    return slow(kw)", f"{var} = pack_d(v)"]
    ok = "(type(v) is int and v in INT64) or type(v) is bool" if kind == "int" else "type(v) is bool"
    return [get, f"if not ({ok}):", "    return slow(kw)", f"{var} = pack_q(v)"]


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
