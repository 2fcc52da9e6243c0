"""Markdown table of a bench_spatial.py run: for every query (benchmark group), contract (sorted or
unsorted ids, `extra_info["contract"]`) and thread class (1, or all cores), ctensor's time against
the strongest peer answering in the same contract, as ratios (peer time / ctensor time: > 1 means
ctensor is faster), by the minimum and by the median over rounds.

Thread classes: "1" compares ctensor on one thread with the peers on one thread; "all" compares
ctensor at workers=-1 with every peer row of the contract at any thread count (Shapely has no
threads: its one-thread time is its best).  The numba grid ("numba ref") is a reference written
in the benchmark, not a peer: its ratio has its own column.  "cKDTree lists" is cKDTree's own
output (lists, not pairs), shown against ctensor's sorted pairs for reference.

    python benchmarks/spatial_report.py s.json
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def load(path):
    """{group: {impl: (min µs, median µs, contract, threads)}}, {group: hits}."""
    with open(path) as f:
        data = json.load(f)
    rows, hits = defaultdict(dict), {}
    for b in data["benchmarks"]:
        extra = b.get("extra_info") or {}
        impl = b["params"]["impl"]
        impl = impl.split(" ", 1)[1] if b["name"].startswith("test_cities500") else impl
        rows[b["group"]][impl] = (b["stats"]["min"] * 1e6, b["stats"]["median"] * 1e6,
                                  extra.get("contract", ""), str(extra.get("threads", 1)))
        hits[b["group"]] = extra.get("hits", "")
    return rows, hits


def _fmt(v):
    if v is None:
        return ""
    return f"{v:.3g} µs" if v < 1e3 else f"{v / 1e3:.3g} ms" if v < 1e6 else f"{v / 1e6:.3g} s"


def main(path):
    rows, hits = load(path)
    print("| query | hits | contract | threads | ctensor | strongest peer | peer / ctensor (min; median) "
          "| numba ref / ctensor | other peers (min) |")
    print("|---|---|---|---|---|---|---|---|---|")
    misses = []
    for g, r in rows.items():
        if r.get("ctensor", (0, 0, ""))[2] == "build":          # index builds: one thread each
            ct_min = r["ctensor"][0]
            peers = {k: v for k, v in r.items() if k != "ctensor"}
            best = min(peers, key=lambda k: peers[k][0])
            others = ", ".join(f"{k} {_fmt(v[0])}" for k, v in peers.items() if k != best)
            print(f"| {g} | | build | 1 | {_fmt(ct_min)} | {best} {_fmt(peers[best][0])} "
                  f"| {peers[best][0] / ct_min:.2f}×; {peers[best][1] / r['ctensor'][1]:.2f}× | | {others} |")
            continue
        for contract in ("sorted", "unsorted"):
            for threads in ("1", "all"):
                name = "ctensor" + (" unsorted" if contract == "unsorted" else "") \
                    + (" workers=-1" if threads == "all" else "")
                if name not in r:
                    continue
                ct_min, ct_med = r[name][:2]
                peers = {k: v for k, v in r.items() if not k.startswith(("ctensor", "numba"))
                         and v[2] == contract and (threads == "all" or v[3] == "1")}
                ref = r.get("numba ref" + (" sorted" if contract == "sorted" else ""))
                ref = f"{ref[0] / ct_min:.2g}×" if ref and threads == "1" else ""
                lists = r.get("ckdtree lists")
                if not peers:
                    continue
                best = min(peers, key=lambda k: peers[k][0])
                p_min, p_med = peers[best][:2]
                ratio = f"{p_min / ct_min:.2f}×; {p_med / ct_med:.2f}×"
                if p_min <= ct_min:
                    misses.append(f"{g} {contract} threads={threads}: {best} {_fmt(p_min)} vs {_fmt(ct_min)}")
                others = ", ".join(f"{k} {_fmt(v[0])}" for k, v in peers.items() if k != best)
                if lists and contract == "sorted" and threads == "1":
                    others += f"; ckdtree lists (no pairs) {_fmt(lists[0])} = {lists[0] / ct_min:.2g}×"
                print(f"| {g} | {hits[g]} | {contract} | {threads} | {_fmt(ct_min)} | {best} {_fmt(p_min)} "
                      f"| {ratio} | {ref} | {others} |")
    print()
    print("rows where a same-contract peer is as fast or faster (by min):", "; ".join(misses) or "none")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "s.json")
