"""`python -m tests.fuzz --programs 10000 --seed 0 [--jobs N] [--out summary.json]` (see `tests.fuzz`);
`--only K` runs program K in this process and prints it with its full outcome (a reproduction)."""
from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=40, help="programs per worker process")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per phase of one program")
    ap.add_argument("--out", help="write the summary (and every failure) as JSON here")
    ap.add_argument("--records", help="write every program's record as JSON lines here (as they arrive)")
    ap.add_argument("--resume", action="store_true",
                    help="with --records: keep the programs that file already holds and run the rest")
    ap.add_argument("--summarize", help="print the summary of a records file (of a run in progress too)")
    ap.add_argument("--all-orders", action="store_true",
                    help="the oracle evaluates every accepted evaluation order and compares (about 10x slower "
                         "on index sums; CTENSOR_ORACLE_ALL_ORDERS=1)")
    ap.add_argument("--only", type=int, help="run program K in-process and print everything")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--stop", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.all_orders:
        import os
        os.environ["CTENSOR_ORACLE_ALL_ORDERS"] = "1"        # read by tests.oracle at import; workers inherit it
    if a.worker:
        from .runner import worker
        worker(a.seed, a.start, a.stop, a.timeout)
        return 0
    if a.summarize:
        from .summary import render, summarize
        with open(a.summarize) as f:
            print(render(summarize([json.loads(line) for line in f], a.seed)))
        return 0
    if a.only is not None:
        from .check import run_one
        from .programs import generate
        print(generate(a.seed, a.only).describe())
        rec = run_one(a.seed, a.only, a.timeout)
        for key, v in rec.items():
            if key != "program":
                print(f"{key}: {v}")
        return 0 if rec["outcome"] not in ("mismatch", "crash", "timeout") else 1
    from .runner import run
    from .summary import render, summarize
    t0 = time.time()

    def progress(done, total):
        print(f"\r{done}/{total} programs, {time.time() - t0:.0f} s", end="", file=sys.stderr, flush=True)

    done = []
    if a.resume and a.records:
        import os
        if os.path.exists(a.records):
            with open(a.records) as f:
                done = [json.loads(line) for line in f if line.strip()]
    records = run(a.seed, a.programs, a.jobs, a.chunk, a.timeout, progress=progress, records=a.records, done=done)
    print(file=sys.stderr)
    s = summarize(records, a.seed)
    s["wall_s"] = round(time.time() - t0, 1)
    s["command"] = f"python -m tests.fuzz --programs {a.programs} --seed {a.seed} --jobs {a.jobs}"
    print(render(s))
    print(f"\nwall time {s['wall_s']} s ({s['command']})")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(s, f, indent=1)
    return 1 if s["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
