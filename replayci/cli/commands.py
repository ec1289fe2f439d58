"""The command line: flags -> settings -> API -> reports -> exit code."""
from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..core.errors import ConfigError, did_you_mean
from ..core.provider_table import LIVE_PROVIDERS, PROVIDERS
from ..core.version import __version__

EXIT_OK, EXIT_GATE, EXIT_CONFIG, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _DefaultGroup(click.Group):
    """`replayci [flags]` is `replayci run [flags]`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands
                        and args[0] not in ("--help", "-h", "--version")):
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx, args):
        name = args[0] if args else None
        if name is not None and name not in self.commands and not name.startswith("-"):
            raise click.UsageError(f"no such command '{name}'"
                                   + did_you_mean(name, self.commands), ctx)
        return super().resolve_command(ctx, args)


def _fail_config(exc: ConfigError) -> None:
    problems = exc.problems
    head = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
    click.echo(f"replayci: {head}, nothing was run:", err=True)
    for p in problems:
        click.echo(f"  {p}", err=True)
    sys.exit(EXIT_CONFIG)


def _internal(exc: BaseException, verbose: int) -> None:
    click.echo(f"replayci: internal error: {type(exc).__name__}: {exc}", err=True)
    if verbose:
        import traceback

        traceback.print_exc()
    else:
        click.echo("  (run with -v for the traceback; please report it)", err=True)
    sys.exit(EXIT_INTERNAL)


def guarded(fn):
    """Map errors to exit codes: config 2, internal 3, Ctrl-C 130; never a raw traceback."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            _fail_config(exc)
        except KeyboardInterrupt:
            click.echo("replayci: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # a bug: short message, traceback only with -v
            _internal(exc, kwargs.get("verbose", 0))

    return wrapper


def _choice(value: str | None, choices: tuple[str, ...], flag: str) -> str | None:
    if value is not None and value not in choices:
        raise click.UsageError(f"{flag} {value!r} is not one of {', '.join(choices)}"
                               + did_you_mean(value, choices))
    return value


def _shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        k, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise click.UsageError(f"--shard {value!r}: expected K/N, e.g. 1/4") from None
    if not (n >= 1 and 1 <= k <= n):
        raise click.UsageError(f"--shard {value!r}: expected 1 <= K <= N")
    return (k, n)


def _color(no_color: bool, stream) -> bool:
    if no_color or "NO_COLOR" in os.environ:
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="replayci", message="%(prog)s %(version)s")
def cli() -> None:
    """Contract tests for how language models call tools.

    Run `replayci` (same as `replayci run`) in a project with packs/ or a .replayci.yml.
    """


def run_options(fn):
    for deco in reversed([
        click.option("--pack", "packs", multiple=True, metavar="DIR", help="A pack directory (repeatable)."),
        click.option("--provider", help=" | ".join(PROVIDERS)),
        click.option("--model", help="Model for live providers (default: the pack's default_model)."),
        click.option("--base-url", help="An OpenAI-compatible (or Anthropic) endpoint."),
        click.option("--jobs", type=click.IntRange(min=1), help="Live calls at once (default 4)."),
        click.option("--replay", help="auto | record | off | strict (see README)."),
        click.option("--record", is_flag=True, help="Call live and write recordings (= --replay record)."),
        click.option("--strict-fixtures", is_flag=True, help="Recordings older than the TTL are non-reproducible."),
        click.option("--repeat", type=click.IntRange(min=1), help="Run each live case N times (pass^N)."),
        click.option("--keep-raw", is_flag=True, help="Keep the raw provider payload in recordings."),
        click.option("--shard", metavar="K/N", help="Run only shard K of N (a stable split by case)."),
        click.option("--filter", "filters", multiple=True, metavar="GLOB",
                     help="Only cases whose contract/case matches (repeatable)."),
        click.option("--category", "categories", multiple=True,
                     help="Only cases of this category (repeatable)."),
        click.option("--json", "json_out", is_flag=True, help="Print the JSON report on stdout (lines go to stderr)."),
        click.option("--report-json", type=click.Path(dir_okay=False), help="Write the JSON report to a file."),
        click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report."),
        click.option("--markdown", type=click.Path(dir_okay=False), help="Write a Markdown summary."),
        click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR)."),
        click.option("-v", "--verbose", count=True, help="More detail; tracebacks on internal errors."),
        click.option("-q", "--quiet", is_flag=True, help="Only failures and the summary."),
    ]):
        fn = deco(fn)
    return fn


