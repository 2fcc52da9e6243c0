"""Markdown table from a bench_callpath.py run: one row per (group, implementation) with its median
and its ratio to the numba peer of the same group (> 1: slower than numba); in groups that time
the kernel alone (``kernel_native``, a loop of ``extra_info["calls"]`` calls, reported per call),
the time each call spends outside native code (median − the native median).

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
        calls = b.get("extra_info", {}).get("calls", 1)
        groups[b["group"]][b["params"]["impl"]] = b["stats"]["median"] / calls
    print("| group | implementation | median | / numba | outside native |")
    print("|---|---|---|---|---|")
    for group, impls in groups.items():
        peer, native = impls.get("numba"), impls.get("kernel_native")
        for impl, t in sorted(impls.items(), key=lambda kv: kv[1]):
            ratio = f"{t / peer:.2f}×" if peer else ""
            outside = _fmt(t - native) if native is not None and impl.startswith("ctensor") else ""
            print(f"| {group} | {impl} | {_fmt(t)} | {ratio} | {outside} |")


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "callpath.json")
