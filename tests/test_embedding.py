"""Embedding kernels in other JIT code: the documented ABI (`Kernel.abi`), numba (ctypes call and
inlined form) and llvmlite (`Kernel.llvm_module()`).  Oracles: the kernel's own Python call path
(`k(...)`, itself checked against the reference interpreter elsewhere) and numpy."""
import ctypes
import ctypes.util
import re

import numpy as np
import pytest

import ctensor as ct
from ctensor.runtime import abi as abi_mod
from ctensor.runtime.embed import ctypes_entry, declare_packed, numba_inline

numba = pytest.importorskip("numba")
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
_libc.free.argtypes = [ctypes.c_void_p]

DOT = "s[] = A[x] * B[x] * d(x; lebesgue)"


def _runs(rng, n, lo=0.0, hi=100.0):
    """n sorted disjoint [left, right) runs with values, as C-contiguous arrays (the ABI's buffers)."""
    cuts = np.sort(rng.choice(np.arange(lo, hi, 0.25), 2 * n, replace=False))
    return cuts[0::2].copy(), cuts[1::2].copy(), rng.uniform(-2, 2, n).round(3)


def _dot_inputs():
    A = ct.intervals([0.0, 5.0], [2.0, 7.0], values=[3.0, 1.0])
    B = ct.intervals([1.0], [6.0], values=[2.0])
    return A, B


# ---------------------------------------------------------------- the ABI against pack
PROGRAMS = [
    (DOT, lambda: dict(zip("AB", _dot_inputs()))),
    ("s[] = A[x + c] * B[x] * d(x; lebesgue)", lambda: {**dict(zip("AB", _dot_inputs())), "c": 0.5}),
    ("C[x] = A[x] * B[x]", lambda: dict(zip("AB", _dot_inputs()))),
    ("C[i] = S[i, x] * B[x] * d(x; lebesgue)",
     lambda: {"S": ct.interval_set([0, 2, 5], [4, 6, 7]), "B": _dot_inputs()[1]}),
    ("Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)",
     lambda: {"Box": ct.box([0, 0], [3, 3]), "P": ct.points(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.5]]))}),
    ("s[] = A[x] * d(x; counting)", lambda: {"A": ct.Tensor(ct.SparseList(ct.Element(0, val=np.array([2, 3])),
                                                                           [0, 2], [0.5, 1.5]))}),
    ("Out[id] = (Box[x, y] & P[x, y, id]) * d(x, y; boolean, boolean)",          # UniformGrid, SparsePoint
     lambda: {"Box": ct.box([2, 2], [6, 7]), "P": ct.points(np.random.default_rng(1).uniform(0, 10, (50, 2)),
                                                            grid=(4, 4))}),
    ("s[] = A[x] * n * d(x; lebesgue)", lambda: {"A": _dot_inputs()[0], "n": 3}),           # int scalar
    ("s[] = (A[x] > 0 & flag) * d(x; lebesgue)", lambda: {"A": _dot_inputs()[0], "flag": True}),  # bool
]


@pytest.mark.parametrize("text,make", PROGRAMS, ids=[f"{k}-{p[0].split('=')[0].strip()}" for k, p in enumerate(PROGRAMS)])
def test_abi_fields_match_pack(text, make):
    """Every field names the slot `pack` writes, with the value the field says goes there."""
    args = make()
    k = ct.compile(text, **args)
    abi, call = k.abi, k.pack(**args)
    assert len(abi) == len(call.block) and [f.slot for f in abi] == list(range(len(abi)))
    assert abi.packed_symbol == abi.symbol + "_packed" and abi.packed_address == k.address
    for f in abi:
        got = int(call.block[f.slot])
        if f.role in (abi_mod.LEVEL_BUFFER, abi_mod.LEVEL_LENGTH):
            v = getattr(args[f.tensor].levels()[f.depth], f.attr)
            if f.role == abi_mod.LEVEL_BUFFER:
                assert got == v.ctypes.data and np.dtype(f.dtype).itemsize == v.itemsize, f
                assert f.c_type.startswith("const") and f.llvm_type == "ptr"
            else:
                assert got == int(v or 0) and f.llvm_type == "i64", f
        elif f.role == abi_mod.SCALAR:
            want = args[f.tensor]
            assert (np.int64(got).view(np.float64) == want) if f.stored_as == "float64 bits" else got == int(want)
        elif f.role == abi_mod.OUTPUT_SHAPE:
            assert got == args[f.tensor].modes()[f.depth].shape
        elif f.role == abi_mod.RESULT_CELL:
            assert got == call.out_cell.ctypes.data and np.dtype(f.dtype) == call.out_cell.dtype
        else:
            assert f.role == abi_mod.GROWN_CELL and got == call.cells[(f.depth, f.attr)].ctypes.data, f
        assert f.meaning and f.name in str(abi)
    text_abi = str(abi)
    assert abi.packed_signature in text_abi and "free" in text_abi
    assert all(f"status {s} " in text_abi for s in abi.statuses)
    call.release()


