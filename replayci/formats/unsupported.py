"""Known APIs replayci does not check: recognized only to be refused by name."""
from __future__ import annotations

from typing import Any

from ._common import as_dict, as_list

_COHERE_REASONS = ("COMPLETE", "TOOL_CALL", "MAX_TOKENS", "STOP_SEQUENCE", "ERROR", "ERROR_TOXIC",
                   "ERROR_LIMIT", "USER_CANCEL")


def _cohere(p: dict) -> bool:
    if "generation_id" in p or "chat_history" in p or isinstance(p.get("generations"), list):
        return True
    if "billed_units" in as_dict(p.get("meta")) or "billed_units" in as_dict(p.get("usage")):
        return True
    reason = p.get("finish_reason")
    return isinstance(p.get("message"), dict) and isinstance(reason, str) and reason in _COHERE_REASONS


def refuse(p: Any) -> str | None:
    """The name of a known payload of an API replayci does not check, or None."""
    if not isinstance(p, dict):
        return None
    if _cohere(p):
        return "a Cohere response"
    candidates = as_list(p.get("candidates"))
    if candidates and "output" in as_dict(candidates[0]) and "content" not in as_dict(candidates[0]):
        return "a legacy Google PaLM response (candidates[].output)"
    return None
