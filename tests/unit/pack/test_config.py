"""`.replayci.yml` discovery and precedence: flag > environment > .replayci.yml > pack.yaml > default."""
from __future__ import annotations

from replayci.config import find_config, resolve


def test_found_in_the_nearest_parent(tmp_path):
    (tmp_path / ".replayci.yml").write_text("provider: recorded\nmodel: from-root\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config(str(deep)) == str(tmp_path / ".replayci.yml")
    settings = resolve({}, cwd=str(deep), environ={})
    assert settings.project_root == str(tmp_path) and settings.model == "from-root"
    (tmp_path / "a" / ".replayci.yml").write_text("model: nearer\n")
    assert resolve({}, cwd=str(deep), environ={}).model == "nearer"


def test_relative_paths_resolve_against_the_project_root(tmp_path):
    (tmp_path / "packs" / "p").mkdir(parents=True)
    (tmp_path / "packs" / "p" / "pack.yaml").write_text("pack_id: p\n")
    (tmp_path / ".replayci.yml").write_text("pack: packs/p\n")
    sub = tmp_path / "src"
    sub.mkdir()
    assert resolve({}, cwd=str(sub), environ={}).packs == (str(tmp_path / "packs" / "p"),)


def test_default_packs_are_every_packs_star(tmp_path):
    for name in ("b", "a"):
        (tmp_path / "packs" / name).mkdir(parents=True)
        (tmp_path / "packs" / name / "pack.yaml").write_text(f"pack_id: {name}\n")
    (tmp_path / "packs" / "not-a-pack").mkdir()
    settings = resolve({}, cwd=str(tmp_path), environ={})
    assert settings.packs == (str(tmp_path / "packs" / "a"), str(tmp_path / "packs" / "b"))


def test_precedence(tmp_path):
    (tmp_path / ".replayci.yml").write_text("provider: anthropic\nmodel: config-model\njobs: 3\n")
    env = {"REPLAYCI_MODEL": "env-model", "REPLAYCI_JOBS": "5"}
    s = resolve({}, cwd=str(tmp_path), environ=env)
    assert (s.provider, s.model, s.jobs) == ("anthropic", "env-model", 5)
    assert s.sources == {"provider": "config", "model": "env", "jobs": "env"}
    s = resolve({"model": "flag-model", "provider": "openai"}, cwd=str(tmp_path), environ=env)
    assert (s.provider, s.model) == ("openai", "flag-model")
    s = resolve({}, cwd=str(tmp_path), environ={"REPLAYCI_PROVIDER": "recorded"})
    assert s.provider == "recorded"


def test_processes_from_the_config_the_environment_or_a_flag(tmp_path):
    import pytest

    from replayci.core.errors import ConfigError

    assert resolve({}, cwd=str(tmp_path), environ={}).processes is None  # chosen by size
    (tmp_path / ".replayci.yml").write_text("processes: 1\n")
    assert resolve({}, cwd=str(tmp_path), environ={}).processes == 1
    assert resolve({}, cwd=str(tmp_path), environ={"REPLAYCI_PROCESSES": "8"}).processes == 2  # two at most
    assert resolve({"processes": 2}, cwd=str(tmp_path), environ={"REPLAYCI_PROCESSES": "1"}).processes == 2
    for bad in ("0", "two"):
        with pytest.raises(ConfigError, match="REPLAYCI_PROCESSES"):
            resolve({}, cwd=str(tmp_path), environ={"REPLAYCI_PROCESSES": bad})
    (tmp_path / ".replayci.yml").write_text("processes: 0\n")
    with pytest.raises(ConfigError, match="processes"):
        resolve({}, cwd=str(tmp_path), environ={})


def test_defaults_without_a_config(tmp_path):
    s = resolve({}, cwd=str(tmp_path), environ={})
    assert (s.provider, s.jobs, s.replay, s.ttl_days, s.config_file) == ("recorded", 4, None, 14, None)


def test_pack_yaml_gates_lose_to_the_config(pack):
    from builders import call, fixture, request, response

    import replayci

    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: a, input_ref: a.json}\n"
                             "  - {id: b, input_ref: b.json}\n")
    pack.fixture("a.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("b.json", fixture(request(), response(content="no")))
    (pack.dir / "pack.yaml").write_text("pack_id: demo\ngates: {pass_rate: 0.5}\n")
    assert replayci.run([str(pack.dir)]).ok
    (pack.root / ".replayci.yml").write_text("gates: {pass_rate: 0.9}\n")
    assert not replayci.run([str(pack.dir)]).ok


def _packs(root, *names):
    for name in names:
        (root / "packs" / name).mkdir(parents=True)
        (root / "packs" / name / "pack.yaml").write_text(f"pack_id: {name}\n")


def test_packs_take_globs(tmp_path):
    _packs(tmp_path, "b", "a", "other")
    (tmp_path / "packs" / "a-not-a-pack").mkdir()
    (tmp_path / ".replayci.yml").write_text("packs: ['packs/a*', packs/b]\n")
    s = resolve({}, cwd=str(tmp_path), environ={})
    assert s.packs == (str(tmp_path / "packs" / "a"), str(tmp_path / "packs" / "b"))
    assert s.unselected_packs == ("packs/other",)
    (tmp_path / ".replayci.yml").write_text("packs: [packs/*]\n")
    s = resolve({}, cwd=str(tmp_path), environ={})
    assert len(s.packs) == 3 and s.unselected_packs == ()


def test_a_glob_that_matches_no_pack_is_a_config_error(tmp_path):
    import pytest

    from replayci.core.errors import ConfigError

    _packs(tmp_path, "a")
    (tmp_path / ".replayci.yml").write_text("pack: 'nope/*'\n")
    with pytest.raises(ConfigError, match="nope/"):
        resolve({}, cwd=str(tmp_path), environ={})


def test_only_a_config_selection_leaves_packs_out(tmp_path):
    _packs(tmp_path, "a", "b")
    assert resolve({}, cwd=str(tmp_path), environ={}).unselected_packs == ()
    (tmp_path / ".replayci.yml").write_text("pack: packs/a\n")
    assert resolve({}, cwd=str(tmp_path), environ={}).unselected_packs == ("packs/b",)
    assert resolve({"packs": ["packs/a"]}, cwd=str(tmp_path), environ={}).unselected_packs == ()
