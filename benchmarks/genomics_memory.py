"""Bytes of each genomics index next to the interval arrays it indexes (issue 3: "an index uses at
most 2x the memory of the interval arrays it indexes").

    python benchmarks/genomics_memory.py

Per data set of bench_genomics.py / bench_closest.py (genomics_peers.DATASETS; the data side is
indexed) and per operation: `genomics.index(data, ops=(op,)).nbytes` divided by 16 bytes per
interval (its start and end as int64 or float64).  `nbytes` counts each buffer once, also when two
tensors of one index share it (see ctensor/apps/genome_layout.py).  The last columns index several
operations at once.  Also printed: distinct starts m, union runs u (both / n), which set the sizes.
"""
from __future__ import annotations

import genomics_peers as g
import numpy as np

OPS = (("count",), ("overlap",), ("intersect",), ("closest",), ("count", "overlap", "closest"), None)


def main():
    from ctensor.apps import genomics
    names = ["+".join(ops) if ops else "all" for ops in OPS]
    print("| data set | n | m/n | u/n | " + " | ".join(names) + " |")
    print("|---" * (4 + len(names)) + "|")
    for ds in g.DATASETS:
        _, d = g.dataset(ds)
        n = len(d)
        ratios = [genomics.index(d, ops=ops).nbytes / (16 * n) for ops in OPS]
        idx = genomics.index(d, ops=())
        gs, ge = idx._gs, idx._ge                        # genome axis, start order
        m = len(np.unique(gs))
        u = int((gs[1:] > np.maximum.accumulate(ge)[:-1]).sum()) + 1 if n else 0
        print(f"| {ds} | {n} | {m / n:.3f} | {u / n:.3f} | " + " | ".join(f"{r:.3f}" for r in ratios) + " |")


if __name__ == "__main__":
    main()
