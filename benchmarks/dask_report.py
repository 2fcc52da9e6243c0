"""Table of `bench_dask.py` results: median seconds per implementation and the ratio to the
in-memory call (< 1: Dask faster) and, for 2 workers, the speed-up over 1 worker.

    python benchmarks/dask_report.py dask.json
"""
from __future__ import annotations

import json
import sys


def main(path):
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        pre = ", prebuilt index" if "prebuilt" in b["name"] else ""
        impl = ("in memory" if b["name"].startswith("test_in_memory") else
                ("dask, 2 workers" if "2workers" in b["name"] else "dask, 1 worker")) + pre
        rows.setdefault(b["group"], {})[impl] = b["stats"]["median"]
    print("| operation | implementation | median | / in memory | 2 workers vs 1 |")
    print("|---|---|---|---|---|")
    for group, impls in rows.items():
        for pre in ("", ", prebuilt index"):
            base = impls.get("in memory" + pre)
            for impl in ("in memory", "dask, 1 worker", "dask, 2 workers"):
                impl += pre
                if impl not in impls:
                    continue
                t = impls[impl]
                one = impls.get("dask, 1 worker" + pre)
                speed = f"{one / t:.2f}×" if impl.startswith("dask, 2") and one else ""
                ratio = f"{t / base:.2f}" if base else ""
                print(f"| {group} | {impl} | {t * 1e3:.0f} ms | {ratio} | {speed} |")


if __name__ == "__main__":
    main(sys.argv[1])
