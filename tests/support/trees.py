"""Walking a parsed JSON or YAML document by paths of keys and indexes (the fuzz and mutation tests)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def paths(tree: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """The path of every node of *tree*, itself first (the empty path)."""
    yield prefix
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from paths(v, prefix + (i,))


def at(tree: Any, path: tuple) -> Any:
    """The node of *tree* at *path*."""
    for step in path:
        tree = tree[step]
    return tree
