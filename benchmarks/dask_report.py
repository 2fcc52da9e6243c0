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
        impl = "in memory" if b["name"].startswith("test_in_memory") else \
            ("dask, 2 workers" if "2workers" in b["name"] else "dask, 1 worker")
        rows.setdefault(b["group"], {})[impl] = b["stats"]["median"]
    print("| operation | implementation | median | / in memory | 2 workers vs 1 |")
    print("|---|---|---|---|---|")
    for group, impls in rows.items():
        base = impls.get("in memory")
        for impl in ("in memory", "dask, 1 worker", "dask, 2 workers"):
            if impl not in impls:
                continue
            t = impls[impl]
            speed = f"{impls['dask, 1 worker'] / t:.2f}×" if impl == "dask, 2 workers" and "dask, 1 worker" in impls else ""
            ratio = f"{t / base:.2f}" if base else ""
            print(f"| {group} | {impl} | {t * 1e3:.0f} ms | {ratio} | {speed} |")


if __name__ == "__main__":
    main(sys.argv[1])
