"""The one object that decides, case by case, whether a live run plays the case's recording or
calls the model, and whether what the model answered is recorded: the run's replay mode
(`ReplayMode`) applied in one place, with the reading and writing of recordings it needs."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..config import Settings
from ..core.errors import ConfigError
from ..core.paths import display_path
from ..pack.fixtures import Fixture, Recording, load_recording, recording_path
from ..pack.vocabulary import ReplayMode
from ..providers.errors import scrub
from . import agent, recordings
from .answers import Answer
from .cases import Item, boundary_change, pinned
from .recorded import RecordedSource, age_days
from .results import CaseResult


class Cassette:
    """A live run's recordings under its replay mode: what is played, what is recorded."""

    def __init__(self, settings: Settings, recorded: RecordedSource, *, key: str | None):
        self.settings = settings
        self.mode = ReplayMode(settings.replay or ReplayMode.OFF)
        self.recorded = recorded
        self.key = key

    @property
    def calls_every_case(self) -> bool:
        """Whether every case not skipped calls the model (nothing is played back)."""
        return self.mode in (ReplayMode.OFF, ReplayMode.RECORD)

    def play(self, item: Item, fixture: Fixture, request: dict, model: str) -> Answer | None:
        """The case's answer from its recording or fixture when it is played back (strict mode,
        a usable recording in auto mode, a pinned negative case), else None: the model is asked."""
        usable = None
        if self.mode is ReplayMode.AUTO and not pinned(item, fixture):
            usable = self.replayable(item, fixture, model)
        if self.mode is ReplayMode.STRICT or usable is not None or pinned(item, fixture):
            # Input invariants see the request as it would be sent (the model override too).
            return self.recorded.answer(item, replace(fixture, request=request), recording=usable)
        return None

    def records(self, responses: list[dict]) -> bool:
        """Whether a call's answers (*responses*: a scenario's steps) are recorded: in record and
        auto mode, when every one succeeded."""
        return self.mode in (ReplayMode.RECORD, ReplayMode.AUTO) and all(r.get("success") for r in responses)

    def replayable(self, item: Item, fixture: Fixture, model: str) -> Recording | None:
        """In auto mode: a recording of this provider and model whose boundary still matches
        (and, under --strict-fixtures, that is not stale); anything else is re-recorded."""
        rec = self.recording(item)
        if rec is None:
            return None
        meta = rec.meta
        if meta.get("provider") != self.settings.provider or meta.get("model") != model:
            return None
        if self.settings.strict_fixtures:
            age = age_days(meta.get("recorded_at"), self.recorded.now)
            if age is not None and age > self.settings.ttl_days:
                return None
        replayable = rec.raw.get("trajectory") if item.contract.scenario else rec.response
        if not replayable or boundary_change(rec.boundary, fixture.request):
            return None
        if item.contract.scenario and agent.stale_trajectory(replayable, item.contract):
            return None  # it used a result of an older tool version: run the loop again
        return rec

    def recording(self, item: Item) -> Recording | None:
        """The case's recording, or None when there is none or it cannot be read."""
        path = self.recorded.recording_for(item.pack, item.contract.id, item.case.id)
        if path is None:
            return None
        try:
            return load_recording(path, display_path(path), max_bytes=self.settings.max_fixture_bytes)
        except ConfigError:
            return None

    # -- writing: never a recording a later run would refuse (NotWritten, returned as a note)
    def record(self, item: Item, fixture: Fixture, model: str, response: dict, raw, latency_ms,
               judgements: dict | None = None) -> str | None:
        """Record one call's answer; None, or why it was not written."""
        return self._unwritten(item, lambda: recordings.build(
            pack_id=item.pack.pack_id, contract=item.contract.id, case=item.case.id,
            provider=self.settings.provider, model=model, request=fixture.request,
            response=response, latency_ms=latency_ms, raw=raw,
            keep_raw=self.settings.keep_raw, redact_fields=self.settings.redact_fields,
            extra={"judgements": judgements} if judgements else None))

    def record_scenario(self, item: Item, fixture: Fixture, model: str, steps: list[dict],
                        table: agent.ToolTable, calls, judgements: dict) -> str | None:
        """Record a scenario's loop: its steps, its tool results and the model's raw answers."""
        return self._unwritten(item, lambda: scrub(recordings.build(
            pack_id=item.pack.pack_id, contract=item.contract.id, case=item.case.id,
            provider=self.settings.provider, model=model, request=fixture.request, response=None,
            latency_ms=calls.latency_ms, raw=calls.raw, keep_raw=self.settings.keep_raw,
            redact_fields=self.settings.redact_fields, trajectory=table.sanitized(steps),
            tool_results=table.records(), extra={"judgements": judgements} if judgements else None), self.key))

    def record_tool_results(self, item: Item, fixture: Fixture, model: str, table: agent.ToolTable,
                            rec: Recording | None, calls) -> str | None:
        """The tool results obtained by a loop whose model responses are not recorded: into
        the case's recording, the rest of which stays as it was."""
        def build() -> dict:
            if rec is not None:
                doc = recordings.redact({**rec.raw, "tool_results": table.records()}, self.settings.redact_fields)
            else:
                doc = recordings.build(
                    pack_id=item.pack.pack_id, contract=item.contract.id, case=item.case.id,
                    provider=self.settings.provider, model=model, request=fixture.request, response=None,
                    latency_ms=calls.latency_ms, redact_fields=self.settings.redact_fields,
                    tool_results=table.records())
            return scrub(doc, self.key)  # a tool or model echoing the key never reaches disk

        return self._unwritten(item, build)

    def _unwritten(self, item: Item, build: Callable[[], dict]) -> str | None:
        """Build and write the case's recording: None, or why it was not written (a later run
        would refuse it, or it could not be redacted)."""
        path = recording_path(self.recorded.recordings_dir(item.pack), item.contract.id, item.case.id)
        try:
            recordings.write(path, build(), root=item.pack.dir, max_bytes=self.settings.max_fixture_bytes)
        except recordings.NotWritten as exc:
            return str(exc)
        # The source caches directory listings: let a later replay of this run see the file.
        self.recorded.forget(item.pack, item.contract.id)
        return None


def noted(result: CaseResult, note: str | None) -> CaseResult:
    """*result* with *note* (what happened beside the verdict) in its details."""
    return replace(result, details={**result.details, "note": note}) if note else result
