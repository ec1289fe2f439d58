"""Recorded runs on two cores: one share of the work in a forked child, the rest here."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
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


# A split run's work goes out in about this many units, each taken by whichever process asks
# first, so the two finish within about one unit of each other however fast each core runs.
UNITS = 64
# At most this many units (their numbers fill a pipe before the fork: 4 KiB).
MAX_UNITS = 1024


class _Claims:
    """The unit numbers 0..count-1 in a pipe that both processes read: each read of four
    bytes takes the next unit that neither process has taken."""

    def __init__(self, count: int):
        self._read, write = os.pipe()
        try:
            data = b"".join(i.to_bytes(4, "little") for i in range(count))
            while data:  # written whole before the fork (count <= MAX_UNITS fits the pipe)
                data = data[os.write(write, data):]
        finally:
            os.close(write)

    def __iter__(self) -> Iterator[int]:
        while len(data := os.read(self._read, 4)) == 4:
            yield int.from_bytes(data, "little")

    def close(self) -> None:
        os.close(self._read)


def by_units(count: int, work: Callable[[Iterable[int]], dict[int, T]]) -> dict[int, T]:
    """work(units) in two processes at once over units 0..count-1, each taking the next unit
    not yet taken: {unit: what work gave for it}. Units the child took but did not send back
    (it was killed, or ran out of memory) are done here instead."""
    if count > MAX_UNITS:
        raise ValueError(f"{count} units: at most {MAX_UNITS} fit the pipe")
    claims = _Claims(count)
    try:
        child = _Forked(lambda: work(claims))
        try:
            mine = work(claims)
            theirs = child.result()
        finally:
            child.kill()
    finally:
        claims.close()
    if theirs is None:
        theirs = work(i for i in range(count) if i not in mine)
    return {**mine, **theirs}


Unit = list[tuple[int, range]]  # (list number, positions in it): consecutive positions


def plan_units(costs: list[list[int]]) -> list[Unit]:
    """Units of work for by_units over the positions of the lists in *costs* (each pack's
    contract files, by size), in order: about 1/UNITS of the total each, largest first so the
    last ones taken are small."""
    total = sum(map(sum, costs))
    target = max(1, total / UNITS)
    while True:
        units: list[tuple[int, Unit]] = []
        unit: Unit = []
        held = 0
        for k, row in enumerate(costs):
            start = 0
            for i, cost in enumerate(row):
                held += cost
                if held >= target:
                    units.append((held, [*unit, (k, range(start, i + 1))]))
                    unit, start, held = [], i + 1, 0
            if start < len(row):
                unit.append((k, range(start, len(row))))
        if unit:
            units.append((held, unit))
        if len(units) <= MAX_UNITS:
            return [u for _, u in sorted(units, key=lambda u: -u[0])]
        target *= 2


def file_costs(files) -> list[int]:
    """What each contract file costs to load and run, by its size (its cases make it longer)."""
    costs = []
    for file in files:
        try:
            costs.append(os.path.getsize(file) + 1)
        except OSError:  # not there (or not a contract): whichever process takes it reports it
            costs.append(1)
    return costs


def project_is_large(packs: tuple[str, ...]) -> bool:
    """A cheap estimate of a project's cost: its JSON and YAML files."""
    count = 0
    for pack in packs:
        for _, _, files in os.walk(pack):
            count += sum(1 for f in files if f.endswith((".json", ".yaml", ".yml")))
            if count >= SPLIT_MIN_FILES:
                return True
    return False
