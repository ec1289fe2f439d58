"""`replayci run`: flags -> settings -> a run -> the terminal report, report files -> exit code."""
from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .. import config
from ..api import run_settings
from ..core.errors import ConfigError
from ..core.provider_table import LIVE_PROVIDERS
from ..engine import rules
from ..engine.cases import Interrupted
from ..engine.events import Event, Handler, Handlers, LightResults, RunFinished
from ..engine.results import RunResult
from ..engine.runner import collector_paused
from ..pack.vocabulary import PROVIDERS
from ..report import terminal
from ..report.handlers import GitHubOutput, RunReport, reporters
from .main import EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, guarded, output_closed
from .output import Output

if TYPE_CHECKING:
    from ..report.spool import CaseSpool


def run_options(fn):
    """The options of `run` (and so of `replayci` alone)."""
    for deco in reversed([
        click.option("--pack", "packs", multiple=True, metavar="DIR", help="A pack directory (repeatable)."),
        click.option("--provider", help=" | ".join(PROVIDERS)),
        click.option("--model", help="Model for live providers (default: the pack's default_model)."),
        click.option("--target", "targets", multiple=True, metavar="PROVIDER:MODEL",
                     help="Compare: run every case against each target (repeatable; see docs/comparing-models.md)."),
        click.option("--baseline", metavar="REPORT.json", type=click.Path(dir_okay=False),
                     help="Label every case against a previous JSON report (new_failure, fixed, ...)."),
        click.option("--gate-baseline", is_flag=True,
                     help="With --baseline: fail only for new, changed and regressed failures."),
        click.option("--base-url", help="The provider's endpoint (a compatible server, a proxy; Bedrock: its URL)."),
        click.option("--jobs", type=click.IntRange(min=1), help="Live calls at once (default 4)."),
        click.option("--replay", help="auto | record | off | strict (see README)."),
        click.option("--record", is_flag=True, help="Call live and write recordings (= --replay record)."),
        click.option("--tool-replay", "tool_replay_mode",
                     help="Scenario tools: auto | record | off | strict (see README)."),
        click.option("--strict-fixtures", is_flag=True, help="Recordings older than the TTL are non-reproducible."),
        click.option("--repeat", metavar="N|auto[:MAX]",
                     help="Run each live case N times (pass^N), or until its label is decided (auto; at most "
                          "MAX runs, default 20)."),
        click.option("--keep-raw", is_flag=True, help="Keep the raw provider payload in recordings."),
        click.option("--stream", is_flag=True, help="Stream live calls (reassembled), as production does."),
        click.option("--batch", is_flag=True,
                     help="Send the live calls through the provider's batch API (half the price, up to 24 h)."),
        click.option("--batch-timeout", metavar="DURATION",
                     help="How long --batch waits for its batches (90s, 30m, 12h; default 24h)."),
        click.option("--shard", metavar="K/N", help="Run only shard K of N (a stable split by case)."),
        click.option("--filter", "filters", multiple=True, metavar="GLOB",
                     help="Only cases whose contract/case matches (repeatable)."),
        click.option("--category", "categories", multiple=True,
                     help="Only cases of this category (repeatable)."),
        click.option("--tag", "tags", multiple=True, metavar="TAG",
                     help="Only cases with this tag (repeatable: any of them)."),
        click.option("--json", "json_out", is_flag=True, help="Print the JSON report on stdout (lines go to stderr)."),
        click.option("--report-json", type=click.Path(dir_okay=False), help="Write the JSON report to a file."),
        click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report."),
        click.option("--markdown", type=click.Path(dir_okay=False), help="Write a Markdown summary."),
        click.option("--html", type=click.Path(dir_okay=False), help="Write a self-contained HTML report."),
        click.option("--otlp", metavar="ENDPOINT|FILE",
                     help="Export each case's evaluation over OpenTelemetry: an OTLP/HTTP collector URL or a "
                          "JSON-lines file (see docs/opentelemetry.md)."),
        click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR)."),
        click.option("-v", "--verbose", count=True, help="More detail; tracebacks on internal errors."),
        click.option("-q", "--quiet", is_flag=True, help="Only failures and the summary."),
    ]):
        fn = deco(fn)
    return fn


@click.command()
@run_options
@click.option("--against", metavar="recorded|REPORT",
              help="Diff this run against the recorded run of the same cases (or a JSON report).")
