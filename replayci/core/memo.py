"""Module caches: bounded memo tables, and one way to clear them all; the cyclic collector
paused for work that makes no cycles."""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable
from typing import Any

_MEMOS: list[Memo] = []
_HOOKS: list[Callable[[], None]] = []


class Memo(dict):
    """A dict that stops growing at *limit* entries (what it holds stays valid: entries are
    pure functions of their keys); clear_caches() empties every one."""

    __slots__ = ("limit",)

    def __init__(self, limit: int = 4096):
        super().__init__()
        self.limit = limit
        _MEMOS.append(self)

    def put(self, key: Any, value: Any) -> Any:
        """Keep *value* under *key* while there is room; returns *value*."""
        if len(self) < self.limit:
            self[key] = value
        return value


def on_clear(fn: Callable[[], None]) -> Callable[[], None]:
    """Register *fn* to run on clear_caches() (for a cache that is more than one table)."""
    _HOOKS.append(fn)
    return fn


def clear_caches() -> None:
    """Forget everything every module cache learned (tests; long-lived processes)."""
    for memo in _MEMOS:
        memo.clear()
    for fn in _HOOKS:
        fn()


_FAST = [True]


def use_fast_paths(on: bool = True) -> None:
    """Turn replayci's shortcuts on or off (compiled schemas shared by their text, tools keys
    built tool by tool, a known tools text not parsed again, a canonical response and a
    chat-completions request known by their shape, a system prompt's hash kept by its
    text); results are the same either way, and tests compare the two. Every cache is
    cleared."""
    _FAST[0] = bool(on)
    clear_caches()


def fast_paths() -> bool:
    """Whether the shortcuts of use_fast_paths() are on (they are by default)."""
    return _FAST[0]


@contextlib.contextmanager
def collector_paused(pause: bool = True):
    """The cyclic garbage collector off while the block runs (a recorded run or an import
    allocates many small, short-lived containers and no cycles). Afterwards it resumes (for
    callers in the same process) without rescanning what the block built."""
    was = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause and was:
            gc.freeze()
            gc.enable()
