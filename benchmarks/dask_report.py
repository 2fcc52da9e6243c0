"""Table of `bench_dask.py` results: per implementation the minimum wall time over the interleaved
rounds, its ratio to the in-memory call, the 2-worker speed-up over 1 worker (same kind of call),
and the CPU seconds of the client process and of each worker in that fastest round.  On a
shared machine the wall-clock speed-up says little (another process may hold the second core), so
the last column is a CPU-bound model of it: (client CPU + every worker's CPU) at 1 worker over
(client CPU + the busiest worker's CPU) at 2 workers, from the rounds' minimum CPU — what the
wall-clock ratio would be with a core per worker and the client's work all serial (it is not all:
the scheduler in the client process works while the workers do, so the model is conservative).

    python benchmarks/dask_report.py dask.json
"""
from __future__ import annotations

import json
import sys

ORDER = ["in memory", "dask, 1 worker", "dask, 2 workers", "dask, 1 worker, rows only", "dask, 2 workers, rows only"]


def main(path):
    runs = json.load(open(path))["benchmarks"]
    print("| operation, data | implementation | min wall | / in memory | 2 workers vs 1 | CPU client / workers | rounds "
          "| CPU model 2 vs 1 |")
    print("|---|---|---|---|---|---|---|---|")
    for b in runs:
        record, load = b["extra_info"]["record"], b["extra_info"]["load"]
        best = {k: min(v, key=lambda r: r["wall"]) for k, v in record.items()}
        base = best["in memory"]["wall"]
        for impl in ORDER:
            if impl not in best:
                continue
            r = best[impl]
            speed = ""
            if impl.startswith("dask, 2"):
                one = best.get(impl.replace("2 workers", "1 worker"))
                speed = f"{one['wall'] / r['wall']:.2f}×" if one else ""
            cpu = f"{r['client_cpu']:.2f} / " + ", ".join(f"{w:.2f}" for w in r["worker_cpu"]) if impl != "in memory" \
                else f"{r['client_cpu']:.2f}"
            model = ""
            if impl.startswith("dask, 2") and impl.replace("2 workers", "1 worker") in record:
                one = min(x["client_cpu"] + sum(x["worker_cpu"]) for x in record[impl.replace("2 workers", "1 worker")])
                two = min(x["client_cpu"] + max(x["worker_cpu"]) for x in record[impl])
                model = f"{one / two:.2f}×"
            print(f"| {b['group']} | {impl} | {r['wall'] * 1e3:.0f} ms | {r['wall'] / base:.2f} | {speed} | {cpu} "
                  f"| {len(record[impl])} | {model} |")
        flags = f"MALLOC_MMAP_THRESHOLD_ {'set' if b['extra_info'].get('mmap') else 'unset'}, " \
                f"direct-to-workers {'on' if b['extra_info'].get('direct') else 'off'}"
        print(f"| {b['group']} | load average after the rounds: {', '.join(f'{x:.1f}' for x in load)}; {flags} "
              "| | | | | | |")


if __name__ == "__main__":
    main(sys.argv[1])
