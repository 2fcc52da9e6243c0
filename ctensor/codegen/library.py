"""Compiled code as a shared library in the disk cache, loaded with ``dlopen`` (issue 27 item 5: a
kernel in the disk cache is ready in a new process in < 5 ms, without llvmlite).

Loading an object into MCJIT needs llvmlite.binding (~20 ms to import) and the JIT engine (~15 ms
to create); ``ctypes.CDLL`` of a shared library needs neither.  So every object the engine makes
is also linked by the system linker (``ld -shared``, a subprocess; none found: no library, and
loads take the MCJIT path) into ``<symbol>.so`` beside the object cache's entry.  It is the very
object MCJIT runs (no second code generation): large code model, static relocations, which ``ld``
turns into load-time relocations of the text (DT_TEXTREL; where the system forbids them, the load
fails and is a miss).  Position-independent code was tried: LLVM 22's large-model PIC
miscompiled a genomics kernel (its output buffer check failed), and small/medium PIC would put
MCJIT's separately mapped sections under ±2 GB relocations.  The link runs in a background thread
(non-daemon: an exiting process finishes its links first) at the lowest CPU priority, so a cold
compile neither waits for it nor competes with it; `wait()` joins pending links.

An entry is two files: ``<symbol>.so`` (the ELF library as the linker wrote it, renamed into
place) and ``<symbol>.lib``, written after it: ``FORMAT``, then ``<symbol> <tier> <size> <sha256
of the .so> <sha256 of the object> <sha256 of the .ll>``.  The library is part of the object
cache's entry, derived from its object: `load` reads the header and the library's bytes, checks
the symbol, tier, size and digest, checks the entry's object as `objcache.read_object` does and
that it is the one linked (a damaged object makes the entry a miss, as without a library), and
only then loads the verified library bytes, written afresh to a
file of its own (created exclusively, removed once loaded), so a file swapped after the check is
never loaded, and every load has its own path (the dynamic loader matches libraries by path: two
libraries never collide in its table).  A missing, truncated, foreign or damaged entry, a library
the loader rejects (an unresolvable symbol: the loader binds every symbol at load), or one that
does not define the names asked for is a miss (None), never an error.  A library stays loaded for
the life of the process (its code may be in use); each symbol is loaded once per process, under a
lock (two threads warm-loading one kernel get one library).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from pathlib import Path

from . import objcache

FORMAT = b"ctensor-lib-v1\n"
_LOCK = threading.Lock()
_LOADED: dict = {}               # symbol -> (ctypes.CDLL, tier, .ll digest, directory)
_PENDING: set = set()            # link threads still running
_COUNTER = [0]                   # load paths made by this process (under _LOCK)
_LINKER: list = []               # [path or None], found on first use


def linker() -> str | None:
    """The system linker used (``ld``), or None when there is none."""
    if not _LINKER:
        found = None
        for folder in os.get_exec_path():       # shutil.which("ld") without importing shutil
            path = os.path.join(folder, "ld")
            if os.path.isfile(path) and os.access(path, os.X_OK):
                found = path
                break
        _LINKER.append(found)
    return _LINKER[0]


def link(directory: Path, symbol: str, tier: str, obj: bytes, ir_digest: str) -> None:
    """Link object code `obj` into the library entry `symbol` in the background (module
    docstring); nothing happens without a linker."""
    if linker() is None or not objcache.valid_symbol(symbol):
        return
    t = threading.Thread(target=_link, args=(directory, symbol, tier, obj, ir_digest),
                         name=f"ctensor-link-{symbol}", daemon=False)
    with _LOCK:                  # started under the lock: `wait` never joins an unstarted thread
        try:
            t.start()
        except RuntimeError:     # no thread to spare (or the interpreter is exiting): no library
            return
        _PENDING.add(t)


def wait() -> None:
    """Wait for every pending link of this process."""
    while True:
        with _LOCK:
            pending = list(_PENDING)
        if not pending:
            return
        for t in pending:
            t.join()


def _link(directory, symbol, tier, obj, ir_digest):
    # no subprocess, tempfile or shutil: importing them here would take the GIL from the compile
    # this thread runs beside; posix_spawn and waitpid hold it for microseconds
    tag = f".{symbol}.{os.getpid()}.{threading.get_ident()}"
    o, so = directory / f"{tag}.o", directory / f"{tag}.so"
    try:
        _lower_priority()
        directory.mkdir(parents=True, exist_ok=True)
        o.write_bytes(obj)
        if _run([linker(), "-shared", "-o", str(so), str(o)]) != 0:
            return
        data = so.read_bytes()
        # the library first, then the header naming its digest (a reader sees both or a miss)
        os.replace(so, directory / f"{symbol}.so")
        header = (f"{symbol} {tier} {len(data)} {objcache.digest(data)} {objcache.digest(obj)} "
                  f"{ir_digest}\n").encode()
        objcache._atomic_write(directory / f"{symbol}.lib", FORMAT + header)
    except Exception:            # noqa: BLE001 - a background link never raises: no library, and
        pass                     # loads take the MCJIT path (posix_spawn raised IndexError once while
                                 # a test changed os.environ in another thread)
    finally:
        for path in (o, so):
            try:
                path.unlink()
            except OSError:
                pass
        with _LOCK:
            _PENDING.discard(threading.current_thread())


def _run(argv, timeout=120.0) -> int:
    """Run `argv` with no input or output; its exit status (-1: killed after `timeout` seconds)."""
    if not hasattr(os, "posix_spawn"):
        import subprocess
        try:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=timeout).returncode
        except subprocess.SubprocessError:
            return -1
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet)
    deadline, pause = time.monotonic() + timeout, 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -1
        time.sleep(pause)        # without the GIL
        pause = min(pause * 2, 0.05)


def _lower_priority():
    """Run this thread, and the linker it starts, at the lowest CPU priority: on a busy machine the
    link waits, not the compiles (Linux sets nice values per thread, and a child inherits its
    thread's)."""
    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (OSError, AttributeError):
            pass


def present(directory: Path, symbol: str) -> bool:
    """Is there a header for `symbol` (not checked)?"""
    return symbol in _LOADED or (directory / f"{symbol}.lib").exists()


def _read(directory: Path, symbol: str):
    """(library bytes, tier, .ll digest) of a well-formed entry, or None (module docstring)."""
    try:
        blob = (directory / f"{symbol}.lib").read_bytes()
        if not blob.startswith(FORMAT):
            return None
        name, tier, size, lib_digest, obj_digest, ir_digest = blob[len(FORMAT):].decode("ascii").split()
        if name != symbol or tier not in objcache.TIERS or not size.isdigit():
            return None
        data = (directory / f"{symbol}.so").read_bytes()
    except (OSError, ValueError):       # absent, unreadable, not ASCII, wrong field count
        return None
    if len(data) != int(size) or objcache.digest(data) != lib_digest:
        return None
    # the library is derived from the entry's object: a damaged, swapped or forged object makes
    # the whole entry a miss (as `objcache` has it), whatever state the library is in
    got = objcache.read_object(directory, symbol)
    if got is None or got[1] != tier or got[2] != ir_digest or objcache.digest(got[0]) != obj_digest:
        return None
    return data, tier, ir_digest


def _dlopen(data: bytes, symbol: str, directory: Path):
    """Load verified library bytes from a path no load in this process used before (the dynamic
    loader matches libraries by path: a reused path would return the library loaded first): a
    fresh file beside the entry (pid and a counter in its name, created exclusively, removed once
    loaded), or in the temporary directory when the cache directory is not writable or refuses
    to map code (a ``noexec`` mount)."""
    error = OSError("no writable directory to load a library from")
    for folder in (directory, None):
        _COUNTER[0] += 1
        name = f".{symbol}.{os.getpid()}.{_COUNTER[0]}.so"
        if folder is None:
            import tempfile
            folder = Path(tempfile.gettempdir())
        path = folder / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o700)
        except OSError:
            continue
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            return ctypes.CDLL(str(path))
        except OSError as e:            # a full disk, a noexec mount, or a library the loader refuses
            error = e
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
    raise error


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def load(directory: Path | None, symbol: str, names=("", "_packed")):
    """(addresses of `symbol` + each suffix in `names`, tier, .ll digest) from the library entry
    `symbol`, loaded once per process; None on a miss (module docstring), or when `directory` is
    None (cache off) and the library is not loaded already."""
    with _LOCK:
        hit = _LOADED.get(symbol)
        if hit is None:
            if directory is None or not objcache.valid_symbol(symbol):
                return None
            got = _read(directory, symbol)
            if got is None:
                return None
            try:
                lib = _dlopen(got[0], symbol, directory)
            except OSError:             # the loader refused it (unresolved symbol, not ELF...)
                return None
            hit = _LOADED[symbol] = (lib, got[1], got[2], directory)
    lib = hit[0]
    try:
        addresses = tuple(ctypes.cast(getattr(lib, symbol + n), ctypes.c_void_p).value for n in names)
    except AttributeError:              # the verified library does not define them: a miss
        return None
    # the .ll is read (and checked against its digest) where the caller's cache is now, if set
    return addresses, hit[1], hit[2], directory or hit[3]


__all__ = ["link", "load", "wait", "present", "linker", "FORMAT"]
