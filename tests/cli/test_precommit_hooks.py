"""The pre-commit hooks of .pre-commit-hooks.yaml: valid by pre-commit's own manifest loader, run
on the files they name, and their entries run as pre-commit runs them (the entry split as a shell
would, the hook's args after it, no file names: pass_filenames is false) on a good and a broken
project."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from builders import REPO, TEMPLATES
from pre_commit.clientlib import InvalidManifestError, load_manifest

HOOKS = {hook["id"]: hook for hook in load_manifest(str(REPO / ".pre-commit-hooks.yaml"))}

PACK_FILES = [".replayci.yml", ".replayci.yaml", "packs/a/pack.yaml", "packs/a/nr-allowlist.json",
              "packs/a/contracts/get_weather.yaml", "packs/a/contracts/sub/x.yml", "packs/a/golden/x.json",
              "packs/a/golden/negative/x.json", "packs/a/recordings/c/case.json", "pack.yaml",
              "packs/a/tools/weather.json"]
OTHER_FILES = ["README.md", "app.py", "packs/a/tools/sub/weather.json", "packs/a/notes.yaml", "contracts.yaml",
               "packs/a/golden/x.json.bak", "xpack.yaml", "packs/a/contracts/x.txt"]


def test_the_manifest_is_valid_by_pre_commit():
    assert set(HOOKS) == {"replayci-validate", "replayci"}
    for hook in HOOKS.values():
        assert hook["language"] == "python" and hook["pass_filenames"] is False


def test_pre_commit_refuses_a_broken_manifest(tmp_path):
    broken = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text("utf-8"))
    del broken[0]["entry"]
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(broken), "utf-8")
    with pytest.raises(InvalidManifestError):
        load_manifest(str(tmp_path / "m.yaml"))


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_the_hooks_run_on_pack_files_only(hook):
    files = re.compile(HOOKS[hook]["files"])
    exclude = re.compile(HOOKS[hook]["exclude"])
    picked = lambda path: bool(files.search(path)) and not exclude.search(path)  # noqa: E731 (pre-commit's rule)
    assert [p for p in PACK_FILES if not picked(p)] == []
    assert [p for p in OTHER_FILES if picked(p)] == []


def _run_hook(hook_id: str, project: Path) -> subprocess.CompletedProcess:
    hook = HOOKS[hook_id]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}
    return subprocess.run([*shlex.split(hook["entry"]), *hook["args"]], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)


def _project(tmp_path: Path) -> Path:
    shutil.copytree(TEMPLATES / "starter", tmp_path / "packs" / "starter")
    shutil.copy(TEMPLATES / "replayci.yml", tmp_path / ".replayci.yml")
    return tmp_path


def test_both_hooks_pass_a_good_project(tmp_path):
    project = _project(tmp_path)
    for hook in HOOKS:
        out = _run_hook(hook, project)
        assert out.returncode == 0, (hook, out.stdout, out.stderr)


def test_validate_refuses_a_broken_pack_naming_the_file(tmp_path):
    project = _project(tmp_path)
    contract = project / "packs" / "starter" / "contracts" / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8").replace("golden_cases:", "golden_casez:"), "utf-8")
    out = _run_hook("replayci-validate", project)
    assert out.returncode == 2
    assert "contracts/get_weather.yaml" in out.stdout + out.stderr and "Traceback" not in out.stderr


def test_the_recorded_run_hook_fails_a_failing_gate(tmp_path):
    project = _project(tmp_path)
    contract = project / "packs" / "starter" / "contracts" / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8").replace("equals: San Francisco", "equals: Paris"), "utf-8")
    assert _run_hook("replayci-validate", project).returncode == 0
    out = _run_hook("replayci", project)
    assert out.returncode == 1 and "invariant_violation" in out.stdout


def test_the_docs_use_hooks_that_exist():
    text = (REPO / "docs" / "ci.md").read_text("utf-8")
    block = text.split("## pre-commit", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    (repo,) = yaml.safe_load(block)["repos"]
    assert repo["repo"] == "https://github.com/replayci/replayci" and re.fullmatch(r"v\d+\.\d+\.\d+", repo["rev"])
    assert [h["id"] for h in repo["hooks"]] == ["replayci-validate", "replayci"]
