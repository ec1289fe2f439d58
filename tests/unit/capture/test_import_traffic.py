"""Real recorded traffic (shared/data/traffic-dev: 717 cassettes and HAR files of five public
projects) imported whole: every model call in scope written and read as its MANIFEST says, every
agent session a scenario, the recorded run of the pack green, and importing again a no-op."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cassettes import files_of, rendered_from_disk

from replayci import config
from replayci.api import run as run_packs
from replayci.capture.importing import import_sources
from replayci.formats import normalize
from replayci.tools import mutate as mutation

# Calls whose `expected` contradicts the normalization rules, and what replayci reads instead: an
# empty `content` string is no text ("content: null when there is none").
JUDGED = {
    ("Mirascope__mirascope/python/tests/e2e/output/cassettes/test_max_tokens/openai_gpt_5_mini_completions/"
     "async.yaml", 0): ("content", None),
    ("Mirascope__mirascope/typescript/tests/e2e/output/cassettes/format/openai_completions/"
     "parses-structured-output-with-defineformat.har", 0): ("content", None),
    ("Mirascope__mirascope/typescript/tests/e2e/output/cassettes/format/openai_completions/"
     "parses-structured-output-with-zod-schema.har", 0): ("content", None),
}
# APIs of the MANIFEST replayci does not check (their calls are listed as unsupported).
NOT_READ = {"openai-completions", "cohere-chat"}


def _data_dir() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data" / "traffic-dev"
        if candidate.is_dir():
            return candidate
    return None


DATA = _data_dir()
pytestmark = pytest.mark.skipif(DATA is None, reason="the traffic-dev data set is not here")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    pack = tmp_path_factory.mktemp("traffic") / "pack"
    result = import_sources([str(DATA)], str(pack), log=lambda line: None)
    manifest = {f["file"]: f for f in json.loads((DATA / "MANIFEST.json").read_text())["files"]}
    reports = {os.path.relpath(r.file, DATA): r for r in result.files}
    return pack, result, manifest, reports


def _read(path: str, step: int | None) -> dict:
    doc = json.loads(Path(path).read_text())
    if step is not None:
        return normalize(doc["trajectory"][step - 1]["response"])
    return normalize(doc["response"], status=doc["status"])


def test_every_call_in_scope_is_imported_and_read_as_the_manifest_says(imported):
    _, result, manifest, reports = imported
    assert set(reports) == set(manifest)
    matched, unsupported, wrong = 0, 0, []
    for name, info in manifest.items():
        report = reports[name]
        for call in info["calls"]:
            if call["api"] in NOT_READ:
                assert call["entry"] in {p.entry for p in report.unsupported}, (name, call["entry"])
                unsupported += 1
                continue
            assert call["entry"] in report.placed, (name, call["entry"])
            doc = _read(*report.placed[call["entry"]])
            got = {"tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in doc["tool_calls"]],
                   "content": doc["content"], "is_error": not doc["success"]}
            expected = dict(call["expected"])
            judged = JUDGED.get((name, call["entry"]))
            if judged:
                assert expected[judged[0]] != judged[1] and got[judged[0]] == judged[1]
                expected[judged[0]] = judged[1]
            if got == expected:
                matched += 1
            else:
                wrong.append((name, call["entry"], got, expected))
    assert wrong == []
    assert (matched, unsupported) == (1161, 5)
    # Nothing but the MANIFEST's model calls was imported: the rest was skipped.
    placed = sum(len(r.placed) for r in result.files)
    assert placed == matched


def test_every_session_is_a_scenario(imported):
    _, _, manifest, reports = imported
    found = 0
    for name, info in manifest.items():
        scenarios = dict((tuple(entries), path) for entries, path in reports[name].scenarios)
        for session in info["sessions"]:
            path = scenarios.get(tuple(session))
            assert path is not None, (name, session)
            doc = json.loads(Path(path).read_text())
            assert len(doc["trajectory"]) == len(session)
            assert all(step["tool_results"] for step in doc["trajectory"][:-1])
            found += 1
    assert found == 91


def test_the_recorded_run_of_the_pack_is_green(imported):
    pack, _, _, _ = imported
    result = run_packs([str(pack)], provider="recorded")
    statuses = {}
    for case in result.cases:
        statuses.setdefault(case.status, []).append(case)
    # Every case passes: a generated contract never fails the recording it was inferred from.
    assert set(statuses) == {"pass"}, {k: [(c.contract, c.case) for c in v][:5] for k, v in statuses.items()}
    # 760 cases: exchanges whose request differs only in the ids the provider minted and whose answer
    # says the same are one case (896 while the key held those ids).
    assert result.ok and len(result.cases) >= 760
    # Every scenario replays its recorded loop as it happened.
    scenarios = [c for c in result.cases if c.contract.startswith("session_")]
    assert len(scenarios) >= 91 and all(c.status == "pass" for c in scenarios)


def test_every_contract_is_what_its_fixtures_on_disk_give(imported):
    """Written from what the import worked out as it read each exchange (on two cores), every
    contract is what rendering it again from its fixtures alone gives."""
    pack, _, _, _ = imported
    again = rendered_from_disk(pack)
    assert len(again) >= 20
    assert all((pack / "contracts" / name).read_text("utf-8") == text for name, text in again.items())


def test_importing_again_changes_nothing(imported):
    pack, _, _, _ = imported
    before = files_of(pack)
    again = import_sources([str(DATA)], str(pack), log=lambda line: None)
    assert again.fixtures == 0 and again.contracts == []
    assert files_of(pack) == before


def test_the_generated_contracts_kill_the_mutants_of_their_recordings(imported):
    """`replayci mutate` on the imported pack: the generated contracts catch nearly every
    regression written as an edit of their fixtures (bench/import_strength.py prints the figures
    per mutation kind)."""
    pack, _, _, _ = imported
    report = mutation.mutate(config.resolve({"packs": [str(pack)], "filters": []}))
    kinds: dict[str, list[int]] = {}
    for contract in report.contracts:
        for outcome in contract.counted:
            entry = kinds.setdefault(outcome.mutant.kind, [0, 0])
            entry[0] += outcome.status == "killed"
            entry[1] += 1
    assert report.mutants >= 3150  # 3,187 over the 760 cases
    # Every scenario is mutated too, step by step; a session whose recorded answer no contract
    # accepts is a pinned negative (gpt-4o streamed its structured output twice: no JSON).
    scenarios = [c for c in report.contracts if c.contract.scenario and c.contract.cases[0].expect_ok]
    pinned = [c.contract.cases[0].expected_error for c in report.contracts
              if c.contract.scenario and not c.contract.cases[0].expect_ok]
    assert pinned == ["malformed_output"] * len(pinned) and len(pinned) <= 4
    assert len(scenarios) >= 91 and all(c.mutants and c.kill_rate == 1 for c in scenarios)
    assert report.killed / report.mutants >= 0.99, (report.killed, report.mutants)
    # Each kind of regression the traffic allows is caught almost always, not only on average.
    assert {"drop_required", "extra_call", "text_instead_of_call", "type_change", "value_change",
            "rename_undeclared"} <= set(kinds)
    assert all(killed / total >= 0.95 for killed, total in kinds.values()), kinds
