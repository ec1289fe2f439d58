"""A run's JSON report entries written to temporary files as its cases finish, so a large run
holds a light result per case instead of every case's report entry and response."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..engine.events import CaseJudged, Event, Handler
from .json_report import case_line

if TYPE_CHECKING:
    from ..engine.results import CaseResult

# Consecutive entries are read back in blocks of at most this many bytes.
_BLOCK = 1 << 20
# At most this many distinct details dicts are shared between light results.
_SHARED_DETAILS = 1000


class CaseSpool(Handler):
    """A handler that hears each judged case in whichever process ran it (a forked process
    writes a file of its own), writes the case's report line and lightens the result in place
    (see CaseResult.lighten), which then holds where the line is; case_lines() gives the lines
    back in a run's order. A context manager: the files go when it closes."""

    per_process = True

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="replayci-cases-")
        self._pid = 0
        self._fh = None
        self._name = ""
        self._offset = 0
        self._inherited: list = []
        self._details: dict = {}  # light results with equal small details share one dict

    def __enter__(self) -> CaseSpool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def handle(self, event: Event) -> None:
        if type(event) is not CaseJudged:
            return
        result: CaseResult = event.result
        if self._pid != os.getpid():  # a forked child: its own file (the parent's stays the parent's)
            self._pid = os.getpid()
            # The parent's file object, buffer included, is never closed here: closing it would
            # write the parent's buffered lines a second time.
            self._inherited.append(self._fh)
            self._name = os.path.join(self.folder, f"{self._pid}.jsonl")
            self._fh = open(self._name, "wb")  # open while the run lasts: close() closes it
            self._offset = 0
        data = case_line(result.to_dict())
        self._fh.write(data)
        stored = (self._name, self._offset, len(data))
        self._offset += len(data)
        light = result.lighten(stored)
        if len(self._details) < _SHARED_DETAILS:
            try:
                key = tuple(light.details.items())
                object.__setattr__(light, "details", self._details.setdefault(key, light.details))
            except TypeError:  # a value that is not hashable (a list): details of its own
                pass

    def flush(self) -> None:
        """Make what this process wrote readable by the others (a forked child leaves without
        flushing anything)."""
        if self._fh is not None:
            self._fh.flush()

    def case_lines(self, results: Iterable[CaseResult]) -> Iterator[bytes]:
        """The report lines of *results*, in their order: runs of consecutive lines read as
        one block (a case that was not spooled is encoded here)."""
        self.flush()
        fds: dict[str, int] = {}
        try:
            name, start, end = "", 0, 0
            for r in results:
                if not r.stored:
                    if end > start:
                        yield _read(fds, name, start, end)
                    name, start, end = "", 0, 0
                    yield case_line(r.to_dict())
                    continue
                where, offset, size = r.stored
                if where == name and offset == end and end - start < _BLOCK:
                    end += size
                    continue
                if end > start:
                    yield _read(fds, name, start, end)
                name, start, end = where, offset, offset + size
            if end > start:
                yield _read(fds, name, start, end)
        finally:
            for fd in fds.values():
                os.close(fd)

    def close(self) -> None:
        if self._fh is not None and self._pid == os.getpid():
            self._fh.close()
        self._fh = None
        shutil.rmtree(self.folder, ignore_errors=True)


def _read(fds: dict[str, int], name: str, start: int, end: int) -> bytes:
    fd = fds.get(name)
    if fd is None:
        fd = fds[name] = os.open(name, os.O_RDONLY)
    parts = []
    while start < end:
        data = os.pread(fd, end - start, start)
        if not data:
            raise OSError(f"{name}: the run's case entries were cut short")
        parts.append(data)
        start += len(data)
    return b"".join(parts)
