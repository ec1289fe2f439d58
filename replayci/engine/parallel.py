"""Recorded runs on two cores: one share of the work in a forked child, the rest here."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# A project with this many contract and fixture files is loaded and run in two processes
# (each contract costs as much to load as a few dozen cases); already loaded packs are split
# from this many cases.
SPLIT_MIN_FILES = 100
SPLIT_MIN_CASES = 2000


class _Forked:
    """work() run in a forked process (sharing everything loaded so far); result() is what
    it returned, sent back pickled. The child leaves without any cleanup of its own."""

    def __init__(self, work: Callable[[], object]):
        import pickle  # why: only a run split over two processes needs it (loaded before the fork)

        self._read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                os.close(self._read)
                data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(data)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write)

    def result(self):
        """What work() returned; None when the child failed (killed, out of memory, a bug)."""
        import pickle  # why: as in __init__, which loaded it already

        with os.fdopen(self._read, "rb") as inp:
            data = inp.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return pickle.loads(data) if status == 0 and data else None

    def kill(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0


def fork_safe() -> bool:
    """Two cores, fork, and no other thread (a forked child inherits locks held by threads
    that do not exist in it: a lock held at fork time would never be released there)."""
    return (os.cpu_count() or 1) >= 2 and hasattr(os, "fork") and threading.active_count() == 1


def in_two(here: Callable[[], T], there: Callable[[], T]) -> tuple[T, T]:
    """(here(), there()), there() computed in a forked child at the same time; when the child
    fails (killed, out of memory), its share is done here instead."""
    child = _Forked(there)
    try:
        mine = here()
        theirs = child.result()
    finally:
        child.kill()
    return mine, (there() if theirs is None else theirs)


def parent_share(i: int) -> bool:
    """Contract *i* is loaded by the parent: 11 in 20 (the child starts later and pays for
    copy-on-write pages)."""
    return i % 20 < 11


def child_share(i: int) -> bool:
    """Contract *i* is loaded by the child."""
    return not parent_share(i)


def project_is_large(packs: tuple[str, ...]) -> bool:
    """A cheap estimate of a project's cost: its JSON and YAML files."""
    count = 0
    for pack in packs:
        for _, _, files in os.walk(pack):
            count += sum(1 for f in files if f.endswith((".json", ".yaml", ".yml")))
            if count >= SPLIT_MIN_FILES:
                return True
    return False
