"""Exit code 3 is for bugs only: what the machine or the user's files refuse gets a clear
message and exit 2 (or the run's own verdict), whatever the real CLI is given."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import warmed


def cli(args: list[str], cwd, env: dict | None = None, **streams) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess; stdout and stderr captured unless *streams* say otherwise."""
    streams.setdefault("stdout", subprocess.PIPE)
    streams.setdefault("stderr", subprocess.PIPE)
    full = {**os.environ, **(env or {})}
    return subprocess.run([*warmed.cli(full), *args], cwd=cwd, env=full, timeout=120, **streams)


def text(done: subprocess.CompletedProcess) -> str:
    return (done.stderr or b"").decode("utf-8", "replace")


def clear(done: subprocess.CompletedProcess, code: int, *words: str) -> None:
    """Exit *code*, no internal error, no traceback, and each of *words* in the message."""
    err = text(done)
    assert done.returncode == code, err
    assert "internal error" not in err and "Traceback" not in err
    for w in words:
        assert w in err, err


@contextlib.contextmanager
def read_only(path: Path):
    """*path* made unwritable, even for root (immutable), and writable again afterwards."""
    if os.geteuid() == 0:
        if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(path)],
                                                        capture_output=True).returncode:
            pytest.skip("cannot make a folder read-only for root here (no chattr +i)")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(mode)


# ------------------------------------------------------------------ files the machine refuses


@pytest.mark.parametrize("flag", ["--report-json", "--junit", "--markdown", "--html"])
def test_a_report_target_that_cannot_be_written(starter, flag):
    (starter / "out").mkdir()
    with read_only(starter / "out"):
        done = cli([flag, "out/report"], starter)
    clear(done, 2, "cannot use")
    done = cli([flag, "packs/starter/pack.yaml/report"], starter)  # under a file
    clear(done, 2, "cannot use")


def test_init_into_a_read_only_folder(project):
    with read_only(project):
        done = cli(["init"], project)
    clear(done, 2, "cannot use", "not permitted" if os.geteuid() == 0 else "denied")


def test_write_negatives_into_read_only_contracts(starter):
    contract = starter / "packs" / "starter" / "contracts" / "get_weather.yaml"
    text_ = contract.read_text("utf-8")
    contract.write_text(text_[:text_.index("  - id: tool_not_invoked")], "utf-8")  # the success case only
    with read_only(contract.parent), read_only(starter / "packs" / "starter" / "golden" / "negative"):
        done = cli(["mutate", "--write-negatives"], starter)
    clear(done, 2, "cannot use")


def test_a_deleted_working_directory(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", "import os, sys, subprocess; os.rmdir(os.getcwd()); "
                             "sys.exit(subprocess.call([sys.executable, '-m', 'replayci']))"],
                            cwd=gone, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=60)
    clear(subprocess.CompletedProcess([], proc.returncode, out, err), 2, "working directory")


def test_a_step_summary_that_is_a_directory(starter, tmp_path):
    done = cli([], starter, env={"GITHUB_STEP_SUMMARY": str(tmp_path)})
    clear(done, 2, "GITHUB_STEP_SUMMARY", "Is a directory")


# ------------------------------------------------------------------ stdout and stderr


@pytest.mark.parametrize("args, code", [([], 0), (["--json"], 0), (["validate"], 2), (["schema", "contract"], 2)])
def test_a_full_stdout(starter, args, code):
    with open("/dev/full", "wb") as full:
        done = cli(args, starter, stdout=full)
    clear(done, code, "No space left on device")


@pytest.mark.parametrize("args, code", [([], 0), (["--json"], 0), (["-v"], 0), (["--pack", "nope"], 2)])
def test_a_full_stderr(starter, args, code):
    with open("/dev/full", "wb") as full:
        done = cli(args, starter, stderr=full)
    assert done.returncode == code


@pytest.mark.parametrize("args, code", [([], 0), (["--json"], 0), (["--pack", "nope"], 2), (["validate"], 0)])
def test_a_closed_stderr(starter, args, code):
    proc = subprocess.Popen([*warmed.cli(), *args], cwd=starter, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, pass_fds=(), close_fds=True,
                            preexec_fn=lambda: os.close(2))
    proc.communicate(timeout=60)
    assert proc.returncode == code


