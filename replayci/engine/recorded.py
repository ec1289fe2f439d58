"""The recorded source: each case's response from its recording, else its fixture."""
from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..checks.schemas import tool_table
from ..config import Settings
from ..core.errors import ConfigError, Problem
from ..core.jsonvalue import json_type
from ..core.paths import display_path
from ..core.prices import price_table
from ..core.provider_table import LIVE_PROVIDERS
from ..formats import NormalizeError, normalize
from ..formats.canonical import unnamed_call
from ..pack.fixtures import Fixture, Recording, load_fixture, load_recording, recording_path
from ..pack.model import Pack
from .answers import Answer, Errored, NotReproducible, Response, Trajectory
from .cases import (
    Item,
    boundary_change,
    check_arguments,
    pinned,
    skipped,
    source_details,
    tool_result_missing,
    variance_message,
)
from .events import Handler, Warned
from .judge import judge
from .judging import Judgements
from .metrics import measure, measure_steps
from .results import CaseResult


class RecordedSource:
    """Responses from recordings/<contract>/<case>.json, else the fixture's own response."""

    def __init__(self, settings: Settings, events: Handler):
        self.settings = settings
        self.events = events  # told what the run should warn of
        self._listing: dict[tuple[str, str], frozenset] = {}
        self.now = datetime.datetime.now(datetime.timezone.utc)
        self.prices = price_table(settings.pricing)
        # A target's recordings live in a folder of its own: recordings/<label>/<contract>/<case>.json
        self.sub = settings.target.dir if settings.target is not None else None

    def recordings_dir(self, pack: Pack) -> str:
        """Where this run's recordings of *pack* are (a target's folder under a comparison)."""
        return pack.recordings_dir if self.sub is None else os.path.join(pack.recordings_dir, self.sub)

    def run_model(self, item: Item) -> str | None:
        """The model the run names for *item* (prices a response that names none)."""
        return self.settings.model or item.pack.default_model

    def recording_for(self, pack: Pack, contract: str, case: str) -> str | None:
        key = (pack.recordings_dir if self.sub is None else self.recordings_dir(pack), contract)
        names = self._listing.get(key)
        if names is None:
            try:
                names = frozenset(os.listdir(os.path.join(*key)))
            except OSError:
                names = frozenset()
            self._listing[key] = names
        name = f"{case}.json"
        return os.path.join(key[0], contract, name) if name in names else None

    def forget(self, pack: Pack, contract: str) -> None:
        """Forget the listing of *contract*'s recordings (a recording was written there)."""
        self._listing.pop((self.recordings_dir(pack), contract), None)

    def answer(self, item: Item, fixture: Fixture, *, recording: Recording | None = None,
               edit_steps: Callable[[list[dict]], list[dict]] | None = None) -> Answer:
        """The case from its recording (*recording* when the caller has read it already),
        else from the fixture's own response. A scenario's recorded steps (normalized) go through
        *edit_steps* first when given (mutate replaces one step's answer)."""
        if pinned(item, fixture):
            path = None
        else:
            path = self.recording_for(item.pack, item.contract.id, item.case.id) if recording is None \
                else recording.path
        response, boundary, origin = fixture.response, fixture.boundary, fixture.display
        fixture_meta = fixture.raw.get("meta")  # a captured fixture's (a hand-written one has none)
        meta = fixture_meta = fixture_meta if isinstance(fixture_meta, dict) else {}
        stored = fixture.raw.get("judgements")
        if path is not None:
            rec = recording if recording is not None else \
                load_recording(path, display_path(path), max_bytes=self.settings.max_fixture_bytes)
            age = age_days(rec.meta.get("recorded_at"), self.now)
            if age is not None and age > self.settings.ttl_days:
                if self.settings.strict_fixtures:
                    return NotReproducible(
                        "stale_recording",
                        f"{rec.display} is {age:.0f} days old, over fixtures.ttl_days "
                        f"({self.settings.ttl_days:g}) under --strict-fixtures; re-record it")
                self.events.handle(Warned(f"{rec.display} is {age:.0f} days old "
                                          f"(fixtures.ttl_days: {self.settings.ttl_days:g}); re-record it"))
            response, boundary, origin, meta = rec.response, rec.boundary, rec.display, rec.meta
            stored = rec.raw.get("judgements")
            if item.contract.scenario and rec.raw.get("trajectory"):
                return self.scenario(item, fixture, rec.raw.get("trajectory"), boundary, origin,
                                     meta=meta, judgements=stored, edit_steps=edit_steps)
        own = path is None and self.sub is not None and not pinned(item, fixture)
        if own:
            response = None  # a target is judged on its own answers, never on the fixture's
        if item.contract.scenario:  # no recording, or one that holds only tool results
            return self.scenario(item, fixture, None if own else fixture.raw.get("trajectory"), fixture.boundary,
                                 fixture.display, meta=fixture_meta, judgements=stored,
                                 edit_steps=edit_steps)
        if response is None:
            where = recording_path(self.recordings_dir(item.pack), item.contract.id, item.case.id)
            return NotReproducible(
                "recording_not_found",
                f"no recording at {display_path(where)} and {fixture.display} has no response "
                f"(replay mode strict); record one with --provider {'|'.join(LIVE_PROVIDERS)} --record")
        tools_key = fixture.tools_key
        changed = boundary_change(boundary, fixture.request, tools_key)
        if changed:
            return NotReproducible("context_variance", variance_message(changed, origin, fixture),
                                   detail=",".join(c[0] for c in changed))
        tools = tool_table(tools_key, fixture.request.get("tools"))
        response = measure(response, latency_ms=meta.get("latency_ms"),
                           model=meta.get("model") or self.run_model(item), prices=self.prices)
        kind = "fixture" if origin == fixture.display else "recording"
        return Response(fixture.request, response, tools, Judgements(self.settings.judge.get("model"), stored),
                        source_details(kind, origin))

    def scenario(self, item: Item, fixture: Fixture, trajectory, boundary, origin: str, *,
                 meta: dict, judgements: Any = None,
                 edit_steps: Callable[[list[dict]], list[dict]] | None = None) -> Answer:
        """Replay a recorded trajectory step by step."""
        if not trajectory:
            where = recording_path(self.recordings_dir(item.pack), item.contract.id, item.case.id)
            return NotReproducible(
                "recording_not_found",
                f"no recorded trajectory at {display_path(where)} or in {fixture.display} "
                f"(replay mode strict); record one with --provider {'|'.join(LIVE_PROVIDERS)} --record")
        changed = boundary_change(boundary, fixture.request)
        if changed:
            return NotReproducible("context_variance", variance_message(changed, origin, fixture),
                                   detail=",".join(c[0] for c in changed))
        loaded = load_trajectory(trajectory, origin)
        steps = measure_steps(edit_steps(loaded) if edit_steps is not None else loaded, latencies=None,
                              model=meta.get("model") or self.run_model(item), prices=self.prices)
        from .agent import replay_recorded  # why: scenarios only; agent loads signal and threading

        loop = replay_recorded(steps, item.contract)
        if loop.missing is not None:  # a result of an older version of its tool
            return tool_result_missing(loop.missing)
        kind = "fixture" if origin == fixture.display else "recording"
        return Trajectory(fixture.request, loop, meta.get("latency_ms"),
                          Judgements(self.settings.judge.get("model"), judgements), source_details(kind, origin))


