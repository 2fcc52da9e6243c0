"""Memory of the point index at N = 1e7 (the issue's protocol): ctensor's index bytes and the peak
RSS growth of building it, against Shapely's points + STRtree, each built in a fresh process.

    python benchmarks/spatial_memory.py [N]
"""
from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import gc, json, resource, sys
import numpy as np
n, which = int(float(sys.argv[1])), sys.argv[2]
xy = np.random.default_rng(0).uniform(0, 10_000, size=(n, 2))
gc.collect()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if which == "ctensor":
    import ctensor.apps.spatial as sp
    idx = sp.index(xy)
    held = idx.nbytes
else:
    import shapely
    pts = shapely.points(xy)
    tree = shapely.STRtree(pts)
    held = None
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"coords": xy.nbytes, "held": held, "peak_growth": (peak - before) * 1024}))
"""


def main(n="1e7"):
    rows = {}
    for which in ("ctensor", "shapely"):
        out = subprocess.run([sys.executable, "-c", CHILD, n, which], capture_output=True, text=True, check=True)
        rows[which] = json.loads(out.stdout)
    coords = rows["ctensor"]["coords"]
    print(f"N = {n}: coordinate arrays {coords / 2**20:.0f} MiB")
    print("| | index bytes | × coords | peak RSS growth while building | × coords |")
    print("|---|---|---|---|---|")
    for which, r in rows.items():
        held = "" if r["held"] is None else f"{r['held'] / 2**20:.0f} MiB"
        ratio = "" if r["held"] is None else f"{r['held'] / coords:.2f}×"
        print(f"| {which} | {held} | {ratio} | {r['peak_growth'] / 2**20:.0f} MiB | {r['peak_growth'] / coords:.2f}× |")


if __name__ == "__main__":
    main(*sys.argv[1:])
