"""Result values: case results, run results."""
from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields
from typing import Any

from ..checks.failure import Classification, Failure, Status
from ..core.hashing import args_hash, h
from ..core.jsonvalue import encoder
from ..formats import Document
from ..formats._common import DOCUMENT_DEFAULTS


@dataclass(frozen=True, slots=True)
class CaseResult:
    pack: str
    contract: str
    case: str
    status: Status  # (a report read back holds its plain string)
    classification: Classification | None  # (a report read back holds its plain string)
    reason: str | None
    fingerprint: str | None
    failures: tuple[Failure, ...] = ()
    allowlisted: bool = False
    duration_ms: float = 0.0
    source: str = ""
    category: str | None = None
    tags: tuple[str, ...] = ()
    expect_ok: bool = True
    expected_error: str | None = None
    draft: bool = False
    response: Document | None = None  # the normalized response evaluated (a scenario's final one)
    attempts: int = 0
    latency_ms: float | None = None  # of the model calls; None when unknown (a hand-written fixture)
    cost_usd: float | None = None  # None when the usage or the model's price is unknown
    tokens: int | None = None  # input + output
    score: float | None = None  # the weighted share of output invariants that held (under min_score)
    details: dict = field(default_factory=dict)
    order: tuple = ()  # (pack, contract, case) positions: the order of an unsharded run
    target: str | None = None  # the label of the target (provider and model) it ran against, in a comparison
    # Where a run that writes report entries as cases finish put this one's: (file, offset, size).
    stored: tuple = field(default=(), compare=False, repr=False)

    @classmethod
    def from_dict(cls, entry: dict) -> CaseResult:
        """A case of a JSON report (what to_dict wrote) as a result again."""
        own = {f.name for f in fields(cls)} - {"failures", "order", "details", "stored"}
        values = {k: entry[k] for k in own if k in entry}
        if isinstance(values.get("tags"), list):
            values["tags"] = tuple(values["tags"])
        failures = tuple(Failure(**f) for f in entry.get("failures") or () if isinstance(f, dict))
        details = {k: v for k, v in entry.items() if k not in own and k not in _DERIVED}
        return cls(**values, failures=failures, order=tuple(entry.get("order") or ()), details=details)

    def lighten(self, stored: tuple) -> CaseResult:
        """This result without its response, steps and response file (its report entry, which
        has them, was written at *stored*): what the terminal and the other reports read.
        Changed in place, so only for a result no one else holds yet: a run tells each
        finished case to its per-process handlers (engine.events.Handler) before anything else
        sees it. (A copy would cost a large run ~3 µs a case, for an object thrown away at once.)"""
        object.__setattr__(self, "response", None)
        object.__setattr__(self, "stored", stored)
        if any(k in self.details for k in _JSON_ONLY_DETAILS):
            object.__setattr__(self, "details",
                               {k: v for k, v in self.details.items() if k not in _JSON_ONLY_DETAILS})
        return self

    def __reduce__(self):
        """Pickled as its values in field order (a split run's child sends its results): a
        third of the time of the dataclass's own state methods, both ways."""
        return CaseResult, _VALUES(self)

    def get(self, key: str, default: Any = None) -> Any:
        """A value of its report entry, read without building the entry: a field, else a
        detail (what the summary, the gates and the comparisons read of a case, as they read
        a case of a report)."""
        read = _READ.get(key)
        return self.details.get(key, default) if read is None else read(self)

    def __getitem__(self, key: str) -> Any:
        read = _READ.get(key)
        return self.details[key] if read is None else read(self)

    def __contains__(self, key: object) -> bool:
        return key in _FIELD_SET or key in self.details

    @property
    def id(self) -> str:
        return f"{self.pack}/{self.contract}/{self.case}" + (f"@{self.target}" if self.target else "")

    def to_dict(self) -> dict:
        out = {
            "pack": self.pack,
            "contract": self.contract,
            "case": self.case,
            "status": self.status,
            "classification": self.classification,
            "reason": self.reason,
            "allowlisted": self.allowlisted,
            "fingerprint": self.fingerprint,
            "failures": [f.to_dict() for f in self.failures],
            "duration_ms": round(self.duration_ms, 3),
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
            "source": self.source,
            "category": self.category,
            "tags": list(self.tags),
            "expect_ok": self.expect_ok,
            "expected_error": self.expected_error,
            "draft": self.draft,
        }
        if self.target is not None:
            out["target"] = self.target
        if self.score is not None:
            out["score"] = self.score
        if self.order:
            out["order"] = list(self.order)
        if self.attempts:
            out["attempts"] = self.attempts
        if self.response is not None:
            out["output"] = output_summary(self.response)
            # The document as judged, so `replayci regrade` can judge it again without a model call.
            kept = report_response(self.response)
            if kept is None:
                out["response_omitted"] = f"larger than {REPORT_RESPONSE_LIMIT:,} characters"
            else:
                out["response"] = kept
        out.update(self.details)
        return out


