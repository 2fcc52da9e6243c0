"""Where ctensor's end-to-end genomics time goes: cProfile of one call per operation, after a
warm-up call (kernels compiled), on a workload of bench_genomics_peers_e2e.py.

    python benchmarks/genomics_e2e_profile.py [workload] [top]    # default L100_unsorted, 12

Prints, per operation, the wall time of the profiled call and the functions with the largest
own time (tottime), with their cumulative time: the pandas glue, index build, sorting and the
native kernel calls show up by name.
"""
from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import bench_genomics_peers_e2e as b
import genomics_e2e_peers as p


def _kind(fn):
    path, _, func = fn
    if path.startswith("<fast call"):         # the llvmlite-compiled einsum, called natively
        return "native kernels"
    if "sort" in func and path == "~":
        return "numpy sort/argsort"
    if "/pandas/" in path or "/pyarrow/" in path:
        return "pandas/pyarrow"
    if "/ctensor/" in path:
        return "ctensor Python"
    return "numpy + other"


def by_kind(stats):
    """Own time (tottime) summed by kind of function, largest first."""
    out = {}
    for fn, (_, _, tt, _, _) in stats.stats.items():
        out[_kind(fn)] = out.get(_kind(fn), 0.0) + tt
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def main(argv):
    name = argv[0] if argv else "L100_unsorted"
    top = int(argv[1]) if len(argv) > 1 else 12
    make = {n: m for n, m, _ in b.workloads()}.get(name) or (b.scale if name.startswith("scale") else None)
    q, d = make()
    for op, spec in p.ctensor_peer().items():
        fn = spec[1] if spec[0] == "call" else spec[2]       # the end-to-end call on the frames
        fn(q, d)
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.runcall(fn, q, d)
        t = time.perf_counter() - t
        out = io.StringIO()
        st = pstats.Stats(prof, stream=out).sort_stats("tottime")
        st.print_stats(top)
        body = out.getvalue().split("ncalls")[1].splitlines()[1:]
        print(f"## {op} on {name}: {t * 1e3:.1f} ms wall (profiled); own time by kind: "
              + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in by_kind(st).items()))
        print("   ncalls  tottime  percall  cumtime  percall filename:lineno(function)")
        print("\n".join(x for x in body if x.strip()))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
