"""What a run tells as it goes: typed events the runner emits, and the handlers that receive
them (the spool, the progress bar, a batch run's wait, the terminal report, every report file,
the library's listener). A handler overrides `handle`; the runner calls every handler with
every event, in order."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..config import Settings
from .results import CaseResult, RunResult


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The run has selected its cases: *total* results will follow (a case per target)."""

    total: int


@dataclass(frozen=True, slots=True)
class CaseJudged:
    """A case's result, allowlist and labels applied, as the run keeps it."""

    result: CaseResult


@dataclass(frozen=True, slots=True)
class Warned:
    """Something the run's user should know (a stale recording, an expired allowlist entry, a
    missing key), told when the run finds it: from a live run's worker thread, for what a call
    finds."""

    text: str


@dataclass(frozen=True)
class BatchProgress:
    """Where a round of batches stands while the run waits for it."""

    round: int
    batches: tuple[str, ...]
    done: int
    failed: int
    total: int
    elapsed_s: float
    status: str


@dataclass(frozen=True, slots=True)
class BatchWaiting:
    """A batch run polled its batches and waits on."""

    progress: BatchProgress


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run's record, summary and gates around its results (after Ctrl-C too: its record
    says `interrupted`), and the settings it ran under."""

    result: RunResult
    settings: Settings | None = None


Event = RunStarted | CaseJudged | Warned | BatchWaiting | RunFinished


class Handler:
    """Receives a run's events; the base ignores them all."""

    # True for a handler that hears each case in the process that judged it (a split run's
    # forked child too) and before any other handler, so that it may hold less of the result,
    # in place (`CaseResult.lighten`): what a child sends back and what the run keeps are
    # then light. It hears the run's end in the run's own process.
    per_process = False

    def handle(self, event: Event) -> None:
        """Called with each event of the run, in order."""

    def flush(self) -> None:
        """A process's share of the run is done (a per-process handler makes what it wrote
        readable by the other process)."""


class Handlers(Handler):
    """Several handlers as one: each event to each of them, in order."""

    def __init__(self, handlers: Iterable[Handler]) -> None:
        self.handlers = tuple(handlers)

    def handle(self, event: Event) -> None:
        for handler in self.handlers:
            handler.handle(event)

    def flush(self) -> None:
        for handler in self.handlers:
            handler.flush()


class Warnings(Handler):
    """The warnings told, in order (a share of a run, mutate's cases)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def handle(self, event: Event) -> None:
        if type(event) is Warned:
            self.texts.append(event.text)


class LightResults(Handler):
    """Each case held without its response, steps and response file, when no report reads
    them (less to hold, and less for a split run's child to send)."""

    per_process = True

    def handle(self, event: Event) -> None:
        if type(event) is CaseJudged:
            event.result.lighten(())


class Listening(Handler):
    """The library's `listener=` (a function called with each case's result) as a handler; an
    object with `start(total)` or `batch_progress(progress)` hears those events too."""

    def __init__(self, listener: Callable[[CaseResult], None]) -> None:
        self.on_case = listener
        self.on_start = getattr(listener, "start", None)
        self.on_batch = getattr(listener, "batch_progress", None)

    def handle(self, event: Event) -> None:
        kind = type(event)
        if kind is CaseJudged:
            self.on_case(event.result)
        elif kind is RunStarted and self.on_start is not None:
            self.on_start(event.total)
        elif kind is BatchWaiting and self.on_batch is not None:
            self.on_batch(event.progress)


def handler_of(listener: Handler | Callable[[CaseResult], None] | None) -> Handler:
    """What the runner sends its events to: a handler as it is, the library's listener adapted."""
    if listener is None:
        return Handler()
    return listener if isinstance(listener, Handler) else Listening(listener)
