"""Running a mutation test: each passing case's response mutated, each mutant evaluated by the
engine's own evaluate_response."""
from __future__ import annotations

import time

from ...api import load_settings_packs
from ...config import Settings
from ...core.errors import ConfigError, Problem
from ...engine.cases import Item, evaluate_response, select, skipped
from ...engine.recorded import RecordedSource
from ...pack.fixtures import load_fixture
from ...pack.model import Pack
from .kinds import mutants_of
from .model import ContractMutation, Mutant, MutantOutcome, MutationReport


def outcome(item: Item, request: dict, mutant: Mutant) -> MutantOutcome:
    """The mutant's verdict: killed when a check fails, survived when the contract passes it."""
    result = evaluate_response(item, request, mutant.response, time.perf_counter())
    if result.status == "error":
        return MutantOutcome(item.case.id, mutant, "error", reason=result.reason)
    if result.failures:
        return MutantOutcome(item.case.id, mutant, "killed", result.classification, result.failures)
    return MutantOutcome(item.case.id, mutant, "survived")


def mutate_case(entry: ContractMutation, item: Item, source: RecordedSource, settings: Settings,
                problems: list[Problem]) -> None:
    """Mutate one expect_ok case into *entry*: its mutants' outcomes, or why it was not mutated."""
    started = time.perf_counter()
    if skipped(item, "recorded", started) is not None:
        entry.not_mutated.append((item.case.id, "skipped (provider_modes)"))
        return
    try:
        fixture = load_fixture(item.case.fixture_path, item.case.fixture_display,
                               max_bytes=settings.max_fixture_bytes)
        base = source.run(item, fixture, started)
    except ConfigError as exc:
        problems.extend(exc.problems)
        return
    if base.status != "pass" or base.response is None:
        why = base.status + (f" ({base.reason})" if base.status == "non_reproducible" else "")
        entry.not_mutated.append((item.case.id, why))
        return
    entry.bases[item.case.id] = fixture
    for mutant in mutants_of(item.contract, fixture.request, base.response):
        entry.outcomes.append(outcome(item, fixture.request, mutant))


def mutate_packs(packs: list[Pack], settings: Settings) -> MutationReport:
    """Mutate every passing expect_ok case of *packs* (after --filter) and evaluate the mutants."""
    items = select(packs, settings)
    if settings.filters and not items:
        raise ConfigError("no case matches " + " ".join(f"--filter {f}" for f in settings.filters))
    warnings: list[str] = []
    source = RecordedSource(settings, warnings)
    problems: list[Problem] = []
    by_contract: dict[tuple[str, str], ContractMutation] = {}
    scenarios: dict[tuple[str, str], None] = {}
    for item in items:
        key = (item.pack.pack_id, item.contract.id)
        if getattr(item.contract, "scenario", False):
            scenarios[key] = None  # a trajectory, not one response: not mutated (yet)
            continue
        entry = by_contract.get(key)
        if entry is None:
            entry = by_contract[key] = ContractMutation(item.pack, item.contract)
        if item.case.expect_ok:
            mutate_case(entry, item, source, settings, problems)
    if problems:
        raise ConfigError(problems)
    return MutationReport(list(by_contract.values()), packs, warnings,
                          [(p, c, "a multi-step scenario") for p, c in scenarios])


def mutate(settings: Settings) -> MutationReport:
    """Load the packs of resolved settings and mutate them (used by the CLI)."""
    return mutate_packs(load_settings_packs(settings), settings)
