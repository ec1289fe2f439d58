"""The GitHub Action of the repository root (action.yml): valid by the published action schema, and
its steps run in a local shell with a GitHub-like environment (tests/support/action_runner.py).

tests/data/github-action.schema.json is SchemaStore's schema of action metadata files, as
published at https://json.schemastore.org/github-action.json (source:
https://github.com/SchemaStore/schemastore/blob/master/src/schemas/json/github-action.json),
kept here because tests do not use the network.
"""
from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import warmed
import yaml
from action_runner import ActionError, _check_uses, evaluate, run_action, substitute
from builders import REPO, TEMPLATES
from jsonschema import Draft7Validator
from proxy_support import APP, Upstream

ACTION = yaml.safe_load((REPO / "action.yml").read_text("utf-8"))
SCHEMA = json.loads((REPO / "tests" / "data" / "github-action.schema.json").read_text("utf-8"))
BIN = str(Path(sys.executable).parent)  # this environment's replayci and python3, as setup-python would


def _errors(action: dict) -> list[str]:
    return [e.message for e in Draft7Validator(SCHEMA).iter_errors(action)]


def test_action_yml_is_valid_by_the_published_schema():
    Draft7Validator.check_schema(SCHEMA)
    assert _errors(ACTION) == []
    assert ACTION["runs"]["using"] == "composite"
    assert {"packs", "provider", "args", "html-report", "upload-report"} <= set(ACTION["inputs"])


@pytest.mark.parametrize("breakage", ["shell", "input-description", "output-value", "unknown-key"])
def test_the_schema_refuses_what_a_runner_refuses(breakage):
    broken = copy.deepcopy(ACTION)
    run_step = next(s for s in broken["runs"]["steps"] if "run" in s)
    if breakage == "shell":
        del run_step["shell"]
    elif breakage == "input-description":
        del broken["inputs"]["packs"]["description"]
    elif breakage == "output-value":
        del broken["outputs"]["exit-code"]["value"]
    else:
        run_step["timeout"] = 5
    assert _errors(broken)


def test_every_uses_step_names_a_known_action_and_its_inputs():
    uses = [s for s in ACTION["runs"]["steps"] if "uses" in s]
    assert [s["uses"].split("@")[0] for s in uses] == ["actions/setup-python", "actions/upload-artifact"]
    for step in uses:
        _check_uses(step)
    with pytest.raises(ActionError, match="no input named pyhton-version"):
        _check_uses({"uses": "actions/setup-python@v5", "with": {"pyhton-version": "3.12"}})
    with pytest.raises(ActionError, match="OWNER/REPO@vN"):
        _check_uses({"uses": "actions/setup-python@main"})


def test_expressions_are_evaluated_as_a_runner_does():
    ctx = {"inputs": {"upload-report": "true", "python-version": ""}, "steps": {"run": {"outputs": {"x": "1"}}}}
    assert evaluate("always() && inputs.upload-report == 'true'", ctx, "failure") is True
    assert evaluate("success() && inputs.upload-report == 'true'", ctx, "failure") is False
    assert evaluate("inputs.python-version != ''", ctx) is False
    assert evaluate("!(steps.run.outputs.x == '1') || steps.missing.outputs.y == ''", ctx) is True
    assert substitute("${{ steps.run.outputs.x }}-${{ inputs.python-version }}.", ctx) == "1-."
    with pytest.raises(ActionError, match="cannot read"):
        evaluate("inputs.a ~ 'b'", ctx)


def _project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(TEMPLATES / "starter", ws / "packs" / "starter")
    shutil.copy(TEMPLATES / "replayci.yml", ws / ".replayci.yml")
    return ws


def _run(tmp_path: Path, ws: Path, **inputs):
    inputs = {"install": "none", **{k.replace("_", "-"): v for k, v in inputs.items()}}
    scratch = tmp_path / "runner"
    scratch.mkdir(exist_ok=True)
    return run_action(inputs, ws, path_first=_path_first(scratch), scratch=scratch), scratch


