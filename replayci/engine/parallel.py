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


class _Forked:
    """work() run in a forked process (sharing everything loaded so far): each (unit, value)
    it gives is sent back pickled as soon as it is ready, and a thread here receives them
    while this process goes on with its own share. The child leaves without any cleanup of
    its own."""

    def __init__(self, work: Callable[[], Iterable[tuple[int, T]]]):
        import pickle  # why: only a run split over two processes needs it (loaded before the fork)

        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                os.close(read)
                with os.fdopen(write, "wb") as out:
                    for pair in work():
                        pickle.dump(pair, out, protocol=pickle.HIGHEST_PROTOCOL)
                        out.flush()
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        self.received: dict[int, T] = {}
        self._thread = threading.Thread(target=self._receive, args=(read,), daemon=True)
        self._thread.start()

    def _receive(self, read: int) -> None:
        import pickle  # why: as in __init__, which loaded it already

        with os.fdopen(read, "rb") as inp:
            try:
                while True:
                    unit, value = pickle.load(inp)  # one unit's pickle at a time, as it comes
                    self.received[unit] = value
            except Exception:  # the end of the stream (or the child died on the way)
                pass

    def join(self) -> dict[int, T]:
        """What the child sent back once it has finished (all of its units, or those it
        finished before it died)."""
        self._thread.join()
        os.waitpid(self.pid, 0)
        self.pid = 0
        return self.received

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


def by_units(count: int, work: Callable[[Iterable[int]], Iterator[tuple[int, T]]]) -> dict[int, T]:
    """work(units) in two processes at once over units 0..count-1, each taking the next unit
    not yet taken and giving (unit, value) for each: {unit: value}. Units the child took but
    did not send back (it was killed, or ran out of memory) are done here instead."""
    if count > MAX_UNITS:
        raise ValueError(f"{count} units: at most {MAX_UNITS} fit the pipe")
    claims = _Claims(count)
    try:
        child = _Forked(lambda: work(claims))
        try:
            done = dict(work(claims))
            done.update(child.join())
        finally:
            child.kill()
    finally:
        claims.close()
    missing = [n for n in range(count) if n not in done]
    done.update(work(iter(missing)))
    return done


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
