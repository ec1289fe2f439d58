"""What a run tells as it goes: typed events the runner emits, and the handlers that receive
them (the progress bar, a batch run's wait, the library's listener). A handler overrides
`handle`; the runner calls every handler with every event, in order."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .results import CaseResult, RunResult


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The run has selected its cases: *total* results will follow (a case per target)."""

    total: int


@dataclass(frozen=True, slots=True)
class CaseJudged:
    """A case's result, allowlist and labels applied, as the run keeps it."""

    result: CaseResult


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
    """The run's record, summary and gates around its results."""

    result: RunResult


Event = RunStarted | CaseJudged | BatchWaiting | RunFinished


class Handler:
    """Receives a run's events; the base ignores them all."""

    def handle(self, event: Event) -> None:
        """Called with each event of the run, in order."""


class Handlers(Handler):
    """Several handlers as one: each event to each of them, in order."""

    def __init__(self, handlers: Iterable[Handler]) -> None:
        self.handlers = tuple(handlers)

    def handle(self, event: Event) -> None:
        for handler in self.handlers:
            handler.handle(event)


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
