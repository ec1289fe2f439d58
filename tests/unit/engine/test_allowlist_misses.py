"""Allowlist entries that match no contract or case: validate reports them, a run warns once."""
from __future__ import annotations

import pytest
from builders import fixture, request
from click.testing import CliRunner

import replayci
from replayci.cli import cli

CONTRACT = """
tool: get_weather
golden_cases:
  - {id: a, input_ref: a.json}
  - {id: b, input_ref: a.json}
"""
ENTRY = {"reason_code": "recording_not_found", "owner": "team-a", "expiry_date": "2099-01-01",
         "rationale": "live lane only"}


@pytest.fixture
def stale(pack):
    pack.contract("weather", CONTRACT)
    pack.contract("other", CONTRACT)
    pack.fixture("a.json", fixture(request(), None))
    pack.allowlist([{"contract_path": "contracts/weather.yaml", "case_id": "a", **ENTRY},
                    {"contract_path": "contracts/wether.yaml", **ENTRY},
                    {"contract_path": "contracts/other.yaml", "case_id": "bb", **ENTRY}])
    return pack


def _misses(lines):
    return [line for line in lines if "matches no" in line]


EXPECTED = ["nr-allowlist.json:10: allowlist entry for contracts/wether.yaml matches no contract of pack demo; "
            "did you mean 'contracts/weather.yaml'?",
            "nr-allowlist.json:17: allowlist entry for contracts/other.yaml bb matches no case of that contract; "
            "did you mean 'b'?"]


def _tail(lines):
    return [line[line.index("nr-allowlist.json"):] for line in lines]


@pytest.mark.parametrize("processes", [1, 2])
def test_a_run_warns_once_per_entry_that_matches_nothing(stale, processes):
    result = replayci.run([str(stale.dir)], processes=processes)
    assert {c.id: c.allowlisted for c in result.cases}["demo/weather/a"]
    assert _tail(_misses(result.warnings)) == EXPECTED


def test_the_cli_run_says_it_once_on_stderr(stale):
    res = CliRunner().invoke(cli, ["run", "--no-color"], catch_exceptions=False)
    lines = _misses(res.stderr.splitlines())
    assert len(lines) == 2 and all(line.startswith("replayci: warning: ") for line in lines)


def test_validate_reports_them(stale):
    res = CliRunner().invoke(cli, ["validate"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert _tail(_misses(res.stdout.splitlines())) == EXPECTED