def test_an_ascii_only_terminal(starter):
    fixture = starter / "packs" / "starter" / "golden" / "get_weather.success.json"
    head, _, tail = fixture.read_text("utf-8").rpartition('"get_weather"')  # the response's call
    fixture.write_text(head + '"get_wéather"' + tail, "utf-8")
    done = cli([], starter, env={"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"})
    clear(done, 1)
    assert b"\\xe9" in done.stdout and b"\\xb7" in done.stdout  # escaped, not a crash


def test_a_file_name_that_is_not_utf8(starter):
    contracts = starter / "packs" / "starter" / "contracts"
    odd = os.path.join(os.fsencode(contracts), b"w\xff.yaml")
    shutil.copy(contracts / "get_weather.yaml", odd)
    for args in ([], ["validate"]):
        done = cli(args, starter)
        clear(done, 2, "not valid UTF-8", "w\\udcff.yaml")


def test_a_pack_folder_whose_name_is_not_utf8(starter):
    odd = os.path.join(os.fsencode(starter), b"packs", b"s\xfe")
    os.rename(starter / "packs" / "starter", odd)
    done = cli(["--pack", os.fsdecode(odd), "--report-json", "r.json", "--junit", "j.xml"], starter)
    clear(done, 2, "not valid UTF-8", "s\\udcfe")


# ------------------------------------------------------------------ reports and schemas


BAD_REPORTS = {
    "case not an object": {"version": 1, "cases": [5]},
    "case without pack": {"version": 1, "cases": [{"status": "pass"}]},
    "run not an object": {"version": 1, "run": 5, "cases": []},
    "failures not a list": {"version": 1, "cases": [{"pack": "a", "contract": "b", "case": "c",
                                                      "status": "fail", "failures": 7}]},
    "a failure not an object": {"version": 1, "cases": [{"pack": "a", "contract": "b", "case": "c",
                                                          "status": "fail", "failures": [3]}]},
    "response not an object": {"version": 1, "cases": [{"pack": "a", "contract": "b", "case": "c",
                                                         "status": "pass", "response": [1]}]},
}


@pytest.mark.parametrize("name", sorted(BAD_REPORTS))
@pytest.mark.parametrize("command", [["merge", "-o", "out.json"], ["report", "--html", "out.html"], ["diff"],
                                     ["regrade"]])
def test_malformed_reports(starter, name, command):
    path = starter / "bad.json"
    path.write_text(json.dumps(BAD_REPORTS[name]), "utf-8")
    paths = ["bad.json", "bad.json"] if command[0] in ("diff", "merge") else ["bad.json"]
    done = cli([*command, *paths], starter)
    clear(done, 2, "bad.json", "not a replayci JSON report")


def test_regrade_of_a_case_missing_its_keys(starter):
    (starter / "bad.json").write_text(json.dumps(
        {"version": 1, "run": {}, "summary": {},
         "cases": [{"pack": "gone", "contract": "b", "case": "c", "status": "pass"}]}), "utf-8")
    clear(cli(["regrade", "bad.json"], starter), 2, "not a replayci JSON report", "gone/b/c")


def _schema_five(starter: Path) -> None:
    contract = starter / "packs" / "starter" / "contracts" / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8").replace(
        "assertions:\n", "arguments_schema:\n  $schema: 5\n  type: object\nassertions:\n", 1), "utf-8")


def test_a_schema_whose_dollar_schema_is_a_number(starter):
    _schema_five(starter)
    for args in ([], ["validate"]):
        clear(cli(args, starter), 2, "get_weather.yaml:", "$schema must be a metaschema URI")


def test_a_schema_whose_dollar_schema_is_a_number_under_pytest(starter):
    _schema_five(starter)
    # Only replayci's plugin: every installed one would cost over a second of start-up.
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "replayci.pytest_plugin", "--replayci"], cwd=starter, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "$schema must be a metaschema URI" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr and done.returncode not in (0, 1, 3)
