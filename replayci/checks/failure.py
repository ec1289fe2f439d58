"""What the checks find: failures, the one classification order, and the verdict."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.enums import TextEnum
from ..core.hashing import short_hash
from ..formats import Document
from ..formats.canonical import stable_response


class Classification(TextEnum):
    """What a failure is, as reports name it. The first failing check, in this order, names the
    failure: single responses and scenarios alike (a scenario's failures are ranked by it; a
    response's checks run in it)."""

    UNEXPECTED_ERROR = "unexpected_error"
    TOOL_NOT_INVOKED = "tool_not_invoked"
    WRONG_TOOL = "wrong_tool"
    MALFORMED_ARGUMENTS = "malformed_arguments"
    MALFORMED_OUTPUT = "malformed_output"
    SCHEMA_VIOLATION = "schema_violation"
    ARGUMENT_MISMATCH = "argument_mismatch"
    SEQUENCE_VIOLATION = "sequence_violation"
    STEP_LIMIT_EXCEEDED = "step_limit_exceeded"
    INVARIANT_VIOLATION = "invariant_violation"
    JUDGE_VIOLATION = "judge_violation"
    INPUT_VIOLATION = "input_violation"


# The classifications as their names, in rank order (the published enum, the docs' table).
CLASSIFICATION_ORDER = tuple(c.value for c in Classification)
RANK = {kind: i for i, kind in enumerate(CLASSIFICATION_ORDER)}


class Status(TextEnum):
    """A case's outcome, as reports name it."""

    PASS = "pass"
    FAIL = "fail"
    NON_REPRODUCIBLE = "non_reproducible"
    SKIPPED = "skipped"
    ERROR = "error"


# What a negative case's `expected_failure: {check: ...}` may name: a classification, or a
# check reported under one (a call to an undeclared tool is a wrong_tool).
CHECK_KINDS = (*CLASSIFICATION_ORDER, "undeclared_tool")
MATCHER_FIELDS = ("check", "path", "operator", "schema_path")


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed check. kind is the classification the check belongs to."""

    kind: Classification  # (a report read back holds its plain string)
    message: str
    path: str | None = None
    operator: str | None = None
    schema_path: str | None = None
    expected: Any = None
    actual: str | None = None
    source: str | None = None

    def __reduce__(self):
        """Pickled as its values in field order (faster than the dataclass's state methods)."""
        return Failure, (self.kind, self.message, self.path, self.operator, self.schema_path,
                         self.expected, self.actual, self.source)

    def key(self) -> tuple:
        """What identifies the failure pattern (never the model's output)."""
        return (self.kind, self.path, self.operator, self.schema_path)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "path": self.path,
                "operator": self.operator, "schema_path": self.schema_path,
                "expected": self.expected, "actual": self.actual, "source": self.source}


def matches(matcher: dict, failure: Failure) -> bool:
    """Whether *failure* is what an expected_failure matcher names (each key it gives)."""
    if "check" in matcher and matcher["check"] not in (failure.kind, failure.operator):
        return False
    return all(matcher[k] == getattr(failure, k) for k in ("path", "operator", "schema_path") if k in matcher)


def describe(failure: Failure) -> str:
    """A failed check as an expected_failure would name it: 'schema_violation (schema_path ...)'."""
    named = [f"{k} {getattr(failure, k)}" for k in ("path", "operator", "schema_path") if getattr(failure, k)]
    return failure.kind + (f" ({', '.join(named)})" if named else "")


@dataclass(frozen=True)
class Pinned:
    """Why a negative case must fail, beyond its classification, and what its response was."""

    failures: tuple[dict, ...] = ()  # expected_failure matchers
    fingerprint: str | None = None  # expected_fingerprint
    actual_fingerprint: str | None = None
    slipped: str | None = None  # the response, as shown when nothing was detected


def verdict(expect_ok: bool, expected_error: str | None, failures: list[Failure],
            pinned: Pinned = Pinned()) -> tuple[Status, Classification | None, str | None]:
    """(status, classification, reason) from what the checks found."""
    classification = failures[0].kind if failures else None
    if expect_ok:
        if not failures:
            return Status.PASS, None, None
        return Status.FAIL, classification, failures[0].message
    if not failures:
        return Status.FAIL, None, "negative case was not detected" + (
            f" (expected {expected_error})" if expected_error else "") + (
            f"; slipped through: {pinned.slipped}" if pinned.slipped else "")
    if expected_error and classification != expected_error:
        return Status.FAIL, classification, f"expected {expected_error}, got {classification}"
    missing = [m for m in pinned.failures if not any(matches(m, f) for f in failures)]
    if missing:
        wanted = "; ".join(", ".join(f"{k} {m[k]}" for k in MATCHER_FIELDS if k in m) for m in missing)
        return Status.FAIL, classification, (f"failed for another reason: {'; '.join(map(describe, failures))} "
                                        f"fired, expected {wanted}")
    if pinned.fingerprint and pinned.fingerprint != pinned.actual_fingerprint:
        return Status.FAIL, classification, (f"failed for another reason: fingerprint {pinned.actual_fingerprint} "
                                        f"({'; '.join(map(describe, failures))}), expected "
                                        f"{pinned.fingerprint}")
    return Status.PASS, classification, None


def fingerprint(contract_id: str, case_id: str, failures: list[Failure], response: Document | None) -> str:
    """8 hex digits: the failure pattern, or the case and its output when nothing failed."""
    if failures:
        return short_hash({
            "contract": contract_id,
            "classification": failures[0].kind,
            "checks": [list(f.key()) for f in failures],
        })
    return short_hash({"contract": contract_id, "case": case_id, "response": stable_response(response)})


def trajectory_fingerprint(contract_id: str, case_id: str, failures: list[Failure], steps: list[dict]) -> str:
    """fingerprint() for a scenario: the failure pattern, or the case and its whole trajectory."""
    if failures:
        return fingerprint(contract_id, case_id, failures, None)
    return short_hash({"contract": contract_id, "case": case_id,
                       "trajectory": [{"response": stable_response(s["response"]),
                                       "tool_results": [{k: v for k, v in r.items() if k != "call_id"}
                                                        for r in s.get("tool_results") or ()]}
                                      for s in steps]})
