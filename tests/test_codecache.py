"""The call path's generated Python is compiled once per source and kept on disk
(`runtime.codecache`): a second request reads the code object; a damaged, truncated or foreign
entry is a miss, compiled again; with the cache off nothing is written."""
from __future__ import annotations

import builtins

import ctensor as ct
from ctensor.runtime import codecache

SOURCE = "def f(x):\n    return 2 * x + 1\n"


def _run(code):
    env = {}
    exec(code, env)
    return env["f"](20)


def test_code_is_read_back_and_damage_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("CTENSOR_CACHE_DIR", str(tmp_path))
    calls = []
    real = builtins.compile
    monkeypatch.setattr(builtins, "compile", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    assert _run(codecache.compiled_code(SOURCE, "<t>")) == 41 and calls == ["<t>"]
    (entry,) = (tmp_path / "py").iterdir()
    assert _run(codecache.compiled_code(SOURCE, "<t>")) == 41 and calls == ["<t>"]      # read, not compiled
    data = entry.read_bytes()
    for damaged in (data[:-3], data[:-1] + bytes([data[-1] ^ 1]), b"garbage", b""):
        entry.write_bytes(damaged)
        assert _run(codecache.compiled_code(SOURCE, "<t>")) == 41
    assert calls == ["<t>"] * 5 and entry.read_bytes() == data        # each miss rewrote the entry
    assert _run(codecache.compiled_code(SOURCE.replace("2 *", "3 *"), "<t>")) == 61   # another key


def test_cache_off_writes_nothing_and_kernels_still_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CTENSOR_CACHE_DIR", "off")
    assert _run(codecache.compiled_code(SOURCE, "<t>")) == 41
    A = ct.intervals([0.0, 2.0], [1.0, 3.0], values=[1.0, 2.0])
    assert ct.einsum("CodeCacheOff[] = A[x] * A[x] * d(x; lebesgue)", A=A) == 5.0
    assert not list(tmp_path.iterdir())