@click.option("--fail-on-regression", is_flag=True, help="With --against: exit 1 on any regression.")
@guarded
def run(packs, provider, model, targets, baseline, gate_baseline, base_url, jobs, replay, record, strict_fixtures,
        repeat, keep_raw, stream, shard, filters, categories, tags, json_out, report_json, junit, markdown, html,
        otlp, no_color, verbose, quiet, against=None, fail_on_regression=False, tool_replay_mode=None, batch=False,
        batch_timeout=None, **_: Any) -> None:
    """Run contract packs (the default command)."""
    given = {"provider": provider, "replay": replay, "tool_replay_mode": tool_replay_mode, "categories": categories}
    usage(rules.check_options, given)
    settings = config.resolve({
        "packs": packs, "provider": provider, "model": model, "base_url": base_url, "jobs": jobs,
        "replay": replay, "record": record, "strict_fixtures": strict_fixtures, "repeat": repeat,
        "keep_raw": keep_raw, "stream": stream or None, "shard": _shard(shard), "filters": filters,
        "categories": categories, "tags": tags, "tool_replay_mode": tool_replay_mode, "batch": batch,
        "batch_timeout_s": _batch_timeout(batch_timeout, batch), "targets": targets,
        "gate_baseline": gate_baseline, **_baseline_report(baseline, gate_baseline)})
    usage(rules.check_settings, settings, provider=provider, model=model)
    out = Output(json_out=json_out, no_color=no_color, verbose=verbose, quiet=quiet)
    flagged = {"json": report_json, "junit": junit, "markdown": markdown, "html": html, "otlp": otlp}
    files = {**settings.reports, **{name: path for name, path in flagged.items() if path}}
    # A recorded run builds many containers and few cycles: the collector would only rescan
    # the loaded packs, again and again, while results pile up.
    with collector_paused(settings.provider == "recorded"):
        baseline = _baseline(against, fail_on_regression, settings)
        progress = out.progress(settings.provider)
        if settings.batch:
            progress = out.batch_progress(progress, every=settings.batch_progress_s)
        with _keeper(out, files, against) as keep:
            verdict = Verdict(baseline=baseline, against=against, fail_on_regression=fail_on_regression)
            spool = None if keep is None or isinstance(keep, LightResults) else keep  # else a CaseSpool
            verdict.then(_reporting(out, files, spool=spool, drift=verdict,
                                    extra=lambda: {"diff": verdict.drift} if verdict.drift else None))
            try:
                run_settings(settings, handlers=[h for h in (keep, progress, verdict) if h is not None])
            except Interrupted:  # (the finished cases were reported as the run ended)
                click.echo("replayci: interrupted; the cases above finished, the rest were not run", err=True)
                sys.exit(EXIT_INTERRUPTED)
        sys.exit(verdict.code)


class Verdict(Handler):
    """The end of a run on the command line: the drift from --against's report and the exit
    code, then the handlers it was given (the terminal report and the reports: they hear the
    run's end only); when the reader of the output goes away meanwhile, the verdict stands (a
    report file that cannot be written: exit 2). A run cut short by Ctrl-C is reported as it
    is (exit 130)."""

    def __init__(self, *, baseline: dict | None, against: str | None, fail_on_regression: bool) -> None:
        self.baseline, self.against, self.fail_on_regression = baseline, against, fail_on_regression
        self.handlers = Handlers(())
        self.drift: dict | None = None
        self.code = EXIT_OK

    def then(self, handlers: list[Handler]) -> None:
        self.handlers = Handlers(handlers)

    def handle(self, event: Event) -> None:
        if type(event) is not RunFinished:
            return  # (its handlers follow the run's end only: nothing on the per-case path)
        if event.result.run.get("interrupted"):
            self.handlers.handle(event)
            return
        result = event.result
        self.drift = None if self.baseline is None else _drift(self.baseline, result, self.against)
        regressed = self.fail_on_regression and self.drift and self.drift["summary"]["regressions"]
        self.code = EXIT_OK if result.ok and not regressed else EXIT_GATE
        try:
            self.handlers.handle(event)
        except BrokenPipeError:  # the verdict stands whoever stopped reading it
            output_closed(self.code)
        except OSError as exc:
            if exc.filename is not None:
                raise  # a report file: the guard names it (exit 2)
            output_closed(self.code, exc.strerror or str(exc))  # stdout full: the verdict stands too


class Terminal(Handler):
    """The run's warnings and its terminal report, when it finishes."""

    def __init__(self, out: Output) -> None:
        self.out = out

    def handle(self, event: Event) -> None:
        if type(event) is not RunFinished:
            return
        result, out = event.result, self.out
        out.warnings(result.warnings)
        for chunk in terminal.render_chunks(result, packs=len(result.run.get("packs") or ()),
                                            model=result.run.get("model"), verbosity=out.verbosity, style=out.style):
            out.text(chunk)


