"""Markdown table from a bench_graphics.py run: per tier, each implementation's median in ms, and the
ratios the issue asks for — ctensor against the numba sparse index-grid kernel (target <= 1.2x; of
the medians and of the fastest rounds) and PyTorch's fastest CPU path (grid_sample, 8-corner gather,
svox2's sparse path) against ctensor (target >= 10x) — plus the compile time.

    python benchmarks/graphics_report.py graphics.json
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(path):
    with open(path) as f:
        data = json.load(f)
    rows, best, info, compile_s, inter = defaultdict(dict), defaultdict(dict), {}, None, []
    for b in data["benchmarks"]:
        if b["group"] == "interleaved":
            inter.append(b["extra_info"])
            continue
        if b["group"] == "compile":
            compile_s = (compile_s or []) + [(b["params"]["channels"], b["extra_info"]["compile_s"])]
            continue
        rows[b["group"]][b["params"]["impl"]] = b["stats"]["median"] * 1e3
        best[b["group"]][b["params"]["impl"]] = b["stats"]["min"] * 1e3
        info[b["group"]] = b.get("extra_info") or {}
    impls = ["ctensor", "numba_sparse", "numba_dense", "torch_gather", "torch_grid_sample", "torch_svox2"]
    print("| tier | points x C | " + " | ".join(f"{i} (ms)" for i in impls)
          + " | ctensor / numba sparse | (fastest rounds) | fastest torch / ctensor |")
    print("|---" * (len(impls) + 5) + "|")
    for grp, r in rows.items():
        ct = r.get("ctensor")
        torch = [r[k] for k in ("torch_gather", "torch_grid_sample", "torch_svox2") if k in r]
        ns = r.get("numba_sparse")
        ratio = f"{ct / ns:.2f}x" if ct and ns else ""
        lo = best[grp]
        ratio_min = f"{lo['ctensor'] / lo['numba_sparse']:.2f}x" if ct and ns else ""
        speed = f"{min(torch) / ct:.1f}x" if ct and torch else ""
        x = info[grp]
        cells = " | ".join(f"{r[k]:.0f}" if k in r else "" for k in impls)
        print(f"| {grp.split()[-1]} | {x.get('points', '')} x {x.get('channels', '')} | {cells} | {ratio} | {ratio_min} | {speed} |")
    if inter:
        print("\nctensor / numba sparse, alternated round by round in one loop (CPU time, 7 rounds each):\n")
        print("| tier | ctensor min / median (ms) | numba sparse min / median (ms) | ratio of mins | ratio of medians |")
        print("|---|---|---|---|---|")
        for x in inter:
            c, n = x["ctensor"], x["numba_sparse"]
            print(f"| {x['tier']} | {c['min'] * 1e3:.0f} / {c['median'] * 1e3:.0f} | {n['min'] * 1e3:.0f} / "
                  f"{n['median'] * 1e3:.0f} | {c['min'] / n['min']:.2f}x | {c['median'] / n['median']:.2f}x |")
    for c, sec in compile_s or []:
        print(f"\ncold compile + first call of the INTERPOLATE kernel (C = {c}, fresh process, empty cache): "
              f"{sec * 1e3:.0f} ms (median of 3)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "graphics.json")
