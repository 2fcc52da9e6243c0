"""Markdown table from a bench_pointcloud.py run: one row per layer and channel width, the fastest
round of each implementation in ms (the machine is shared: the minimum is the least disturbed run;
`--median` for medians), ctensor's speed-up over the PyTorch peers and its time over numba + BLAS;
then the cold compile time of the kpconv kernels (a fresh process with an empty kernel cache).

    python benchmarks/pointcloud_report.py pc.json [--no-compile] [--median]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

COLD = """
import time, numpy as np
t0 = time.perf_counter()
import ctensor.apps.pointcloud as pc
rng = np.random.default_rng(0)
p = rng.uniform(0, 1, (200, 3))
pc.kpconv(p, rng.standard_normal((200, 4)), rng.uniform(-0.05, 0.05, (15, 3)), rng.standard_normal((15, 4, 4)), 0.1, 0.04)
t1 = time.perf_counter()
pc.radius_neighbors(p, p, 0.1)
t2 = time.perf_counter()
print(f"{t1 - t0:.2f} {t2 - t1:.2f}")
"""


def compile_times():
    """Seconds of the first kpconv and radius_neighbors calls in a fresh process with an empty cache."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, CTENSOR_CACHE_DIR=d)
        out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True, text=True, check=True)
        return [float(x) for x in out.stdout.split()]


STAT = "median" if "--median" in sys.argv else "min"


def main(path, compile_too=True):
    with open(path) as f:
        data = json.load(f)
    rows, info = defaultdict(dict), {}
    for b in data["benchmarks"]:
        p = b["params"]
        key = (p["name"], p["c"])
        rows[key][p["impl"]] = b["stats"][STAT] * 1e3
        info[key] = b.get("extra_info") or {}
    impls = ["ctensor", "ctensor_index", "numba_blas", "torch_opt", "torch_kpconv"]
    print("| layer | C | queries | " + " | ".join(f"{k} (ms)" for k in impls)
          + " | torch_opt / ctensor | torch_kpconv / ctensor | ctensor / numba_blas | ctensor_index / numba_blas |")
    print("|---" * (len(impls) + 7) + "|")
    for key in sorted(rows, key=lambda k: (k[0], k[1])):
        r = rows[key]
        cells = " | ".join(f"{r[k]:.1f}" if k in r else "" for k in impls)
        ct = r.get("ctensor")
        ratio = lambda a, b: f"{a / b:.2f}×" if a and b else ""
        print(f"| {key[0]} | {key[1]} | {info[key].get('queries', '')} | {cells} | "
              f"{ratio(r.get('torch_opt'), ct)} | {ratio(r.get('torch_kpconv'), ct)} | {ratio(ct, r.get('numba_blas'))} | "
              f"{ratio(r.get('ctensor_index'), r.get('numba_blas'))} |")
    if compile_too:
        kp, rn = compile_times()
        print(f"\ncold compile (fresh process, empty kernel cache): kpconv {kp:.1f} s, radius_neighbors {rn:.1f} s")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else "pc.json", "--no-compile" not in sys.argv)
