"""`replayci validate`: load every pack, contract, fixture and recording; run nothing."""
from __future__ import annotations

import os

from .config import Settings
from .errors import ConfigError, Problem, did_you_mean
from .evaluate import tool_schemas
from .fixtures import load_fixture, load_recording
from .hashing import is_pinned
from .loader import display_path, load_packs


def validate_packs(settings: Settings) -> tuple[list[str], dict]:
    """Notes (placeholder hashes) and counts; raises ConfigError listing every problem."""
    if not settings.packs:
        raise ConfigError("no packs found: pass --pack DIR, set 'pack' in .replayci.yml, "
                          "or run `replayci init`")
    packs = load_packs(list(settings.packs), project_root=settings.project_root)
    problems: list[Problem] = []
    notes: list[str] = []
    counts = {"packs": len(packs), "contracts": 0, "cases": 0, "fixtures": 0}
    for pack in packs:
        for contract in pack.contracts:
            counts["contracts"] += 1
            for case in contract.cases:
                counts["cases"] += 1
                try:
                    fixture = load_fixture(case.fixture_path, case.fixture_display,
                                           max_bytes=settings.max_fixture_bytes)
                except ConfigError as exc:
                    problems.extend(exc.problems)
                    continue
                counts["fixtures"] += 1
                declared = tool_schemas(fixture.request)
                if declared:
                    for name in contract.expected_names:
                        if name not in declared:
                            problems.append(Problem(
                                contract.display, int(case.source.rsplit(":", 1)[1]), None,
                                f"tool '{name}' is not declared in the request's tools of "
                                f"{case.fixture_display}" + did_you_mean(name, declared),
                                key=f"golden_cases[{case.id}]"))
                placeholders = [k for k, v in (fixture.boundary or {}).items()
                                if k != "model" and v is not None and not is_pinned(v)]
                if placeholders:
                    notes.append(f"{case.fixture_display}: boundary {', '.join(placeholders)} "
                                 "not pinned (placeholder, not 16 hex digits)")
                rec = os.path.join(pack.recordings_dir, contract.id, f"{case.id}.json")
                if os.path.isfile(rec):
                    try:
                        load_recording(rec, display_path(rec), max_bytes=settings.max_fixture_bytes)
                    except ConfigError as exc:
                        problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    return notes, counts
