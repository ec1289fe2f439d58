"""What a source of answers gives the judge for one case: an answer to judge (one response, or a
scenario's loop), a reason it cannot be reproduced, a skip, or an error. Sources return these
and never judge; `engine/judge.judge` turns each into the case's result."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checks.trajectory import Loop
from ..formats import Document
from .judging import Judgements


@dataclass(frozen=True, slots=True)
class Response:
    """One normalized response to the case's *request* (measured: latency and cost), with the
    request's tool table when the source has it, the judges' answers, and what the result says
    of where it came from (*details*) and how many calls it took (*attempts*)."""

    request: dict
    response: Document
    tools: Any = None
    judgements: Judgements | None = None
    details: dict = field(default_factory=dict)
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A scenario's loop (its steps measured); *latency_ms*: the recorded total, when the steps
    were not timed one by one."""

    request: dict
    loop: Loop
    latency_ms: Any = None
    judgements: Judgements | None = None
    details: dict = field(default_factory=dict)
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class NotReproducible:
    """No answer to judge, and why: *reason* (a vocabulary NR reason), *message* for people,
    *detail* what the fingerprint tells apart beside the reason."""

    reason: str
    message: str
    detail: str = ""
    details: dict = field(default_factory=dict)
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class Skip:
    """The case is not run, and why."""

    reason: str
    attempts: int = 0
    details: Mapping[str, Any] | None = None  # what the report says of the skip beside its reason


@dataclass(frozen=True, slots=True)
class Errored:
    """The case could not be evaluated: a bug or an environment problem (*exc*)."""

    exc: BaseException


Answer = Response | Trajectory | NotReproducible | Skip | Errored
