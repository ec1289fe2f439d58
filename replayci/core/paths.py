"""Paths as users see them, and containment checks that resolve symlinks."""
from __future__ import annotations

import os


def display_path(path: str, base: str | None = None) -> str:
    """A path as the user should see it: relative to the working directory when below it."""
    base = base or os.getcwd()
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def inside(root: str, path: str, cache: dict | None = None) -> bool:
    """True when *path* (symlinks resolved) stays within *root*.

    *cache* maps directories to their real paths for one load, so a pack of many fixtures
    resolves each directory once instead of every path component of every fixture.
    """
    if cache is None:
        real_root, real = os.path.realpath(root), os.path.realpath(path)
    else:
        real_root = _real_dir(root, cache)
        real = _real_file(path, cache)
    return real == real_root or real.startswith(real_root + os.sep)


def _real_dir(path: str, cache: dict) -> str:
    real = cache.get(path)
    if real is None:
        real = cache[path] = os.path.realpath(path)
    return real


def _real_file(path: str, cache: dict) -> str:
    """The real path of a file: its directory's (cached), unless the file itself is a link."""
    if os.path.islink(path):
        return os.path.realpath(path)
    folder, name = os.path.split(path)
    return os.path.join(_real_dir(folder, cache), name)
