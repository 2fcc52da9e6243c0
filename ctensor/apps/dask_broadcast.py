"""What the apps' Dask paths share: recognising Dask collections without importing dask, and
sending one large read-only object (an index) to every worker once.  dask and distributed are
optional (the `dask` extra): nothing here imports them unless a Dask object is passed."""
from __future__ import annotations

import threading
import weakref

_SCATTERED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # object -> {client id: Future}
_LOCK = threading.Lock()


def is_dask_frame(obj) -> bool:
    """Is `obj` a dask DataFrame?"""
    mod = type(obj).__module__ or ""
    return mod.startswith(("dask.", "dask_expr")) and hasattr(obj, "map_partitions") and hasattr(obj, "npartitions")


def is_dask_array(obj) -> bool:
    """Is `obj` a dask Array?"""
    return (type(obj).__module__ or "").startswith("dask.array") and hasattr(obj, "to_delayed")


def broadcast(obj):
    """`obj` as an argument of many tasks: under a `distributed` client, a Future of it scattered to
    every worker once per (object, client) and reused by later calls given the same object (so a
    prebuilt index crosses the network once); without one, a delayed object of it (sent with each
    graph)."""
    import dask
    try:
        from distributed import get_client
        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(obj, pure=True)
    with _LOCK:
        futures = _SCATTERED.setdefault(obj, {})
        fut = futures.get(client.id)
        if fut is None or fut.status != "finished":
            fut = futures[client.id] = client.scatter(obj, broadcast=True, hash=False)
    return fut


__all__ = ["broadcast", "is_dask_array", "is_dask_frame"]
