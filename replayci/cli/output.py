"""Where a command's text goes: its lines, colour, --json, -v/-q and the progress bar."""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

import click

from ..engine.events import BatchProgress, BatchWaiting, CaseJudged, Event, Handler, RunFinished, RunStarted
from ..report.json_report import dumps
from ..report.text import plain, printable


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
        click.echo(printable(text), nl=False, file=self.stream, color=self.color)

    def blank(self) -> None:
        """An empty line between two blocks."""
        click.echo("", file=self.stream)

    def warnings(self, warnings: Iterable[str]) -> None:
        """Each warning on its own line on stderr."""
        for w in warnings:
            click.echo(printable(f"replayci: warning: {w}"), err=True)

    def json(self, document: Any) -> None:
        """The JSON document on stdout, with --json only."""
        if self.json_out:
            sys.stdout.write(dumps(document))

    def progress(self, provider: str) -> Progress | None:
        """A progress bar for a live run on a terminal, else None."""
        return Progress() if wants_progress(provider, self.json_out, sys.stderr) else None

    def batch_progress(self, bar: Progress | None, *, every: float) -> BatchWatch:
        """A batch run's progress: redrawn on a terminal (where *bar* is), else a line every *every* seconds."""
        return BatchWatch(bar, every=every)


class Progress(Handler):
    """A one-line progress count on a terminal's stderr, erased when the run finishes."""

    WIDTH = 30

    def __init__(self) -> None:
        self.n = 0
        self.total = 0

    def handle(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.total = event.total
        elif isinstance(event, CaseJudged):
            self.case(event.result)
        elif isinstance(event, RunFinished):
            self.close()

    def case(self, result) -> None:
        self.n += 1
        filled = self.WIDTH * self.n // max(self.total, 1)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        click.echo(f"\r  [{bar}] {self.n}/{self.total}  {result.pack}/{result.contract}/{result.case}\x1b[K",
                   err=True, nl=False)

    def close(self) -> None:
        if self.n:
            click.echo("\r\x1b[K", err=True, nl=False)
        self.n = 0  # erased once


def duration_text(seconds: float) -> str:
    """12s, 4m 05s, 2h 03m."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


class BatchWatch(Handler):
    """The progress of a batch run: while it waits, where its batches stand (done / failed /
    total, elapsed) redrawn on a terminal, else a line on stderr at most every *every* seconds;
    then the cases as *bar* shows them; erased when the run finishes."""

    def __init__(self, bar: Progress | None, *, every: float, clock=time.monotonic) -> None:
        self.bar, self.every, self.clock = bar, every, clock
        self.last: float | None = None
        self.drawn = False

    def handle(self, event: Event) -> None:
        if isinstance(event, BatchWaiting):
            self.waiting(event.progress)
        elif isinstance(event, RunFinished):
            self.close()
        elif self.bar is not None:
            self.bar.handle(event)

    def waiting(self, p: BatchProgress) -> None:
        text = (f"batch: {p.done}/{p.total} requests done, {p.failed} failed, {duration_text(p.elapsed_s)} "
                f"elapsed ({p.status})")
        if self.bar is not None:
            click.echo(f"\r  {text}\x1b[K", err=True, nl=False)
            self.drawn = True
            return
        now = self.clock()
        if self.last is None or now - self.last >= self.every:
            self.last = now
            click.echo(f"replayci: {text}", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.drawn:
            click.echo("\r\x1b[K", err=True, nl=False)
        self.drawn = False