def test_abi_lookup_errors_name_the_fields():
    k = ct.compile(DOT, **dict(zip("AB", _dot_inputs())))
    abi = k.abi
    assert abi.find("A", 0, "left").name == "A_left" and abi["Bc_val"].slot == abi.slot("B", 1, "val")
    with pytest.raises(KeyError, match="A_left"):
        abi.find("A", 0)                                  # four fields of A at depth 0
    with pytest.raises(KeyError, match="no ABI field named 'Q'"):
        abi["Q"]


# ---------------------------------------------------------------- outputs read through the ABI alone
def _block_from_abi(abi, args):
    """The argument block built from the field descriptions only (not `pack`); returns (block,
    keep-alive list, result cell or None, grown cells by (depth, attr))."""
    block, keep, result, cells = np.zeros(len(abi), np.int64), [], None, {}
    for f in abi:
        if f.role == abi_mod.LEVEL_BUFFER:
            arr = np.ascontiguousarray(getattr(args[f.tensor].levels()[f.depth], f.attr))
            keep.append(arr)
            block[f.slot] = arr.ctypes.data
        elif f.role == abi_mod.LEVEL_LENGTH:
            block[f.slot] = int(getattr(args[f.tensor].levels()[f.depth], f.attr))
        elif f.role == abi_mod.SCALAR:
            block[f.slot] = np.float64(args[f.tensor]).view(np.int64) if f.stored_as == "float64 bits" \
                else int(args[f.tensor])
        elif f.role == abi_mod.OUTPUT_SHAPE:
            block[f.slot] = args[f.tensor].modes()[f.depth].shape
        elif f.role == abi_mod.RESULT_CELL:
            result = np.zeros(1, f.dtype)
            block[f.slot] = result.ctypes.data
        else:
            cells[(f.depth, f.attr)] = cell = np.zeros(2, np.int64)      # {0, 0}: nothing allocated
            block[f.slot] = cell.ctypes.data
    return block, keep, result, cells


def _take(abi, cells, depth, attr, n):
    """Copy n elements of a grown buffer (dtype from its field), then free it with libc free."""
    f = next(f for f in abi if f.role == abi_mod.GROWN_CELL and (f.depth, f.attr) == (depth, attr))
    address, capacity = (int(v) for v in cells[(depth, attr)])
    assert n <= capacity
    out = np.ctypeslib.as_array((ctypes.c_char * (n * np.dtype(f.dtype).itemsize)).from_address(address)) \
        .view(f.dtype).copy() if n else np.zeros(0, f.dtype)
    _libc.free(address)
    cells[(depth, attr)][:] = 0
    return out


