"""Atomic file writes and the cleanup of what a killed write left behind."""
from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import stat
import sys
import time
from collections.abc import Iterable

from .errors import ConfigError
from .memo import Memo

# Folders already swept by this process (a sweep costs a directory scan).
_swept: Memo = Memo()

# The temp files write_atomic makes: "." + target name + "." + mkstemp's 8 characters + ".tmp".
_OUR_TEMP = re.compile(r"\..+\.(?:json|xml|md|yaml|yml)\.[a-z0-9_]{8}\.tmp\Z")


STALE_TEMP_S = 600


def sweep_stale_temps(folder: str) -> list[str]:
    """Remove what a killed write left behind in *folder*: our temp files older than
    STALE_TEMP_S (a write in progress, here or in another run, is seconds old at most).
    Returns the names removed."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        if not _OUR_TEMP.match(entry.name):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_S:
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            pass
    return removed


def _mode_for(path: str) -> int:
    """The replaced file's permissions, else what a plain open() would give (umask applied)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    # Read once: reading it means setting it for an instant, which other threads must not see.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def utf8(text: str) -> bytes:
    """*text* as written to a file. Half of a surrogate pair a provider sent (no UTF-8 can hold
    it) is written as its escape "\\ud800": a JSON report stays valid JSON, other reports
    readable, never a crash."""
    return text.encode("utf-8", "backslashreplace")


FIFO_WAIT_S = 10.0  # how long a FIFO may go without a reader taking what is written


def _write_fifo(path: str, pieces: Iterable[bytes]) -> None:
    """Write into a FIFO (never replaced by a file), waiting at most FIFO_WAIT_S for a reader to
    open it and, after that, for the reader to take more: nobody reading is an OSError naming
    the FIFO, never a run that hangs."""
    import errno  # why: only a report into a FIFO needs them
    import select

    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            if time.monotonic() > deadline:
                raise OSError(errno.ENXIO, f"no process opened the FIFO to read it within {FIFO_WAIT_S:g} s",
                              path) from None
            time.sleep(0.05)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        for piece in pieces:
            view = memoryview(piece)
            while view:
                try:
                    view = view[os.write(fd, view):]
                    continue
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    raise OSError(errno.EPIPE, "the FIFO's reader closed it before everything was written",
                                  path) from None
                if not poller.poll(FIFO_WAIT_S * 1000):
                    raise OSError(errno.ETIMEDOUT, f"the FIFO's reader took nothing for {FIFO_WAIT_S:g} s",
                                  path)
    finally:
        os.close(fd)


@contextlib.contextmanager
def held_interrupts():
    """Ctrl-C and SIGTERM held back while a write puts its files in place, and delivered right
    after: an interrupt never leaves a temp file behind, or some of a set of files replaced and
    the rest not. (Where threads have no signal mask, as on Windows, nothing is held.)"""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None:
        yield
        return
    previous = mask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, previous)


def write_atomic(path: str, text: str | bytes | Iterable[bytes]) -> None:
    """A temp file beside the target (not ending in .json), fsync, rename. The first write
    into a folder also removes temp files that a killed run left there. A FIFO, a device or
    /dev/stdout (or a link to one) is written through, never replaced; a folder is refused.
    *text* may come in pieces (bytes), written as they come."""
    if isinstance(text, str):
        text = utf8(text)
    pieces = (text,) if isinstance(text, bytes) else text
    if path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a folder, not a file name")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISFIFO(mode) and os.name == "posix":
        _write_fifo(path, pieces)
        return
    if mode is not None and not stat.S_ISREG(mode):
        # Replacing it would put a plain file in place of the pipe or device the user named.
        try:
            with open(path, "wb") as fh:
                fh.writelines(pieces)
        except OSError as exc:
            raise naming(exc, path) from None
        return
    path = os.path.abspath(path)  # a bare file name's folder is the current one, not ""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    if folder not in _swept:
        _swept.put(folder, True)
        sweep_stale_temps(folder)
    import tempfile  # why: only a file write needs it (with shutil and random), not a run's start

    with held_interrupts():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        try:
            os.chmod(tmp, _mode_for(path))
            with os.fdopen(fd, "wb") as fh:
                fh.writelines(pieces)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise naming(exc, path) from None
            raise


# From this many files on, one sync() of the whole system (Linux: it returns once every dirty
# page is on disk) costs far less than an fsync per file, each a journal commit of its own.
SYNC_ALL_FROM = 16


