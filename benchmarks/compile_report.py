"""Cold compile time of every app kernel (spatial, genomics, graphics, point cloud), split by stage,
each operation in a fresh process with the disk cache off (issue 27 item 5: < 0.2 s per kernel).
A kernel named `app.op~` is a driver rewrite of that app's einsum (grid offsets, dense split).

    python benchmarks/compile_report.py [--runs 3] [--only box,radius,...] [--no-extras] [--memo]

`--memo` adds a second table: each operation compiled cold in a cache directory that holds only the
guard verdicts (`analysis.guards_memo`) the *other* operations' compiles wrote, as in a later
session that compiles a new kernel (the kernel cache is on there: its writes are part of the time).

First (unless --no-extras): `import ctensor` time and `codegen.load_compiled` time in fresh processes
(a warm load from the entry's shared library, without llvmlite).
Children run with bytecode caches (a private PYTHONPYCACHEPREFIX, filled first), as an installed
package does.

Stages (seconds, per kernel; the minimum over `--runs` fresh processes of each stage's time):
  plan      parse, plan, validity (z3 only where an access dimension mixes indices)
  lower     looplet lowering to IR, not counting the guard proofs
  guards    z3 guard proofs (the first one in a process imports z3)
  emit      IR -> LLVM text, parse and verify (the first compile in a process creates the engine,
            importing llvmlite)
  optimize  the LLVM pass pipeline
  codegen   machine code (MCJIT)
  total     wall time of the kernel's compile, from parsing to a callable (the stages plus glue)
  cpu       the process's CPU time over the same span (less sensitive to other load on the machine)
  run       one call of the operation once compiled (the app's query, to check that a faster
            compile did not make the code slower; a few ms of noise)
The stage clocks wrap the compiler's functions wherever a module refers to them, so the report
follows the code as it is refactored (a stage it cannot find reads 0).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# operation name -> the code run in the child (after `setup`); it defines `op()`
OPS = {
    "box": "ix = spatial.index(PTS); op = lambda: ix.box([10, 10], [20, 20])",
    "radius": "ix = spatial.index(PTS); op = lambda: ix.radius([50, 50], 5.0)",
    "box_many": "ix = spatial.index(PTS); op = lambda: ix.box_many(LO, LO + 5)",
    "radius_many": "ix = spatial.index(PTS); op = lambda: ix.radius_many(LO, 3.0)",
    "count": "ix = genomics.index(DATA); op = lambda: ix.count_overlaps(QS, QE, chrom='chr1')",
    "overlap": "ix = genomics.index(DATA); op = lambda: ix.overlap(QS, QE, chrom='chr1')",
    "intersect": "ix = genomics.index(DATA); op = lambda: ix.intersect(QS, QE, chrom='chr1')",
    "closest": "ix = genomics.index(DATA); op = lambda: ix.closest(QS, QE, chrom='chr1')",
    "covered": "ix = genomics.index(DATA); op = lambda: ix.covered(QS, QE, chrom='chr1')",
    "subtract": "ix = genomics.index(DATA); op = lambda: ix.subtract(QS, QE, chrom='chr1')",
    "merge": "ix = genomics.index(DATA); op = lambda: ix.merge()",
    "count_grid": "ix = genomics.index(DATA, layout='grid'); op = lambda: ix.count_overlaps(QS, QE, chrom='chr1')",
    "overlap_grid": "ix = genomics.index(DATA, layout='grid'); op = lambda: ix.overlap(QS, QE, chrom='chr1')",
    "interpolate": "op = lambda: graphics.interpolate(GRID32, GPTS)",
    "interpolate64": "op = lambda: graphics.interpolate(GRID64, GPTS)",
    "kpconv": "op = lambda: pointcloud.kpconv(CLOUD, FEATS, KPS, KW, 0.1, 0.04)",
    "neighbors": "op = lambda: pointcloud.radius_neighbors(CLOUD, CLOUD, 0.1)",
}

# the inputs of `OPS`, defined in every child (also `warm_report`'s)
DATA = textwrap.dedent("""
    rng = np.random.default_rng(0)
    PTS = rng.uniform(0, 100, (20000, 2))
    LO = rng.uniform(0, 90, (50, 2))
    s = np.sort(rng.integers(0, 10**6, 2000))
    DATA = pd.DataFrame({"chrom": "chr1", "start": s, "end": s + rng.integers(1, 500, s.size)})
    QS = np.sort(rng.integers(0, 10**6, 200)); QE = QS + 300
    VOX = rng.uniform(0, 1, (16, 16, 16, 4)) * (rng.uniform(0, 1, (16, 16, 16, 1)) < 0.3)
    GRID32 = graphics.voxel_grid(VOX.astype(np.float32)); GRID64 = graphics.voxel_grid(VOX)
    GPTS = rng.uniform(-1, 16, (5000, 3))
    CLOUD = rng.uniform(0, 1, (2000, 3)); FEATS = rng.standard_normal((2000, 8))
    KPS = rng.uniform(-0.05, 0.05, (15, 3)); KW = rng.standard_normal((15, 8, 8))