@cli.command()
@run_options
@click.option("--against", metavar="recorded|REPORT",
              help="Diff this run against the recorded run of the same cases (or a JSON report).")
@click.option("--fail-on-regression", is_flag=True, help="With --against: exit 1 on any regression.")
@guarded
def run(packs, provider, model, base_url, jobs, replay, record, strict_fixtures, repeat, keep_raw,
        shard, filters, categories, json_out, report_json, junit, markdown, no_color, verbose, quiet,
        against=None, fail_on_regression=False, **_: Any) -> None:
    """Run contract packs (the default command)."""
    from ..pack.vocabulary import CATEGORIES, REPLAY_MODES

    _choice(provider, PROVIDERS, "--provider")
    _choice(replay, REPLAY_MODES, "--replay")
    for c in categories:
        _choice(c, CATEGORIES, "--category")
    flags = {"packs": packs, "provider": provider, "model": model, "base_url": base_url,
             "jobs": jobs, "replay": replay, "record": record, "strict_fixtures": strict_fixtures,
             "repeat": repeat, "keep_raw": keep_raw, "shard": _shard(shard), "filters": filters,
             "categories": categories}
    from .. import config as config_mod
    from ..api import run_settings
    from ..engine.cases import Interrupted
    from ..engine.runner import collector_paused

    settings = config_mod.resolve(flags)
    if settings.provider == "recorded" and settings.replay not in (None, "strict"):
        raise click.UsageError(f"--provider recorded replays only (strict); --replay {settings.replay} "
                               f"needs a live provider (--provider {' or '.join(LIVE_PROVIDERS)})")
    # A recorded run builds many containers and few cycles: the collector would only rescan
    # the loaded packs, again and again, while results pile up.
    with collector_paused(settings.provider == "recorded"):
        baseline = _baseline(against, fail_on_regression, settings)
        progress = _Progress() if _want_progress(settings.provider, json_out) else None
        report = dict(json_out=json_out, no_color=no_color, verbosity=-1 if quiet else verbose,
                      files={"json": report_json or settings.reports.get("json"),
                             "junit": junit or settings.reports.get("junit"),
                             "markdown": markdown or settings.reports.get("markdown")})
        try:
            packs_, result = run_settings(settings, listener=progress)
        except Interrupted as stop:
            if progress:
                progress.close()
            _report(settings, None, stop.result, **report)
            click.echo("replayci: interrupted; the cases above finished, the rest were not run", err=True)
            sys.exit(EXIT_INTERRUPTED)
        if progress:
            progress.close()
        drift = _drift(baseline, against, result)
        _report(settings, packs_, result, extra={"diff": drift} if drift else None, **report)
        if drift:
            _print_diff(drift, json_out=json_out, no_color=no_color, verbose=verbose)
        regressed = fail_on_regression and drift and drift["summary"]["regressions"]
        sys.exit(EXIT_OK if result.ok and not regressed else EXIT_GATE)


class _Progress:
    """A one-line progress count on a terminal's stderr."""

    WIDTH = 30

    def __init__(self) -> None:
        self.n = 0
        self.total = 0

    def start(self, total: int) -> None:
        self.total = total

    def __call__(self, result) -> None:
        self.n += 1
        filled = self.WIDTH * self.n // max(self.total, 1)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        click.echo(f"\r  [{bar}] {self.n}/{self.total}  {result.pack}/{result.contract}/{result.case}\x1b[K",
                   err=True, nl=False)

    def close(self) -> None:
        if self.n:
            click.echo("\r\x1b[K", err=True, nl=False)


def _report(settings, packs, result, *, json_out: bool, files: dict, no_color: bool,
            verbosity: int, extra: dict | None = None) -> None:
    from ..report import json_report, terminal

    stream = sys.stderr if json_out else sys.stdout
    color = _color(no_color, stream)
    style = click.style if color else (lambda text, **_: text)
    for w in result.warnings:
        click.echo(f"replayci: warning: {w}", err=True)
    text = terminal.render(result, packs=len(result.run.get("packs") or ()), model=result.run.get("model"),
                           verbosity=verbosity, style=style)
    click.echo(text, nl=False, file=stream, color=color)
    wanted = (json_out or any(files.values()) or os.environ.get("GITHUB_STEP_SUMMARY")
              or os.environ.get("GITHUB_ACTIONS") == "true")
    if not wanted:
        return  # no report asked for: don't build one (it is the biggest cost of a large run's tail)
    report = json_report.build(result, settings, packs)
    report.update(extra or {})
    write_reports(report, files, annotations_to=sys.stderr if json_out else sys.stdout)
    if json_out:
        sys.stdout.write(json_report.dumps(report))


