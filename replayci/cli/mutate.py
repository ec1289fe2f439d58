"""`replayci mutate`: how many wrong responses each contract catches."""
from __future__ import annotations

import sys

import click

from .. import config
from ..tools import mutate as mutation
from .main import EXIT_GATE, EXIT_OK, guarded
from .output import Output


@click.command()
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
    report = mutation.mutate(config.resolve({"packs": packs, "filters": filters}))
    out = Output(json_out=json_out, no_color=no_color, verbose=verbose)
    out.warnings(report.warnings)
    out.text(mutation.render(report, min_kill_rate=min_kill_rate, verbosity=out.verbosity, style=out.style))
    if write_negatives:
        out.text(mutation.render_written(mutation.write_negatives(report)))
    out.json(report.to_dict())
    below = report.below(min_kill_rate) if min_kill_rate is not None else []
    sys.exit(EXIT_GATE if below else EXIT_OK)
