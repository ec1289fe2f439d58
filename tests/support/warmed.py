"""Command prefixes that start in a fork of a warm Python (warm.py).

    [*cli(env), "validate"]          # stands for [sys.executable, "-m", "replayci", "validate"]
    [*app_python(), "app.py"]        # stands for [sys.executable, "app.py"], the SDKs imported already
    [*COLD_CLI, ...]                 # the real interpreter's start-up, where that is what a test looks at

A server starts on first use and is stopped (and waited for, so its commands' CPU time is
counted) when the session ends, or when its test process goes. Under pytest-xdist the servers are
the session's, not each test process's (share()): a keeper process the controller starts runs
each server once for all the workers, and stops them when the session ends.

`cli(env)` takes the environment the command will get: each start-up environment (the PYTHON*
variables, locale, ...) has its own servers, so a test that sets PYTHONPATH or PYTHONHASHSEED
still gets the interpreter it asked for.
Two CLI servers take turns per start-up environment: two commands run one after the other get
different string hash seeds, as two processes would. A start-up environment other than the test
process's own gets its servers on its second command (the first runs cold).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from warm import ask_keeper, launch, startup_environment

WARM = str(Path(__file__).resolve().parent / "warm.py")
COLD_CLI = (sys.executable, "-m", "replayci")
# The SDKs the applications under the proxy use, and the MCP SDK's server side (the tests' MCP servers).
_APP_MODULES = ("openai", "anthropic", "google.genai", "mcp.server.mcpserver", "mcp.server.stdio",
                "mcp.server.lowlevel.server")
KEEPER = "WARM_KEEPER"  # the socket of the session's keeper (share()), for its test processes

_lock = threading.Lock()
_servers: list[tuple[subprocess.Popen, str]] = []
_cli: dict[tuple, tuple[list[str | None], itertools.count]] = {}
_app: list[str] = []


def cli(env=None) -> list[str]:
    """The prefix that runs `python -m replayci` in a fork of a server with the CLI imported, for a
    command started with ENV (the test process's own environment if None)."""
    env = dict(os.environ if env is None else env)
    key = tuple(sorted(startup_environment(env).items()))
    with _lock:
        socks, turn = _cli.setdefault(key, ([None, None], itertools.count()))
        n = next(turn)
        if n == 0 and key != tuple(sorted(startup_environment(os.environ).items())):
            return list(COLD_CLI)  # an environment used once costs a cold start, not two servers
        i = n % len(socks)
        if socks[i] is None:
            digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
            socks[i] = _start("serve-cli", env, name=f"cli{i}-{digest}")
        return [sys.executable, "-I", "-S", WARM, "cli", socks[i]]


def app_python() -> list[str]:
    """The prefix that runs a script as `python SCRIPT` would, in a fork of a process that has
    imported the provider SDKs already: applications under the proxy start in milliseconds."""
    with _lock:
        if not _app:
            _app.append(_start("serve", dict(os.environ), _APP_MODULES, name="app"))
        return [sys.executable, WARM, "run", _app[0]]


def share() -> None:
    """Have every test process of this session (pytest-xdist's workers, started after this) share
    one set of servers: a keeper process starts each on first use and stops them all in stop()."""
    with _lock:
        if KEEPER not in os.environ:
            os.environ[KEEPER] = _own("keep", dict(os.environ))


def _start(mode: str, env: dict, modules=(), *, name: str) -> str:
    """The socket of a server: the session's keeper's server NAME if there is a keeper, else one of
    this process's own."""
    keeper = os.environ.get(KEEPER)
    if not keeper:
        return _own(mode, env, modules)
    sock = ask_keeper(keeper, {"mode": mode, "name": name, "env": env, "modules": list(modules)})
    if not sock:
        raise RuntimeError(f"the warm Python did not start: {mode} {name}")
    return sock


def _own(mode: str, env: dict, modules=()) -> str:
    sock = str(Path(tempfile.mkdtemp(prefix="replayci-warm-")) / "s")
    server = launch(mode, sock, modules, env)
    if server is None:
        raise RuntimeError(f"the warm Python did not start: {mode} {list(modules)}")
    _servers.append((server, sock))
    return sock


def stop() -> None:
    """Stop every server, waiting for it (and so counting its commands' CPU time)."""
    with _lock:
        for server, _ in _servers:
            server.terminate()
        for server, sock in _servers:
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            shutil.rmtree(os.path.dirname(sock), ignore_errors=True)
            if os.environ.get(KEEPER) == sock:
                del os.environ[KEEPER]
        _servers.clear()
        _cli.clear()
        _app.clear()
