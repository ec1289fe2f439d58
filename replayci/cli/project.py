"""The commands for writing a project: `init`, `validate`, `query` and `schema`."""
from __future__ import annotations

import sys
from importlib import resources

import click

from .. import config
from ..checks.jsonpath import DescentLimit, JSONPathError, compile_path
from ..core.errors import ConfigError, Problem
from ..pack.fixtures import load_fixture
from ..pack.schema_gen import SCHEMAS
from ..report.json_report import dumps
from ..tools.init import init_project
from ..tools.validate import validate_packs
from .main import EXIT_CONFIG, EXIT_GATE, EXIT_OK, guarded, no_color_accepted


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@no_color_accepted
@guarded
def init(directory: str) -> None:
    """Write .replayci.yml and a starter pack that passes at once; never overwrites."""
    for path in init_project(directory):
        click.echo(f"  wrote {path}")
    click.echo("Now run `replayci` to check the starter pack offline.")


@click.command()
@click.option("--pack", "packs", multiple=True, metavar="DIR", help="A pack directory (repeatable).")
@click.option("--check-tools", is_flag=True,
              help="Also compare every fixture's tools with its MCP servers' current tools (exit 1 on drift).")
@click.option("--json", "as_json", is_flag=True, help="Print the notes, counts and problems as JSON.")
@click.option("-v", "--verbose", count=True)
@no_color_accepted
@guarded
def validate(packs, check_tools, as_json, verbose) -> None:
    """Load every pack, contract and fixture; run nothing; list every problem."""
    try:
        notes, counts, drift = validate_packs(config.resolve({"packs": packs}), check_tools=check_tools)
    except ConfigError as exc:
        if not as_json:
            raise
        sys.stdout.write(dumps({"ok": False, "problems": [_problem(p) for p in exc.problems]}))
        sys.exit(EXIT_CONFIG)
    if as_json:
        sys.stdout.write(dumps({"ok": not drift, "counts": counts, "notes": notes,
                                "problems": [_problem(p) for p in drift]}))
        sys.exit(EXIT_GATE if drift else EXIT_OK)
    for note in notes:
        click.echo(f"  note: {note}")
    for problem in drift:
        click.echo(f"  {problem}")
    verdict = f"{len(drift)} tool drift{'s' if len(drift) != 1 else ''}" if drift else "ok"
    click.echo(f"{verdict}: {counts['packs']} packs, {counts['contracts']} contracts, "
               f"{counts['cases']} cases, {counts['fixtures']} fixtures checked"
               + (", tools compared with their MCP servers" if check_tools else ""))
    sys.exit(EXIT_GATE if drift else EXIT_OK)


def _problem(problem: Problem) -> dict:
    """A problem as JSON: where it is and what is wrong."""
    return {"file": problem.file, "line": problem.line, "column": problem.column,
            "key": problem.key or None, "message": problem.message}


@click.command()
@click.argument("path")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--document", "which", default="response", show_default=True,
              type=click.Choice(["response", "request", "file"]),
              help="Which document to query: the normalized response, the request, or the raw file.")
@no_color_accepted
@guarded
def query(path: str, file: str, which: str) -> None:
    """Evaluate an RFC 9535 JSONPath on a fixture's documents (for writing contracts)."""
    try:
        compiled = compile_path(path)
    except JSONPathError as exc:
        raise ConfigError(f"invalid JSONPath {path!r}: {exc}") from None
    fixture = load_fixture(file, file)
    doc = {"response": fixture.response, "request": fixture.request, "file": fixture.raw}[which]
    if doc is None:
        raise ConfigError(f"{file}: has no {which}")
    try:
        found = compiled.find(doc)
    except DescentLimit as exc:
        raise ConfigError(f"{file}: {path}: {exc}") from None
    sys.stdout.write(dumps(found))


@click.command()
@click.argument("name", required=False, type=click.Choice(list(SCHEMAS)))
@no_color_accepted
@guarded
def schema(name: str | None) -> None:
    """Print the JSON Schema of one of replayci's files; with no NAME, list the names."""
    if name is None:
        width = max(map(len, SCHEMAS))
        for known, (_, what) in SCHEMAS.items():
            click.echo(f"{known:<{width}}  {what}")
        return
    sys.stdout.write((resources.files("replayci.pack") / "schemas" / f"{name}.schema.json").read_text("utf-8"))
