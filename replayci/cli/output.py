"""Where a command's text goes: its lines, colour, --json, -v/-q and the progress bar."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

import click

from ..report.json_report import dumps
from ..report.text import plain


def wants_color(no_color: bool, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour on a terminal; never with --no-color or NO_COLOR; always with FORCE_COLOR."""
    environ = os.environ if environ is None else environ
    if no_color or "NO_COLOR" in environ:
        return False
    return bool(environ.get("FORCE_COLOR")) or _is_terminal(stream)


def wants_progress(provider: str, json_out: bool, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """A progress bar only for live runs on a terminal: never in CI logs or with --json."""
    environ = os.environ if environ is None else environ
    return provider != "recorded" and not json_out and not environ.get("CI") and _is_terminal(stream)


def _is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


class Output:
    """A command's output: lines on stdout (on stderr with --json: stdout is the JSON), warnings on stderr."""

    def __init__(self, *, json_out: bool = False, no_color: bool = False, verbose: int = 0,
                 quiet: bool = False) -> None:
        self.json_out = json_out
        self.verbose = verbose
        self.verbosity = -1 if quiet else verbose  # -q: only failures and the summary
        self.stream = sys.stderr if json_out else sys.stdout
        self.color = wants_color(no_color, self.stream)

    def style(self, text: str, **options: Any) -> str:
        """click.style when colour is on, else the text as it is."""
        return click.style(text, **options) if self.color else plain(text)

    def text(self, text: str) -> None:
        """Rendered lines (each ending in a newline)."""
        click.echo(text, nl=False, file=self.stream, color=self.color)

    def blank(self) -> None:
        """An empty line between two blocks."""
        click.echo("", file=self.stream)

    def warnings(self, warnings: Iterable[str]) -> None:
        """Each warning on its own line on stderr."""
        for w in warnings:
            click.echo(f"replayci: warning: {w}", err=True)

    def json(self, document: Any) -> None:
        """The JSON document on stdout, with --json only."""
        if self.json_out:
            sys.stdout.write(dumps(document))

    def progress(self, provider: str) -> Progress | None:
        """A progress bar for a live run on a terminal, else None."""
        return Progress() if wants_progress(provider, self.json_out, sys.stderr) else None


class Progress:
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

