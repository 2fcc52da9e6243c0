"""`Abi`: the documented binary interface of a compiled kernel (`Kernel.abi`, DESIGN.md §5 ABI).

Every kernel has two native entry points with external linkage:

* the unpacked function ``int32_t <symbol>(p0, p1, ...)``: one parameter per argument, each a
  pointer, an ``int64_t`` or a ``double``;
* the packed entry point ``int32_t <symbol>_packed(int64_t *block)``: slot k of the int64 argument
  block holds parameter k (a pointer as its address, an integer as itself, a double bit-cast).

Both return a status (0 ok, `STATUSES`).  The fields say what goes in each slot: an input level's
buffer or length (`T.levels()[depth].<attr>`), a scalar, a result cell (0-d output), a grown
output cell or an output shape.  Each buffer is a C-contiguous array of the field's dtype (a
strided numpy view must be copied first).  The kernel trusts the block: the buffers must satisfy
the level invariants that ``ct.Tensor`` checks (sorted coordinates, disjoint intervals, ``ptr``
non-decreasing and within the buffers), and they must stay alive during the call.

Outputs.  A 0-d output is written to a one-element result cell.  Every buffer of another output
is grown by the kernel with libc ``realloc``: its slot holds the address of an ``int64_t[2]`` cell
``{address, capacity in elements}``; pass ``{0, 0}`` (or a buffer from ``malloc`` and its
capacity; or a negative capacity -n: n elements at address that already hold the output's fill
value, which a leaf's values are then not set to again — `PackedCall.set_output(zeroed=True)`).  On status 0 the kernel writes the final address and capacity back, and the caller owns
the buffer: release it with libc ``free``.  On a non-zero status the cells are not written back:
a buffer grown during that call is lost (leaked) and a cell that held a buffer before it may
hold an address ``realloc`` already freed, so do not free or reuse such a cell.  How many elements
of each buffer are meaningful is given per field (`AbiField.meaning`): level d's buffers count
positions of level d-1 ("npos"; npos = 1 at depth 0).

A kernel is compiled for formats *and* facts of the data (`Kernel.formats`); tensors with other
facts need their own kernel (`Kernel.accepts`).  A revisited sparse output (`Kernel.merge_output`)
holds the unmerged passes of the loop outside its last index, and a split float sum
(`Kernel.split_sums`) is computed term by term; `Kernel.__call__` post-processes both, the ABI
does not (`Abi.notes`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import nodes as ir

# roles of a slot
LEVEL_BUFFER = "level buffer"        # address of an input level's array
LEVEL_LENGTH = "level length"        # an input level's shape / cell count (int64)
SCALAR = "scalar"                    # a scalar argument of the einsum
RESULT_CELL = "result cell"          # address of the one-element result of a 0-d output
GROWN_CELL = "grown output cell"     # address of an int64[2] {address, capacity} cell
OUTPUT_SHAPE = "output shape"        # coordinates of a Dense output level (int64)

STATUSES = dict(sorted({ir.STATUS_OK: "ok", **ir.STATUS_NAMES}.items()))
# status -> its constant's name in `ir.nodes` without STATUS_ ('OUTPUT_ORDER')
STATUS_CODES = {v: k[len("STATUS_"):] for k, v in vars(ir).items() if k.startswith("STATUS_") and isinstance(v, int)}

_DTYPE = {"i8": "int8", "i32": "int32", "i64": "int64", "f32": "float32", "f64": "float64"}
_CTYPE = {"i8": "int8_t", "i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double"}
_LLVM = {"i8": "i8", "i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
_ELEM = {"bool": "int8", "int": "int64", "float": "float64"}   # an Element leaf's storage

_FIBERS = "fiber p's entries are ptr[p] .. ptr[p+1]-1 (npos + 1 values, ptr[0] = 0)"
# (level format, attribute) -> meaning of an input slot
_INPUT = {
    ("Dense", "shape"): "coordinates per fiber: ids 0 .. shape-1",
    ("SparseList", "ptr"): _FIBERS,
    ("SparseList", "idx"): "coordinate of each entry, strictly increasing within a fiber (ptr[npos] values)",
    ("SparseList", "shape"): "integer ids lie in 0 .. shape-1",
    ("SparsePoint", "idx"): "the one coordinate of each fiber (npos values)",
    ("SparsePoint", "shape"): "integer ids lie in 0 .. shape-1",
    ("SparseRunList", "ptr"): _FIBERS + "; an entry is a run",
    ("SparseRunList", "left"): "start of each run (ptr[npos] values; runs of a fiber disjoint, increasing)",
    ("SparseRunList", "right"): "end of each run (ptr[npos] values)",
    ("SparseRunList", "left_eps"): "closedness of each start as Limit eps: 0 closed, +1 open (ptr[npos] values)",
    ("SparseRunList", "right_eps"): "closedness of each end as Limit eps: 0 closed, -1 open (ptr[npos] values)",
    ("SparseInterval", "left"): "start of the one interval of each fiber (npos values)",
    ("SparseInterval", "right"): "end of the one interval of each fiber (npos values)",
    ("SparseInterval", "shape"): "integer coordinates lie in 0 .. shape-1",
    ("SparseByteMap", "ptr"): _FIBERS,
    ("SparseByteMap", "idx"): "stored ids, strictly increasing within a fiber (ptr[npos] values)",
    ("SparseByteMap", "tbl"): "tbl[p*shape + i] != 0 iff id i of fiber p is stored (npos*shape bytes)",
    ("SparseByteMap", "shape"): "integer ids lie in 0 .. shape-1",
    ("UniformGrid", "n"): "cells per fiber",
    ("UniformGrid", "edges"): "n+1 strictly increasing cell boundaries: cell c is [edges[c], edges[c+1])",
    ("Element", "val"): "value of each position of the parent level (npos values)",
}
# (level format, attribute) -> (element dtype or None for the leaf's, meaning) of a grown output buffer
_GROWN = {
    ("SparseList", "ptr"): ("int64", _FIBERS),
    ("SparseList", "idx"): (None, "coordinate of each entry, increasing within a fiber (ptr[npos] values; "
                                  "float64 on a real axis, int64 ids on an integer one)"),
    ("SparseRunList", "ptr"): ("int64", _FIBERS + "; an entry is a run"),
    ("SparseRunList", "left"): ("float64", "start of each run (ptr[npos] values)"),
    ("SparseRunList", "right"): ("float64", "end of each run (ptr[npos] values)"),
    ("SparseRunList", "left_eps"): ("int8", "closedness of each start, Limit eps 0 closed / +1 open (ptr[npos] values)"),
    ("SparseRunList", "right_eps"): ("int8", "closedness of each end, Limit eps 0 closed / -1 open (ptr[npos] values)"),
    ("SparseByteMap", "tbl"): ("int8", "tbl[p*shape + i] != 0 iff id i of fiber p was written (npos*shape values)"),
    ("SparseByteMap", "srt"): ("int64", "the slots p*shape + i written, in write order, unsorted (count[0] values)"),
    ("SparseByteMap", "count"): ("int64", "count[0]: the number of slots written (1 value)"),
    ("Element", "val"): (None, "value of each position of the parent level (npos values; 0/1 bytes for a bool leaf)"),
}


@dataclass(frozen=True)
class AbiField:
    """One slot of the argument block = one parameter of the unpacked function.

    `slot`: index in the int64 block (byte offset 8*slot); `name`: parameter name; `llvm_type`:
    'ptr', 'i64' or 'double'; `c_type`: the C parameter type; `dtype`: numpy dtype of the
    elements a pointer addresses (of the grown buffer for a grown cell, whose own elements are
    int64), or of the value; `stored_as`: how the slot holds it ('address', 'int64' or 'float64
    bits'); `role`: one of the module's role constants; `tensor`, `depth`, `attr`: the input
    level ``tensor.levels()[depth].<attr>``, the output level depth and buffer of a grown cell,
    or the input mode an output shape is taken from; `level`: that level's format name."""
    slot: int
    name: str
    llvm_type: str
    c_type: str
    dtype: str | None
    stored_as: str
    role: str
    tensor: str | None
    depth: int | None
    attr: str | None
    level: str | None
    meaning: str

    @property
    def offset(self) -> int:
        """Byte offset of the slot in the block."""
        return 8 * self.slot


@dataclass(frozen=True)
class Abi:
    """The argument block of one kernel, its entry points and status codes (module docstring).

    `fields` in slot order; `symbol`/`packed_symbol` name the unpacked/packed functions (in
    `Kernel.llvm_ir`, `Kernel.llvm_module()`) and `address`/`packed_address` locate them in this
    process; `signature`/`packed_signature` are their C prototypes; `statuses` maps each return
    value to its meaning; `result_dtype` is the result cell's dtype of a 0-d output (None
    otherwise); `output` describes the output levels (depth, format, buffers); `formats` the
    input formats compiled for; `notes` what `Kernel.__call__` does beyond the native call.
    `str(abi)` is a readable table."""
    fields: tuple
    symbol: str
    packed_symbol: str
    address: int
    packed_address: int
    signature: str
    packed_signature: str
    statuses: dict
    result_dtype: str | None
    output: tuple
    formats: dict
    notes: tuple = field(default=())

    def __len__(self) -> int:
        return len(self.fields)

    def __iter__(self):
        return iter(self.fields)

    def __getitem__(self, key) -> AbiField:
        """The field at slot `key` (int) or with parameter name `key` (str); KeyError otherwise."""
        if isinstance(key, int):
            return self.fields[key]
        for f in self.fields:
            if f.name == key:
                return f
        raise KeyError(f"no ABI field named {key!r}; fields: {', '.join(f.name for f in self.fields)}")

    def find(self, tensor=None, depth=None, attr=None, role=None) -> AbiField:
        """The one field matching every given criterion (e.g. ``find("A", 0, "left")``,
        ``find(role=RESULT_CELL)``); KeyError naming the fields when none or several match."""
        want = {"tensor": tensor, "depth": depth, "attr": attr, "role": role}
        hits = [f for f in self.fields if all(v is None or getattr(f, k) == v for k, v in want.items())]
        if len(hits) != 1:
            crit = ", ".join(f"{k}={v!r}" for k, v in want.items() if v is not None)
            raise KeyError(f"{len(hits)} ABI fields match {crit}: "
                           f"{', '.join(f.name for f in hits) or 'none'} (of {', '.join(f.name for f in self.fields)})")
        return hits[0]

    def slot(self, *args, **kwargs) -> int:
        """`find(...).slot`."""
        return self.find(*args, **kwargs).slot

    @property
    def block_bytes(self) -> int:
        return 8 * len(self.fields)

    def __str__(self) -> str:
        head = ("slot", "name", "type", "role", "where", "meaning")
        rows = [(str(f.slot), f.name, f.c_type, f.role, _where(f), f.meaning) for f in self.fields]
        w = [max(len(r[k]) for r in rows + [head]) for k in range(5)]
        fmt = lambda r: "  ".join(c.ljust(w[k]) for k, c in enumerate(r[:5])) + "  " + r[5]
        lines = [f"packed:   {self.packed_signature}", f"unpacked: {self.signature}",
                 f"argument block: {len(self.fields)} int64 slots ({self.block_bytes} bytes)",
                 fmt(head), *map(fmt, rows)]
        if self.result_dtype is not None:
            lines.append(f"result: one {self.result_dtype} in the result cell")
        for lv in self.output:
            lines.append(f"output level {lv[0]}: {lv[1]}")
        lines.append("grown cells: int64[2] {address, capacity}; start {0, 0}; after status 0 the caller "
                     "owns each buffer and frees it with libc free")
        lines.extend(f"status {k} {STATUS_CODES.get(k, '')}: {v}" for k, v in self.statuses.items())
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _where(f: AbiField) -> str:
    if f.role in (LEVEL_BUFFER, LEVEL_LENGTH):
        return f"{f.tensor}.levels()[{f.depth}].{f.attr}"
    if f.role == GROWN_CELL:
        return f"out level {f.depth} {f.attr}"
    if f.role == OUTPUT_SHAPE:
        return f"{f.tensor}.modes()[{f.depth}].shape"
    return f.tensor or ""


def _type_name(t) -> str:
    """'ptr' or a scalar name ('i64', 'f64', ...) of an IR type or its string ('ptr<f64>')."""
    s = str(t)
    return "ptr" if s.startswith("ptr") else s


def _pointee(t) -> str | None:
    s = str(t)
    return s[4:-1] if s.startswith("ptr<") else None


def level_names(key) -> list:
    """Level format names by depth of a format key (`Level.format_key`)."""
    names = []
    while isinstance(key, tuple) and key and isinstance(key[0], str):
        names.append(key[0])
        last = key[-1] if len(key) > 1 else None
        key = last if isinstance(last, tuple) and last and isinstance(last[0], str) and last[0][:1].isupper() else None
    return names


def build_abi(getters, params, symbol, address, packed_address, formats, out_fmt, out_kind,
              merge_output=False, split_sums=False, scalar_kinds=None) -> Abi:
    """An `Abi` from a kernel's parts: `getters` (one role tuple per slot, `Kernel.getters`),
    `params` ((name, IR type) per slot), the symbol and addresses of the unpacked function,
    `formats` (input name -> format key), `out_fmt` (output Level or None) and `out_kind` ('bool',
    'int' or 'float': the value kind of the output); `scalar_kinds`: scalar name -> 'bool', 'int'
    or 'float' (bools and ints both travel as int64)."""
    if len(getters) != len(params):
        raise ValueError(f"{len(getters)} getters for {len(params)} parameters")
    levels = {k: level_names(key) for k, key in formats.items()}
    out_levels = out_fmt.levels() if out_fmt is not None else []
    fields = []
    for slot, (g, (name, ty)) in enumerate(zip(getters, params)):
        t, elem = _type_name(ty), _pointee(ty)
        tensor = depth = attr = level = None
        dtype = _DTYPE.get(elem or t)
        if g[0] == "in":
            _, tensor, depth, attr = g
            level = levels[tensor][depth] if depth < len(levels.get(tensor, ())) else None
            role = LEVEL_BUFFER if t == "ptr" else LEVEL_LENGTH
            meaning = _INPUT.get((level, attr), f"{attr} of the level")
        elif g[0] == "scalar":
            role, tensor = SCALAR, g[1]
            kind = (scalar_kinds or {}).get(g[1], "float" if t == "f64" else "int")
            meaning = f"scalar {g[1]!r}: " + {"bool": "a bool as 0 or 1", "int": "an integer",
                                               "float": "a float, bit-cast into the slot"}[kind]
        elif g[0] == "out":
            role, dtype = RESULT_CELL, _ELEM[out_kind]
            meaning = f"one {dtype}: the 0-d result, written on status 0"
        elif g[0] == "grow":
            _, depth, attr = g
            role = GROWN_CELL
            lvl = out_levels[depth] if depth < len(out_levels) else None
            level = type(lvl).__name__ if lvl is not None else None
            gdtype, what = _GROWN.get((level, attr), (None, f"output buffer {attr}"))
            if gdtype is None and lvl is not None:
                gdtype = _grown_leaf_dtype(lvl, attr, out_kind)
            dtype = gdtype
            meaning = f"{{address, capacity}} of the {dtype} buffer: {what}"
        elif g[0] == "outshape":
            role = OUTPUT_SHAPE
            tensor, depth = g[1]
            modes = [n for n in levels.get(tensor, ()) if n not in ("UniformGrid", "Element", "Pattern")]
            level = modes[depth] if depth < len(modes) else None
            meaning = "coordinates of the Dense output level fed by this input mode"
        else:
            raise ValueError(f"unknown argument role {g!r} in slot {slot}")
        fields.append(AbiField(slot, name, _LLVM.get(t, t), _c_type(t, elem, role), dtype,
                               "address" if t == "ptr" else ("float64 bits" if t == "f64" else "int64"),
                               role, tensor, depth, attr, level, meaning))
    sig = ", ".join(f"{f.c_type} {f.name}" for f in fields)
    notes = []
    if merge_output:
        notes.append("the sparse output holds the unmerged passes of the loop outside its last index; "
                     "Kernel.__call__ ⊕-merges them (runtime.merge_output)")
    if split_sums:
        notes.append("a float sum is computed term by term; Kernel.__call__ recomputes a non-finite result "
                     "with the pointwise kernel")
    if any(lv.startswith("SparseByteMap") for _, lv in _describe_output(out_levels)):
        notes.append("a SparseByteMap output lists its written slots unsorted (srt): sort them for ptr/idx")
    return Abi(fields=tuple(fields), symbol=symbol, packed_symbol=symbol + "_packed", address=address,
               packed_address=packed_address, signature=f"int32_t {symbol}({sig})",
               packed_signature=f"int32_t {symbol}_packed(int64_t *block)", statuses=dict(STATUSES),
               result_dtype=_ELEM[out_kind] if out_fmt is None else None,
               output=tuple(_describe_output(out_levels)), formats=dict(formats), notes=tuple(notes))


def _grown_leaf_dtype(lvl, attr, out_kind) -> str:
    if attr == "idx":
        return "float64" if getattr(lvl, "coord", "int") == "real" else "int64"
    kind = getattr(lvl, "kind", out_kind)
    return _ELEM.get(kind, "float64")


def _c_type(t: str, elem: str | None, role: str) -> str:
    if t != "ptr":
        return _CTYPE.get(t, t)
    c = _CTYPE.get(elem, "void")
    return f"const {c} *" if role == LEVEL_BUFFER else f"{c} *"


def _describe_output(out_levels) -> list:
    """(depth, description) per output level: its format and how many positions it has."""
    out = []
    for d, lvl in enumerate(out_levels):
        name = type(lvl).__name__
        if name == "Dense":
            desc = "Dense: positions of the next level = npos * shape (the output shape slot)"
        elif name in ("SparseList", "SparseRunList"):
            desc = f"{name}: ptr (npos + 1), entries ptr[npos]; positions of the next level = ptr[npos]"
        elif name == "SparseByteMap":
            desc = "SparseByteMap: tbl (npos*shape), srt (count[0], unsorted); positions of the next level = npos*shape"
        elif name == "Element":
            desc = f"Element leaf: val, one value per position (fill {lvl.fill!r} where nothing was written)"
        elif name == "Pattern":
            desc = "Pattern leaf: no buffer (true at every stored entry)"
        else:
            desc = name
        out.append((d, desc))
    return out


def abi_of(kernel) -> Abi:
    """The `Abi` of a `Kernel` (what `Kernel.abi` returns)."""
    spec = getattr(kernel, "spec", None)
    params = getattr(spec, "params", None)
    if params is None:
        params = [(p.name, p.type) for p in kernel.fn.params]
    c = kernel.compiled
    return build_abi(kernel.getters, params, c.name, c.address, c.packed_address, kernel.formats,
                     kernel.out_fmt, kernel.plan.out_kind, kernel.merge_output, kernel.split_sums, kernel.scalar_kinds)


__all__ = ["Abi", "AbiField", "abi_of", "build_abi", "level_names", "STATUSES", "STATUS_CODES", "LEVEL_BUFFER", "LEVEL_LENGTH",
           "SCALAR", "RESULT_CELL", "GROWN_CELL", "OUTPUT_SHAPE"]