def test_zero_d_output_through_the_abi():
    rng = np.random.default_rng(7)
    for _ in range(5):
        A = ct.intervals(*_runs(rng, 6)[:2], values=_runs(rng, 6)[2])
        B = ct.intervals(*_runs(rng, 4)[:2], values=_runs(rng, 4)[2])
        k = ct.compile(DOT, A=A, B=B)
        block, keep, result, cells = _block_from_abi(k.abi, {"A": A, "B": B})
        assert ctypes_entry(k)(block.ctypes.data) == 0 and not cells
        assert result[0] == pytest.approx(k(A=A, B=B), abs=1e-12)
        # the unpacked function, one argument per field, gives the same
        result[0] = np.nan
        assert ctypes_entry(k, unpacked=True)(*(int(v) for v in block)) == 0
        assert result[0] == pytest.approx(k(A=A, B=B), abs=1e-12)


def test_sparse_run_list_output_through_the_abi():
    A = ct.intervals([0.0, 3.0, 8.0], [2.0, 6.0, 9.0], values=[1.0, 2.0, 4.0])
    B = ct.intervals([1.0, 5.0], [4.0, 8.5], values=[3.0, 5.0], closed="both")
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    abi = k.abi
    assert [lv[1].split(":")[0] for lv in abi.output] == ["SparseRunList", "Element leaf"]
    block, keep, result, cells = _block_from_abi(abi, {"A": A, "B": B})
    assert result is None and ctypes_entry(k)(block.ctypes.data) == 0
    ptr = _take(abi, cells, 0, "ptr", 2)                  # npos + 1 at depth 0
    n = int(ptr[1])
    left, right = _take(abi, cells, 0, "left", n), _take(abi, cells, 0, "right", n)
    le, re_ = _take(abi, cells, 0, "left_eps", n), _take(abi, cells, 0, "right_eps", n)
    val = _take(abi, cells, 1, "val", n)
    got = [((ct.Limit(float(a), int(ea)), ct.Limit(float(b), int(eb))), float(v))
           for a, b, ea, eb, v in zip(left, right, le, re_, val)]
    want = [(c[0], v) for c, v in k(A=A, B=B).pieces()]
    assert got == want and n == 4


def test_dense_output_through_the_abi():
    S = ct.interval_set([0, 2, 5, 1], [4, 6, 7, 1.5])
    B = ct.intervals([1.0, 5.5], [3.0, 9.0], values=[2.0, -1.0])
    k = ct.compile("C[i] = S[i, x] * B[x] * d(x; lebesgue)", S=S, B=B)
    abi = k.abi
    shape = abi.find(role=abi_mod.OUTPUT_SHAPE)
    block, keep, result, cells = _block_from_abi(abi, {"S": S, "B": B})
    assert int(block[shape.slot]) == 4 and ctypes_entry(k)(block.ctypes.data) == 0
    val = _take(abi, cells, 1, "val", 4)                  # npos * shape of the Dense level
    np.testing.assert_allclose(val, k(S=S, B=B).to_numpy())
    np.testing.assert_allclose(val, [2.0 * 2 - 0, 2.0 * 1 - 0.5, -1.5, 1.0])   # by hand


# ---------------------------------------------------------------- numba
def _njit_integral(k):
    """The README's example: the block built inside numba from `k.abi`."""
    abi = k.abi
    N, OUT = len(abi), abi.find(role=abi_mod.RESULT_CELL).slot
    sl = {(f.tensor, f.depth, f.attr): f.slot for f in abi}
    AP, AL, AR, AV = sl["A", 0, "ptr"], sl["A", 0, "left"], sl["A", 0, "right"], sl["A", 1, "val"]
    BP, BL, BR, BV = sl["B", 0, "ptr"], sl["B", 0, "left"], sl["B", 0, "right"], sl["B", 1, "val"]
    kernel = k.ctypes_function

    @numba.njit
    def integral(a_left, a_right, a_val, b_left, b_right, b_val):
        a_ptr, b_ptr = np.array([0, a_left.size]), np.array([0, b_left.size])
        block, out = np.zeros(N, np.int64), np.zeros(1)
        block[AP], block[AL], block[AR], block[AV] = a_ptr.ctypes.data, a_left.ctypes.data, \
            a_right.ctypes.data, a_val.ctypes.data
        block[BP], block[BL], block[BR], block[BV] = b_ptr.ctypes.data, b_left.ctypes.data, \
            b_right.ctypes.data, b_val.ctypes.data
        block[OUT] = out.ctypes.data
        status = kernel(block.ctypes.data)
        return out[0] if status == 0 else np.nan
    return integral


