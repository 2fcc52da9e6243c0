"""Nodes of the ctensor IR: a small typed, structured, SSA-style IR.

A kernel is one `Function` whose parameters are pointers, i64 and f64 (the only types that cross
the ABI), whose body is a list of statements, and which returns an i32 status (0 = success).

* Values are expression trees over `Const`, `Read` of a variable, arithmetic, comparisons, casts,
  selects and loads.  Expressions are pure except `Load`, which reads memory at the point where the
  expression is evaluated; the lowering therefore binds every load it wants to reuse to a `Let`.
* Variables (`Var`) are of three kinds: ``param`` (function parameter, read-only), ``let`` (an SSA
  value: defined exactly once by a `Let`, read-only afterwards) and ``mut`` (an explicit mutable
  variable: cursors and accumulators; codegen gives each one an alloca that LLVM promotes).
* Control flow is structured: `If`, `While` (condition re-evaluated before every iteration) and
  `For` (half-open integer range ``lo <= var < hi``, step 1).
* A `Limit` (paper §5.1) is not an IR type: the lowering keeps it as two scalars (value, i8 ε).

Operator names:
  Bin:  add sub mul div rem min max and or xor   (div/rem: signed for ints; and/or/xor: ints and i1)
  Cmp:  lt le gt ge eq ne                        (floats: ordered, except ne which is unordered)
  Un:   neg not sqrt abs floor exp log nextup nextdown   (not: i1 or integer bitwise)
  Bin pow: floats only (llvm.pow)
  Call: a small fixed set of external functions, see ``EXTERNALS``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from .types import I1, I8, I32, I64, F64, PtrType, ScalarType, Type

# name -> (parameter types as strings, return type string); 'ptr' is any pointer type.
# realloc's result has the type of its first argument.
EXTERNALS = {
    "realloc": (("ptr", "i64"), "ptr"),
    "free": (("ptr",), "void"),
}


@dataclass(eq=False)
class Var:
    name: str
    type: Type
    kind: str = "mut"  # 'param' | 'let' | 'mut'

    def __repr__(self) -> str:
        return f"%{self.name}"


# ---------------------------------------------------------------- expressions

@dataclass(frozen=True)
class Const:
    value: Union[int, float, bool]
    type: ScalarType


@dataclass(frozen=True)
class Read:
    var: Var

    @property
    def type(self) -> Type:
        return self.var.type


@dataclass(frozen=True)
class Bin:
    op: str
    a: "Expr"
    b: "Expr"

    @property
    def type(self) -> Type:
        return self.a.type


@dataclass(frozen=True)
class Cmp:
    op: str
    a: "Expr"
    b: "Expr"

    @property
    def type(self) -> Type:
        return I1


@dataclass(frozen=True)
class Un:
    op: str
    a: "Expr"

    @property
    def type(self) -> Type:
        return self.a.type


@dataclass(frozen=True)
class Select:
    cond: "Expr"
    a: "Expr"
    b: "Expr"

    @property
    def type(self) -> Type:
        return self.a.type


@dataclass(frozen=True)
class Cast:
    to: ScalarType
    a: "Expr"

    @property
    def type(self) -> Type:
        return self.to


@dataclass(frozen=True)
class Load:
    ptr: "Expr"      # PtrType
    index: "Expr"    # i64, in elements

    @property
    def type(self) -> Type:
        return self.ptr.type.elem


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple
    ret: Type | None  # None for void

    @property
    def type(self) -> Type | None:
        return self.ret


Expr = Union[Const, Read, Bin, Cmp, Un, Select, Cast, Load, Call]


# ---------------------------------------------------------------- statements

@dataclass
class Let:
    var: Var          # kind 'let'
    value: Expr


@dataclass
class Assign:
    var: Var          # kind 'mut'
    value: Expr


@dataclass
class Store:
    ptr: Expr
    index: Expr
    value: Expr


@dataclass
class If:
    cond: Expr
    then: list = field(default_factory=list)
    orelse: list = field(default_factory=list)


@dataclass
class While:
    cond: Expr
    body: list = field(default_factory=list)


@dataclass
class For:
    var: Var          # i64, kind 'let' inside the body
    lo: Expr
    hi: Expr          # exclusive
    body: list = field(default_factory=list)


@dataclass
class Return:
    status: int       # i32 status code; 0 = success


@dataclass
class Eval:
    expr: Expr        # an expression evaluated for its effect (a void Call)


@dataclass
class Comment:
    text: str


Stmt = Union[Let, Assign, Store, If, While, For, Return, Eval, Comment]


@dataclass
class Function:
    name: str
    params: list      # list[Var], kind 'param'
    body: list        # list[Stmt]; falling off the end returns status 0


# status codes returned by kernels
STATUS_OK = 0
STATUS_OUT_OF_MEMORY = 1
STATUS_LOOKUP_ON_INTERVAL = 2   # a pinpoint-only access met an extent of positive length
STATUS_INDEX_ON_INTERVAL = 3    # an index value was needed on an interval of positive length
STATUS_OUTPUT_ORDER = 4         # a sparse output fiber received a coordinate not after its last one
STATUS_BAD_AFFINE = 5           # an affine index had a zero coefficient or a non-finite scalar
STATUS_FIBER_ORDER = 6          # a sparse output level's fibers were appended out of position order
STATUS_INT_OVERFLOW = 7         # an int64 sum (or count x value) of a reduction left the int64 range
STATUS_COUNT_AT_RUN_BOUND = 8   # counting at a point where an outer run-list level's runs meet (not lowered)
STATUS_NAMES = {
    STATUS_COUNT_AT_RUN_BOUND: "the counting measure met a point where runs of an outer SparseRunList / "
                               "SparseInterval level (with inner levels) meet or a closed [c, c] run; whether "
                               "it counts differs between inner coordinates, which this kernel does not decide "
                               "(it does for one such run list at the outermost loop with one integer inner index; "
                               "not for two, a real or a second inner index, or a reversing view): store that tensor with the real index "
                               "innermost, or as pinpoints (ct.points / a SparseList level) if its runs are points",
    STATUS_INT_OVERFLOW: "an integer reduction overflowed int64 (the sum, or a count of integer coordinates times "
                         "a value, left [-2**63, 2**63 - 1]); it was stopped rather than wrapped: give the inputs "
                         "float values (e.g. values=np.asarray(v, float)) to sum in float64",
    STATUS_OUTPUT_ORDER: "a sparse output fiber was written out of coordinate order (the loop order "
                         "revisits the output fiber with coordinates that are not increasing); use a "
                         "Dense output level or change the loop order",
    STATUS_OUT_OF_MEMORY: "out of memory while growing an output buffer",
    STATUS_BAD_AFFINE: "an affine access index (A[a*x + b]) had a zero coefficient a, or a non-finite a or b, "
                       "at run time; coefficients must be non-zero and scalars finite",
    STATUS_FIBER_ORDER: "the fibers of a sparse output level (SparseList, SparseRunList) below the first were "
                        "written out of position order (the loop order visits an outer output index out of "
                        "order, e.g. through a sparse input read in another order); use Dense or SparseByteMap "
                        "levels for the integer output modes, or change the loop order",
    STATUS_LOOKUP_ON_INTERVAL: "a pinpoint-only (Lookup) access met an interval of positive length",
    STATUS_INDEX_ON_INTERVAL: "an expression of an index met an effectual interval of positive length; such "
                              "expressions are valid only where every effectual partition is a pinpoint (paper §4.3)",
}

__all__ = [
    "Var", "Const", "Read", "Bin", "Cmp", "Un", "Select", "Cast", "Load", "Call", "Expr",
    "Let", "Assign", "Store", "If", "While", "For", "Return", "Eval", "Comment", "Stmt",
    "Function", "EXTERNALS", "I1", "I8", "I32", "I64", "F64", "PtrType", "ScalarType",
]
