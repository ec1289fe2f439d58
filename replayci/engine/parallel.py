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


_FAILED = object()


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
                value = work()
                with os.fdopen(write, "wb") as out:  # pickled as it is sent: no copy in memory
                    pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write)

    def result(self):
        """What work() returned; None when the child failed (killed, out of memory, a bug)."""
        import pickle  # why: as in __init__, which loaded it already

        with os.fdopen(self._read, "rb") as inp:
            try:
                value = pickle.load(inp)  # read as it comes: the pickle is never held whole
            except Exception:  # cut short: the child died on the way
                value = _FAILED
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return value if status == 0 and value is not _FAILED else None

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


# The parent's share of a split run's work: at the end it also merges the results, sums them
# up and writes the terminal report and report files while the child has nothing left to do.
PARENT_SHARE = 0.48


def _share(files: list[str], parent: bool) -> set[int]:
    """The positions of a pack's contract *files* that the parent (or the child) loads and
    runs. Each goes to whichever process is further below its target share of the bytes so
    far (a contract file's size stands for its cases), computed alike by both processes."""
    done = [0, 0]
    targets = (PARENT_SHARE, 1 - PARENT_SHARE)
    mine = set()
    for i, file in enumerate(files):
        try:
            cost = os.path.getsize(file) + 1
        except OSError:  # not there: whichever process loads it reports it
            cost = 1
        side = 0 if done[0] * targets[1] <= done[1] * targets[0] else 1
        done[side] += cost
        if (side == 0) == parent:
            mine.add(i)
    return mine


def parent_share(files: list[str]) -> set[int]:
    """The contracts (positions in their pack's list) the parent loads."""
    return _share(files, True)


def child_share(files: list[str]) -> set[int]:
    """The contracts the child loads: all the others."""
    return _share(files, False)


def project_is_large(packs: tuple[str, ...]) -> bool:
    """A cheap estimate of a project's cost: its JSON and YAML files."""
    count = 0
    for pack in packs:
        for _, _, files in os.walk(pack):
            count += sum(1 for f in files if f.endswith((".json", ".yaml", ".yml")))
            if count >= SPLIT_MIN_FILES:
                return True
    return False
