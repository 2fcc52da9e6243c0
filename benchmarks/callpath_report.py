"""Markdown table from a bench_callpath.py run: one row per (group, implementation) with its median
and its ratio to the numba peer of the same group (> 1: slower than numba).

    python benchmarks/callpath_report.py callpath.json
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(path):
    with open(path) as f:
        data = json.load(f)
    groups = defaultdict(dict)
    for b in data["benchmarks"]:
        groups[b["group"]][b["params"]["impl"]] = b["stats"]["median"]
    print("| group | implementation | median | / numba |")
    print("|---|---|---|---|")
    for group, impls in groups.items():
        peer = impls.get("numba")
        for impl, t in sorted(impls.items(), key=lambda kv: kv[1]):
            ratio = f"{t / peer:.2f}×" if peer else ""
            print(f"| {group} | {impl} | {_fmt(t)} | {ratio} |")


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "callpath.json")
