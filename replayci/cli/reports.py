"""The commands over JSON report files: `merge` (shards into one) and `diff` (two runs)."""
from __future__ import annotations

import sys

import click

from ..core.errors import ConfigError
from ..report import github
from ..report.merge import merge_reports
from ..report.writers import write_reports
from ..tools.diff import ReportError, diff_reports, load_report, render
from .main import EXIT_GATE, EXIT_OK, guarded, no_color_accepted
from .output import Output


@click.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The merged JSON report.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary.")
@click.option("--allow-partial", is_flag=True, help="Merge even when shards are missing (no gate is then met).")
@no_color_accepted
@guarded
def merge(reports, output, junit, markdown, allow_partial) -> None:
    """Merge the JSON reports of shards into one; exit 1 when a gate fails."""
    merged = merge_reports(list(reports), allow_partial=allow_partial)
    write_reports(merged, {"json": output, "junit": junit, "markdown": markdown})
    github.publish(merged, annotations_to=sys.stdout)
    s = merged["summary"]
    click.echo(f"merged {len(reports)} reports: {s['pass']}/{s['total']} passed, {s['fail']} failed, "
               f"{s['non_reproducible']} non-reproducible -> {output}")
    sys.exit(EXIT_OK if all(g["passed"] for g in s["gates"].values()) else EXIT_GATE)


@click.command("report")
@click.argument("reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--html", "html_out", required=True, type=click.Path(dir_okay=False),
              help="The HTML page to write (one self-contained file).")
@no_color_accepted
@guarded
def report_command(reports, html_out) -> None:
    """Build the HTML report from JSON reports; several runs add a history. Exit 1 when a gate
    of the latest run fails."""
    from ..report.html import order_runs, write_html  # jinja2 only for this command

    runs = order_runs([read_report(path) for path in reports])
    write_html(runs, html_out)
    gates = runs[-1].get("summary", {}).get("gates", {})
    click.echo(f"wrote {html_out} from {len(runs)} report{'s' if len(runs) != 1 else ''}")
    sys.exit(EXIT_OK if all(g.get("passed") for g in gates.values()) else EXIT_GATE)


@click.command("diff")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--json", "json_out", is_flag=True, help="Print the diff as JSON on stdout (lines go to stderr).")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a case that passed in A fails in B.")
@click.option("--no-color", is_flag=True, help="No colour (also NO_COLOR).")
@click.option("-v", "--verbose", count=True, help="Also list unchanged cases.")
@guarded
def diff_command(a, b, json_out, fail_on_regression, no_color, verbose) -> None:
    """Compare two JSON reports: regressions, fixes, tool-call edits, text, tokens, latency."""
    out = Output(json_out=json_out, no_color=no_color, verbose=verbose)
    drift = diff_reports(read_report(a), read_report(b), a_label=a, b_label=b)
    show_diff(out, drift)
    out.json(drift)
    sys.exit(EXIT_GATE if fail_on_regression and drift["summary"]["regressions"] else EXIT_OK)


def read_report(path: str) -> dict:
    """A JSON report file; not one is a configuration error (exit 2)."""
    try:
        return load_report(path)
    except ReportError as exc:
        raise ConfigError(str(exc)) from None


def show_diff(out: Output, drift: dict) -> None:
    """The diff of two runs, after a blank line."""
    out.blank()
    out.text(render(drift, verbosity=out.verbose, style=out.style))
