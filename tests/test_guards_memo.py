"""Guard verdicts on disk (`ctensor.analysis.guards_memo`): a verdict z3 proved in one process is
used by the next without z3, gives the same guard, and a damaged line is skipped (z3 decides
again).  Oracles: z3 itself (the in-process answer) and numpy (a spatial query in a new process)."""
import math
import os
import subprocess
import sys
import textwrap

import pytest

import ctensor as ct
from ctensor.analysis import guards, guards_memo
from ctensor.extents import Extent, SymLimit
from ctensor.ir import build as b
from ctensor.ir import nodes as ir
from ctensor.ir.types import F64
from ctensor.lower.context import Context

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture()
def memo_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CTENSOR_GUARD_MEMO", "1")
    guards.guard_cache.clear()
    guards_memo.forget()
    yield tmp_path
    guards.guard_cache.clear()
    guards_memo.forget()


def prove_once():
    """(proved guard, prover stats) of a guard with a redundant conjunct, in a fresh context."""
    ctx = Context(prove_guards=True)
    x = ir.Read(ctx.param("x", F64))
    xs = SymLimit(ctx.let(b.add(x, b.f64(0.0)), "xs"), b.i8(0))
    g = Extent(SymLimit.const(ct.Limit(-math.inf, 1)), xs, True).nonempty()
    return ctx.prove(g), ctx.prover.stats


def new_process():
    """What a new process knows: nothing in memory."""
    guards.guard_cache.clear()
    guards_memo.forget()


def test_a_proved_verdict_is_reused_without_z3(memo_dir):
    first, stats = prove_once()
    assert stats["z3_checks"] > 0 and stats["memo_hits"] == 0
    assert isinstance(first, ir.Cmp) and first.op == "lt"
    files = list(memo_dir.glob("guards_*.memo"))
    assert len(files) == 1 and len(files[0].read_text().splitlines()) == 1
    new_process()
    again, stats = prove_once()
    assert stats["z3_checks"] == 0 and stats["memo_hits"] == 1 and repr(again) == repr(first)


@pytest.mark.parametrize("damage", ["verdict", "check", "truncate", "garbage"])
def test_a_damaged_line_is_skipped(memo_dir, damage):
    first, _ = prove_once()
    f = next(memo_dir.glob("guards_*.memo"))
    h, v, c = f.read_text().split()
    f.write_text({"verdict": f"{h} T {c}\n", "check": f"{h} {v} 00000000\n", "truncate": f"{h} {v}",
                  "garbage": "\x00\xff nonsense\n"}[damage])
    new_process()
    again, stats = prove_once()
    assert stats["memo_hits"] == 0 and stats["z3_checks"] > 0 and repr(again) == repr(first)


def test_memo_off(memo_dir, monkeypatch):
    monkeypatch.setenv("CTENSOR_GUARD_MEMO", "0")
    prove_once()
    assert not list(memo_dir.glob("guards_*.memo"))


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from ctensor.apps import spatial
    pts = np.random.default_rng(1).uniform(0, 100, (3000, 2))
    ix = spatial.index(pts)
    if sys.argv[1] == "box":
        got, want = ix.box([10, 10], [30, 25]), np.flatnonzero(((pts >= [10, 10]) & (pts <= [30, 25])).all(1))
    else:
        got = ix.radius([50, 40], 7.5)
        want = np.flatnonzero(((pts - [50, 40]) ** 2).sum(1) <= 7.5 ** 2)
    assert sorted(np.asarray(got).tolist()) == want.tolist(), (got, want)
    k = ix.kernels[sys.argv[1]]
    stats = k.guard_stats          # (the optimised tier's: `driver.tiering`)
    print(k.source, stats["z3_checks"], stats["memo_hits"], int("z3" in sys.modules))
""")


def test_a_new_kernel_with_known_guards_compiles_without_z3(tmp_path):
    """The spatial radius kernel's guards are the box kernel's: once a process compiled the box
    query, a new process compiles the radius query (a new kernel) without importing z3."""
    env = dict(os.environ, CTENSOR_CACHE_DIR=str(tmp_path), CTENSOR_GUARD_MEMO="1")
    run = lambda op: subprocess.run([sys.executable, "-c", CHILD, op], env=env, capture_output=True, text=True,
                                    timeout=600, cwd=ROOT)
    box = run("box")
    assert box.returncode == 0, box.stderr[-3000:]
    src, checks, hits, z3 = box.stdout.split()
    assert src == "compiled" and int(checks) > 0 and z3 == "1"
    radius = run("radius")
    assert radius.returncode == 0, radius.stderr[-3000:]
    src, checks, hits, z3 = radius.stdout.split()
    assert src == "compiled" and checks == "0" and int(hits) > 0 and z3 == "0"


def test_a_full_memo_is_read_but_not_extended(memo_dir, monkeypatch):
    first, _ = prove_once()
    f = next(memo_dir.glob("guards_*.memo"))
    size = f.stat().st_size
    monkeypatch.setattr(guards_memo, "MAX_BYTES", size)
    new_process()
    again, stats = prove_once()                       # its one line is read
    assert stats["memo_hits"] == 1 and repr(again) == repr(first)
    new_process()
    guards_memo.put("0" * 32, ("const", True))         # full: nothing appended
    assert f.stat().st_size == size


def test_old_memo_files_are_pruned(memo_dir):
    for k in range(guards_memo.MAX_FILES + 3):
        f = memo_dir / f"guards_old{k:02d}.memo"
        f.write_text("")
        os.utime(f, ns=(k * 10**9, k * 10**9))
    prove_once()                                      # starts this version's file
    files = sorted(p.name for p in memo_dir.glob("guards_*.memo"))
    assert len(files) == guards_memo.MAX_FILES
    assert "guards_old00.memo" not in files and f"guards_old{guards_memo.MAX_FILES + 2:02d}.memo" in files