def write_reports(report: dict, files: dict, *, annotations_to) -> None:
    """The report files asked for, the GitHub step summary and annotations."""
    from ..report import json_report, junit, markdown

    if files.get("json"):
        json_report.write(report, files["json"])
    if files.get("junit"):
        json_report.write_text_atomic(files["junit"], junit.build(report))
    md = None
    if files.get("markdown"):
        md = markdown.build(report)
        json_report.write_text_atomic(files["markdown"], md)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as fh:
            fh.write(md or markdown.build(report))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in markdown.annotations(report):
            annotations_to.write(line + "\n")


@cli.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The merged JSON report.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary.")
@guarded
def merge(reports, output, junit, markdown) -> None:
    """Merge the JSON reports of shards into one; exit 1 when a gate fails."""
    from ..report.merge import merge_reports

    merged = merge_reports(list(reports))
    write_reports(merged, {"json": output, "junit": junit, "markdown": markdown}, annotations_to=sys.stdout)
    s = merged["summary"]
    click.echo(f"merged {len(reports)} reports: {s['pass']}/{s['total']} passed, {s['fail']} failed, "
               f"{s['non_reproducible']} non-reproducible -> {output}")
    sys.exit(EXIT_OK if all(g["passed"] for g in s["gates"].values()) else EXIT_GATE)


@cli.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@guarded
def init(directory: str) -> None:
    """Write .replayci.yml and a starter pack that passes at once; never overwrites."""
    from ..tools.init import init_project

    written = init_project(directory)
    for path in written:
        click.echo(f"  wrote {path}")
    click.echo("Now run `replayci` to check the starter pack offline.")


@cli.command()
@click.option("--pack", "packs", multiple=True, metavar="DIR", help="A pack directory (repeatable).")
@click.option("-v", "--verbose", count=True)
@guarded
def validate(packs, verbose) -> None:
    """Load every pack, contract and fixture; run nothing; list every problem."""
    from .. import config as config_mod
    from ..tools.validate import validate_packs

    settings = config_mod.resolve({"packs": packs})
    notes, counts = validate_packs(settings)
    for note in notes:
        click.echo(f"  note: {note}")
    click.echo(f"ok: {counts['packs']} packs, {counts['contracts']} contracts, "
               f"{counts['cases']} cases, {counts['fixtures']} fixtures checked")


@cli.command()
@click.argument("path")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--document", "which", default="response", show_default=True,
              type=click.Choice(["response", "request", "file"]),
              help="Which document to query: the normalized response, the request, or the raw file.")
@guarded
def query(path: str, file: str, which: str) -> None:
    """Evaluate an RFC 9535 JSONPath on a fixture's documents (for writing contracts)."""
    from ..checks.jsonpath import JSONPathError, compile_path
    from ..pack.fixtures import load_fixture
    from ..report.json_report import dumps

    try:
        compiled = compile_path(path)
    except JSONPathError as exc:
        raise ConfigError(f"invalid JSONPath {path!r}: {exc}") from None
    fixture = load_fixture(file, file)
    doc = {"response": fixture.response, "request": fixture.request, "file": fixture.raw}[which]
    if doc is None:
        raise ConfigError(f"{file}: has no {which}")
    sys.stdout.write(dumps(compiled.find(doc)))


@cli.command()
@click.argument("name", type=click.Choice(["config", "pack", "contract"]))
@guarded
def schema(name: str) -> None:
    """Print the JSON Schema of .replayci.yml, pack.yaml or a contract file."""
    from importlib import resources

    sys.stdout.write((resources.files("replayci.pack") / "schemas" / f"{name}.schema.json").read_text("utf-8"))


@cli.command()
@click.option("--pack", "packs", multiple=True, metavar="DIR", help="A pack directory (repeatable).")
@click.option("--filter", "filters", multiple=True, metavar="GLOB",
              help="Only cases whose contract/case matches (repeatable).")
