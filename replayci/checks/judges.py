"""Model judges (rubric, factuality, classify): their prompts, their strictly parsed answers and
the failures they give. Calling the judge model is the engine's; this module never does."""
from __future__ import annotations

import json
from typing import Any

from ..core.hashing import h
from ..core.jsonvalue import show
from ..core.records import record
from .failure import Classification, Failure

# Bump when a prompt changes: the judgement key hashes the messages, so recordings made with
# an older prompt are then reported as not recorded rather than silently reused.
PROMPT_VERSION = 1

_SYSTEM = (f"You are a strict evaluator of an AI assistant's answer (replayci judge v{PROMPT_VERSION}). "
           "Reply with one JSON object and nothing else.")
_ASK = {
    "rubric": ("Grade the answer against this rubric on a scale of 1 (fails it) to 4 (fully meets it).\n"
               "Rubric: {criterion}\n"
               'Reply {{"score": 1|2|3|4, "reason": "<one sentence>"}}.'),
    "factuality": ("Is the answer consistent with the reference (it may say less, but must not "
                   "contradict it or add claims against it)?\nReference: {criterion}\n"
                   'Reply {{"consistent": true|false, "reason": "<one sentence>"}}.'),
    "classify": ("Classify the answer into exactly one of these categories: {criterion}.\n"
                 'Reply {{"category": "<one of the categories>", "reason": "<one sentence>"}}.'),
}


@record
class Judge:
    """One entry of assertions.judges."""

    kind: str  # rubric | factuality | classify
    criterion: str  # the rubric, the reference, or the categories joined
    source: str
    min: int = 3  # rubric: the lowest passing score
    categories: tuple[str, ...] = ()
    expected: str | None = None  # classify: the category the answer must get


class JudgeAnswerError(ValueError):
    """A judge's answer that is not the JSON its prompt asks for."""


def _answer_text(response: dict) -> str:
    """The judged answer: its text and, when it called tools, the calls."""
    parts = [response.get("content")] if isinstance(response.get("content"), str) else []
    for c in response.get("tool_calls") or ():
        parts.append(f"[tool call] {c.get('name')}({json.dumps(c.get('arguments'), ensure_ascii=False)})")
    return "\n".join(parts) or "(no answer)"


def _question(request: dict) -> str:
    """The last user message of the request, as text."""
    for m in reversed(request.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return "(none)"


def judge_messages(judge: Judge, request: dict, response: dict) -> list[dict]:
    """The chat messages sent to the judge model."""
    ask = _ASK[judge.kind].format(criterion=judge.criterion)
    return [{"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"User question:\n{_question(request)}\n\nAnswer:\n"
                                        f"{_answer_text(response)}\n\n{ask}"}]


def judgement_key(model: str, messages: list[dict]) -> str:
    """Where a judgement is stored in a recording's `judgements`."""
    return h({"model": model, "messages": messages})


def parse_answer(judge: Judge, text: Any) -> dict:
    """The judge's answer as {score | consistent | category, reason}; JudgeAnswerError otherwise."""
    if not isinstance(text, str):
        raise JudgeAnswerError("no text answer")
    try:
        value = json.loads(text.strip())
    except ValueError:
        raise JudgeAnswerError(f"not JSON: {show(text, 120)}") from None
    if not isinstance(value, dict) or not isinstance(value.get("reason", ""), str):
        raise JudgeAnswerError(f"not a JSON object with a reason: {show(text, 120)}")
    field, ok = {"rubric": ("score", lambda v: type(v) is int and 1 <= v <= 4),
                 "factuality": ("consistent", lambda v: isinstance(v, bool)),
                 "classify": ("category", lambda v: v in judge.categories)}[judge.kind]
    if not ok(value.get(field)):
        raise JudgeAnswerError(f"bad {field}: {show(text, 120)}")
    return {field: value[field], "reason": value.get("reason", "")}


def judge_failure(judge: Judge, text: Any, model: str) -> Failure | None:
    """The failure a judge's answer gives: judge_violation below its threshold, unexpected_error
    when the answer cannot be parsed; None when it passes."""
    try:
        verdict = parse_answer(judge, text)
    except JudgeAnswerError as exc:
        return Failure(Classification.UNEXPECTED_ERROR, f"judge {judge.kind} ({model}) gave an unusable answer: {exc}",
                       path="$", operator="judge", source=judge.source)
    reason = f" ({verdict['reason']})" if verdict["reason"] else ""
    if judge.kind == "rubric" and verdict["score"] < judge.min:
        return Failure(Classification.JUDGE_VIOLATION, f"rubric score {verdict['score']}, at least {judge.min}{reason}",
                       path="$", operator="judge", expected=judge.min, actual=str(verdict["score"]),
                       source=judge.source)
    if judge.kind == "factuality" and not verdict["consistent"]:
        return Failure(Classification.JUDGE_VIOLATION, f"not consistent with the reference{reason}", path="$",
                       operator="judge", expected=True, actual="false", source=judge.source)
    if judge.kind == "classify" and verdict["category"] != judge.expected:
        return Failure(Classification.JUDGE_VIOLATION,
                       f"classified {verdict['category']}, expected {judge.expected}{reason}",
                       path="$", operator="judge", expected=judge.expected, actual=verdict["category"],
                       source=judge.source)
    return None
