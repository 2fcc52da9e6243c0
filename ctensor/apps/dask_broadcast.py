"""What the apps' Dask paths share: recognising Dask collections without importing dask, sending
one large read-only object (an index) to every worker once (`broadcast`, `Resident`), and having
every worker make one object (an index of a Dask frame's partitions) for itself (`PerWorker`).  dask and distributed are
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
import time
import uuid
import weakref

_SCATTERED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # object -> {client id: Resident}
_LOCK = threading.Lock()

RESIDENT_MAX = 4                                   # objects kept per worker process
MADE_MAX = 2                                       # of which `PerWorker` objects (one per call, each may be large)
_RESIDENT: "collections.OrderedDict" = collections.OrderedDict()          # token -> object (this process)
_MADE: "collections.OrderedDict" = collections.OrderedDict()             # tokens of PerWorker objects, oldest first
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
        obj = _cached(self.token)
        if obj is not None:
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


class PerWorker:
    """A task's handle of an object each worker process makes for itself, once, from several
    objects held by the cluster (their futures, in the client): `get()` returns `make(*objects)`,
    made on the first call in this process from the objects (fetched for it from the workers
    holding them, not kept) and kept by token until the client's handle is collected (at most
    `MADE_MAX` of them per process).  E.g. one index of a Dask frame's partitions on every worker:
    making it costs each worker about what receiving a copy built elsewhere would (the index
    holds ~5x the bytes of the rows), and no worker waits for another.  A `LocalCluster`'s
    scheduler shares the client's process and keeps its recent messages, graph arguments
    included, so there the handle (and with it the objects' futures) is collected some messages
    after the call's result, not at once."""

    __slots__ = ("token", "make", "keys", "futures", "__weakref__")

    def __init__(self, token: str, make, keys, futures=None):
        self.token, self.make, self.keys, self.futures = token, make, tuple(keys), futures

    @classmethod
    def of(cls, make, futures, keep=()):
        """A handle of `make(*results of futures)`, whose copies the workers drop when it is
        collected; `keep`: more futures held as long as the handle (e.g. objects `make`'s result
        fetches later, on first use, by their keys: `fetch_many`)."""
        from distributed import get_client
        futures = list(futures)
        client = futures[0].client if futures else get_client()
        handle = cls(uuid.uuid4().hex, make, [f.key for f in futures], futures + list(keep))
        fin = weakref.finalize(handle, _forget, weakref.ref(client), handle.token)
        fin.atexit = False
        return handle

    def __reduce__(self):
        return PerWorker, (self.token, self.make, self.keys)

    def __dask_tokenize__(self):
        return ("PerWorker", self.token)

    def get(self):
        obj = _cached(self.token)
        if obj is not None:
            return obj
        with _FETCH_LOCK:                              # one make per process, whatever the threads
            with _LOCK:
                obj = _RESIDENT.get(self.token)
            if obj is None:
                obj = self.make(*fetch_many(self.keys))
            with _LOCK:
                _RESIDENT[self.token] = obj
                _MADE[self.token] = None
                for token in [t for t in _MADE if t in _RESIDENT][:-MADE_MAX]:    # older calls' first
                    del _RESIDENT[token]
                while len(_RESIDENT) > RESIDENT_MAX:
                    _RESIDENT.popitem(last=False)
                for token in [t for t in _MADE if t not in _RESIDENT]:
                    del _MADE[token]
        return obj


def _cached(token):
    """This process's copy of a handle's object (now the most recently used), or None."""
    with _LOCK:
        obj = _RESIDENT.get(token)
        if obj is not None:
            _RESIDENT.move_to_end(token)
        return obj


def _fetch(key):
    return fetch_many([key])[0]


def _states(client, keys):
    """The scheduler's state of each key; RuntimeError if one is unknown, released or erred."""
    state = client.sync(client.scheduler.get_task_status, keys=keys)
    gone = [k for k in keys if state.get(k) in (None, "released", "forgotten", "erred")]
    if gone:
        raise RuntimeError(f"the cluster no longer holds {gone[0]!r}: the call that made it was cancelled or failed")
    return state


def fetch_many(keys):
    """The objects of keys held by the cluster: from this worker's store, the others from the
    workers holding them (the worker's own client gathers from its peers directly; a key still
    being computed is waited for).  Raises RuntimeError when the scheduler knows a key no more
    (the call that made it was cancelled or failed, and its client released it): a gather of
    such a key would wait forever, and with it the worker thread and, through `_FETCH_LOCK`,
    every later fetch of that worker."""
    from distributed import Future, get_client, get_worker
    try:
        worker = get_worker()
    except ValueError:
        worker = None
    local = {k: worker.data[k] for k in keys if worker is not None and k in worker.data}
    rest = [k for k in keys if k not in local]
    if rest:
        client = get_client()
        state = _states(client, rest)
        if worker is not None and any(state[k] != "memory" for k in rest):
            # a key not computed yet may need this task's thread: give it back while waiting
            # (with every thread of the cluster in such a wait, nothing would compute the key)
            from distributed import rejoin, secede
            secede()
            try:
                while any(state[k] != "memory" for k in rest):
                    time.sleep(0.005)
                    state = _states(client, rest)
            finally:
                rejoin()
        # state="memory": the keys are held now, so fetch them at once; a bare Future(key) would
        # wait for a state update the scheduler never sends this client
        local.update(zip(rest, client.gather([Future(k, client, state="memory") for k in rest])))
    return [local[k] for k in keys]


def resolve(obj):
    """A task's argument as the object: a `Resident` or `PerWorker` handle's copy, anything else as it is."""
    return obj.get() if isinstance(obj, (Resident, PerWorker)) else obj


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


__all__ = ["PerWorker", "Resident", "broadcast", "fetch_many", "is_dask_array", "is_dask_frame", "resolve"]
