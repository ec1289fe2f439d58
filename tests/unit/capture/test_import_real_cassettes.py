"""Import of cassettes as other projects' recorders write them (tests/data/cassettes, licences in
its README): pydantic-ai's without `version`, LangChain's gzipped `requests`/`responses` lists,
Together's with null fields. Each imports whole, validates and runs green at once."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from replayci.cli import cli

DATA = Path(__file__).resolve().parents[2] / "data" / "cassettes"


def _import(tmp_path: Path, name: str, *args: str) -> tuple[Path, str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    shutil.copy(DATA / name, src / name)
    pack = tmp_path / "pack"
    res = CliRunner().invoke(cli, ["import", str(src / name), "--pack", str(pack), "--strict", *args],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return pack, res.output


def _green(pack: Path) -> str:
    res = CliRunner().invoke(cli, ["validate", "--pack", str(pack)])
    assert res.exit_code == 0, res.output
    run = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded", "--no-color"])
    assert run.exit_code == 0, run.output
    return run.output


def _fixtures(pack: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((pack / "golden").rglob("*.json"))]


def test_pydantic_ai_cassette_without_version(tmp_path):
    assert "version" not in (DATA / "pydantic_ai_multiple_agent_tool_calls.yaml").read_text()
    pack, out = _import(tmp_path, "pydantic_ai_multiple_agent_tool_calls.yaml")
    assert "0 imported, 2 in new sessions, 0 skipped, 0 unsupported, 1 session" in out, out
    assert "1/1 passed" in _green(pack)


def test_langchain_gzipped_requests_and_responses(tmp_path):
    pack, out = _import(tmp_path, "langchain_openai_agent_loop.yaml.gz")
    assert "(cassette): 0 imported, 2 in new sessions, 0 skipped, 0 unsupported, 1 session" in out, out
    assert "1/1 passed" in _green(pack)
    assert b"PLACEHOLDER" not in b"".join(p.read_bytes() for p in (pack / "golden").rglob("*.json"))


def test_together_null_fields(tmp_path):
    pack, out = _import(tmp_path, "together_null_fields.yaml")
    assert "2 imported, 0 skipped, 0 unsupported" in out, out
    docs = _fixtures(pack)
    assert all("tools" in d["original_request"] for d in docs)  # kept as sent...
    plain = next(d for d in docs if d["original_request"]["tools"] is None)
    assert "tools" not in plain["request"] and "tool_calls" not in plain["request"]["messages"][2]  # ...read as absent
    called = next(d for d in docs if d["original_request"]["tools"] is not None)
    assert "$defs" not in called["request"]["tools"][0]["function"]["parameters"]
    assert "2/2 passed" in _green(pack)


@pytest.mark.parametrize("name", ["pydantic_ai_multiple_agent_tool_calls.yaml", "langchain_openai_agent_loop.yaml.gz",
                                  "together_null_fields.yaml"])
def test_every_cassette_here_is_read_by_auto_detection_from_a_folder(tmp_path, name):
    src = tmp_path / "cassettes"
    src.mkdir()
    shutil.copy(DATA / name, src / name)
    res = CliRunner().invoke(cli, ["import", str(src), "--pack", str(tmp_path / "pack")], catch_exceptions=False)
    assert res.exit_code == 0 and f"{name} (cassette)" in res.output and "no recording" not in res.output, res.output