""")

CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import pandas as pd
    import ctensor
    from ctensor.apps import genomics, graphics, pointcloud, spatial
    import ctensor.codegen.engine as engine
    import ctensor.analysis.guards as guards

    {data}

    clock = {"plan": 0.0, "lower": 0.0, "guards": 0.0, "emit": 0.0, "optimize": 0.0, "codegen": 0.0}
    depth = {"lower": 0}
    kernels = []          # one row per compiled kernel: its text and its stage deltas
    mark = dict(clock)
    text = [None]
    start = [0.0, 0.0]

    import threading
    main = threading.main_thread()

    def wrap(fn, stage, reentrant=False, after=None):
        def w(*a, **k):
            if threading.current_thread() is not main or reentrant and depth[stage]:
                return fn(*a, **k)      # (a background tier is timed as a whole: `optimised`)
            depth[stage] = depth.get(stage, 0) + 1
            t = time.perf_counter()
            if stage == "plan":
                start[0], start[1] = t, time.process_time()   # a kernel's compile starts with its plan
            try:
                out = fn(*a, **k)
            finally:
                depth[stage] -= 1
                clock[stage] += time.perf_counter() - t
            if after:
                after(a, out)
            return out
        return w

    def replace_everywhere(fn, new):
        for name, m in list(sys.modules.items()):
            if name.startswith("ctensor") and m is not None:
                for attr, v in list(vars(m).items()):
                    if v is fn:
                        setattr(m, attr, new)

    def on_plan(a, out):
        text[0] = getattr(a[0], "text", None)

    def on_compiled(a, cf):
        # the engine's own clocks for the LLVM stages; a kernel ends here
        secs = cf.compile_seconds
        clock["emit"] += secs.get("emit", 0.0); clock["optimize"] += secs.get("optimize", 0.0)
        clock["codegen"] += secs.get("jit", 0.0)
        row = {k: clock[k] - mark[k] for k in clock}
        row["lower"] -= row["guards"]
        row["text"] = text[0]
        kernels.append(row)
        mark.update(clock)

    import ctensor.lang.program as program
    import ctensor.lower.lowerer as lowerer
    replace_everywhere(program.make_plan, wrap(program.make_plan, "plan", after=on_plan))
    replace_everywhere(lowerer.lower, wrap(lowerer.lower, "lower", reentrant=True))
    guards.GuardProver._solve = wrap(guards.GuardProver._solve, "guards")
    compile_orig = engine._Engine.compile
    def compile_timed(self, fn, opt, use_cache, quick=False):
        cf = compile_orig(self, fn, opt, use_cache, quick)
        if threading.current_thread() is main:
            on_compiled(None, cf)
            kernels[-1]["total"] = time.perf_counter() - start[0]
            kernels[-1]["cpu"] = time.process_time() - start[1]
            kernels[-1]["tier"] = cf.tier
        return cf
    engine._Engine.compile = compile_timed

    # a first tier (`driver.tiering`): when its optimised code took over, from its compile's start
    import ctensor.driver.tiering as tiering
    upgrade_orig, tiered = tiering.upgrade, []
    def upgrade_timed(kernel, build, on_final=None):
        row, t_start = kernels[-1], start[0]
        tiered.append(kernel)
        def done(spec, fn):
            row["optimised"] = time.perf_counter() - t_start
            if on_final is not None:
                on_final(spec, fn)
        upgrade_orig(kernel, build, done)
    tiering.upgrade = upgrade_timed

    exec(sys.argv[1])
    t = time.perf_counter(); op(); first = time.perf_counter() - t
    runs = []
    for _ in range(5):        # at the first tier, while the optimised code compiles
        t = time.perf_counter(); op(); runs.append(time.perf_counter() - t)
    first_tier_run = min(runs) if tiered and all(k.tier == "quick-cg0" for k in tiered) else None
    tiering.wait()
    runs = []
    for _ in range(5):
        t = time.perf_counter(); op(); runs.append(time.perf_counter() - t)
    json.dump({"first": first, "run": min(runs), "run1": first_tier_run, "kernels": kernels}, sys.stdout)
""")
CHILD = CHILD.replace("{data}\n", DATA)


