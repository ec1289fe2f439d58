"""`replayci proxy --mode check`: run a command through the proxy, judge every answer against its
recorded case, and report as a run does."""
from __future__ import annotations

import datetime
import sys
import time

import click

from .. import config
from ..capture import proxy as proxying
from ..capture.proxy import routes
from ..capture.proxy.check import Checker, Outcome, Rounds, run_result
from ..core.prices import price_table
from ..engine.sampling import Sampler
from ..pack import loader
from .main import EXIT_GATE, EXIT_OK
from .output import Output
from .run import _baseline_report, report_result

_LISTED = 20  # unmatched exchanges and cases not exercised shown on the terminal (all in the reports)


def check(pack: str, command: tuple[str, ...], *, port: int, upstreams: dict, ignore: tuple[str, ...] | None,
          flags: dict, log) -> None:
    """Run *command* (--repeat times) in check mode, or serve until Ctrl-C without one; report;
    exit 1 on a failing case or gate, else the command's own status."""
    if flags["repeat"] and not command:
        raise click.UsageError("--repeat runs a command N times: replayci proxy --mode check --repeat N -- COMMAND")
    most, auto = config.parse_repeat(flags["repeat"]) if flags["repeat"] else (1, False)
    settings = config.resolve({"packs": (pack,), "gate_baseline": flags["gate_baseline"],
                               **({"repeat": flags["repeat"]} if auto else {}),
                               **_baseline_report(flags["baseline"], flags["gate_baseline"])})
    sampler = Sampler(settings) if auto else None
    ignore = proxying.DEFAULT_IGNORE if ignore is None else tuple(ignore)
    packs = loader.load_packs([pack], project_root=settings.project_root)
    checker = Checker(packs, ignore, log=log, prices=price_table(settings.pricing))
    started_at, t0 = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()
    session = proxying.open_session(pack, "check", port=port, upstreams=upstreams, ignore=ignore, log=log,
                                    checker=checker)
    codes, rounds = [], Rounds()
    try:
        log(f"replayci proxy · check · pack {pack} ({len(checker.index.every)} recorded cases) · {session.server.url}")
        if command:
            codes = proxying.run_rounds(session, command, most, sampler=sampler, rounds=rounds, log=log)
        else:
            _serve(session)
    finally:
        session.close()
    outcome = checker.finish(sampler)
    log(f"replayci proxy: {session.proxy.stats.checked} checked, {session.proxy.stats.failed} upstream failures")
    result = run_result(outcome, packs, settings, started_at, t0, rounds)
    out = Output(json_out=flags["json_out"], no_color=flags["no_color"], quiet=flags["quiet"])
    files = {**settings.reports, **{k: v for k, v in (("json", flags["report_json"]), ("junit", flags["junit"]),
                                                      ("markdown", flags["markdown"]), ("html", flags["html"]),
                                                      ("otlp", flags["otlp"])) if v}}
    report_result(out, settings, result, files, extra={"check": _lists(outcome)})
    _show_lists(outcome, log)
    failed_lists = (flags["fail_on_unmatched"] and outcome.unmatched) or \
        (flags["fail_on_not_exercised"] and outcome.not_exercised)
    command_code = next((c for c in codes if c != EXIT_OK), EXIT_OK)
    sys.exit(EXIT_GATE if not result.ok or failed_lists else command_code)


def _serve(session) -> None:
    """Without a command: the variables to set, then serve until Ctrl-C (or SIGTERM)."""
    click.echo("Point your application at it:")
    for var, url in routes.base_urls(session.server.port).items():
        click.echo(f"  export {var}={url}")
    click.echo("Ctrl-C to stop; the report follows.", nl=True)
    sys.stdout.flush()
    try:
        proxying.serve_until_interrupted(session)
    except KeyboardInterrupt:
        return


def _lists(outcome: Outcome) -> dict:
    return {"unmatched": outcome.unmatched, "not_exercised": outcome.not_exercised}


def _show_lists(outcome: Outcome, log) -> None:
    """The exchanges no case corresponds to and the cases no exchange reached, on stderr."""
    if outcome.unmatched:
        log(f"replayci proxy (check): {len(outcome.unmatched)} exchange{'s' if len(outcome.unmatched) != 1 else ''} "
            "matched no recorded case (unmatched):")
        for u in outcome.unmatched[:_LISTED]:
            near = f"; nearest {u['nearest']}" if u.get("nearest") else ""
            log(f"  #{u['exchange']} {u['endpoint']}: {u['why']}{near}")
    if outcome.not_exercised:
        n = len(outcome.not_exercised)
        log(f"replayci proxy (check): {n} recorded case{'s' if n != 1 else ''} no exchange reached (not_exercised):")
        for c in outcome.not_exercised[:_LISTED]:
            log(f"  {c['contract']}/{c['case']}")
    shown = max(len(outcome.unmatched), len(outcome.not_exercised))
    if shown > _LISTED:
        log("  ... (every one in the JSON report's 'check' lists)")


def show_judged(command: str, *, broken: list, packs: list, held_back: int = 0, changed: list[str] = (),
                log=None) -> bool:
    """What judging found, the same for every writer (the proxy, import, observe), on stderr: with
    --update, per contract what changed; else the answers that broke their cases, in the run
    report's form, and how to accept them. Whether any broke."""
    log = log or (lambda line: click.echo(line, err=True))
    if changed:
        log(f"replayci {command} --update: the contracts changed:")
        for line in changed:
            log(line)
    if not broken:
        return False
    show_broken(broken, packs, command)
    log(refusal(command, len(broken), held_back))
    return True


def refusal(command: str, broken: int, held_back: int = 0) -> str:
    """The last line when answers broke their cases: how many, and how to accept them."""
    s = "s" if broken != 1 else ""
    line = (f"replayci {command}: {broken} answer{s} broke {'their' if s else 'its'} contract{s} and "
            f"{'were' if s else 'was'} not saved")
    if held_back > broken:
        line += (f" ({held_back} exchanges held back in all: an agent session is saved whole or not at all)")
    return line + "; `--update` accepts the new behaviour"


def show_broken(broken: list, packs: list, origin: str = "record") -> None:
    """The answers a recording judged broken, as a run report shows failures (on stderr)."""
    settings = config.resolve({})
    started_at, t0 = datetime.datetime.now(datetime.timezone.utc), time.perf_counter()
    result = run_result(Outcome(broken, [], []), packs, settings, started_at, t0)
    result.run.update(provider=origin)
    out = Output()
    out.stream = sys.stderr  # stdout is the command's
    report_result(out, settings, result, {})
