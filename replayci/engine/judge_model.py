"""The judge model of .replayci.yml, asked through the same providers and retry loop as the
model under test. Apart from judging.py so that a recorded run never loads the providers'
call machinery (tenacity, email.utils)."""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..config import Settings
from ..providers import api_key_for, close_quietly, create
from ..providers.call import call_once
from ..providers.retry import RetryPolicy
from .judging import Judgements


class JudgeModel:
    """The judge model of .replayci.yml, called as the model under test is (its client is
    created on first use)."""

    def __init__(self, settings: Settings, environ: Mapping[str, str], stop: threading.Event):
        judge = settings.judge
        self.provider_name, self.model = judge.get("provider"), judge.get("model")
        self.key = api_key_for(self.provider_name, environ) if self.provider_name else None
        # Without its own base_url the judge shares the run's when it is the same provider.
        self.base_url = judge.get("base_url") or (
            settings.base_url if self.provider_name == settings.provider else None)
        self.stop = stop
        self._provider = None
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict]) -> str | None:
        """The judge's text answer to *messages* (None when the call failed)."""
        with self._lock:
            if self._provider is None:
                self._provider = create(self.provider_name, api_key=self.key or "", base_url=self.base_url)
        request = {"model": self.model, "messages": messages, "temperature": 0}
        answer = call_once(self._provider, request, model=self.model, policy=RetryPolicy(), key=self.key,
                           stop_event=self.stop)
        content = (answer.response or {}).get("content")
        return content if isinstance(content, str) else None

    def judgements(self, recorded: Any = None) -> Judgements:
        """A case's judgements: *recorded* ones reused, the others asked of this model."""
        return Judgements(self.model, recorded, self if self.model and self.provider_name else None)

    def close(self) -> None:
        if self._provider is not None:
            close_quietly(self._provider)