def _path_first(scratch: Path) -> str:
    """The `replayci` the steps find first: this environment's, forked from the warm CLI
    (tests/support/warmed.py); then this environment's python3 and pip, as setup-python puts them."""
    shims = scratch / "bin"
    shims.mkdir(exist_ok=True)
    replayci = shims / "replayci"
    replayci.write_text(f'#!/bin/sh\nexec {shlex.join(warmed.cli())} "$@"\n', "utf-8")
    replayci.chmod(0o755)
    return f"{shims}{os.pathsep}{BIN}"


def test_a_passing_run_writes_the_summary_and_the_report_and_passes(tmp_path):
    ws = _project(tmp_path)
    result, scratch = _run(tmp_path, ws)
    assert result.ok, [(s.name, s.outcome, s.stderr) for s in result.steps]
    assert result.outputs == {"exit-code": "0", "html-report": str(ws / "replayci-report.html")}
    assert (ws / "replayci-report.html").read_text("utf-8").startswith("<!DOCTYPE html>")
    summary = (scratch / "github_step_summary").read_text("utf-8")
    assert summary.startswith("## replayci ✅") and "6/6" in summary.replace(" ", "")
    setup = result.step("Set up Python")
    assert (setup.ran, setup.with_) == (False, {"python-version": "3.12"})
    upload = result.step("Upload the HTML report")
    assert upload.with_ == {"name": "replayci-report", "path": str(ws / "replayci-report.html"),
                            "if-no-files-found": "warn"}
    assert "replayci 0." in result.step("Install replayci").stdout
    assert result.step("Pass the run's exit code on").returncode == 0


def test_a_failing_run_annotates_uploads_and_passes_exit_code_1_on(tmp_path):
    ws = _project(tmp_path)
    contract = ws / "packs" / "starter" / "contracts" / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8").replace("equals: San Francisco", "equals: Paris"), "utf-8")
    result, scratch = _run(tmp_path, ws, artifact_name="nightly")
    assert not result.ok and result.outputs["exit-code"] == "1"
    run = result.step("Run replayci")
    assert run.outcome == "success"  # the run step records the code; the last step passes it on
    assert "::error file=packs/starter/contracts/get_weather.yaml,line=" in run.stdout + run.stderr
    assert "title=invariant_violation::starter/get_weather/tool_call_success" in run.stdout + run.stderr
    assert "## replayci ❌" in (scratch / "github_step_summary").read_text("utf-8")
    # the run step records the code and passes, so a failed run's report is uploaded too
    assert result.step("Upload the HTML report").with_["name"] == "nightly"
    assert result.step("Pass the run's exit code on").returncode == 1


def test_packs_args_and_report_inputs_reach_the_run(tmp_path):
    ws = _project(tmp_path)
    shutil.copytree(ws / "packs" / "starter", ws / "packs" / "second")
    (ws / "packs" / "second" / "pack.yaml").write_text(
        (ws / "packs" / "second" / "pack.yaml").read_text("utf-8").replace("pack_id: starter", "pack_id: second"))
    result, _ = _run(tmp_path, ws, packs="packs/starter\npacks/second",
                     args="--filter 'get_weather/tool_*' --report-json \"out dir/r.json\"", html_report="")
    assert result.ok and result.outputs == {"exit-code": "0", "html-report": ""}
    cases = json.loads((ws / "out dir" / "r.json").read_text("utf-8"))["cases"]
    assert sorted((c["pack"], c["case"]) for c in cases) == [
        ("second", "tool_call_success"), ("second", "tool_not_invoked"),
        ("starter", "tool_call_success"), ("starter", "tool_not_invoked")]
    assert not (ws / "replayci-report.html").exists()
    assert result.step("Upload the HTML report").outcome == "skipped"


def test_upload_report_false_skips_the_upload(tmp_path):
    ws = _project(tmp_path)
    result, _ = _run(tmp_path, ws, upload_report="false")
    assert result.ok and result.step("Upload the HTML report").outcome == "skipped"
    assert (ws / "replayci-report.html").exists()


