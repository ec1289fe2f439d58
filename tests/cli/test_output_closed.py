"""A reader that goes away (`replayci ... | head`) is no internal error."""
from __future__ import annotations

import subprocess

import pytest
import warmed


def _with_stdout_closed(args: list[str], cwd) -> subprocess.CompletedProcess:
    proc = subprocess.Popen([*warmed.cli(), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command writes anything: every write is a broken pipe
    _, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, "", err.decode())


@pytest.mark.parametrize("args, code", [
    (["--json"], 0),                      # a run keeps its own verdict
    (["-v"], 0),
    (["schema", "contract"], 2),          # other commands: a clear message, exit 2
    (["validate"], 2),
])
def test_a_closed_stdout_is_no_internal_error(starter, args, code):
    done = _with_stdout_closed(args, starter)
    assert done.returncode == code, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert "broken pipe" in done.stderr


def test_a_failing_run_keeps_exit_1_when_its_reader_left(starter):
    fixture = starter / "packs" / "starter" / "golden" / "get_weather.success.json"
    fixture.write_text(fixture.read_text().replace('"get_weather"', '"get_wether"', 1))
    done = _with_stdout_closed(["--json"], starter)
    assert done.returncode == 1, done.stderr
