"""replayci: contract tests for how language models call tools.

Public API: load_pack, run, check_response, query, and the result types.
"""
from __future__ import annotations

from .core.version import __version__

__all__ = [
    "__version__",
    "load_pack",
    "run",
    "check_response",
    "query",
    "CaseResult",
    "RunResult",
    "Failure",
    "ConfigError",
]


def __getattr__(name: str):
    # Imports stay lazy so `replayci --version` and the recorded path start fast.
    if name in ("load_pack", "run", "check_response", "query"):
        from . import api

        return getattr(api, name)
    if name in ("CaseResult", "RunResult"):
        from .engine import results

        return getattr(results, name)
    if name == "Failure":
        from .checks.failure import Failure

        return Failure
    if name == "ConfigError":
        from .core.errors import ConfigError

        return ConfigError
    raise AttributeError(f"module 'replayci' has no attribute {name!r}")