@click.option("--min-kill-rate", type=click.FloatRange(0, 1), metavar="X",
              help="Exit 1 when a contract kills fewer than this fraction of its mutants (0..1).")
@click.option("--write-negatives", is_flag=True,
              help="Write killed mutants as negative golden cases (one per new classification).")
@click.option("--json", "json_out", is_flag=True, help="Print the JSON report on stdout (lines go to stderr).")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Also list killed mutants; tracebacks on internal errors.")
@guarded
def mutate(packs, filters, min_kill_rate, write_negatives, json_out, no_color, verbose) -> None:
    """Mutate passing responses and report what each contract fails to catch."""
    from .. import config as config_mod
    from ..report.json_report import dumps
    from ..tools import mutate as mutation

    settings = config_mod.resolve({"packs": packs, "filters": filters})
    report = mutation.mutate(settings)
    stream = sys.stderr if json_out else sys.stdout
    color = _color(no_color, stream)
    style = click.style if color else (lambda text, **_: text)
    for w in report.warnings:
        click.echo(f"replayci: warning: {w}", err=True)
    click.echo(mutation.render(report, min_kill_rate=min_kill_rate, verbosity=verbose, style=style),
               nl=False, file=stream, color=color)
    if write_negatives:
        click.echo(mutation.render_written(mutation.write_negatives(report)), nl=False, file=stream)
    if json_out:
        sys.stdout.write(dumps(report.to_dict()))
    below = report.below(min_kill_rate) if min_kill_rate is not None else []
    sys.exit(EXIT_GATE if below else EXIT_OK)


def _want_progress(provider: str, json_out: bool, stream=None, environ=None) -> bool:
    """A progress bar only for live runs on a terminal: never in CI logs or with --json."""
    stream = sys.stderr if stream is None else stream
    environ = os.environ if environ is None else environ
    return (provider != "recorded" and not json_out and not environ.get("CI")
            and bool(getattr(stream, "isatty", lambda: False)()))


def _baseline(against: str | None, fail_on_regression: bool, settings) -> dict | None:
    """The report `run --against` compares with: the recorded run (made before the live run,
    so --record cannot overwrite it first) or a JSON report file."""
    if against is None:
        if fail_on_regression:
            raise click.UsageError("--fail-on-regression needs --against recorded (or --against REPORT.json)")
        return None
    from ..tools.diff import ReportError, load_report, recorded_baseline

    if against == "recorded":
        if settings.provider == "recorded":
            raise click.UsageError("--against recorded compares a live run with the recordings: "
                                   f"pass --provider {' or '.join(LIVE_PROVIDERS)}")
        return recorded_baseline(settings)
    try:
        return load_report(against)
    except ReportError as exc:
        raise ConfigError(str(exc)) from None


def _drift(baseline: dict | None, against: str | None, result) -> dict | None:
    if baseline is None:
        return None
    from ..tools.diff import diff_reports

    return diff_reports(baseline, result.to_dict(), a_label=None if against == "recorded" else against,
                        b_label="this run")


def _print_diff(drift: dict, *, json_out: bool, no_color: bool, verbose: int) -> None:
    from ..tools.diff import render

    stream = sys.stderr if json_out else sys.stdout
    color = _color(no_color, stream)
    style = click.style if color else (lambda text, **_: text)
    click.echo("", file=stream)
    click.echo(render(drift, verbosity=verbose, style=style), nl=False, file=stream, color=color)


@cli.command("diff")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--json", "json_out", is_flag=True, help="Print the diff as JSON on stdout (lines go to stderr).")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a case that passed in A fails in B.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Also list unchanged cases.")
@guarded
def diff_command(a, b, json_out, fail_on_regression, no_color, verbose) -> None:
    """Compare two JSON reports: regressions, fixes, tool-call edits, text, tokens, latency."""
    from ..report.json_report import dumps
    from ..tools.diff import ReportError, diff_reports, load_report

    try:
        report_a, report_b = load_report(a), load_report(b)
    except ReportError as exc:
        raise ConfigError(str(exc)) from None
    drift = diff_reports(report_a, report_b, a_label=a, b_label=b)
    _print_diff(drift, json_out=json_out, no_color=no_color, verbose=verbose)
    if json_out:
        sys.stdout.write(dumps(drift))
    sys.exit(EXIT_GATE if fail_on_regression and drift["summary"]["regressions"] else EXIT_OK)


