"""Markdown tables from a bench_spatial.py run: one row per benchmark group (query), one column per
implementation with its median in µs, ctensor's speed-up over Shapely's fastest path (which returns ids in
tree order), over the peers that return sorted ids as ctensor's default path does, and over scipy's
cKDTree (radius only: it has no box query) in the same contract (sorted ids; unsorted against
ctensor's `sort=False`).

    python benchmarks/spatial_report.py spatial.json
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(path):
    with open(path) as f:
        data = json.load(f)
    rows, hits = defaultdict(dict), {}
    for b in data["benchmarks"]:
        impl = b["params"]["impl"]
        rows[b["group"]][impl] = b["stats"]["median"] * 1e6
        hits[b["group"]] = (b.get("extra_info") or {}).get("hits", "")
    impls = []
    for r in rows.values():
        for k in r:
            if k not in impls:
                impls.append(k)
    print("| query | hits | " + " | ".join(impls)
          + " | Shapely fastest / ctensor (sorted, unsorted) | sorted peers / ctensor (Shapely, numba) "
          "| cKDTree / ctensor (sorted; unsorted) |")
    print("|---" * (len(impls) + 5) + "|")
    for g, r in rows.items():
        shp = [v for k, v in r.items() if "shapely" in k and not k.endswith("_sorted")]
        cts = [r.get(k) for k in ("ctensor", "ctensor_unsorted", "box ctensor", "radius ctensor")]
        cts = [c for c in cts if c is not None]
        ratio = ", ".join(f"{min(shp) / c:.2g}×" for c in cts) if shp and cts else ""
        same = [r.get(k) for k in ("shapely_query_sorted", "numba_sorted")]
        same = ", ".join(f"{v / r['ctensor']:.2g}×" for v in same if v) if "ctensor" in r else ""
        kd = ""
        if "ckdtree" in r and "ctensor" in r:
            kd = f"{r['ckdtree'] / r['ctensor']:.2g}×"
            if "ckdtree_unsorted" in r and "ctensor_unsorted" in r:
                kd += f"; {r['ckdtree_unsorted'] / r['ctensor_unsorted']:.2g}×"
        cells = " | ".join(_fmt(r.get(k)) for k in impls)
        print(f"| {g} | {hits[g]} | {cells} | {ratio} | {same} | {kd} |")


def _fmt(v):
    if v is None:
        return ""
    return f"{v:.3g}" if v < 1e4 else f"{v / 1e3:.3g} ms"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "spatial.json")
