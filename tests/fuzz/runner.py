"""Run many programs in worker subprocesses, so that a segfault or a hang is reported, not fatal.

The parent splits programs 0..n-1 into chunks; up to `jobs` workers (``python -m tests.fuzz
--worker SEED START STOP``) run one chunk each and print one JSON line per program, preceded by a
``start`` line; a worker that dies (a signal, an abort in LLVM) or goes silent for `hang_s` is
killed, the program it had started is recorded as a ``crash`` (``phase: worker``), and the rest of
its chunk goes to a new worker.  Workers share one fresh CTENSOR_CACHE_DIR (a temporary directory)
so that compile times are cold ones, and each chunk starts a fresh process (kernels are not freed:
issue 31 (g)).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from .check import run_one

ROOT = Path(__file__).resolve().parents[2]


def worker(seed: int, start: int, stop: int, timeout: float) -> None:
    for k in range(start, stop):
        print(json.dumps({"start": k}), flush=True)
        print(json.dumps(run_one(seed, k, timeout)), flush=True)


def _keep(msg, out, lock, sink):
    """Record one program's outcome (and append it to the JSON-lines file `sink` at once, so a
    long run can be triaged while it runs and survives an interruption)."""
    with lock:
        out.append(msg)
        if sink is not None:
            sink.write(json.dumps(msg) + "\n")
            sink.flush()


def _run_chunk(seed, start, stop, timeout, hang_s, env, out: list, lock, sink=None):
    """Run programs start..stop-1 in as many workers as it takes; append records to `out`."""
    k = start
    while k < stop:
        cmd = [sys.executable, "-m", "tests.fuzz", "--worker", "--seed", str(seed), "--start", str(k),
               "--stop", str(stop), "--timeout", str(timeout)]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        last = {"t": time.monotonic()}
        lines: deque = deque()

        def read():
            for line in proc.stdout:
                lines.append(line)
                last["t"] = time.monotonic()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        started, hung = None, False
        while True:
            # decided before draining: every line the reader got before it ended is drained below
            done = proc.poll() is not None and not reader.is_alive()
            while lines:
                msg = json.loads(lines.popleft())
                if "start" in msg:
                    started = msg["start"]
                else:
                    _keep(msg, out, lock, sink)
                    started, k = None, msg["k"] + 1
            if done:
                break
            if time.monotonic() - last["t"] > hang_s:
                proc.kill()
                hung = True
            time.sleep(0.05)
        err = proc.stderr.read()
        if started is not None:                        # the worker died inside a program
            _keep({"seed": seed, "k": started, "outcome": "crash", "phase": "worker",
                   "error": ("hang (no output for %.0f s)" % hang_s) if hung else
                   f"worker exited with {proc.returncode}", "stderr": err[-2000:]}, out, lock, sink)
            k = started + 1
        elif proc.returncode != 0 and k < stop:       # died before starting program k (an import?)
            _keep({"seed": seed, "k": k, "outcome": "crash", "phase": "worker",
                   "error": f"worker exited with {proc.returncode} before the program", "stderr": err[-2000:]},
                  out, lock, sink)
            k += 1


def run(seed: int, programs: int, jobs: int = 1, chunk: int = 40, timeout: float = 60.0,
        hang_s: float = 240.0, cache_dir: str | None = None, progress=None, records=None,
        done: list = ()) -> list:
    """Records of programs 0..programs-1 of run `seed`, sorted by program number; `done`: records
    of an interrupted run of the same seed (those programs are not run again, `--resume`)."""
    env = dict(os.environ)
    tmp = None
    if cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="ctensor-fuzz-cache-")
        cache_dir = tmp.name
    env["CTENSOR_CACHE_DIR"] = cache_dir
    env.setdefault("PYTHONHASHSEED", "0")
    have = {r["k"] for r in done}
    chunks = deque()
    for a in range(0, programs, chunk):           # runs of consecutive programs still to do
        ks = [k for k in range(a, min(a + chunk, programs)) if k not in have]
        while ks:
            n = next((j for j in range(1, len(ks)) if ks[j] != ks[j - 1] + 1), len(ks))
            chunks.append((ks[0], ks[n - 1] + 1))
            ks = ks[n:]
    out, lock = [r for r in done if r["k"] < programs], threading.Lock()
    sink = open(records, "a" if done else "w") if records else None

    def work():
        while True:
            with lock:
                if not chunks:
                    return
                a, b = chunks.popleft()
            _run_chunk(seed, a, b, timeout, hang_s, env, out, lock, sink)
            if progress:
                with lock:
                    progress(len(out), programs)

    threads = [threading.Thread(target=work) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if tmp is not None:
        tmp.cleanup()
    if sink is not None:
        sink.close()
    return sorted(out, key=lambda r: r["k"])
