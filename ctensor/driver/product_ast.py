"""The einsum's right side as a product of factors, for the driver's rewrites that work on the text
(`dense_split`, `grid_offsets`): parsed once by the language's own parser (`lang.parser`) and by
Python's `ast` over the same preprocessed text."""
from __future__ import annotations

import ast


def parse_product(text: str):
    """(the parsed Einsum, the Python ast factors of its right side, the measure call `d(...)`
    among them), or None if the text does not parse (the normal compile reports why)."""
    from ..lang.parser import _preprocess, parse
    try:
        es = parse(text)
        tree = ast.parse(_preprocess(" ".join(text.split())), mode="exec")
    except Exception:
        return None
    factors = factors_of(tree.body[0].value)
    return es, factors


def factors_of(node) -> list:
    """The factors of a product expression (a non-product is one factor)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return factors_of(node.left) + factors_of(node.right)
    return [node]


def is_measure(f) -> bool:
    """Is the factor the measure call `d(...)`?"""
    return isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id == "d"


def operand(f) -> str:
    """A factor's text, parenthesised unless it is atomic (`(r*r <= R) * F[j, c]`, not `r*r <= R * F`)."""
    text = ast.unparse(f)
    return text if isinstance(f, (ast.Subscript, ast.Name, ast.Call, ast.Constant)) else f"({text})"


__all__ = ["factors_of", "is_measure", "operand", "parse_product"]