class JsonOut(Handler):
    """--json: the JSON report on stdout, when the run finishes."""

    def __init__(self, out: Output, shared: RunReport) -> None:
        self.out, self.shared = out, shared

    def handle(self, event: Event) -> None:
        if type(event) is RunFinished and self.out.json_out:
            self.out.json(self.shared.whole())


class ShowDiff(Handler):
    """--against: the drift from the other run, last."""

    def __init__(self, out: Output, verdict: Verdict) -> None:
        self.out, self.verdict = out, verdict

    def handle(self, event: Event) -> None:
        if type(event) is RunFinished and self.verdict.drift:
            from .reports import show_diff  # --against only, as _drift

            show_diff(self.out, self.verdict.drift)


def _reporting(out: Output, files: dict, *, spool: CaseSpool | None = None,
               extra: Callable[[], dict | None] | None = None, drift: Verdict | None = None) -> list[Handler]:
    """The command line's handlers of a run's end, in order: the terminal report, the report
    files, GitHub's summary and annotations, --json, and --against's diff (from *drift*)."""
    written = reporters(files, spool=spool, extra=extra)
    shared = written[0]
    after = [] if drift is None else [ShowDiff(out, drift)]
    return [Terminal(out), *written, GitHubOutput(shared, annotations_to=out.stream), JsonOut(out, shared), *after]


def report_result(out: Output, settings, result: RunResult, files: dict, extra: dict | None = None) -> None:
    """Report results judged outside a run (the proxy's check mode, the answers a recording
    refused) through the same handlers as a run's end."""
    Handlers(_reporting(out, files, extra=lambda: extra)).handle(RunFinished(result, settings))


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _batch_timeout(value: str | None, batch: bool) -> float | None:
    """--batch-timeout in seconds (a number with s, m, h or d; a bare number is seconds)."""
    if value is None:
        return None
    text = value.strip().lower()
    unit = _UNITS.get(text[-1:], None)
    try:
        seconds = float(text[:-1] if unit else text) * (unit or 1)
    except ValueError:
        seconds = math.nan
    usage(rules.check_batch_timeout, seconds, batch=batch, given=value)
    return seconds


def usage(check, *args, **kwargs) -> None:
    """Run one of the run's rules; a broken one is a usage error (exit 2) with its message."""
    try:
        check(*args, **kwargs)
    except ConfigError as exc:
        raise click.UsageError(exc.problems[0].message) from None


def _baseline_report(path: str | None, gate: bool) -> dict:
    """--baseline: the report read now (not a report: exit 2, before anything runs)."""
    if path is None:
        if gate:
            raise click.UsageError("--gate-baseline needs --baseline REPORT.json (e.g. main's report)")
        return {}
    from .reports import read_report  # --baseline only

    return {"baseline": read_report(path), "baseline_file": path}


def _shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        k, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise click.UsageError(f"--shard {value!r}: expected K/N, e.g. 1/4") from None
    usage(rules.check_options, {"shard": (k, n)})
    return (k, n)


def _keeper(out: Output, files: dict, against: str | None) -> contextlib.AbstractContextManager:
    """What the run keeps of each case: whole results when a report reads them (HTML, --otlp, --json,
    --against), else light ones, whose report entries go to a spool as cases finish when a
    JSON report is written (a per-process handler either way)."""
    if files.get("html") or files.get("otlp") or out.json_out or against:
        return contextlib.nullcontext()
    if not files.get("json"):
        return contextlib.nullcontext(LightResults())
    from ..report.spool import CaseSpool  # why: runs with a JSON report only (it loads tempfile)

    try:
        return CaseSpool()
    except OSError:  # no writable temporary folder: hold the cases instead
        return contextlib.nullcontext()


def _drift(baseline: dict, result, against: str) -> dict:
    from ..tools.diff import diff_reports  # --against only: a plain run never loads the diff

    return diff_reports(baseline, result.to_dict(), a_label=None if against == "recorded" else against,
                        b_label="this run")


def _baseline(against: str | None, fail_on_regression: bool, settings) -> dict | None:
    """The report `run --against` compares with: the recorded run (made before the live run,
    so --record cannot overwrite it first) or a JSON report file."""
    if against is None:
        if fail_on_regression:
            raise click.UsageError("--fail-on-regression needs --against recorded (or --against REPORT.json)")
        return None
    if against == "recorded":
        if settings.provider == "recorded":
            raise click.UsageError("--against recorded compares a live run with the recordings: "
                                   f"pass --provider {' or '.join(LIVE_PROVIDERS)}")
        from ..tools.diff import recorded_baseline  # --against only, as _drift

        return recorded_baseline(settings)
    from .reports import read_report  # --against only, as _drift

    return read_report(against)
