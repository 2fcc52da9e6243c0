"""Verdict cache: program validity depends only on the access pattern (`pattern.Pattern.key`),
never on the data or on scalar values, so a verdict is computed once per pattern (digest §3.6).

In memory, bounded (least recently used verdicts are dropped first), thread-safe.  z3 is
deterministic under a resource limit (digest §3.7), so 'unknown' verdicts are cached too.
"""
from __future__ import annotations

import threading
from collections import OrderedDict


class VerdictCache:
    """pattern key -> verdict, with hit/miss counters (`info()`)."""

    def __init__(self, maxsize: int = 4096):
        self.maxsize = maxsize
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key):
        with self._lock:
            v = self._d.get(key)
            if v is None:
                self.misses += 1
            else:
                self.hits += 1
                self._d.move_to_end(key)
            return v

    def put(self, key, verdict):
        with self._lock:
            self._d[key] = verdict
            self._d.move_to_end(key)
            while len(self._d) > self.maxsize:
                self._d.popitem(last=False)

    def clear(self):
        with self._lock:
            self._d.clear()
            self.hits = self.misses = 0

    def info(self) -> dict:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "size": len(self._d), "maxsize": self.maxsize}

    def __len__(self):
        return len(self._d)
