"""`workers=`: the apps' batched operations split their queries over threads.

A batch of queries is cut into `workers` contiguous chunks of rows; each chunk runs the operation's
compiled kernels on its own tensors and argument blocks (a `Kernel` call packs a fresh block, and
the native code runs without the GIL: `ctensor.codegen.engine.PACKED_CFUNC` is a ctypes CFUNCTYPE),
and the chunks' results are concatenated in row order.  Each query's answer depends on that query
and the index only, so the result equals the one-thread result exactly (values, order, dtypes).

Kernels are compiled under `COMPILE_LOCK` (`compiled`): compiling is slow and done once per
format, so the chunks of a batch (and concurrent queries on one index) wait for one compile
instead of each running its own.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..runtime.api import compile as ct_compile
from .radix_order import visit_order

__all__ = ["COMPILE_LOCK", "MIN_CHUNK", "SORT_AT", "check_workers", "chunks", "compiled", "in_order", "join_parts",
           "map_chunks", "map_parts", "split_rows"]

# fewer queries than this per chunk are not split further: a chunk's fixed cost (tensor
# construction, argument packing, output rebuild: ~50-100 µs) would outweigh the native work
MIN_CHUNK = 4096

# one lock for every app's compiles: a kernel that several threads need first is compiled once
COMPILE_LOCK = threading.RLock()


def check_workers(workers) -> int:
    """The number of threads `workers` asks for: a positive int, or -1 for every core this process
    may run on (`os.sched_getaffinity`, else `os.cpu_count()`).  Raises TypeError (not an int; bool
    refused) or ValueError (0, < -1)."""
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)):
        raise TypeError(f"workers: expected a positive int or -1 (all cores), got {workers!r}")
    workers = int(workers)
    if workers == -1:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"workers: expected a positive int or -1 (all cores), got {workers}")
    return workers


def chunks(n: int, workers: int, min_chunk: int | None = None) -> list[tuple[int, int]]:
    """Contiguous row ranges [lo, hi) covering 0..n: `workers` of them at most, each of at least
    `min_chunk` rows (default `MIN_CHUNK`) unless there is only one; sizes differ by at most 1."""
    min_chunk = MIN_CHUNK if min_chunk is None else min_chunk
    k = max(1, min(workers, n // max(min_chunk, 1)))
    if k == 1:
        return [(0, n)]
    edges = np.linspace(0, n, k + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def map_chunks(fn, n: int, workers: int) -> list:
    """[fn(lo, hi) for each chunk of `chunks(n, workers)`], in row order (`map_parts`)."""
    parts = chunks(n, workers)
    return map_parts(lambda c: fn(*parts[c]), len(parts))


def map_parts(fn, n: int) -> list:
    """[fn(0), ..., fn(n - 1)], run on a ThreadPoolExecutor when n > 1 (fn(0) in the calling
    thread).  An exception in any part is raised here, after every part has finished."""
    if n == 1:
        return [fn(0)]
    with ThreadPoolExecutor(n - 1, thread_name_prefix="ctensor-worker") as ex:
        futures = [ex.submit(fn, c) for c in range(1, n)]
        try:
            first = fn(0)
        finally:
            rest = [f.exception() for f in futures]       # wait for all before raising
        errors = [e for e in rest if e is not None]
        if errors:
            raise errors[0]
        return [first] + [f.result() for f in futures]


def split_rows(fn, workers: int, arrays, rows=(), order_by=None):
    """`fn(*arrays)` computed by chunks of rows: `fn` is called on the slices [lo:hi] of every array
    in `arrays` (one entry per query row) and returns an array or a tuple of arrays; the chunks'
    results are concatenated in row order, after adding lo to the outputs at positions `rows` of the
    tuple (row numbers within the chunk become row numbers within the batch).

    `order_by` (one value per row, e.g. the query starts): a chunk whose rows are out of that order
    runs them in about that order (`radix_order.visit_order`: sorted up to buckets of ~1 row) and
    puts the results back in row order (`in_order`), so the kernels' searches move forward through
    the index instead of jumping across it per query (the continuous paper §7.2: a finger search
    costs the distance it moves).  Each chunk orders its own rows, on its own thread (numpy's sorts
    run without the GIL).  Without `rows`, every output holds one entry
    per row; with `rows`, the outputs are pair lists grouped by row (the entry at `rows[0]`,
    ascending)."""
    def run(lo, hi):
        part = tuple(a[lo:hi] for a in arrays)
        if order_by is not None and hi - lo >= SORT_AT:
            key = order_by[lo:hi]
            if not bool((key[1:] >= key[:-1]).all()):
                # about start order (buckets of ~1 row, counting passes): the searches need no
                # more, any order of ties, `in_order` puts rows back by perm
                perm = visit_order(key)
                return in_order(fn(*(np.take(a, perm) for a in part)), perm, rows)     # take: faster than a[perm]
        return fn(*part)

    n = len(arrays[0])
    parts = map_chunks(run, n, check_workers(workers))
    if len(parts) == 1:
        return parts[0]
    if not isinstance(parts[0], tuple):
        return join_parts([(p,) for p in parts])[0]
    los = [lo for lo, _ in chunks(n, check_workers(workers))]
    return join_parts(parts, [[lo if k in rows else 0 for k in range(len(parts[0]))] for lo in los])


def join_parts(parts, shifts=None) -> tuple:
    """The chunks' outputs concatenated: `parts[c]` is chunk c's tuple of 1-D arrays, `shifts[c][k]`
    a number added to its k-th array (0 when None).  Each chunk copies its arrays into its slices of
    preallocated outputs on its own thread (`map_parts`): a pair list of millions of entries is not
    copied on the calling thread."""
    width = len(parts[0])
    sizes = np.array([[len(p[k]) for k in range(width)] for p in parts], np.int64).reshape(len(parts), width)
    ends = np.cumsum(sizes, axis=0)
    outs = [np.empty(int(ends[-1, k]), np.result_type(*(p[k] for p in parts))) for k in range(width)]

    def copy(c):
        for k in range(width):
            dst = outs[k][ends[c, k] - sizes[c, k]:ends[c, k]]
            shift = 0 if shifts is None else shifts[c][k]
            if shift:
                np.add(parts[c][k], shift, out=dst, casting="unsafe")
            else:
                dst[...] = parts[c][k]
    map_parts(copy, len(parts))
    return tuple(outs)


SORT_AT = 1024          # fewer rows than this run in the order given (the index stays in cache)


def in_order(out, perm, rows=()):
    """The outputs of rows taken in the order `perm` (row k of the run is row perm[k]) put back
    in row order: per-row outputs scattered, pair lists (grouped by the run's row at `rows[0]`)
    moved block by block to their row's place, in O(entries).

    Pair lists are gathered, not scattered: each original row's block starts where its run row's
    block started, so the source of every output entry is its row's offset (repeated along the
    block, a sequential pass) plus its position; the row numbers of the output are the blocks'
    own (ascending), and each other array is read once at those sources (runs of consecutive
    positions).  Scattering every entry to a computed destination instead: 356 vs 295 ms CPU for
    15.4M pairs over 2M rows."""
    n = len(perm)
    if not rows:
        def back(a):
            b = np.empty_like(a)
            b[perm] = a
            return b
        return tuple(back(a) for a in out) if isinstance(out, tuple) else back(out)
    r = rows[0]
    q = out[r]
    cnt = np.bincount(q, minlength=n)                  # entries per run row
    inv = np.empty(n, np.int64)
    inv[perm] = np.arange(n, dtype=np.int64)           # run row of each original row
    cnt_o = cnt[inv]                                   # entries per original row
    start = np.zeros(n + 1, np.int64)
    np.cumsum(cnt, out=start[1:])                      # block starts in the run
    start_o = np.zeros(n + 1, np.int64)
    np.cumsum(cnt_o, out=start_o[1:])                  # block starts in row order
    src = np.repeat(start[:-1][inv] - start_o[:-1], cnt_o)
    src += np.arange(len(q), dtype=np.int64)
    row = np.repeat(np.arange(n, dtype=q.dtype), cnt_o)
    return tuple(row if k == r else np.take(a, src) for k, a in enumerate(out))     # take: ~2x a[src]


def compiled(kernels: dict, key, text: str, tensors: dict, **options):
    """The kernel `kernels[key]` if it accepts `tensors` (`Kernel.accepts`), else compiled by
    `ct.compile(text, **options, **tensors)` under COMPILE_LOCK and stored there; safe to call from
    several threads at once."""
    k = kernels.get(key)
    if k is None or not k.accepts(tensors):
        with COMPILE_LOCK:
            k = kernels.get(key)
            if k is None or not k.accepts(tensors):
                k = kernels[key] = ct_compile(text, **options, **tensors)
    return k
