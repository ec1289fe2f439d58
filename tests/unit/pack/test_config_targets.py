"""`targets:` in .replayci.yml and `--target PROVIDER:MODEL`: labels, folders, which of them
calls live, and every mistake refused with its place."""
from __future__ import annotations

import pytest

from replayci.config import Target, file_safe, parse_target, resolve
from replayci.core.errors import ConfigError


def config(tmp_path, text: str):
    (tmp_path / ".replayci.yml").write_text(text)
    return lambda flags=None, env=None: resolve(flags or {}, cwd=str(tmp_path), environ=env or {})


def test_targets_from_the_config_with_labels_and_folders(tmp_path):
    settings = config(tmp_path, "targets:\n  - {provider: openai, model: gpt-4o-mini}\n"
                                "  - {provider: anthropic, model: claude-x, base_url: 'http://127.0.0.1:1', "
                                "label: claude@proxy}\n")()
    assert settings.targets == (Target("openai", "gpt-4o-mini", "openai:gpt-4o-mini"),
                                Target("anthropic", "claude-x", "claude@proxy", "http://127.0.0.1:1"))
    assert [t.dir for t in settings.targets] == ["openai_gpt-4o-mini", "claude_proxy"]
    assert settings.live_targets is False and settings.provider == "recorded"  # the config's provider replays


def test_file_safe_labels():
    assert file_safe("bedrock:anthropic.claude-3:0") == "bedrock_anthropic.claude-3_0"
    assert file_safe("../..") == "target" and file_safe("a/b") == "a_b"


def test_which_runs_call_the_targets(tmp_path):
    run = config(tmp_path, "provider: recorded\n")
    flags = {"targets": ("openai:a", "anthropic:b")}
    live = run(flags)
    assert live.live_targets and live.provider == "openai"  # targets on the command line are called
    assert not run({**flags, "provider": "recorded"}).live_targets  # unless --provider recorded says replay
    assert not run(flags, {"REPLAYCI_PROVIDER": "recorded"}).live_targets
    run = config(tmp_path, "targets: [{provider: openai, model: a}]\n")
    assert not run().live_targets
    assert run({"record": True}).live_targets and run({"replay": "auto"}).live_targets
    assert run({"provider": "anthropic"}).live_targets
    assert not run({"replay": "strict"}).live_targets
    assert not config(tmp_path, "provider: openai\n")().live_targets  # no targets: nothing changes


@pytest.mark.parametrize("text,message", [
    ("gpt-4o", "--target 'gpt-4o': expected PROVIDER:MODEL"),
    ("openai:", "--target 'openai:': expected PROVIDER:MODEL"),
    ("recorded:x", "unknown provider 'recorded'"),
    ("opneai:gpt-4o", "did you mean 'openai'"),
])
def test_bad_target_flags(text, message):
    with pytest.raises(ConfigError) as err:
        parse_target(text)
    assert message in str(err.value)


def test_a_target_given_twice(tmp_path):
    with pytest.raises(ConfigError, match="--target openai:a is given twice"):
        config(tmp_path, "provider: recorded\n")({"targets": ("openai:a", "openai:a")})


@pytest.mark.parametrize("text,message", [
    ("targets: []\n", ".replayci.yml:1:1: targets: expected at least one target"),
    ("targets: [{provider: openai}]\n", ".replayci.yml:1:11: targets[0]: missing required key 'model'"),
    ("targets: [{provider: opneai, model: m}]\n", "did you mean 'openai'"),
    ("targets: [{provider: openai, model: m, modle: x}]\n", "unknown key 'modle'"),
    ("targets: [{provider: openai, model: m, label: 'a b'}]\n", "a label (letters, digits"),
    ("targets: openai:m\n", "expected a list of targets"),
    ("targets: [{provider: openai, model: m}, {provider: openai, model: m}]\n",
     "target 'openai:m' is listed twice"),
    ("targets: [{provider: openai, model: m, label: x}, {provider: anthropic, model: n, label: x}]\n",
     "target 'x' is listed twice"),
    ("gates: {baseline: none}\n", "expected no_new_failures"),
])
def test_bad_targets_in_the_config(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        config(tmp_path, text)()
    assert message in str(err.value)