def _stage_folder(folder: str, entries: list[tuple[str, str, str | bytes]], staged: list[tuple[str, str]]) -> None:
    """Each file of one folder written to a temp file beside its target (the folder made first,
    and swept of what a killed write left), each listed in *staged* as soon as it exists."""
    import tempfile  # why: only a file write needs it

    for target, path, _ in entries:
        if target.endswith(("/", os.sep)) or os.path.isdir(path):
            raise IsADirectoryError(f"{target}: is a folder, not a file name")
    os.makedirs(folder, exist_ok=True)
    if folder not in _swept:
        _swept.put(folder, True)
        sweep_stale_temps(folder)
    for target, path, text in entries:
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            staged.append((tmp, path))
            os.chmod(tmp, _mode_for(path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(utf8(text) if isinstance(text, str) else text)
        except OSError as exc:
            raise naming(exc, target) from None


def naming(exc: OSError, path: str) -> OSError:
    """*exc*, raised while *path* was written, naming *path*: a write's own error (a full disk,
    a file over the size limit) names no file, or names the temp file beside it."""
    if exc.errno is None:
        return exc
    named = exc.filename
    if named is not None and not os.path.basename(str(named)).startswith(f".{os.path.basename(path)}."):
        return exc  # it names the file it is about already
    return OSError(exc.errno, exc.strerror, path)


def _flush_to_disk(paths: list[str]) -> None:
    """Every file in *paths* on disk: an fsync each, or for many files on Linux one sync(),
    which there waits for the writeback it starts (elsewhere sync() may return first)."""
    if len(paths) >= SYNC_ALL_FROM and sys.platform.startswith("linux"):
        os.sync()
        return
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all_atomic(files: dict[str, str | bytes]) -> None:
    """Several files written as one step as far as a failure goes: each to a temp file beside
    its target first, then all flushed to disk, then each renamed into place, and the renames
    flushed too. A failure before the renames (a full disk, a folder where a file goes) leaves
    every target as it was; a crash leaves each target whole, old or new, never half-written.
    One flush after all the writes also costs the disk far less than one per file. Ctrl-C or
    SIGTERM meanwhile takes effect once every file is in place."""
    with held_interrupts():
        _write_all(files)


# From this many files on, they are staged by STAGE_THREADS threads, a folder each at a time:
# creating a file is kernel work (a few hundred microseconds on some disks), which threads
# spread over the cores while the interpreter waits.
STAGE_THREADS_FROM = 64
STAGE_THREADS = 4


def _write_all(files: dict[str, str | bytes]) -> None:
    by_folder: dict[str, list[tuple[str, str, str | bytes]]] = {}
    order: dict[str, int] = {}  # each target's place in *files*: the renames keep it
    for n, (target, text) in enumerate(files.items()):
        path = os.path.abspath(target)
        by_folder.setdefault(os.path.dirname(path), []).append((target, path, text))
        order[path] = n
    staged: list[tuple[str, str]] = []  # (temp, target) as made, by any thread: all removed on a failure
    tasks = list(by_folder.items())
    try:
        if len(files) < STAGE_THREADS_FROM or len(tasks) < 2:
            for folder, entries in tasks:
                _stage_folder(folder, entries, staged)
        else:
            from concurrent.futures import ThreadPoolExecutor  # why: only many files need it

            with ThreadPoolExecutor(STAGE_THREADS) as pool:
                futures = [pool.submit(_stage_folder, folder, entries, staged) for folder, entries in tasks]
            for future in futures:  # every one finished: the first failure, in folder order
                future.result()
        _flush_to_disk([tmp for tmp, _ in staged])
    except BaseException:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    staged.sort(key=lambda pair: order[pair[1]])  # renamed in the order given, whichever thread made them
    for tmp, path in staged:
        os.replace(tmp, path)
    if os.name == "posix":  # the renames themselves: their folders' entries on disk
        _flush_to_disk(sorted({os.path.dirname(path) for _, path in staged}))


@contextlib.contextmanager
def folder_lock(folder: str):
    """Hold *folder*'s write lock (an advisory lock on the folder itself: no file is left
    behind): two commands writing one pack (two imports, two `mutate --write-negatives`) take
    turns, the second deciding what to write only once the first has written. No lock where
    the system has none (Windows): writes there stay atomic file by file."""
    try:
        import fcntl  # why: POSIX only
    except ImportError:
        yield
        return
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot write there ({exc.strerror or exc})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)
