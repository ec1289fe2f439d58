"""`replayci proxy`: record and replay an application's model traffic through a local server."""
from __future__ import annotations

import os
import sys

import click

from .. import config
from ..capture import proxy as proxying
from ..capture.proxy import routes
from ..capture.proxy.session import interrupt_on_sigterm
from ..core.paths import display_path
from .main import EXIT_GATE, EXIT_OK, choice, guarded


def check_options(fn):
    """The options only check mode reads (a usage error with another mode)."""
    for deco in reversed([
        click.option("--baseline", metavar="REPORT.json", type=click.Path(dir_okay=False),
                     help="check: label every case against a previous JSON report (new_failure, fixed, ...)."),
        click.option("--gate-baseline", is_flag=True, help="check, with --baseline: fail only for new failures."),
        click.option("--repeat", metavar="N|auto[:MAX]",
                     help="check: run the command N times, or (auto) again until every case it reaches is "
                          "decided (stable_pass, stable_fail, flaky; with --baseline its regression), at most "
                          "MAX times (default 20)."),
        click.option("--fail-on-unmatched", is_flag=True,
                     help="check: exit 1 when an exchange matched no recorded case."),
        click.option("--fail-on-not-exercised", is_flag=True,
                     help="check: exit 1 when a recorded case was reached by no exchange."),
        click.option("--json", "json_out", is_flag=True, help="check: print the JSON report on stdout."),
        click.option("--report-json", type=click.Path(dir_okay=False),
                     help="check: write the JSON report to a file."),
        click.option("--junit", type=click.Path(dir_okay=False), help="check: write a JUnit XML report."),
        click.option("--markdown", type=click.Path(dir_okay=False), help="check: write a Markdown summary."),
        click.option("--html", type=click.Path(dir_okay=False), help="check: write a self-contained HTML report."),
        click.option("--otlp", metavar="ENDPOINT|FILE",
                     help="check: export each case's evaluation over OpenTelemetry (see docs/opentelemetry.md)."),
        click.option("-q", "--quiet", is_flag=True, help="check: only failures and the summary."),
    ]):
        fn = deco(fn)
    return fn


@click.command(context_settings={"allow_interspersed_args": False})
@click.option("--pack", required=True, metavar="DIR", type=click.Path(file_okay=False),
              help="The pack the exchanges are captured into and replayed from (created when missing).")
@click.option("--mode", required=True, metavar="MODE", help=" | ".join(proxying.MODES))
@click.option("--port", type=click.IntRange(0, 65535),
              help=f"Port on 127.0.0.1 (default: any free one with a command, else {proxying.DEFAULT_PORT}).")
@click.option("--upstream", "upstreams", multiple=True, metavar="NAME=URL",
              help="Where NAME (openai, anthropic, gemini) is forwarded; its SDK's base URL form (repeatable).")
@click.option("--ignore", "ignore", multiple=True, metavar="FIELD",
              help="A request field replay matches without (repeatable; replaces proxy.ignore and the default "
                   f"{', '.join(proxying.DEFAULT_IGNORE)}).")
@click.option("--allow-playback-repeats", is_flag=True,
              help="replay: a request repeated more often than it was recorded gets its recorded answers "
                   "again, in order, instead of a miss.")
@click.option("--draft", is_flag=True,
              help="Write draft contracts (status: observed: they run and never fail) instead of contracts "
                   "that pin each captured answer.")
@click.option("--update", is_flag=True,
              help="record/auto: accept new behaviour: write every capture, also those that break their "
                   "cases, and print what changed per contract.")
