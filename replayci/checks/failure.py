"""What the checks find: failures, the one classification order, and the verdict."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The first failing check, in this order, names the failure: single responses and scenarios
# alike (a scenario's failures are ranked by it; a response's checks run in it).
CLASSIFICATION_ORDER = (
    "unexpected_error",
    "tool_not_invoked",
    "wrong_tool",
    "malformed_arguments",
    "schema_violation",
    "argument_mismatch",
    "sequence_violation",
    "step_limit_exceeded",
    "invariant_violation",
    "judge_violation",
    "input_violation",
)
RANK = {kind: i for i, kind in enumerate(CLASSIFICATION_ORDER)}


@dataclass(frozen=True)
class Failure:
    """One failed check. kind is the classification the check belongs to."""

    kind: str
    message: str
    path: str | None = None
    operator: str | None = None
    schema_path: str | None = None
    expected: Any = None
    actual: str | None = None
    source: str | None = None

    def key(self) -> tuple:
        """What identifies the failure pattern (never the model's output)."""
        return (self.kind, self.path, self.operator, self.schema_path)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "path": self.path,
                "operator": self.operator, "schema_path": self.schema_path,
                "expected": self.expected, "actual": self.actual, "source": self.source}


def verdict(expect_ok: bool, expected_error: str | None,
            failures: list[Failure]) -> tuple[str, str | None, str | None]:
    """(status, classification, reason) from what the checks found."""
    classification = failures[0].kind if failures else None
    if expect_ok:
        if not failures:
            return "pass", None, None
        return "fail", classification, failures[0].message
    if not failures:
        return "fail", None, "negative case was not detected" + (
            f" (expected {expected_error})" if expected_error else "")
    if expected_error and classification != expected_error:
        return "fail", classification, f"expected {expected_error}, got {classification}"
    return "pass", classification, None
