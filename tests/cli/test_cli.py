"""The real CLI on real packs: output, reports, exit codes, init, validate, query."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import warmed
from builders import REPO, call, fixture, request, response
from click.testing import CliRunner

from replayci.cli import cli

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"


def blank(text: str) -> str:
    return re.sub(r"\d+\.\d\d s\b", "X.XX s", text)


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("REPLAYCI_UPDATE_SNAPSHOTS"):
        path.write_text(text, "utf-8")
    assert text == path.read_text("utf-8")


def test_starter_terminal_output(starter):
    res = invoke("--no-color")
    assert res.exit_code == 0, res.output
    snapshot("starter.txt", blank(res.output))


def test_failure_output_with_details(pack):
    pack.contract("weather", """
tool: get_weather
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - path: "$.location"
        equals: Paris
golden_cases:
  - id: right_city
    input_ref: ok.json
  - id: wrong_city
    input_ref: lyon.json
""")
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("lyon.json", fixture(request(), response(call("get_weather", {"location": "Lyon"}))))
    res = invoke("--no-color")
    assert res.exit_code == 1
    snapshot("failure.txt", blank(res.output))
    assert 'get_weather: $.location equals "Paris", got "Lyon"   (packs/demo/contracts/weather.yaml:5)' in res.output
    quiet = invoke("--no-color", "-q")
    assert "right_city" not in quiet.output and "wrong_city" in quiet.output


def test_json_report_on_stdout_lines_on_stderr(starter):
    proc = subprocess.run([*warmed.cli(), "--json"], cwd=starter,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["version"] == 1
    assert set(report) >= {"version", "run", "summary", "cases"}
    assert report["run"]["provider"] == "recorded"
    assert report["summary"]["pass"] == 6 and report["summary"]["gates"]["pass_rate"]["passed"]
    first = report["cases"][0]
    assert set(first) >= {"pack", "contract", "case", "status", "classification", "reason", "allowlisted",
                          "fingerprint", "failures", "duration_ms", "source"}
    assert (first["pack"], first["contract"]) == ("starter", "get_weather")
    assert first["source"].startswith("packs/starter/contracts/get_weather.yaml:")
    assert "tool_call_success" in proc.stderr


def test_report_json_file_and_stable_order(starter, tmp_path):
    out = tmp_path / "r.json"
    assert invoke("--report-json", str(out)).exit_code == 0
    cases = [(c["contract"], c["case"]) for c in json.loads(out.read_text())["cases"]]
    assert cases[0] == ("get_weather", "tool_call_success") and len(cases) == 6


def test_color_only_when_asked(starter):
    res = CliRunner().invoke(cli, [], color=True)
    assert "\x1b[" not in res.output  # not a terminal
    assert "\x1b[" not in invoke("--no-color").output


def test_exit_codes(starter):
    assert invoke().exit_code == 0
    res = CliRunner().invoke(cli, ["--provider", "opnai"])
    assert res.exit_code == 2 and "did you mean 'openai'" in res.output
    res = CliRunner().invoke(cli, ["--pack", "nowhere"])
    assert res.exit_code == 2 and "nowhere" in res.output and "Traceback" not in res.output


def test_internal_error_exit_3_traceback_only_with_v(starter, monkeypatch):
    import replayci.engine.tally

    def boom(*a, **k):
        raise RuntimeError("kaput")

    monkeypatch.setattr(replayci.engine.tally, "summarize", boom)
    res = CliRunner().invoke(cli, [])
    assert res.exit_code == 3 and "internal error: RuntimeError: kaput" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["-v"])
    assert res.exit_code == 3 and "Traceback" in res.output and "kaput" in res.output


def test_init_writes_a_passing_project_and_never_overwrites(tmp_path):
    proc = subprocess.run([*warmed.cli(), "init", str(tmp_path / "new")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    new = tmp_path / "new"
    assert (new / ".replayci.yml").is_file() and (new / "packs/starter/pack.yaml").is_file()
    run = subprocess.run(warmed.cli(), cwd=new, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    for classification in ("tool_not_invoked", "wrong_tool", "malformed_arguments", "schema_violation",
                           "unexpected_error"):
        assert f"(expected {classification})" in run.stdout
    contract = new / "packs/starter/contracts/get_weather.yaml"
    contract.write_text(contract.read_text() + "# mine\n")
    again = subprocess.run([*warmed.cli(), "init", str(new)],
                           capture_output=True, text=True, check=False)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert contract.read_text().endswith("# mine\n")


def test_packs_starter_is_the_init_template():
    template = REPO / "replayci" / "tools" / "templates" / "starter"
    for path in template.rglob("*"):
        if path.is_file():
            twin = REPO / "packs" / "starter" / path.relative_to(template)
            assert twin.read_bytes() == path.read_bytes(), twin


def test_validate(starter):
    res = invoke("validate")
    assert res.exit_code == 0
    assert "ok: 1 packs, 1 contracts, 6 cases, 6 fixtures checked" in res.output


def test_validate_reports_placeholder_hashes(pack):
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: c, input_ref: c.json}\n")
    doc = fixture(request(), response(call("get_weather", {"location": "Paris"})))
    doc["boundary"]["tool_schema_hash"] = "starter_tool_001"
    pack.fixture("c.json", doc)
    res = invoke("validate")
    assert res.exit_code == 0 and "tool_schema_hash not pinned" in res.output


def test_query(starter):
    res = invoke("query", "$.tool_calls[0].arguments", "packs/starter/golden/get_weather.success.json")
    assert res.exit_code == 0
    assert json.loads(res.output) == [{"location": "San Francisco", "unit": "celsius"}]
    res = invoke("query", "$.tools[*].function.name", "packs/starter/golden/get_weather.success.json",
                 "--document", "request")
    assert json.loads(res.output) == ["get_weather", "get_time"]
    bad = CliRunner().invoke(cli, ["query", "$.tool_calls[", "packs/starter/golden/get_weather.success.json"])
    assert bad.exit_code == 2 and "invalid JSONPath" in bad.output


def test_version_and_module_entry():
    # A cold interpreter: the module entry itself is what is tested.
    proc = subprocess.run([sys.executable, "-m", "replayci", "--version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("replayci ")


def test_recorded_path_imports_no_provider_sdk(starter):
    # The starter pack has a schema_violation case: plain schemas are explained without jsonschema.
    proc = _run_then(starter, [], "bad = sorted(m for m in sys.modules if m.split('.')[0] in ("
                     "'openai', 'anthropic', 'google', 'boto3', 'botocore', 'httpx', 'httpx2', 'jsonschema', "
                     "'jsonpath_rfc9535'))\n"
                     "print('IMPORTED', bad, code)\n")
    assert "IMPORTED [] 0" in proc.stdout, proc.stdout + proc.stderr


def _run_then(cwd, args: list, then: str) -> subprocess.CompletedProcess:
    """A run in a fresh interpreter (the command group, not the console script: that leaves
    with os._exit), then the Python code *then*, with the exit status in ``code``."""
    script = ("import sys\nfrom replayci.cli import cli\n"
              f"try:\n    cli.main(args={args!r}, prog_name='replayci')\n"
              "except SystemExit as e:\n    code = e.code\n" + then)
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, check=False)


def test_example_packs_pass():
    proc = subprocess.run([*warmed.cli(), "--no-color"], cwd=REPO, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_color_on_a_terminal_unless_no_color():
    from replayci.cli.output import wants_color

    class Tty:
        def isatty(self):
            return True

    assert wants_color(False, Tty(), {}) is True
    assert wants_color(True, Tty(), {}) is False
    assert wants_color(False, Tty(), {"NO_COLOR": "1"}) is False
    assert wants_color(False, io.StringIO(), {}) is False  # not a terminal
    assert wants_color(False, io.StringIO(), {"FORCE_COLOR": "1"}) is True
    assert wants_color(False, Tty(), {"FORCE_COLOR": "1", "NO_COLOR": ""}) is False


def test_colored_output_when_forced(starter):
    res = CliRunner().invoke(cli, [], color=True, env={"FORCE_COLOR": "1"})
    assert "\x1b[32m" in res.output  # green "pass"
    assert "\x1b[" not in CliRunner().invoke(cli, ["--no-color"], color=True, env={"FORCE_COLOR": "1"}).output


def test_console_script_exit_codes_and_whole_output_through_a_pipe(starter):
    """The console script leaves with os._exit: every byte must still be written."""
    def run(*args):
        return subprocess.run([*warmed.cli(), *args], cwd=starter,
                              capture_output=True, text=True, check=False)

    ok = run("--json")
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)  # complete JSON, not cut at a buffer boundary
    assert report["summary"]["total"] == len(report["cases"]) > 0
    contract = starter / "packs/starter/contracts/get_weather.yaml"
    contract.write_text(contract.read_text().replace("type: string", "type: number", 1))
    gate = run()
    assert gate.returncode == 1 and " 0 failed" not in gate.stdout.splitlines()[-1]
    bad = run("--category", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_a_recorded_run_in_process_leaves_the_collector_on(starter):
    import gc

    assert gc.isenabled()
    res = CliRunner().invoke(cli, [])
    assert res.exit_code == 0, res.output
    assert gc.isenabled()
    gc.unfreeze()  # (what the run froze goes back to the collector)


def test_the_example_packs_run_without_jsonschema():
    """arguments_schema, matches_schema and schema failures of plain schemas (the travel pack
    has all three) need no jsonschema; a schema naming another draft still gets it."""
    proc = _run_then(REPO, ["-q"], "print('LOADED', 'jsonschema' in sys.modules, code)\n"
                     "from replayci.checks.schemas import compile_schema\n"
                     "compile_schema({'$schema': 'http://json-schema.org/draft-07/schema#', 'type': 'object'},"
                     " check=True)\n"
                     "print('LOADED', 'jsonschema' in sys.modules)\n")
    assert "LOADED False 0\nLOADED True" in proc.stdout, proc.stdout + proc.stderr


def test_init_selects_no_pack_so_an_added_pack_runs():
    text = (REPO / "replayci" / "tools" / "templates" / "replayci.yml").read_text("utf-8")
    assert not re.search(r"^\s*packs?\s*:", text, re.M)


def test_packs_the_config_leaves_out_are_named_on_stderr(starter):
    import shutil

    for name in ("zeta", "alpha"):
        shutil.copytree(starter / "packs" / "starter", starter / "packs" / name)
        pack_yaml = starter / "packs" / name / "pack.yaml"
        pack_yaml.write_text(pack_yaml.read_text().replace("pack_id: starter", f"pack_id: {name}"))
    assert "alpha" not in invoke("--no-color").stderr  # every pack runs: nothing to say
    (starter / ".replayci.yml").write_text("pack: packs/starter\n")
    res = invoke("--no-color")
    lines = [line for line in res.stderr.splitlines() if "not selected" in line]
    assert len(lines) == 1 and "packs/alpha, packs/zeta" in lines[0], res.stderr
    (starter / ".replayci.yml").write_text("packs: [packs/*]\n")
    assert "not selected" not in invoke("--no-color").stderr


def test_every_command_takes_no_color(starter):
    from replayci.cli.main import COMMANDS

    for name in COMMANDS:
        command = cli.get_command(None, name)
        assert "--no-color" in [o for p in command.params for o in getattr(p, "opts", ())], name
    # and it is accepted where it matters, the output unchanged
    assert invoke("validate", "--no-color").output == invoke("validate").output
    assert invoke("validate", "--no-color").exit_code == 0
    res = invoke("query", "--no-color", "$.tool_calls[0].name", "packs/starter/golden/get_weather.success.json")
    assert (res.exit_code, json.loads(res.output)) == (0, ["get_weather"])
    assert invoke("schema", "--no-color", "contract").exit_code == 0


def test_the_top_level_help_lists_the_options_of_run():
    top = invoke("--help")
    assert top.exit_code == 0
    head, _, run_part = top.output.partition("Options of run, the default command:")
    assert run_part, top.output
    assert "replayci COMMAND --help" in " ".join(head.split())
    run_help = invoke("run", "--help").output
    flags = sorted(set(re.findall(r"^  (-[-\w]+|--[\w-]+)", run_help, re.M)) - {"-h"})
    assert len(flags) > 20
    for flag in flags:
        assert re.search(rf"^  {re.escape(flag)}\b", run_part, re.M), flag
    assert "--help" not in run_part