@click.option("-v", "--verbose", count=True, help="A line per recorded exchange; tracebacks on internal errors.")
@check_options
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND ARGS...]")
@guarded
def proxy(pack, mode, port, upstreams, ignore, allow_playback_repeats, draft, update, verbose, command,
          **flags) -> None:
    """Record, replay or check any application's model traffic: a server on 127.0.0.1 speaking the
    OpenAI, Anthropic and Gemini APIs. With a command, run it pointed at the proxy and exit with
    its status (1 when it passed but a replay missed, or when check mode found a regression);
    without one, serve until Ctrl-C."""
    choice(mode, proxying.MODES, "--mode")
    settings = config.resolve({})
    upstream_urls = proxying.parse_upstreams(upstreams)
    ignored = tuple(ignore) if ignore else settings.proxy_ignore

    def log(line: str) -> None:
        click.echo(line, err=True)

    interrupt_on_sigterm()
    if port is None:
        port = 0 if command else proxying.DEFAULT_PORT
    if mode == "check":
        from .proxy_check import check  # check mode only: it loads the packs and the reports

        check(pack, command, port=port, upstreams=upstream_urls, ignore=ignored, flags=flags, log=log)
        return
    _check_only(flags)
    if update and mode not in ("record", "auto"):
        raise click.UsageError(f"--update goes with --mode record or auto, not --mode {mode}")
    session = proxying.open_session(pack, mode, port=port, upstreams=upstream_urls, ignore=ignored,
                                    redact_fields=settings.redact_fields, log=log, verbose=verbose,
                                    allow_playback_repeats=allow_playback_repeats, draft=draft,
                                    max_fixture_bytes=settings.max_fixture_bytes, update=update)
    _serve(session, pack, mode, command, log)


def _serve(session: proxying.Session, pack: str, mode: str, command: tuple[str, ...], log) -> None:
    """Run the command beside the proxy, or serve until Ctrl-C; then the summary and the exit."""
    code = EXIT_OK
    try:
        _announce(session, pack, mode, to_stderr=bool(command))
        if command:
            code = proxying.run_command(session, command, log=log)
        else:
            proxying.serve_until_interrupted(session)
    finally:
        session.close()
        log(_summary(session, pack))
    stats = session.proxy.stats
    broke = _judged(session, log)
    sys.exit(EXIT_GATE if (code == EXIT_OK and stats.missed) or broke else code)


def _judged(session: proxying.Session, log) -> bool:
    """What judging the captures found (the answers that broke their cases, in the run report's
    form) or, with --update, what changed per contract; whether any broke."""
    store = session.store
    if store is None:
        return False
    from .proxy_check import show_judged  # what the proxy's judging found, as every writer says it

    guard = store.guard
    return show_judged("proxy", broken=guard.broken if guard is not None else [],
                       packs=guard.packs if guard is not None else [],
                       held_back=guard.held_back if guard is not None else 0, changed=store.changed(), log=log)


def _check_only(flags: dict) -> None:
    """The options that only check mode reads: a usage error with another mode."""
    given = [name for name, value in flags.items() if value and name != "no_color"]
    if given:
        shown = ", ".join("--" + name.replace("_", "-").replace("json-out", "json") for name in sorted(given))
        raise click.UsageError(f"{shown} go{'es' if len(given) == 1 else ''} with --mode check")


def _announce(session: proxying.Session, pack: str, mode: str, *, to_stderr: bool) -> None:
    """The first lines: what serves where; without a command, the variables to set."""
    n = session.store.exchanges if session.store is not None else 0
    held = f" ({n} captured exchange{'s' if n != 1 else ''})" if session.store is not None else ""
    click.echo(f"replayci proxy · {mode} · pack {display_path(os.path.abspath(pack))}{held} · {session.server.url}",
               err=to_stderr)
    if to_stderr:
        return
    click.echo("Point your application at it:")
    for var, url in routes.base_urls(session.server.port).items():
        click.echo(f"  export {var}={url}")
    click.echo("Ctrl-C to stop.")


def _summary(session: proxying.Session, pack: str) -> str:
    s = session.proxy.stats
    counts = [f"{s.replayed} replayed", f"{s.recorded} recorded", f"{s.forwarded} forwarded", f"{s.missed} missed"]
    if s.rejected:
        counts.append(f"{s.rejected} rejected")
    if s.failed:
        counts.append(f"{s.failed} upstream failures")
    written = session.store.written if session.store is not None else 0
    where = f"; {written} fixture{'s' if written != 1 else ''} written to {display_path(os.path.abspath(pack))}" \
        if written else ""
    return f"replayci proxy: {', '.join(counts)}{where}"
