"""What the apps' Dask paths share: recognising Dask collections without importing dask, and
sending one large read-only object (an index) to every worker once.  dask and distributed are
optional (the `dask` extra): nothing here imports them unless a Dask object is passed.

Why not a scattered Future as the tasks' argument: distributed's Active Memory Manager (on by
default, policy `ReduceReplicas`) drops the extra replicas of a key no task is waiting for within
seconds, so a `scatter(..., broadcast=True)` index lived on one worker again by the next call and
every call shipped it anew to the other workers (200 MB for 2M intervals: 0.7 s of a 2-worker
count on the scale tier).  Instead the tasks get a small `Resident` handle (a token and the key of
the scattered object); each worker process keeps the object it fetched once, by token, in
`_RESIDENT` (at most `RESIDENT_MAX` objects, least recently used dropped first; dropped on every
worker when the client's object is garbage collected)."""
from __future__ import annotations

import collections
import threading
import uuid
import weakref

_SCATTERED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # object -> {client id: Resident}
_LOCK = threading.Lock()

RESIDENT_MAX = 4                                   # objects kept per worker process
SETS_MAX = 2                                       # of which `ResidentSet`s (one call's objects each)
_RESIDENT: "collections.OrderedDict" = collections.OrderedDict()          # token -> object (this process)
_FETCH_LOCK = threading.Lock()                     # one fetch at a time: threads of a worker share it


def is_dask_frame(obj) -> bool:
    """Is `obj` a dask DataFrame?"""
    mod = type(obj).__module__ or ""
    return mod.startswith(("dask.", "dask_expr")) and hasattr(obj, "map_partitions") and hasattr(obj, "npartitions")


def is_dask_array(obj) -> bool:
    """Is `obj` a dask Array?"""
    return (type(obj).__module__ or "").startswith("dask.array") and hasattr(obj, "to_delayed")


class Resident:
    """A task's handle of a broadcast object: `get()` returns this process's copy, fetched from
    the cluster the first time (from this worker's own store when the scattered copy lives here)."""

    __slots__ = ("token", "key", "future")

    def __init__(self, token: str, key, future=None):
        self.token, self.key, self.future = token, key, future    # the future only in the client

    def __reduce__(self):
        return Resident, (self.token, self.key)

    def get(self):
        with _LOCK:
            obj = _RESIDENT.get(self.token)
            if obj is not None:
                _RESIDENT.move_to_end(self.token)
                return obj
        with _FETCH_LOCK:
            with _LOCK:
                obj = _RESIDENT.get(self.token)
            if obj is None:
                obj = self._fetch()
            with _LOCK:
                _RESIDENT[self.token] = obj
                while len(_RESIDENT) > RESIDENT_MAX:
                    _RESIDENT.popitem(last=False)
        return obj

    def _fetch(self):
        return _fetch(self.key)


