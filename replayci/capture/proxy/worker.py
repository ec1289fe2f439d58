"""One thread that runs a proxy's jobs in order, off the request path: the store's writes in
record mode, the judging of each answer in check mode."""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable


class Worker:
    """Runs submitted jobs one at a time, in order. A job that raises is logged (*failed*: what
    could not be done) and the next one runs: a full disk or an answer no check expected never
    takes the proxy down. *after_batch* runs when the queue empties, at most once per BATCH_S,
    and on `flush`."""

    BATCH_S = 1.0

    def __init__(self, name: str, log: Callable[[str], None], failed: str,
                 after_batch: Callable[[], None] | None = None) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._log, self._failed, self._after_batch = log, failed, after_batch
        self._last = 0.0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                self._guarded(job)
                if self._after_batch is not None and self._queue.empty() and \
                        time.monotonic() - self._last >= self.BATCH_S:
                    self._batch()
            finally:
                self._queue.task_done()

    def _batch(self) -> None:
        self._last = time.monotonic()
        if self._after_batch is not None:
            self._guarded(self._after_batch)

    def _guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except Exception as exc:  # say it, go on
            self._log(f"{self._failed}: {type(exc).__name__}: {exc}")

    def flush(self) -> None:
        """Return once every job submitted so far, and the batch step, have run."""
        self._queue.put(self._batch)
        self._queue.join()

    def close(self) -> None:
        """Run what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join()