def test_numba_block_from_abi_equals_kernel_call():
    rng = np.random.default_rng(3)
    k = ct.compile(DOT, **dict(zip("AB", _dot_inputs())))
    integral = _njit_integral(k)
    for n, m in [(1, 1), (5, 3), (40, 60), (200, 7)]:
        a, b = _runs(rng, n), _runs(rng, m)
        want = k(A=ct.intervals(a[0], a[1], values=a[2]), B=ct.intervals(b[0], b[1], values=b[2]))
        assert integral(*a, *b) == pytest.approx(want, abs=1e-9)
        ref = sum(max(0.0, min(ar, br) - max(al, bl)) * av * bv           # numpy-free oracle
                  for al, ar, av in zip(*a) for bl, br, bv in zip(*b))
        assert integral(*a, *b) == pytest.approx(ref, abs=1e-9)


def _function_body(llvm_text: str, name_part: str) -> list:
    """Lines of the LLVM function whose name contains `name_part` (numba's mangled name)."""
    body, inside = [], False
    for line in llvm_text.splitlines():
        name = re.search(r'@"?([^\s("]+)', line) if line.startswith("define") else None
        if name and name.group(1).startswith("_ZN") and name_part in name.group(1) and "cpython" not in name.group(1):
            inside = True
        elif inside and line.startswith("}"):
            break
        elif inside:
            body.append(line)
    return body


def test_inlined_numba_equals_and_leaves_no_call():
    A, B = _dot_inputs()
    k = ct.compile(DOT, A=A, B=B)
    inline = numba_inline(k)
    assert numba_inline(k) is inline                      # one intrinsic (and library) per kernel

    @numba.njit
    def many(block, n):
        status = 0
        for _ in range(n):
            status |= inline(block)
        return status

    call = k.pack(A=A, B=B)
    assert many(call.block, 1000) == 0 and call.out_cell[0] == k(A=A, B=B) == 8.0
    assert many(call.address, 3) == 0                     # the block's address works too
    body = _function_body(many.inspect_llvm()[many.signatures[0]], "many")
    assert len(body) > 20                                 # the kernel's loop is in there
    calls = [l for l in body if re.search(r"\bcall\b", l)]
    assert all("@llvm." in l for l in calls), calls       # only LLVM intrinsics (no call to the kernel)
    assert k.abi.packed_symbol not in "\n".join(calls)
    asm = many.inspect_asm()[many.signatures[0]]
    assert k.abi.packed_symbol not in asm and k.abi.symbol not in asm
    # the same kernel on other data, through a block built in numba (the README's correlation)
    rng = np.random.default_rng(5)
    for _ in range(3):
        a, b = _runs(rng, 9), _runs(rng, 4)
        A2, B2 = ct.intervals(a[0], a[1], values=a[2]), ct.intervals(b[0], b[1], values=b[2])
        call = k.pack(A=A2, B=B2)
        assert many(call.block, 2) == 0 and call.out_cell[0] == pytest.approx(k(A=A2, B=B2))


def test_inlined_numba_refuses_bad_blocks():
    A, B = _dot_inputs()
    k = ct.compile(DOT, A=A, B=B)
    inline = numba_inline(k)

    @numba.njit
    def once(block):
        return inline(block)

    with pytest.raises(ValueError, match="needs 9 int64 slots"):
        once(np.zeros(3, np.int64))
    with pytest.raises(numba.core.errors.TypingError, match="C-contiguous 1-D int64 array"):
        once(np.zeros(9))


