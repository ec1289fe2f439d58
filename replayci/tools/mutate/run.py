"""Running a mutation test: each passing case's response mutated, each mutant judged by the
engine's own judge."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ...api import load_settings_packs
from ...checks.failure import Status
from ...config import Settings
from ...core.errors import ConfigError, Problem
from ...engine.answers import Response
from ...engine.cases import Item, select, skipped
from ...engine.events import Warnings
from ...engine.judge import judge
from ...engine.recorded import RecordedSource
from ...engine.results import CaseResult
from ...pack.fixtures import Fixture, load_fixture
from ...pack.model import Pack
from .kinds import mutants_of
from .model import ContractMutation, Mutant, MutantOutcome, MutationReport


def outcome(item: Item, request: dict, mutant: Mutant) -> MutantOutcome:
    """The mutant's verdict: killed when a check fails, survived when the contract passes it."""
    return verdict(item, mutant, judge(item, Response(request, mutant.response)))


def verdict(item: Item, mutant: Mutant, result: CaseResult) -> MutantOutcome:
    """A mutant's outcome from the case result its answer got."""
    if result.status == Status.ERROR:
        return MutantOutcome(item.case.id, mutant, "error", reason=result.reason)
    if result.failures:
        return MutantOutcome(item.case.id, mutant, "killed", result.classification, result.failures)
    return MutantOutcome(item.case.id, mutant, "survived")


def _passing_base(entry: ContractMutation, item: Item, source: RecordedSource, settings: Settings,
                  usable: Callable[[CaseResult], bool], **run: Any) -> tuple[Fixture, CaseResult] | None:
    """The case's fixture and its recorded run (*run*: RecordedSource.answer's options), when it
    passes and is *usable*; else None, with why it is not mutated in *entry* (a broken fixture:
    ConfigError)."""
    started = time.perf_counter()
    if skipped(item, "recorded") is not None:
        entry.not_mutated.append((item.case.id, "skipped (provider_modes)"))
        return None
    fixture = load_fixture(item.case.fixture_path, item.case.fixture_display, max_bytes=settings.max_fixture_bytes)
    base = judge(item, source.answer(item, fixture, **run), started)
    if base.status != Status.PASS or not usable(base):
        why = base.status + (f" ({base.reason})" if base.status == Status.NON_REPRODUCIBLE else "")
        entry.not_mutated.append((item.case.id, why))
        return None
    entry.bases[item.case.id] = fixture
    return fixture, base


def mutate_case(entry: ContractMutation, item: Item, source: RecordedSource, settings: Settings) -> None:
    """Mutate one expect_ok case into *entry*: its mutants' outcomes, or why it was not mutated."""
    passing = _passing_base(entry, item, source, settings, lambda base: base.response is not None)
    if passing is None:
        return
    fixture, base = passing
    for mutant in mutants_of(item.contract, fixture.request, base.response):
        entry.outcomes.append(outcome(item, fixture.request, mutant))


def mutate_scenario(entry: ContractMutation, item: Item, source: RecordedSource, settings: Settings) -> None:
    """Mutate one scenario case: each recorded step's answer in turn is replaced by each of its
    mutants (the other steps, and every tool result, as recorded) and the loop replayed."""
    recorded: list[list[dict]] = []
    passing = _passing_base(entry, item, source, settings, lambda base: bool(recorded),
                            edit_steps=lambda steps: recorded.append(steps) or steps)
    if passing is None:
        return
    fixture, _ = passing
    for n, step in enumerate(recorded[0]):
        for m in mutants_of(item.contract, fixture.request, step["response"]):
            mutant = Mutant(m.kind, f"step{n + 1}.{m.name}", f"{m.what} at step {n + 1}",
                            f"{m.hint} (step {n + 1})", m.response)

            def edit(steps: list[dict], n: int = n, mutant: Mutant = mutant) -> list[dict]:
                return [{**s, "response": mutant.response} if k == n else s for k, s in enumerate(steps)]

            entry.outcomes.append(verdict(item, mutant, judge(item, source.answer(item, fixture, edit_steps=edit))))


def mutate_packs(packs: list[Pack], settings: Settings) -> MutationReport:
    """Mutate every passing expect_ok case of *packs* (after --filter) and evaluate the mutants."""
    items = select(packs, settings)
    if settings.filters and not items:
        raise ConfigError("no case matches " + " ".join(f"--filter {f}" for f in settings.filters))
    heard = Warnings()
    source = RecordedSource(settings, heard)
    problems: list[Problem] = []
    by_contract: dict[tuple[str, str], ContractMutation] = {}
    for item in items:
        key = (item.pack.pack_id, item.contract.id)
        entry = by_contract.get(key)
        if entry is None:
            entry = by_contract[key] = ContractMutation(item.pack, item.contract)
        if not item.case.expect_ok:
            continue
        try:
            (mutate_scenario if item.contract.scenario else mutate_case)(entry, item, source, settings)
        except ConfigError as exc:  # a broken fixture: listed with the others
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    return MutationReport(list(by_contract.values()), packs, heard.texts)


def mutate(settings: Settings) -> MutationReport:
    """Load the packs of resolved settings and mutate them (used by the CLI)."""
    return mutate_packs(load_settings_packs(settings), settings)
