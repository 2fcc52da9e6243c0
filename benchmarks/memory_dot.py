"""Peak RSS of the 1e6 + 1e6 interval dot product next to the size of its inputs.

    python benchmarks/memory_dot.py

Runs in a fresh process so ru_maxrss reflects only this workload: the peak before the first
kernel call (inputs built, kernel compiled) and after 20 calls must be the same, because a
scalar-output kernel allocates nothing.
"""
from __future__ import annotations

import resource

import numpy as np

import ctensor as ct


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    n = 1_000_000
    rng = np.random.default_rng(1)
    tensors = []
    for seed in (1, 2):
        edges = np.cumsum(np.random.default_rng(seed).exponential(10.0, 2 * n))
        tensors.append(ct.intervals(edges[0::2], edges[1::2], values=rng.random(n)))
    A, B = tensors
    k = ct.compile("s[] = A[x] * B[x] * d(x; lebesgue)", A=A, B=B)
    k(A=A, B=B)
    before = rss_mb()
    for _ in range(20):
        k(A=A, B=B)
    after = rss_mb()
    inputs = (A.nbytes + B.nbytes) / 2**20
    print(f"input arrays: {inputs:.1f} MiB (A {A.nbytes / 2**20:.1f} + B {B.nbytes / 2**20:.1f}: "
          f"left, right, values float64 + ptr)")
    print(f"peak RSS before calls: {before:.1f} MiB, after 20 calls: {after:.1f} MiB "
          f"(growth {after - before:.2f} MiB)")


if __name__ == "__main__":
    main()