def _env(**extra):
    """The children's environment: bytecode caches on, in a private directory (this machine sets
    PYTHONDONTWRITEBYTECODE, so every import would compile ctensor's sources: ~40 ms of a cold
    compile and half of `import ctensor` that an installed package never pays)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=PYCACHE, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


PYCACHE = os.path.join(__import__("tempfile").gettempdir(), f"ctensor-compile-report-pyc-{os.getpid()}")


def child(code, cache="off"):
    env = _env(CTENSOR_CACHE_DIR=cache)
    o = subprocess.run([sys.executable, "-c", CHILD, code], env=env, capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    if o.returncode:
        raise RuntimeError(o.stderr[-2000:])
    return json.loads(o.stdout)


def name_of(text):
    from ctensor.apps.genome_einsums import EINSUMS as G
    from ctensor.apps.graphics import INTERPOLATE
    from ctensor.apps.pointcloud import EINSUMS as P
    from ctensor.apps.spatial import EINSUMS as S
    import difflib
    tables = ((S, "spatial."), (G, "genomics."), ({"interpolate": INTERPOLATE}, "graphics."), (P, "pointcloud."))
    if text is None:
        return "?"
    norm = " ".join(text.split())
    for table, prefix in tables:
        for k, v in table.items():
            if " ".join(v.split()) == norm:
                return prefix + k
    # a driver rewrite of an app's text (grid offsets, dense split): the closest app einsum, marked ~
    ratio, name = max((difflib.SequenceMatcher(None, " ".join(v.split()), norm).ratio(), prefix + k)
                      for table, prefix in tables for k, v in table.items())
    return name + "~" if ratio > 0.4 else text[:28]


IMPORT = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter(); c0 = time.process_time()
    import numpy
    t1 = time.perf_counter(); c1 = time.process_time()
    import ctensor
    t2 = time.perf_counter(); c2 = time.process_time()
    print(t1 - t0, t2 - t1, c2 - c1, t2 - t0)
""")

# a fresh process loads a kernel compiled by an earlier one, by symbol (the runtime's warm path):
# `load_compiled` (headers and sha256 checked, the entry's shared library loaded: `codegen.library`;
# MCJIT, creating the engine, only without one), and whether llvmlite.binding was imported
LOAD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import ctensor
    t0 = time.perf_counter()
    from ctensor.codegen import load_compiled
    t1 = time.perf_counter()
    cf = load_compiled(sys.argv[1])
    t2 = time.perf_counter()
    assert cf is not None and cf.source == "disk"
    print(t1 - t0, t2 - t1, int("llvmlite.binding" in sys.modules))