@pytest.mark.parametrize(("inputs", "shown"), [
    ({"provider": "nonsense"}, "nonsense"),
    ({"args": "--filter 'unbalanced"}, "the args input is not quoted as in a shell"),
])
def test_a_usage_error_is_exit_code_2_passed_on(tmp_path, inputs, shown):
    ws = _project(tmp_path)
    result, _ = _run(tmp_path, ws, **inputs)
    run = result.step("Run replayci")
    assert result.outputs["exit-code"] == "2" and shown in run.stdout + run.stderr
    assert result.step("Pass the run's exit code on").returncode == 2 and not result.ok


def test_an_unknown_input_is_refused(tmp_path):
    with pytest.raises(ActionError, match="unexpected input.*packz.*valid inputs are packs"):
        run_action({"packz": "x"}, tmp_path)


def test_the_ci_recipe_of_the_docs_uses_this_action():
    for page in (REPO / "README.md", REPO / "docs" / "ci.md"):
        text = page.read_text("utf-8")
        assert "uses: replayci/replayci@v" in text, page


def test_a_failed_install_skips_the_run_and_fails_the_action(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip never asks an index here
    ws = _project(tmp_path)
    result, _ = _run(tmp_path, ws, install=str(tmp_path / "missing" / "replayci-0.1.0-py3-none-any.whl"))
    install = result.step("Install replayci")
    assert install.outcome == "failure" and "missing" in install.stdout + install.stderr
    assert [s.outcome for s in result.steps[2:]] == ["skipped", "skipped", "skipped"]
    assert not result.ok and result.outputs == {"exit-code": "", "html-report": ""}


def _proxied_project(tmp_path: Path, upstream_url: str, python: list[str]) -> Path:
    """A workspace whose pack the proxy recorded from an app on the real openai SDK."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text(APP, "utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([*warmed.cli(env), "proxy", "--pack", "packs/app", "--mode", "record",
                           "--upstream", f"openai={upstream_url}/v1", "--", *python, "app.py", "chat"],
                          cwd=ws, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    return ws


def test_a_command_runs_under_the_proxy_replaying_then_checking(tmp_path, warm_python):
    with Upstream() as upstream:
        ws = _proxied_project(tmp_path, upstream.url, warm_python)
        replayed, _ = _run(tmp_path, ws, packs="packs/app", command=" ".join([*warm_python, "app.py", "chat"]))
        assert replayed.ok and replayed.outputs == {"exit-code": "0", "html-report": ""}, \
            [(s.name, s.stderr) for s in replayed.steps]
        assert "1 replayed" in replayed.step("Run replayci").stderr
        checked, _ = _run(tmp_path, ws, packs="packs/app", command=" ".join([*warm_python, "app.py", "chat"]),
                          proxy_mode="check", args=f"--upstream openai={upstream.url}/v1 --report-json r.json")
    assert checked.ok and checked.outputs["exit-code"] == "0", [(s.name, s.stderr) for s in checked.steps]
    assert (ws / "replayci-report.html").exists()
    assert [c["origin"] for c in json.loads((ws / "r.json").read_text("utf-8"))["cases"]] == ["check"]
    # A changed question misses in replay: the command's failure is the action's.
    (ws / "app.py").write_text((ws / "app.py").read_text("utf-8").replace("weather in Paris", "weather in Lyon"))
    missed, _ = _run(tmp_path, ws, packs="packs/app", command=" ".join([*warm_python, "app.py", "chat"]))
    assert missed.outputs["exit-code"] == "1" and not missed.ok


@pytest.mark.parametrize(("inputs", "shown"), [
    ({"proxy_mode": "record"}, "the proxy-mode input is replay or check, not 'record'"),
    ({"packs": ""}, "the command input runs under the proxy of one pack"),
    ({"command": "python 'app.py"}, "the command input is not quoted as in a shell"),
])
def test_a_bad_command_input_is_exit_code_2(tmp_path, inputs, shown):
    ws = _project(tmp_path)
    result, _ = _run(tmp_path, ws, **{"packs": "packs/starter", "command": "python app.py", **inputs})
    run = result.step("Run replayci")
    assert result.outputs["exit-code"] == "2" and shown in run.stdout + run.stderr
    assert not result.ok
