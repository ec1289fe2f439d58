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
    it gives is sent back pickled, in a frame of its own, as soon as it is ready; receive()
    takes in what has arrived, without waiting, between this process's own units. The child
    leaves without any cleanup of its own."""

    def __init__(self, work: Callable[[], Iterable[tuple[int, T]]]):
        import pickle  # why: only a run split over two processes needs it (loaded before the fork)

        self._pickle = pickle
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                os.close(read)
                for pair in work():
                    data = pickle.dumps(pair, protocol=pickle.HIGHEST_PROTOCOL)
                    _write_all(write, len(data).to_bytes(8, "little") + data)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        _widen(read)
        os.set_blocking(read, False)
        self._read: int | None = read
        self._buffer = bytearray()
        self.received: dict[int, T] = {}

    def receive(self, wait: bool = False) -> None:
        """Take in the units that have arrived (with *wait*, all of them, until the child
        closes its end)."""
        if wait:
            os.set_blocking(self._read, True)
        while True:
            try:
                data = os.read(self._read, 1 << 20)
            except BlockingIOError:  # nothing more for now
                break
            if not data:  # the child closed its end
                break
            self._buffer += data
        self._unframe()

    def _unframe(self) -> None:
        """The complete frames of the buffer, unpickled (a frame cut short waits for the rest;
        one the child did not finish, because it died, is dropped with the stream)."""
        buffer, at = self._buffer, 0
        while len(buffer) - at >= 8:
            size = int.from_bytes(buffer[at:at + 8], "little")
            if len(buffer) - at - 8 < size:
                break
            unit, value = self._pickle.loads(buffer[at + 8:at + 8 + size])
            self.received[unit] = value
            at += 8 + size
        del buffer[:at]

    def join(self) -> dict[int, T]:
        """What the child sent back once it has finished (all of its units, or those it
        finished before it died)."""
        self.receive(wait=True)
        self._close()
        os.waitpid(self.pid, 0)
        self.pid = 0
        return self.received

    def _close(self) -> None:
        if self._read is not None:
            os.close(self._read)
            self._read = None

    def kill(self) -> None:
        self._close()
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _widen(fd: int) -> None:
    """A pipe buffer of 1 MiB where the system allows it (Linux), so the child seldom waits
    for this process to take in what it sent."""
    import fcntl  # why: only a split run's pipe needs it

    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    except (AttributeError, OSError):  # not Linux, or over the system's limit: the default
        pass


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
            # written whole before the fork (count <= MAX_UNITS fits the pipe)
            _write_all(write, b"".join(i.to_bytes(4, "little") for i in range(count)))
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
            done = dict(work(_receiving(claims, child)))
            done.update(child.join())
        finally:
            child.kill()
    finally:
        claims.close()
    missing = [n for n in range(count) if n not in done]
    done.update(work(iter(missing)))
    return done


Unit = list[tuple[int, range]]  # (list number, positions in it): consecutive positions


def _receiving(claims: Iterable[int], child: _Forked) -> Iterator[int]:
    """This process's units, taking in what the child sent back before each."""
    for n in claims:
        child.receive()
        yield n


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
