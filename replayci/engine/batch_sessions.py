"""The scenarios of a batch run: each session on its own thread, its model calls gathered into
rounds (one batch round per step) through a transport under the call (`Rounds`)."""
from __future__ import annotations

import threading
from collections.abc import Callable

from ..providers.batch import BatchRequest
from ..providers.call import Answer
from .live import Cancelled


class BatchIncomplete(Exception):
    """The wait ended (--batch-timeout) before this request's answer came."""


class Sessions:
    """The scenarios' sessions, each on its own thread; a round is due when every session that
    is still running waits for the answer to its next call."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.running = 0
        self.asked: dict[str, BatchRequest] = {}
        self.taken = 0  # sessions whose request a round took and has not answered yet
        self.answers: dict[str, Answer | None] = {}
        self.closed = False
        self.threads: list[threading.Thread] = []

    def start(self, work: Callable[[], None]) -> None:
        with self.cond:
            self.running += 1
        thread = threading.Thread(target=self._run, args=(work,), daemon=True, name="replayci-batch-session")
        self.threads.append(thread)
        thread.start()

    def close(self) -> None:
        """End the sessions still waiting for a round (the run stopped): each ends as interrupted."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        for thread in self.threads:
            thread.join(timeout=5)

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        finally:
            with self.cond:
                self.running -= 1
                self.cond.notify_all()

    def ask(self, request: BatchRequest) -> Answer | None:
        """From a session: wait for the round that answers *request*."""
        with self.cond:
            self.asked[request.custom_id] = request
            self.cond.notify_all()
            while request.custom_id not in self.answers:
                if self.closed:
                    raise Cancelled
                self.cond.wait()
            return self.answers.pop(request.custom_id)

    def due(self) -> list[BatchRequest]:
        """The next round's requests, once every running session has asked (none: all ended);
        asked again before the round is answered, those of the sessions started since."""
        with self.cond:
            while len(self.asked) + self.taken < self.running:
                self.cond.wait(0.25)  # a timeout, so that Ctrl-C reaches the main thread
            out = list(self.asked.values())
            self.asked.clear()
            self.taken += len(out)
            return out

    def answer(self, answers: dict[str, Answer | None]) -> None:
        """The round's answers, one for each request it took."""
        with self.cond:
            self.answers.update(answers)
            self.taken -= len(answers)
            self.cond.notify_all()


class Rounds:
    """A scenario's transport under its model calls: each request goes into the batch round of
    its step (*custom_id*: the request's id at a step), and the call waits for that round's answer."""

    def __init__(self, sessions: Sessions, model: str, custom_id: Callable[[int], str]) -> None:
        self.sessions, self.model, self.custom_id = sessions, model, custom_id
        self.step = 0

    def __call__(self, request: dict) -> Answer:
        answer = self.sessions.ask(BatchRequest(self.custom_id(self.step), request, self.model))
        if answer is None:
            raise BatchIncomplete
        self.step += 1
        return answer
