"""The `pin` command: write every golden fixture's boundary from its request."""
from __future__ import annotations

import click

from .. import config
from ..tools.pin import fixture_count, pin_packs
from .main import guarded, no_color_accepted


@click.command()
@click.option("--pack", "packs", multiple=True, metavar="DIR", help="A pack directory (repeatable).")
@no_color_accepted
@guarded
def pin(packs) -> None:
    """Write (or refresh) each fixture's boundary from its request; the rest of the file is kept."""
    done = pin_packs(config.resolve({"packs": packs}))
    for p in done:
        if p.action != "up to date":
            click.echo(f"  {p.action} {p.display}")
    counts = fixture_count(done)
    click.echo(f"ok: {counts['pinned']} pinned, {counts['refreshed']} refreshed, "
               f"{counts['up to date']} up to date")
