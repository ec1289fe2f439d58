"""Tool commands are untrusted programs: whatever they print or start, a run gets an answer
within the command's timeout, and nothing they started outlives them."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from replayci.engine.agent import run_tool_command

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="processes found through /proc")


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body, "utf-8")
    return f"{sys.executable} {path}"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


# A grandchild that leaves the command's session and process group, keeps the command's stdout
# open, writes its pid into a file, and sleeps for a minute.
ESCAPE = """
import os, sys, time
pid_file = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    with open(pid_file, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(60)
    os._exit(0)
while not os.path.exists(pid_file) or not open(pid_file).read():
    time.sleep(0.01)
{then}
"""


def test_a_timeout_bounds_a_grandchild_that_keeps_stdout_open(tmp_path):
    pid_file = tmp_path / "pid"
    command = script(tmp_path, "t.py", ESCAPE.format(then="time.sleep(60)")) + f" {pid_file}"
    started = time.monotonic()
    result = run_tool_command(command, {}, 500)
    took = time.monotonic() - started
    assert "timed out after 500 ms" in result["error"]
    assert took < 3.0, took
    assert wait_gone(int(pid_file.read_text())), "the grandchild in its own session survived"


def test_a_command_that_exits_leaves_no_grandchild_and_no_wait(tmp_path):
    pid_file = tmp_path / "pid"
    then = "print('{\"ok\": true}', flush=True)"
    command = script(tmp_path, "t.py", ESCAPE.format(then=then)) + f" {pid_file}"
    started = time.monotonic()
    result = run_tool_command(command, {}, 10_000)
    took = time.monotonic() - started
    assert result == {"ok": True}
    assert took < 3.0, took
    assert wait_gone(int(pid_file.read_text())), "the grandchild in its own session survived"


def test_a_grandchild_that_closed_stdout_does_not_survive_the_command(tmp_path):
    pid_file = tmp_path / "pid"
    closed = "    os.setsid()\n    for fd in (0, 1, 2):\n        os.close(fd)\n"
    body = ESCAPE.replace("    os.setsid()\n", closed).format(then="print('[1]', flush=True)")
    started = time.monotonic()
    result = run_tool_command(script(tmp_path, "t.py", body) + f" {pid_file}", {}, 10_000)
    assert time.monotonic() - started < 3.0
    assert result == [1]
    assert wait_gone(int(pid_file.read_text())), "the grandchild in its own session survived"


@pytest.mark.parametrize("printed", ["NaN", '{"t": Infinity}', '[1, -Infinity]', '{"a": [NaN]}', '{"t": 1e999}'])
def test_non_finite_output_is_an_error_result(tmp_path, printed):
    command = script(tmp_path, "t.py", f"print({printed!r})")
    result = run_tool_command(command, {}, 10_000)
    assert set(result) == {"error"} and "JSON" in result["error"], result


def test_a_plain_command_still_answers(tmp_path):
    command = script(tmp_path, "t.py", "import json, sys; print(json.dumps({'got': json.load(sys.stdin)}))")
    assert run_tool_command(command, {"x": 1}, 10_000) == {"got": {"x": 1}}
    assert os.getpgrp() == os.getpgid(0)  # the run's own group untouched
