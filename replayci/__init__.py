"""replayci: contract tests for how language models call tools.

Public API: load_pack, run, check_response, query, and the result types.
"""
from __future__ import annotations

import importlib

from .core.version import __version__

# Where each public name lives; imported on first use so `replayci --version` and the recorded
# path start fast.
_PUBLIC = {
    "load_pack": "api",
    "run": "api",
    "check_response": "api",
    "query": "api",
    "CaseResult": "engine.results",
    "RunResult": "engine.results",
    "Failure": "checks.failure",
    "ConfigError": "core.errors",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'replayci' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value  # later look-ups find it here, whatever submodules were imported since
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
