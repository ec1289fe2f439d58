"""`replayci proxy`: a local HTTP server that speaks the providers' wire APIs, so any
application, in any language, records and replays its own model traffic into a pack by
changing only its base URL.

``routes`` knows the endpoints, headers, secrets and error shapes; ``store`` the pack (the
replay index and the writes); ``contracts`` the draft contracts; ``server`` the HTTP side;
``session`` starts and stops it, with or without a command beside it.
"""
from __future__ import annotations

from .server import MODES, Proxy, Server, Stats
from .session import DEFAULT_PORT, Session, open_session, parse_upstreams, run_command, serve_until_interrupted
from .store import DEFAULT_IGNORE, Store

__all__ = ["DEFAULT_IGNORE", "DEFAULT_PORT", "MODES", "Proxy", "Server", "Session", "Stats", "Store",
           "open_session", "parse_upstreams", "run_command", "serve_until_interrupted"]