""")


def extras(runs):
    import tempfile
    rows = []
    for _ in range(max(runs, 5)):
        o = subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True, cwd=ROOT, env=_env())
        rows.append([float(x) for x in o.stdout.split()])
    best = [min(r[k] for r in rows) for k in range(4)]
    print(f"import: numpy {best[0]:.3f} s, ctensor after numpy {best[1]:.3f} s wall / {best[2]:.3f} s cpu, "
          f"both {best[3]:.3f} s (min of {len(rows)} fresh processes; python -c 'import ctensor' adds the "
          f"interpreter's start)")
    with tempfile.TemporaryDirectory() as d:
        env = _env(CTENSOR_CACHE_DIR=d)
        code = ("import numpy as np, ctensor\nfrom ctensor.apps import spatial\n"
                "ix = spatial.index(np.random.default_rng(0).uniform(0, 100, (2000, 2)))\n"
                "ix.box([10, 10], [20, 20]); k = ix.kernels['box']; k.wait_optimized(); print(k.compiled.name)")
        o = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
        symbol = o.stdout.split()[-1]
        times = []
        for _ in range(max(runs, 5)):
            o = subprocess.run([sys.executable, "-c", LOAD, symbol], capture_output=True, text=True, cwd=ROOT, env=env)
            if o.returncode:
                raise RuntimeError(o.stderr[-2000:])
            times.append([float(x) for x in o.stdout.split()])
        print(f"load_compiled (spatial box kernel, warm disk cache, fresh process): "
              f"{min(t[1] for t in times) * 1e3:.2f} ms, after importing ctensor.codegen "
              f"({min(t[0] for t in times) * 1e3:.1f} ms); median {sorted(t[1] for t in times)[len(times) // 2] * 1e3:.2f} ms; "
              f"llvmlite.binding imported: {'yes' if any(t[2] for t in times) else 'no'}")


STAGES = ("plan", "lower", "guards", "emit", "optimize", "codegen")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-extras", action="store_true", help="skip the import and load_compiled timings")
    ap.add_argument("--memo", action="store_true", help="also: cold compiles with the other operations' guard "
                                                        "verdicts on disk")
    args = ap.parse_args()
    # fill the bytecode cache once (every module an app compile imports)
    subprocess.run([sys.executable, "-c", "import ctensor.apps.genomics, ctensor.apps.spatial, ctensor.apps.graphics, ctensor.apps.pointcloud, z3, llvmlite.binding"],
                   cwd=ROOT, env=_env(), check=True)
    child(OPS["box"])
    child(OPS["count"])
    if not args.no_extras:
        extras(args.runs)
    ops = [o for o in OPS if not args.only or o in args.only.split(",")]
    print(f"cold compile per app kernel, seconds (min of {args.runs} fresh processes, CTENSOR_CACHE_DIR=off)")
    table(ops, args.runs, lambda op: child(OPS[op]))
    if args.memo:
        memos = seed_memos(ops)
        print(f"\ncold compile per app kernel with the guard verdicts of the other operations on disk "
              f"(`analysis.guards_memo`: a later session; kernel cache empty), seconds (min of {args.runs})")
        table(ops, args.runs, lambda op: with_memo(op, memos))


def table(ops, runs, run):
    print(f"| operation | kernel | tier | {' | '.join(STAGES)} | total | cpu | optimised | run (ms) | "
          f"first-tier run (ms) |")
    print("|---|---|---|" + "---|" * (len(STAGES) + 5))
    for op in ops:
        results = [run(op) for _ in range(runs)]
        n = min(len(r["kernels"]) for r in results)
        run1 = [r["run1"] for r in results if r["run1"] is not None]
        run1 = f"{min(run1) * 1e3:.2f}" if run1 else "-"
        for k in range(n):
            rows = [r["kernels"][k] for r in results]
            best = {s: min(r[s] for r in rows) for s in STAGES}
            total = min(r["total"] for r in rows)
            cpu = min(r["cpu"] for r in rows)
            opt = [r["optimised"] for r in rows if "optimised" in r]
            cells = [op, name_of(rows[0]["text"]), rows[0]["tier"], *(f"{best[s]:.3f}" for s in STAGES),
                     f"{total:.3f}", f"{cpu:.3f}", f"{min(opt):.3f}" if opt else "-",
                     f"{min(r['run'] for r in results) * 1e3:.2f}", run1 if opt else "-"]
            print("| " + " | ".join(cells) + " |", flush=True)


def seed_memos(ops) -> dict:
    """op -> (memo file name, its verdict lines) after compiling op alone into an empty cache."""
    import tempfile
    out = {}
    for op in ops:
        with tempfile.TemporaryDirectory() as d:
            child(OPS[op], d)
            files = [f for f in os.listdir(d) if f.startswith("guards_") and f.endswith(".memo")]
            out[op] = (files[0] if files else None,
                       [ln for f in files for ln in open(os.path.join(d, f)).read().splitlines()])
    return out


def with_memo(op, memos):
    """A cold compile of `op` in a cache directory holding only the other operations' verdicts."""
    import tempfile
    name = next((m[0] for m in memos.values() if m[0]), None)
    lines = sorted({ln for o, (_, ls) in memos.items() if o != op for ln in ls})
    with tempfile.TemporaryDirectory() as d:
        if name:
            with open(os.path.join(d, name), "w") as f:
                f.write("".join(ln + "\n" for ln in lines))
        return child(OPS[op], d)


if __name__ == "__main__":
    main()
