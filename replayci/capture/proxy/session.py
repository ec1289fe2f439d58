"""One proxy session: open the pack, start the server, run a command beside it or serve until
interrupted, and leave every capture on disk whatever way it ends."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.errors import ConfigError, did_you_mean
from ...engine.sampling import Sampler
from . import routes
from .checks import MAX_FIXTURE_BYTES
from .server import Proxy, Server
from .store import DEFAULT_IGNORE, Store

if TYPE_CHECKING:  # check mode's judge is loaded only when a check runs
    from .check import Checker, Rounds

DEFAULT_PORT = 8765  # without a command: a port the app's environment can keep naming
_COMMAND_NOT_FOUND = 127
_GRACE_S = 5.0


@dataclass
class Session:
    """A running proxy: its server, and the pack store behind it (none when the mode is off)."""

    proxy: Proxy
    server: Server
    store: Store | None

    def close(self) -> None:
        """Stop serving, then write whatever captures are still pending."""
        try:
            self.server.stop()
        finally:
            if self.store is not None:
                self.store.close()


def parse_upstreams(values: Iterable[str]) -> dict[str, str]:
    """The upstream base URLs: the providers' own, replaced by each NAME=URL given."""
    out = dict(routes.DEFAULT_UPSTREAMS)
    for value in values:
        name, sep, url = value.partition("=")
        name = name.strip().lower()
        if not sep or name not in out:
            raise ConfigError(f"--upstream {value!r}: expected NAME=URL with NAME one of {', '.join(out)}"
                              + did_you_mean(name, out))
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--upstream {value!r}: the URL must start with http:// or https://")
        out[name] = url
    return out


def open_session(pack: str, mode: str, *, port: int, upstreams: dict[str, str],
                 ignore: Sequence[str] | None = None, redact_fields: Sequence[str] = (),
                 log: Callable[[str], None] = print, verbose: int = 0,
                 allow_playback_repeats: bool = False, draft: bool = False,
                 max_fixture_bytes: int = MAX_FIXTURE_BYTES, checker: Checker | None = None,
                 update: bool = False) -> Session:
    """Load the pack (replay needs one) and start the proxy on 127.0.0.1:*port* (0: any free port).
    *allow_playback_repeats* (replay only): a request repeated beyond its recorded answers gets
    them again, in recorded order, instead of a miss. A capture larger than *max_fixture_bytes*
    (the project's fixtures.max_bytes: what its runs read) is answered but not written. Check mode
    (*checker*: the packs' cases) writes nothing."""
    if allow_playback_repeats and mode != "replay":
        raise ConfigError(f"--allow-playback-repeats goes with --mode replay, not --mode {mode}")
    store = None
    if mode == "check" and checker is None:
        raise ConfigError("--mode check needs the pack's cases to judge against")
    if mode not in ("off", "check"):
        if mode == "replay" and not os.path.isdir(pack):
            raise ConfigError(f"{pack}: no pack there to replay from; record one first (--mode record or auto)")
        store = Store(pack, ignore=tuple(DEFAULT_IGNORE if ignore is None else ignore),
                      redact_fields=tuple(redact_fields), log=log, draft=draft, max_fixture_bytes=max_fixture_bytes,
                      update=update)
        store.load()
        if mode != "replay":
            os.makedirs(store.pack_dir, exist_ok=True)  # an unwritable --pack fails now, not at the first capture
    proxy = Proxy(store, mode, upstreams, log=log, verbose=verbose, allow_playback_repeats=allow_playback_repeats,
                  checker=checker if mode == "check" else None)
    server = Server(proxy, port)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return Session(proxy, server, store)


def run_command(session: Session, command: Sequence[str], environ: Mapping[str, str] | None = None,
                log: Callable[[str], None] = print) -> int:
    """Run *command* pointed at the proxy; its exit status (128 + N when signal N ended it)."""
    env = routes.command_environment(session.server.port, session.proxy.mode,
                                     os.environ if environ is None else environ)
    try:
        child = subprocess.Popen(list(command), env=env)
    except OSError as exc:
        log(f"replayci proxy: cannot run {command[0]}: {exc.strerror or exc}")
        return _COMMAND_NOT_FOUND
    try:
        code = child.wait()
    except KeyboardInterrupt:
        _stop_child(child)
        raise
    return 128 - code if code < 0 else code


def run_rounds(session: Session, command: Sequence[str], most: int, *, sampler: Sampler | None = None,
               rounds: Rounds | None = None, log: Callable[[str], None] = print) -> list[int]:
    """Check mode: run *command* *most* times or, under --repeat auto (*sampler*), in rounds until
    every case its runs reached is decided (at most *most*); each run's exit status."""
    from .check import Rounds  # check mode only: its judge loads the engine and the reports

    rounds = Rounds() if rounds is None else rounds
    checker = session.proxy.checker
    codes = []
    for n in range(1, most + 1):
        before = session.proxy.stats.checked
        codes.append(run_command(session, command, log=log))
        rounds.runs += 1
        if sampler is None or checker is None:
            continue
        if not session.proxy.settle():
            log("replayci proxy (check): an answer was still streaming when the command ended; judged without it")
        rounds.calls += session.proxy.stats.checked - before
        again, undecided = checker.open_cases(sampler)
        said = f"{undecided} case{'s' if undecided != 1 else ''} undecided" if undecided else "every case decided"
        if again and n < most:
            log(f"replayci proxy (check): run {n}: {said}, running the command again")
            continue
        reached = f"; --repeat auto:{most} reached" if n == most and undecided else ""
        log(f"replayci proxy (check): run {n}: {said}{reached}")
        break
    return codes


def _stop_child(child: subprocess.Popen) -> None:
    """After Ctrl-C (which the command got too) or SIGTERM: give it a moment, then end it."""
    for stop in (None, child.terminate, child.kill):
        if stop is not None:
            stop()
        try:
            child.wait(timeout=_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def serve_until_interrupted(session: Session) -> None:
    """Serve until Ctrl-C or SIGTERM (raised here as KeyboardInterrupt)."""
    while session.server.alive:
        time.sleep(0.5)
    raise RuntimeError("the proxy's HTTP server stopped")


def interrupt_on_sigterm() -> None:
    """SIGTERM ends the session as Ctrl-C does: captures written, exit 130."""
    def handler(signum, frame):  # noqa: ARG001 - the signal module's signature
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
