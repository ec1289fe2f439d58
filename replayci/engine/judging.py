"""Judges of a case: their answers replayed from its recording, or asked of the judge model
(`judge_model.py`) and kept for the recording."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..checks.failure import RANK, Failure
from ..checks.judges import judge_failure, judge_messages, judgement_key
from ..pack.model import Contract


class JudgementMissing(Exception):
    """A recorded run has no stored answer for a judge's prompt."""

    def __init__(self, key: str, model: str | None):
        super().__init__(f"no recorded judgement {key} of {model or 'a judge model'} in the recording; "
                         "record it with a live run (judge: {provider, model} in .replayci.yml)")
        self.key = key


class Judgements:
    """A case's judge answers by key: *recorded* ones, else asked with *ask* (None: offline)."""

    def __init__(self, model: str | None, recorded: Any = None,
                 ask: Callable[[list[dict]], str | None] | None = None):
        self.model = model
        self.recorded = recorded if isinstance(recorded, dict) else {}
        self.ask = ask
        self.new: dict[str, dict] = {}  # asked in this run: what the recording stores

    def answer(self, messages: list[dict]) -> Any:
        """The judge's answer text to *messages*; JudgementMissing when offline and not recorded."""
        key = judgement_key(self.model or "", messages)
        stored = self.recorded.get(key)
        if isinstance(stored, dict):
            return stored.get("answer")
        if self.ask is None or not self.model:
            raise JudgementMissing(key, self.model)
        text = self.ask(messages)
        if isinstance(text, str):  # a failed call is not kept: the next run asks again
            self.new[key] = {"model": self.model, "answer": text}
        return text

    def all(self) -> dict[str, dict]:
        """Every judgement this case used, for its recording."""
        return {**self.recorded, **self.new}


def with_judges(contract: Contract, request: dict, response: dict | None, failures: list[Failure],
                judgements: Judgements | None) -> list[Failure]:
    """*failures* with the contract's judges' added, ranked (judges run whatever failed before)."""
    if not contract.judges or not response or not response.get("success", True):
        return failures
    judgements = judgements or Judgements(None)
    found = [judge_failure(j, judgements.answer(judge_messages(j, request, response)), judgements.model or "")
             for j in contract.judges]
    return sorted(failures + [f for f in found if f is not None], key=lambda f: RANK.get(f.kind, 99))


def judgement_details(contract: Contract, judgements: Judgements | None) -> dict:
    """The judgements a case used, for its report entry (so `replayci regrade` reuses them)."""
    used = judgements.all() if contract.judges and judgements is not None else {}
    return {"judgements": used} if used else {}
