"""`replayci import`: recorded model traffic (cassettes, HAR files, trace exports, eval logs) into a pack."""
from __future__ import annotations

import os
import sys

import click

from .. import config
from ..capture import importing
from ..core.paths import display_path
from .main import EXIT_GATE, choice, guarded, no_color_accepted


@click.command("import")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option("--pack", required=True, metavar="DIR", type=click.Path(file_okay=False),
              help="The pack the exchanges are written into (created when missing).")
@click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
              help=" | ".join(importing.FORMATS) + " (auto: each file's format from its content).")
@click.option("--draft", is_flag=True, help="Write draft contracts (status: observed): they never fail a run.")
@click.option("--strict", is_flag=True, help="A file or entry that cannot be read stops the import (exit 2, "
              "nothing written) instead of being listed as not imported.")
@click.option("--update", is_flag=True, help="Accept new behaviour: import also the exchanges that break the cases "
              "they correspond to.")
@click.option("-v", "--verbose", count=True, help="List every entry passed over; tracebacks on internal errors.")
@no_color_accepted
@guarded
def import_command(sources, pack, fmt, draft, strict, update, verbose) -> None:
    """Turn recorded model traffic into a pack: vcrpy cassettes, HAR files, OpenTelemetry trace
    exports and inspect_ai eval logs (files or folders, read recursively). Agent loops become
    scenarios; what is not a model call is skipped and counted."""
    choice(fmt, importing.FORMATS, "--format")
    settings = config.resolve({})
    result = importing.import_sources(list(sources), pack, fmt, draft=draft, redact_fields=settings.redact_fields,
                                      log=lambda line: click.echo(line, err=True),
                                      max_fixture_bytes=settings.max_fixture_bytes, processes=settings.processes,
                                      strict=strict, update=update)
    for report in result.files:
        if report.problems:
            for problem in report.problems:
                click.echo(f"{problem.file}{_at(problem)}: not imported: {problem.message}")
            continue
        click.echo(summary_line(report))
        for passed in report.unreadable:
            click.echo(f"    entry {passed.entry}: not imported: {passed.reason}")
        for passed in report.unsupported + report.not_captured + report.not_translated + \
                (report.skipped if verbose else []):
            click.echo(f"    entry {passed.entry}: {passed.kind.replace('_', ' ')}: {passed.reason}")
    if result.unrecognized:
        click.echo(f"{len(result.unrecognized)} file{'s' if len(result.unrecognized) != 1 else ''} in the folders "
                   "given are no recording replayci reads (left alone)")
        for name in result.unrecognized if verbose else ():
            click.echo(f"    {name}")
    click.echo(totals_line(result, pack))
    files, entries = sum(bool(r.problems) for r in result.files), sum(len(r.unreadable) for r in result.files)
    if files or entries:
        click.echo(f"not imported: {_count(files, 'file')} and {_count(entries, 'entry', 'entries')} that cannot be "
                   "read (listed above); --strict refuses them")
    if result.broken or result.changed:
        from .proxy_check import show_judged  # only when judging found something

        if show_judged("import", broken=result.broken, packs=result.packs, changed=result.changed):
            sys.exit(EXIT_GATE)


def _at(problem) -> str:
    """':LINE:COL' of *problem*, where it has them."""
    if problem.line is None:
        return ""
    return f":{problem.line}" + (f":{problem.column}" if problem.column is not None else "")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def summary_line(report: importing.FileReport) -> str:
    parts = [f"{report.imported} imported"]
    if report.in_sessions:
        parts.append(f"{report.in_sessions} in new sessions")
    if report.present:
        parts.append(f"{report.present} already in the pack")
    if report.duplicates:
        parts.append(f"{report.duplicates} duplicates")
    parts += [f"{len(report.skipped)} skipped", f"{len(report.unsupported)} unsupported"]
    if report.unreadable:
        parts.append(f"{len(report.unreadable)} not imported")
    if report.not_captured:
        parts.append(f"{len(report.not_captured)} without content")
    if report.not_translated:
        parts.append(f"{len(report.not_translated)} checks not translated")
    parts.append(f"{report.sessions} session{'s' if report.sessions != 1 else ''}")
    line = f"{report.file} ({report.format}): {', '.join(parts)}"
    if report.tools_inferred:
        line += (f"; {report.tools_inferred} spans without tool definitions: their argument schemas are "
                 "not checked")
    return line


def totals_line(result: importing.ImportResult, pack: str) -> str:
    files = len(result.files)
    where = display_path(os.path.abspath(pack))
    if not result.fixtures:
        return f"replayci import: {files} file{'s' if files != 1 else ''} read; nothing new for {where}"
    return (f"replayci import: {files} file{'s' if files != 1 else ''} read; {result.fixtures} fixture"
            f"{'s' if result.fixtures != 1 else ''} and {len(result.contracts)} contract"
            f"{'s' if len(result.contracts) != 1 else ''} written to {where}")