def test_inlined_numba_grown_output():
    """A kernel that grows its output with realloc, inlined into numba; the buffers read through the ABI."""
    A = ct.intervals([0.0, 3.0], [2.0, 6.0], values=[1.0, 2.0])
    B = ct.intervals([1.0], [5.0], values=[3.0])
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    inline = numba_inline(k, always_inline=False)

    @numba.njit
    def once(block):
        return inline(block)

    abi = k.abi
    block, keep, result, cells = _block_from_abi(abi, {"A": A, "B": B})
    assert once(block) == 0
    n = int(_take(abi, cells, 0, "ptr", 2)[1])
    got = list(zip(_take(abi, cells, 0, "left", n), _take(abi, cells, 0, "right", n), _take(abi, cells, 1, "val", n)))
    for key in list(cells):
        _take(abi, cells, *key, 0)
    assert got == [(1.0, 2.0, 3.0), (3.0, 5.0, 6.0)]
    assert [(c[0][0].value, c[0][1].value, v) for c, v in k(A=A, B=B).pieces()] == got


# ---------------------------------------------------------------- llvmlite
def test_llvmlite_link_and_call():
    import llvmlite.binding as llvm
    import llvmlite.ir as lir

    A, B = _dot_inputs()
    k = ct.compile(DOT, A=A, B=B)
    abi = k.abi
    host = lir.Module("host_test")
    entry = declare_packed(host, k)
    assert declare_packed(host, k) is entry
    fn = lir.Function(host, lir.FunctionType(lir.DoubleType(), [lir.PointerType()]), "twice_integral")
    b = lir.IRBuilder(fn.append_basic_block())
    i64 = lir.IntType(64)
    cell = b.load(b.gep(fn.args[0], [lir.Constant(i64, abi.slot(role=abi_mod.RESULT_CELL))], source_etype=i64),
                  typ=lir.PointerType())
    b.call(entry, [fn.args[0]])
    first = b.load(cell, typ=lir.DoubleType())
    b.call(entry, [fn.args[0]])
    b.ret(b.fadd(first, b.load(cell, typ=lir.DoubleType())))
    mod = llvm.parse_assembly(str(host))
    kmod = k.llvm_module()
    assert kmod.get_function(abi.packed_symbol) is not None and kmod.get_function(abi.symbol) is not None
    mod.link_in(kmod)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    f = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)(engine.get_function_address("twice_integral"))
    call = k.pack(A=A, B=B)
    assert f(call.address) == 2 * k(A=A, B=B) == 16.0
    assert k.llvm_module() is not kmod                    # a fresh module per call (link_in consumes it)


# ---------------------------------------------------------------- the earlier packed-call tests
def test_call_from_numba():
    A, B = _dot_inputs()
    k = ct.compile(DOT, A=A, B=B)
    f = k.ctypes_function

    @numba.njit
    def run(address, times):
        status = 0
        for _ in range(times):
            status |= f(address)
        return status

    call = k.pack(A=A, B=B)
    assert call.finish(run(call.address, 3)) == 8.0


def test_continuous_output_through_packed_call():
    A = ct.intervals([0.0], [4.0], values=[2.0])
    B = ct.intervals([1.0, 3.0], [2.0, 5.0], values=[1.0, 3.0], closed="both")
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    call = k.pack(A=A, B=B)
    C = call.finish(k.ctypes_function(call.address))
    assert [(c[0][0], c[0][1], v) for c, v in C.pieces()] == [
        (ct.Limit(1.0), ct.Limit(2.0), 2.0), (ct.Limit(3.0), ct.Limit(4.0, -1), 6.0)]


def test_dropped_packed_call_frees_its_buffers():
    """Buffers a run grew (and nobody adopted) are freed when the PackedCall is collected."""
    import gc

    A = ct.intervals([0.0, 3.0], [1.0, 4.0], values=[2.0, 5.0])
    B = ct.intervals([0.5], [3.5], values=[1.0])
    k = ct.compile("C[x] = A[x] * B[x]", A=A, B=B)
    call = k.pack(A=A, B=B)
    call.run()
    assert call.buffer(1, "val", 2, float).tolist() == [2.0, 5.0]     # [0.5, 1) and [3, 3.5)
    cells = list(call.cells.values())
    assert any(int(c[0]) for c in cells)
    del call
    gc.collect()
    assert all(int(c[0]) == 0 and int(c[1]) == 0 for c in cells)
