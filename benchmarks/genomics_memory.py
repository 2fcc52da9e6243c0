"""Bytes of each genomics index next to the interval arrays it indexes (issue 3: "an index uses at
most 2x the memory of the interval arrays it indexes").

    python benchmarks/genomics_memory.py

Per data set of bench_genomics.py / bench_closest.py (genomics_peers.DATASETS; the data side is
indexed) and per operation: `genomics.index(data, ops=(op,)).nbytes` divided by 16 bytes per
interval (its start and end as int64 or float64).  `nbytes` counts each buffer once, also when two
tensors of one index share it (see ctensor/apps/genome_layout.py).  The last columns index several
operations at once.  Also printed: distinct starts m, union runs u (both / n), which set the sizes.

A second table: the grid layout (`genomics.index(data, layout="grid")`, the paper's uniform grid)
for count/overlap (grid + start and end values) and intersect, with the cell width chosen from the
data, its non-empty cells and entries per interval (an interval spanning k cells is listed k
times), and the same at half and a quarter of that width, to show what a narrower cell would cost.
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
    print()
    print("| data set | n | mean length | cell | cells | entries/n | count/overlap | intersect "
          "| cell/2 | cell/4 |")
    print("|---" * 10 + "|")
    from ctensor.apps.genome_layout import grid_size
    sets = [(ds, g.dataset(ds)[1]) for ds in g.DATASETS]
    sets.append(("gerp (as data)", g.dataset("gerp_exons")[0].df))     # the exons -> GERP direction
    for ds, d in sets:
        n = len(d)
        idx = genomics.index(d, ops=("count",), layout="grid")
        _, cells, entries = grid_size(idx._gs, idx._ge, idx.cell)
        inter = genomics.index(d, ops=("intersect",), layout="grid").nbytes
        narrower = [(grid_size(idx._gs, idx._ge, max(1, idx.cell // k))[0] + 16 * n) / (16 * n) for k in (2, 4)]
        mean = float((idx._ge - idx._gs).mean())
        print(f"| {ds} | {n} | {mean:.0f} | {idx.cell} | {cells} | {entries / n:.3f} | {idx.nbytes / (16 * n):.3f} "
              f"| {inter / (16 * n):.3f} | " + " | ".join(f"{r:.3f}" for r in narrower) + " |")


if __name__ == "__main__":
    main()
