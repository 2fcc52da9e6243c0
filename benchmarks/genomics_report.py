"""Markdown tables from a bench_genomics.py run: one table per operation, one row per data set,
one column per peer with its median in ms and its ratio to the numba reference (query only).

    python benchmarks/genomics_report.py genomics.json           # read an existing JSON
    python benchmarks/genomics_report.py --run [pytest args...]  # run the benchmark first
                                                                 # (writes genomics.json)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("count", "join", "coverage", "closest")
DATASETS = ("L100", "L1000", "L10000", "L100000", "gerp_exons", "snps_exons")
PEER_ORDER = ("numba", "ncls", "superintervals", "ailist", "bioframe", "bioframe_arrops", "pyranges", "pyranges_join",
              "pybedtools", "ctensor", "ctensor_grid")
BASE = ("numba", "query")


def run(args):
    out = "genomics.json"
    cmd = [sys.executable, "-m", "pytest", os.path.join(HERE, "bench_genomics.py"),
           f"--benchmark-json={out}", *args]
    print("$", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=False)
    return out


def load(path):
    """{(op, dataset): {(peer, mode): median seconds}}"""
    with open(path) as f:
        data = json.load(f)
    table = defaultdict(dict)
    for b in data["benchmarks"]:
        info = b.get("extra_info") or {}
        if "op" not in info:
            continue
        table[info["op"], info["dataset"]][info["peer"], info["mode"]] = b["stats"]["median"]
    return table


def _columns(table, op):
    present = {k for (o, _), row in table.items() if o == op for k in row}
    order = {p: i for i, p in enumerate(PEER_ORDER)}
    return sorted(present, key=lambda k: (order.get(k[0], len(order)), k[0], k[1] != "query"))


def render(table):
    lines = []
    for op in OPS:
        cols = _columns(table, op)
        if not cols:
            continue
        lines += [f"### {op}", "", ("median ms (ratio to numba query); e2e = index build + query, "
                                    "build = index build alone (no ratio)"), ""]
        head = ["dataset"] + [p if m == "query" else f"{p} {m}" for p, m in cols]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        extra = sorted(d for o, d in table if o == op and d not in DATASETS)
        for ds in [d for d in DATASETS if (op, d) in table] + extra:
            row = table[op, ds]
            base = row.get(BASE)
            cells = [ds]
            for k in cols:
                t = row.get(k)
                if t is None:
                    cells.append("—")
                elif base and k[1] != "build":
                    cells.append(f"{t * 1e3:.3g} ({t / base:.2g}×)")
                else:
                    cells.append(f"{t * 1e3:.3g}")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] == "--run":
        path = run(argv[1:])
    else:
        path = argv[0]
    print(render(load(path)))


if __name__ == "__main__":
    main(sys.argv[1:])
