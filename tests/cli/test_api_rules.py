"""Every rule `replayci run` enforces on its options, `replayci.run` enforces too: the same
message, as a ConfigError (the command line shows it as a usage error, exit 2)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import replayci
from replayci.cli.main import cli
from replayci.core.errors import ConfigError

TARGETS = ["openai:gpt-4o", "anthropic:claude-3-5-haiku-latest"]

# (the API's options, the same on the command line, the message both give)
RULES = [
    ({"provider": "opnai"}, ["--provider", "opnai"],
     "--provider 'opnai' is not one of recorded, openai, openai-responses, anthropic, gemini, bedrock; "
     "did you mean 'openai'?"),
    ({"provider": "recorded", "replay": "auto"}, ["--provider", "recorded", "--replay", "auto"],
     "--provider recorded replays only (strict); --replay auto needs a live provider "
     "(--provider openai or openai-responses or anthropic or gemini or bedrock)"),
    ({"replay": "bogus"}, ["--replay", "bogus"], "--replay 'bogus' is not one of auto, record, off, strict"),
    ({"tool_replay_mode": "lenient"}, ["--tool-replay", "lenient"],
     "--tool-replay 'lenient' is not one of auto, record, off, strict"),
    ({"categories": ["happy"]}, ["--category", "happy"],
     "--category 'happy' is not one of happy_path, edge_case, adversarial, multi_step, regression; "
     "did you mean 'happy_path'?"),
    ({"shard": (3, 2)}, ["--shard", "3/2"], "--shard '3/2': expected 1 <= K <= N"),
    ({"batch_timeout_s": 60.0}, ["--batch-timeout", "60"],
     "--batch-timeout bounds the wait of a batch run: add --batch"),
    ({"provider": "openai", "batch": True, "stream": True}, ["--provider", "openai", "--batch", "--stream"],
     "--stream and --batch: a batch answers whole responses, never streams; drop one"),
    ({"provider": "gemini", "batch": True}, ["--provider", "gemini", "--batch"], None),
    ({"targets": TARGETS, "model": "gpt-4o"}, ["--target", TARGETS[0], "--target", TARGETS[1], "--model", "gpt-4o"],
     "--model gpt-4o does not apply to a comparison: each target names its model (--target PROVIDER:MODEL)"),
    ({"targets": TARGETS, "provider": "recorded", "replay": "record"},
     ["--target", TARGETS[0], "--target", TARGETS[1], "--provider", "recorded", "--replay", "record"],
     "--provider recorded replays the targets' recordings; --replay record calls them: leave out "
     "--provider recorded to call the targets"),
    ({"gate_baseline": True}, ["--gate-baseline"],
     "--gate-baseline needs --baseline REPORT.json (e.g. main's report)"),
]


@pytest.mark.parametrize(("options", "flags", "message"), RULES, ids=[" ".join(r[1]) for r in RULES])
def test_the_api_refuses_what_the_command_line_refuses_with_its_message(starter, monkeypatch, options, flags,
                                                                        message):
    monkeypatch.chdir(starter)
    with pytest.raises(ConfigError) as refused:
        replayci.run(["packs/starter"], **options)
    said = refused.value.problems[0].message
    if message is not None:
        assert said == message
    res = CliRunner().invoke(cli, ["run", "--pack", "packs/starter", *flags])
    assert res.exit_code == 2, res.output
    assert said in " ".join(res.output.split()), res.output  # (click wraps a usage error's lines)
    assert "Traceback" not in res.output


@pytest.mark.parametrize("options", [{"jobs": 0}, {"repeat": 0}, {"jobs": "4"}])
def test_the_api_refuses_a_count_below_one(starter, monkeypatch, options):
    monkeypatch.chdir(starter)
    name, value = next(iter(options.items()))
    with pytest.raises(ConfigError, match=f"--{name} {value!r}: expected a whole number >= 1"):
        replayci.run(["packs/starter"], **options)


def test_options_the_rules_accept_still_run(starter, monkeypatch):
    monkeypatch.chdir(starter)
    assert replayci.run(["packs/starter"], provider="recorded", replay="strict", shard=(1, 1),
                        categories=["happy_path"], jobs=1).ok
