"""A pack's text files read safely (size, encoding, what the path is), and `Located`: a parsed
value with where each of its parts came from."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError, Problem

MAX_DEPTH = 64
MAX_NODES = 200_000
# What a document's aliases may expand to, counted in bytes of scalar text (and one per node):
# an alias repeats a value without copying it, but every reader after the loader (hashing,
# JSON, a report) sees the copies.
MAX_EXPANDED_BYTES = 16 * 1024 * 1024
MAX_YAML_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024

Path = tuple  # a key path: ("assertions", "output_invariants", 0)


@dataclass
class Located:
    """A parsed document and the (line, column) of every value in it, both 1-based."""

    file: str
    value: Any
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # The value passed its file's JSON Schema (pack/load_schema.py): its mappings' keys and
    # value types need no second look by the vocabulary's located checks.
    checked: bool = False

    def at(self, path: Path) -> tuple[int | None, int | None]:
        """The position of *path*, or of its nearest located ancestor."""
        path = tuple(path)
        while True:
            mark = self.marks.get(path)
            if mark is not None:
                return mark
            if not path:
                return (1, 1)
            path = path[:-1]

    def problem(self, path: Path, message: str) -> Problem:
        line, col = self.at(path)
        return Problem(self.file, line, col, message, key=format_path(path))

    def source(self, path: Path) -> str:
        return f"{self.file}:{self.at(path)[0]}"


def format_path(path: Path) -> str:
    """("a", 0, "b") -> "a[0].b"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _read_upto(fd: int, n: int) -> bytes:
    """Up to *n* bytes from *fd* (fewer only at the end of the file)."""
    parts = []
    while n > 0:
        chunk = os.read(fd, n)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_text(path: str, display: str, *, max_bytes: int) -> str:
    """The UTF-8 text of a file, refusing oversize files, other encodings and anything that
    is not a regular file (a FIFO would block, /dev/zero would never end)."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (no effect on regular files).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise ConfigError(Problem(display, None, None, f"cannot read: {exc.strerror}")) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(Problem(display, None, None, "not a regular file (a directory, device, "
                                      "pipe or socket); replayci reads only regular files"))
        size = st.st_size
        data = b""
        if size <= max_bytes:
            data = _read_upto(fd, size + 1)  # (no file object: a fixture is one read)
            if len(data) > size:  # it grew meanwhile: never read more than the limit
                data += _read_upto(fd, max_bytes + 1 - len(data))
                size = len(data)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise ConfigError(
            Problem(display, None, None,
                    f"file is {size:,} bytes, over the limit of {max_bytes:,} bytes")
        )
    wide = _wide_encoding(data)
    if wide:
        raise ConfigError(Problem(display, None, None, f"the file is {wide}, not UTF-8; save it as UTF-8"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            Problem(display, line, col,
                    f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8")
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _wide_encoding(data: bytes) -> str | None:
    """"UTF-16" or "UTF-32" when *data* is text in one (by its byte-order mark, or a NUL beside
    every character of its first line), else None."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = data[:64]
    if len(head) >= 4 and len(head) % 2 == 0 and (not any(head[1::2]) or not any(head[0::2])):
        return "UTF-16"
    return None


def cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