class ResidentSet:
    """A task's handle of several objects computed on the cluster for one call (their futures, in
    the client): `get(k)` returns this process's copy of the k-th, fetched the first time (from this
    worker's own store when it was computed here).  The set is one entry of the worker's
    `_RESIDENT` LRU (a call's objects stay together, however many), dropped on every worker when
    the client's handle is collected.  Why not the futures as the tasks' dependencies: the
    scheduler places a task where most of its dependencies' bytes are, so tasks reading several
    large objects built on different workers would all run on the one holding the most.  A worker
    keeps the sets of the `SETS_MAX` calls it served last (a set dropped early is fetched again if
    its call's graph runs again).  A `LocalCluster`'s scheduler shares the client's process and
    keeps its recent messages, graph arguments included, so there the handle (and with it the
    objects' futures) is collected some messages after the call's result, not at once."""

    __slots__ = ("token", "keys", "futures", "__weakref__")

    def __init__(self, token: str, keys, futures=None):
        self.token, self.keys, self.futures = token, tuple(keys), futures

    @classmethod
    def of(cls, futures):
        """A handle of `futures` (in the client), whose copies the workers drop when it is collected."""
        from distributed import get_client
        futures = list(futures)
        client = futures[0].client if futures else get_client()
        handle = cls(uuid.uuid4().hex, [f.key for f in futures], futures)
        fin = weakref.finalize(handle, _forget, weakref.ref(client), handle.token)
        fin.atexit = False
        return handle

    def __reduce__(self):
        return ResidentSet, (self.token, self.keys)

    def __dask_tokenize__(self):
        return ("ResidentSet", self.token)

    def get(self, k: int):
        return self.get_all([k])[0]

    def get_all(self, ks):
        """This process's copies of the objects numbered `ks`; those not held yet fetched together
        (one gather: the transfers from several workers overlap)."""
        ks = [int(k) for k in ks]
        with _LOCK:
            got = dict(_RESIDENT.get(self.token) or {})
            if self.token in _RESIDENT:
                _RESIDENT.move_to_end(self.token)
        if all(k in got for k in ks):
            return [got[k] for k in ks]
        with _FETCH_LOCK:
            with _LOCK:
                got = dict(_RESIDENT.get(self.token) or {})
            missing = sorted({k for k in ks if k not in got})
            if missing:
                got.update(zip(missing, _fetch_many([self.keys[k] for k in missing])))
            with _LOCK:
                entry = _RESIDENT.setdefault(self.token, {})
                entry.update(got)
                _RESIDENT.move_to_end(self.token)
                sets = [t for t, v in _RESIDENT.items() if isinstance(v, dict)]
                for t in sets[:-SETS_MAX]:             # older calls' sets first: each may be large
                    del _RESIDENT[t]
                while len(_RESIDENT) > RESIDENT_MAX:
                    _RESIDENT.popitem(last=False)
        return [got[k] for k in ks]


def _fetch(key):
    return _fetch_many([key])[0]


def _fetch_many(keys):
    """The objects of keys held by the cluster: from this worker's store, the others from the
    workers holding them (the worker's own client gathers from its peers directly)."""
    from distributed import Future, get_client, get_worker
    try:
        worker = get_worker()
    except ValueError:
        worker = None
    local = {k: worker.data[k] for k in keys if worker is not None and k in worker.data}
    rest = [k for k in keys if k not in local]
    if rest:
        # state="memory": the keys are held (the client keeps their futures), so fetch them at once;
        # a bare Future(key) would wait for a state update the scheduler never sends this client
        client = get_client()
        local.update(zip(rest, client.gather([Future(k, client, state="memory") for k in rest])))
    return [local[k] for k in keys]


def resolve(obj):
    """A task's argument as the object: a `Resident` handle's copy, anything else as it is."""
    return obj.get() if isinstance(obj, Resident) else obj


async def _drop(token):          # a coroutine: `client.run(..., wait=False)` takes only those
    with _LOCK:
        _RESIDENT.pop(token, None)


def _forget(client_ref, token):
    """The client's object is gone: its workers drop their copies (best effort)."""
    client = client_ref()
    try:
        if client is not None and client.status == "running":
            client.run(_drop, token, wait=False)
    except Exception:          # noqa: BLE001 - a closing client or cluster: the copies die with it
        pass


def broadcast(obj):
    """`obj` as an argument of many tasks (read it in the task with `resolve`): under a
    `distributed` client, a `Resident` handle of it, scattered once per (object, client) and kept
    by each worker process once fetched, reused by later calls given the same object (so a
    prebuilt index crosses the network once per worker); without one, a delayed object of it (sent
    with each graph)."""
    import dask
    try:
        from distributed import get_client
        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(obj, pure=True)
    with _LOCK:
        handles = _SCATTERED.setdefault(obj, {})
        handle = handles.get(client.id)
    if handle is None or handle.future.status != "finished":
        future = client.scatter(obj, hash=False)
        handle = Resident(uuid.uuid4().hex, future.key, future)
        with _LOCK:
            handles[client.id] = handle
        fin = weakref.finalize(obj, _forget, weakref.ref(client), handle.token)
        fin.atexit = False
    return handle


__all__ = ["Resident", "ResidentSet", "broadcast", "is_dask_array", "is_dask_frame", "resolve"]