def load_trajectory(trajectory, origin: str) -> list[dict]:
    """Recorded steps with each response normalized; a malformed one is a pack error."""
    if not isinstance(trajectory, list):
        raise ConfigError(Problem(origin, None, None, "'trajectory' must be a list of steps"))
    steps = []
    for n, step in enumerate(trajectory, 1):
        if not isinstance(step, dict) or not isinstance(step.get("response"), dict):
            raise ConfigError(Problem(origin, None, None,
                                      f"trajectory step {n} must be an object with a 'response'"))
        try:
            response = normalize(step["response"])
        except NormalizeError as exc:
            raise ConfigError(Problem(origin, None, None, f"trajectory step {n}: {exc}")) from None
        odd = unnamed_call(response)  # (as a fixture's own answer is checked)
        if odd is not None:
            raise ConfigError(Problem(origin, None, None, f"trajectory step {n}: tool call {odd[0]}: the tool "
                                      f"name must be a string, got {json_type(odd[1])}"))
        results = step.get("tool_results") or []
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise ConfigError(Problem(origin, None, None,
                                      f"trajectory step {n}: 'tool_results' must be a list of objects"))
        steps.append({"response": response, "tool_results": results})
    return steps


def age_days(recorded_at, now: datetime.datetime) -> float | None:
    if not isinstance(recorded_at, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return (now - when).total_seconds() / 86400


def run_sequential(items: list[Item], settings: Settings, events: Handler) -> Iterator[CaseResult]:
    """Each case's result, in order (*events* told the warnings); then, when fixtures were
    broken, a ConfigError listing every problem (the cases after a broken one still run, so
    that all are listed)."""
    problems: list[Problem] = []
    source = RecordedSource(settings, events)
    for item in items:
        started = time.perf_counter()
        skip = skipped(item, "recorded")
        if skip is not None:
            yield judge(item, skip, started)
            continue
        try:
            fixture = load_fixture(item.case.fixture_path, item.case.fixture_display,
                                   max_bytes=settings.max_fixture_bytes)
            check_arguments(item, fixture)
            result = judge(item, source.answer(item, fixture), started)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        except Exception as exc:  # an environment problem or a bug: the case is `error`
            result = judge(item, Errored(exc), started)
        yield result
    if problems:
        raise ConfigError(problems)