@cli.command()
@click.option("--provider", help=" | ".join(LIVE_PROVIDERS))
@click.option("--model", help="The model to observe.")
@click.option("--base-url", help="An OpenAI-compatible (or Anthropic) endpoint.")
@click.option("--jobs", type=click.IntRange(min=1), help="Live calls at once (default 4).")
@click.option("--input", "input_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help='A directory of specs: {"messages": [...], "tools": [...]} (*.json, *.yaml).')
@click.option("--output", "output_dir", required=True, type=click.Path(file_okay=False),
              help="The pack directory to write.")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=30000, show_default=True,
              help="Per call.")
@click.option("--keep-raw", is_flag=True, help="Keep the raw provider payload in recordings.")
@click.option("--force", is_flag=True, help="Overwrite the files of an existing pack at --output.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Tracebacks on internal errors.")
@guarded
def observe(provider, model, base_url, jobs, input_dir, output_dir, timeout_ms, keep_raw, force, no_color,
            verbose) -> None:
    """Call a provider on each spec, infer invariants, write a draft pack (status: observed)."""
    from .. import config as config_mod
    from ..tools import observe as observing

    _choice(provider, PROVIDERS, "--provider")
    settings = config_mod.resolve({"provider": provider, "model": model, "base_url": base_url,
                                   "jobs": jobs, "keep_raw": keep_raw})
    result = observing.observe(settings, input_dir=input_dir, output_dir=output_dir, force=force,
                               timeout_ms=timeout_ms)
    color = _color(no_color, sys.stdout)
    style = click.style if color else (lambda text, **_: text)
    click.echo(observing.render(result, style=style), nl=False, color=color)
    sys.exit(EXIT_OK if result.ok else EXIT_GATE)


@cli.command("replay")
@click.argument("case_ref", metavar="PACK/CONTRACT/CASE")
@click.option("--model", help="Re-run with this model (default: the recorded one).")
@click.option("--system-prompt", help="Replace the system prompt (or add one).")
@click.option("--temperature", type=float, help="Set the request's temperature.")
@click.option("--provider", help=f"{' | '.join(LIVE_PROVIDERS)} (default: the recorded one).")
@click.option("--base-url", help="An OpenAI-compatible (or Anthropic) endpoint.")
@click.option("--json", "json_out", is_flag=True, help="Print the replay diff as JSON on stdout (lines go to stderr).")
@click.option("--fail-on-diff", is_flag=True, help="Exit 1 when the replay is not identical to the recording.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Tracebacks on internal errors.")
@guarded
def replay_command(case_ref, model, system_prompt, temperature, provider, base_url, json_out, fail_on_diff,
                   no_color, verbose) -> None:
    """Re-run a recorded scenario live with overrides, tools frozen; diff it against the recording."""
    from .. import config as config_mod
    from ..report.json_report import dumps
    from ..tools import replay as replaying

    _choice(provider, PROVIDERS, "--provider")
    settings = config_mod.resolve({"provider": provider, "model": model, "base_url": base_url})
    doc = replaying.replay(settings, case_ref, system_prompt=system_prompt, temperature=temperature)
    stream = sys.stderr if json_out else sys.stdout
    color = _color(no_color, stream)
    style = click.style if color else (lambda text, **_: text)
    for w in doc["warnings"]:
        click.echo(f"replayci: warning: {w}", err=True)
    click.echo(replaying.render(doc, style=style), nl=False, file=stream, color=color)
    if json_out:
        sys.stdout.write(dumps(doc))
    sys.exit(EXIT_GATE if fail_on_diff and not doc["identical"] else EXIT_OK)


def main(argv: list[str] | None = None) -> None:
    """The console script."""
    try:
        cli.main(args=argv, prog_name="replayci", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("replayci: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit as done:
        if not isinstance(done.code, (int, type(None))):
            raise
        _leave(done.code or 0)


def _leave(code: int) -> None:
    """Exit without tearing down the interpreter: freeing every loaded object one by one
    takes a large run a noticeable time and changes nothing. Output is flushed first;
    every file the command wrote is closed already."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: Python's own exit says 120
            code = code or 120
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
