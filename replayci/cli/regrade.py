"""`replayci regrade REPORT.json`: the report's responses judged by the current contracts."""
from __future__ import annotations

import sys

import click

from .. import config
from ..api import load_settings_packs
from ..report import github, terminal
from ..report.writers import write_reports
from ..tools.regrade import default_output, read, regrade, same_file
from .main import EXIT_GATE, EXIT_OK, guarded
from .output import Output


@click.command("regrade")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@click.option("--json", "json_out", is_flag=True, help="Print the new JSON report on stdout (lines go to stderr).")
@click.option("--report-json", type=click.Path(dir_okay=False), help="Write the new JSON report to a file.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Write a Markdown summary.")
@click.option("--html", type=click.Path(dir_okay=False), help="Write a self-contained HTML report.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="More detail; tracebacks on internal errors.")
@click.option("-q", "--quiet", is_flag=True, help="Only failures and the summary.")
@guarded
def regrade_command(report_path, json_out, report_json, junit, markdown, html, no_color, verbose, quiet) -> None:
    """Judge the responses a JSON report kept against the current contracts, with no model
    call; writes REPORT.regraded.json unless a report flag says where. Exit 1 when a gate fails."""
    files = {"json": report_json, "junit": junit, "markdown": markdown, "html": html}
    if not json_out and not any(files.values()):
        files["json"] = default_output(report_path)
    for flag, path in (("--report-json", files["json"]), ("--junit", junit), ("--markdown", markdown),
                       ("--html", html)):
        if path and same_file(path, report_path):
            raise click.UsageError(f"{flag} {path} is the report being re-graded; regrade never overwrites it")
    before = read(report_path)
    settings = config.resolve({})
    result = regrade(before, load_settings_packs(settings), settings, source=report_path)
    out = Output(json_out=json_out, no_color=no_color, verbose=verbose, quiet=quiet)
    out.warnings(result.warnings)
    out.text(terminal.render(result, packs=len(result.run.get("packs") or ()), model=result.run.get("model"),
                             verbosity=out.verbosity, style=out.style))
    report = {**result.to_dict(), "warnings": list(result.warnings)}
    write_reports(report, files)
    github.publish(report, annotations_to=out.stream)
    out.json(report)
    if files["json"] and not json_out:
        click.echo(f"re-graded {result.run['regraded']['cases']} cases -> {files['json']}", err=True)
    sys.exit(EXIT_OK if result.ok else EXIT_GATE)
