"""Warm start of every app kernel: how long a kernel already in the on-disk kernel cache takes to be
ready in a new process (issue 27 item 5: < 5 ms), next to its cold compile.

    python benchmarks/warm_report.py [--runs 3] [--only box,count,...]

For each operation of `compile_report.OPS`: one fresh process compiles its kernels into an empty
cache directory (cold), then `--runs` fresh processes load them from it (warm).  Columns (ms,
minimum over the processes): `kernels` the time spent in `ctensor.driver.compile_kernel` (every
kernel the index and the operation's first call compile or load, siblings included), `first
call` the operation's first call and `run` a later one, `ready` what a warm start costs the user
beyond the query (importing the driver + kernels loaded while building the index + first call -
run: native entries included), `llvmlite` whether llvmlite.binding was imported (the JIT engine:
only when a kernel has no shared library, `codegen.library`), `import` of ctensor.  Children run
with bytecode caches (`compile_report._env`: this machine sets PYTHONDONTWRITEBYTECODE);
`--no-pyc` runs them without (every import compiles its source).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

from compile_report import DATA, OPS, ROOT, _env

# the interval dot product of the README (a kernel with no app around it), then the app operations
OPS = {"dot": "A = ctensor.intervals(np.array([0., 2.]), np.array([1., 3.]), values=np.array([1., 2.])); "
              "op = lambda: ctensor.einsum('s[] = A[x] * A[x] * d(x; lebesgue)', A=A)", **OPS}

CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import ctensor
    t_import = time.perf_counter() - t0
    import numpy as np
    import pandas as pd
    from ctensor.apps import genomics, graphics, pointcloud, spatial
    t = time.perf_counter()
    import ctensor.driver.pipeline as pipeline
    t_driver = time.perf_counter() - t

    {data}

    spent, sources = [0.0], []
    compile_kernel = pipeline.compile_kernel
    def timed(*a, **k):
        t = time.perf_counter()
        kern = compile_kernel(*a, **k)
        spent[0] += time.perf_counter() - t
        sources.append(kern.source)
        return kern
    for name, m in list(sys.modules.items()):
        if name.startswith("ctensor") and m is not None and getattr(m, "compile_kernel", None) is compile_kernel:
            m.compile_kernel = timed
    exec(sys.argv[1])
    setup = spent[0]
    t = time.perf_counter(); op(); first = time.perf_counter() - t
    runs = []
    for _ in range(5):
        t = time.perf_counter(); op(); runs.append(time.perf_counter() - t)
    json.dump({"import": t_import, "llvmlite": "llvmlite.binding" in sys.modules, "kernels": spent[0],
               "sources": sources, "first": first, "run": min(runs),
               "ready": t_driver + setup + first - min(runs)}, sys.stdout)
""").replace("{data}\n", DATA)


def child(code, cache, pyc=True):
    env = _env(CTENSOR_CACHE_DIR=cache)        # with bytecode caches, as an installed package
    if not pyc:
        env.pop("PYTHONPYCACHEPREFIX", None)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    o = subprocess.run([sys.executable, "-c", CHILD, code], env=env, capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    if o.returncode:
        raise RuntimeError(o.stderr[-2000:])
    return json.loads(o.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-pyc", action="store_true")
    args = ap.parse_args()
    ops = [o for o in OPS if not args.only or o in args.only.split(",")]
    print(f"kernel readiness per app operation, ms (warm: min of {args.runs} fresh processes)")
    print("| operation | kernels | cold: kernels | warm: kernels | warm: first call | warm: run | "
          "warm: ready | warm: llvmlite | warm: import |")
    print("|---|---|---|---|---|---|---|---|---|")
    pyc = not args.no_pyc
    for op in ops:
        with tempfile.TemporaryDirectory() as cache:
            cold = child(OPS[op], cache, pyc)
            warm = [child(OPS[op], cache, pyc) for _ in range(args.runs)]
        assert all(s == "disk" for w in warm for s in w["sources"]), [w["sources"] for w in warm]
        best = {k: min(w[k] for w in warm) for k in ("kernels", "first", "run", "ready", "import")}
        print(f"| {op} | {len(cold['sources'])} | {cold['kernels'] * 1e3:.1f} | {best['kernels'] * 1e3:.2f} | "
              f"{best['first'] * 1e3:.2f} | {best['run'] * 1e3:.2f} | {best['ready'] * 1e3:.2f} | "
              f"{'yes' if any(w['llvmlite'] for w in warm) else 'no'} | {best['import'] * 1e3:.0f} |", flush=True)


if __name__ == "__main__":
    main()
