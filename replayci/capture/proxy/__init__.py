"""`replayci proxy`: a local HTTP server that speaks the providers' wire APIs, so any
application, in any language, records and replays its own model traffic into a pack by
changing only its base URL.

``routes`` knows the endpoints, headers, secrets and error shapes; ``store`` the pack (the
replay index and the writes); ``contracts`` the draft contracts; ``server`` the HTTP side;
``session`` starts and stops it, with or without a command beside it.
"""
from __future__ import annotations

import importlib
from typing import Any

# Each name from the submodule that defines it, loaded on first use: a reader of `routes` alone
# (import, which shares its endpoint and secret rules) starts without the HTTP server's stack.
_WHERE = {"MODES": "server", "Proxy": "server", "Server": "server", "Stats": "server",
          "DEFAULT_PORT": "session", "Session": "session", "open_session": "session",
          "parse_upstreams": "session", "run_command": "session", "run_rounds": "session",
          "serve_until_interrupted": "session",
          "DEFAULT_IGNORE": "store", "Store": "store"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
