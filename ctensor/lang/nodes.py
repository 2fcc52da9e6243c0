"""Expression nodes of a parsed continuous einsum (continuous paper Fig. 2).

All nodes are frozen dataclasses, so equal programs give equal (and hashable) trees.  Names are
parsed as `EScalar`; `lang.program` decides which of them are loop indices (`EIndex`).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ELit:
    value: object


@dataclass(frozen=True)
class EScalar:
    name: str


@dataclass(frozen=True)
class EIndex:
    name: str


@dataclass(frozen=True)
class ECall:
    op: str
    args: tuple


@dataclass(frozen=True)
class EAffine:
    """One access dimension: sum(coef * index for coef, index in terms) + const (paper Fig. 2,
    "affine index").

    `terms` is ((coef, index name), ...) in order of first appearance, one entry per index; `coef`
    and `const` are scalar expressions (`ELit`, `EScalar`, or '+', '*', 'neg' calls of them; never
    an index).  `const` is None for no constant.  Build and rebind with `lang.affine`."""

    terms: tuple
    const: object = None

    @property
    def indices(self) -> tuple:
        return tuple(i for _, i in self.terms)

    def __str__(self) -> str:
        from .affine import format_affine
        return format_affine(self)


@dataclass(frozen=True)
class EAccess:
    """A tensor access `A[e0, e1, ...]`.

    dims : one `EAffine` per mode (the authoritative index expressions).
    idxs : per mode, the index it is read with: the only index of the dimension, or for an index
        sum (A[y + x]) the first index written.
    permissive : per mode, True for `~e` (Finch's Permissive wrapper: a read outside the level's
        declared extent gives `missing`, see `formats.affine`).
    offsets : per mode, (sign, ELit | EScalar) when the dimension is `x ± c` (unit coefficient and
        one literal or scalar constant; the form the Offset wrapper lowers), otherwise None.
    text : the access as written (for error messages; not part of equality).
    """

    tensor: str
    idxs: tuple
    permissive: tuple = ()
    offsets: tuple = ()
    dims: tuple = ()
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        if self.text:
            return self.text
        dims = (("~" if p else "") + (f"({d})" if p and len(d.terms) + (d.const is not None) > 1 else str(d))
                for d, p in zip(self.dims, self.permissive or (False,) * len(self.dims)))
        return f"{self.tensor}[{', '.join(dims)}]"


@dataclass(frozen=True)
class Einsum:
    out: str
    out_idxs: tuple
    rhs: object
    measures: dict          # reduction index -> measure name
    text: str


def product_factors(e) -> list:
    """The factors of a product chain (`*`, `&`) at the top of expression `e`; [e] otherwise."""
    if isinstance(e, ECall) and e.op in ("*", "and"):
        return [f for a in e.args for f in product_factors(a)]
    return [e]
