"""A dense-split kernel (`ctensor.driver.dense_split`) in the on-disk kernel cache: a new process
loads it by the request as made (`kernel_store.alias_split`), without parsing the text for the split
or the grid rewrite, and computes what the first process computed; a W with inf still runs the
program as written (compiled on first need in the warm process).  Oracle: numpy."""
import os
import subprocess
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import ctensor as ct
    import ctensor.driver.dense_split as ds
    import ctensor.driver.grid_offsets as go
    from ctensor.driver import compile_kernel
    parse_product = ds.parse_product
    if sys.argv[1] == "warm":          # a warm start must not parse the text for the split
        def boom(*a, **k):
            raise AssertionError("parsed on a warm start")
        ds.parse_product = go.parse_product = boom

    def dense(a):
        level = ct.Element(0.0)
        for _ in range(a.ndim):
            level = ct.Dense(level)
        return ct.Tensor(level, np.asarray(a, float))

    rng = np.random.default_rng(3)
    X, Y = rng.uniform(0, 10, (20, 2)), rng.uniform(0, 10, (40, 2))
    F, W = rng.uniform(-1, 1, (40, 4)), rng.uniform(-1, 1, (4, 3))
    text = ("Out[i, m] = Q[x, y, i] * P[a, b, j] * ((a - x)*(a - x) + (b - y)*(b - y) <= r2) * F[j, c] * W[c, m]"
            " * d(x, y, a, b, j, c; counting, counting, counting, counting, counting, counting)")
    args = dict(Q=ct.points(X), P=ct.points(Y), F=dense(F), W=dense(W), r2=4.0)
    k = compile_kernel(text, args)
    got = k(**args).to_numpy()
    near = ((X[:, None, :] - Y[None]) ** 2).sum(2) <= 4.0
    np.testing.assert_allclose(got, near @ F @ W, rtol=1e-12, atol=1e-12)
    if sys.argv[1] == "warm":
        ds.parse_product = go.parse_product = parse_product     # the unsplit program parses
    Winf = W.copy(); Winf[0, 0] = np.inf
    args["W"] = dense(Winf)
    whole = k(**args).to_numpy()       # not split: the program as written
    terms = np.where(near[:, :, None, None], F[None, :, :, None] * Winf[None, None], 0.0)
    np.testing.assert_allclose(whole, terms.sum((1, 2)), rtol=1e-12, atol=1e-12, equal_nan=True)
    print(type(k).__name__, k.inner.source, repr(float(got.sum())))
""")


def run(cache, mode):
    out = subprocess.run([sys.executable, "-c", CHILD, mode], env=dict(os.environ, CTENSOR_CACHE_DIR=str(cache)),
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


def test_a_new_process_loads_a_dense_split_without_parsing(tmp_path):
    first = run(tmp_path, "cold")
    assert first[:2] == ["SplitKernel", "compiled"]
    assert len(list(tmp_path.glob("k_*.split"))) == 1
    second = run(tmp_path, "warm")
    assert second[:2] == ["SplitKernel", "disk"] and second[2] == first[2]


def test_a_damaged_split_record_is_a_miss(tmp_path):
    first = run(tmp_path, "cold")
    for f in tmp_path.glob("k_*.split"):
        b = bytearray(f.read_bytes())
        b[len(b) // 2] ^= 0x80
        f.write_bytes(bytes(b))
    again = run(tmp_path, "cold")      # parses again (the record is ignored), same values
    assert again[0] == "SplitKernel" and again[2] == first[2]
    assert np.isfinite(float(again[2]))