_FIELDS = tuple(f.name for f in fields(CaseResult))
# The fields a report entry holds as they are (the others: computed, or not in the entry).
_FIELD_SET = frozenset(_FIELDS) - {"failures", "order", "details", "stored", "response", "duration_ms"}
_READ = {name: operator.attrgetter(name) for name in _FIELD_SET}
_VALUES = operator.attrgetter(*_FIELDS)


_JSON_ONLY_DETAILS = ("steps", "response_origin")  # read back from JSON reports only (regrade)
_TEXT_LIMIT = 2000
_DERIVED = ("failures", "order", "output")  # keys to_dict computes from the fields


def output_summary(response: Document) -> dict:
    """What `replayci diff` compares: tool calls as {name, args_hash}, the text, usage."""
    content = response.get("content")
    return {
        "success": response.get("success"),
        "tool_calls": [{"name": c.get("name"), "args_hash": args_hash(c.get("arguments"))}
                       for c in response.get("tool_calls") or ()],
        # The text (cut for very long answers); the hash tells whether it changed.
        "content": content[:_TEXT_LIMIT] if isinstance(content, str) else content,
        "content_hash": None if content is None else h(content),
        "usage": response.get("usage"),
    }


# Keys every response document has, at the value they have when the response had nothing
# to say: a report leaves them out, and regrade puts them back.
_DOCUMENT_DEFAULTS = DOCUMENT_DEFAULTS


_compact = encoder(separators=(",", ":"))


def _compact_json(value: Any) -> str | None:
    if not isinstance(value, (dict, list)):
        return None
    return _compact(value)


def compact_response(response: Document) -> dict:
    """A response document for a report: keys at their default left out, and each call's
    arguments_raw when it is exactly the compact JSON of its arguments (full_response
    restores both, so nothing is lost; a report of many cases stays half the size)."""
    out = {k: v for k, v in response.items() if k not in _DOCUMENT_DEFAULTS or v != _DOCUMENT_DEFAULTS[k]}
    calls = response.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [
            {k: v for k, v in c.items() if k != "arguments_raw"}
            if isinstance(c, dict) and "arguments_raw" in c and c["arguments_raw"] == _compact_json(c.get("arguments"))
            else c for c in calls]
    return out


# A response larger than this (a runaway answer, a hostile fixture) is not kept in reports,
# so a report stays small whatever a model or a file says.
REPORT_RESPONSE_LIMIT = 64 * 1024


def _size(response: Document) -> int:
    """About the characters a response takes in a report: its texts and its arguments (twice:
    parsed and raw), without serializing it."""
    texts = [response.get(k) for k in ("content", "reasoning", "refusal")]
    size = sum(len(t) for t in texts if isinstance(t, str)) + len(str(response.get("error") or ""))
    for c in list(response.get("tool_calls") or ()) + list(response.get("server_tool_calls") or ()):
        raw = c.get("arguments_raw") if isinstance(c, dict) else None
        size += 2 * len(raw) if isinstance(raw, str) else len(str(c))
    return size


def report_response(response: Document) -> dict | None:
    """compact_response of *response*, or None when it is over the report's limit."""
    return compact_response(response) if _size(response) <= REPORT_RESPONSE_LIMIT else None


def full_response(response: dict) -> Document:
    """The response document a report's compact_response came from."""
    out = {**_DOCUMENT_DEFAULTS, **response}
    calls = response.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [{**c, "arguments_raw": _compact_json(c.get("arguments"))}
                             if isinstance(c, dict) and "arguments_raw" not in c else c for c in calls]
    return out


@dataclass
class RunResult:
    cases: list[CaseResult]
    summary: dict
    run: dict
    warnings: list[str] = field(default_factory=list)
    comparisons: dict = field(default_factory=dict)  # `targets` and `baseline`, when the run compares

    @property
    def ok(self) -> bool:
        """True when every gate was met."""
        return all(g["passed"] for g in self.summary["gates"].values())

    def to_dict(self, *, cases: bool = True) -> dict:
        """The report's core; without *cases*, its cases list is left empty (for a writer that
        has them elsewhere)."""
        return {
            "version": 1,
            "run": self.run,
            "summary": self.summary,
            **self.comparisons,
            "cases": [c.to_dict() for c in self.cases] if cases else [],
        }
