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


# ------------------------------------------------------------------ what a command prints, and how it ends

@pytest.mark.parametrize(("body", "expected"), [
    # 100 MB on stdout: stopped at the limit, never held in memory whole.
    ("import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(100): sys.stdout.buffer.write(chunk)\n",
     {"error": "tool command printed more than 8,388,608 bytes"}),
    # 100 MB on stderr, then an answer: the answer.
    ("import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(100): sys.stderr.buffer.write(chunk)\nprint('[1]')\n",
     [1]),
    # Bytes that are not UTF-8: replaced, the JSON around them read.
    ("import sys\nsys.stdout.buffer.write(b'{\"a\": \"\\xff\\xfe\"}')\n", {"a": "\ufffd\ufffd"}),
    # Half of a surrogate pair, escaped in valid JSON: no text, replaced like undecodable bytes.
    ("print('{\"a\\\\ud800\": [\"b\\\\udfff\"]}')\n", {"a\ufffd": ["b\ufffd"]}),
    # Killed by a signal: said so, with the signal's name.
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
     {"error": "tool command was killed by signal 11 (SIGSEGV)"}),
], ids=["100-mb-stdout", "100-mb-stderr", "not-utf8", "lone-surrogate", "signal"])
def test_what_a_command_prints_or_how_it_ends_is_a_result(tmp_path, body, expected):
    import tracemalloc

    tracemalloc.start()
    try:
        result = run_tool_command(script(tmp_path, "t.py", body), {"x": 1}, 10_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result == expected
    assert peak < 32 * 1024 * 1024, peak


@pytest.mark.parametrize("body", ["import sys, time\nsys.stdin.read()\ntime.sleep(60)\n",
                                  "import sys, time\nwhile sys.stdin.read(1):\n    time.sleep(1)\n",
                                  "import time\ntime.sleep(60)\n"],
                         ids=["reads-then-hangs", "reads-a-byte-a-second", "never-reads"])
def test_a_command_that_reads_its_input_forever_is_bounded_by_its_timeout(tmp_path, body):
    started = time.monotonic()
    result = run_tool_command(script(tmp_path, "t.py", body), {"x": "y" * (1 << 20)}, 300)  # over a pipe's buffer
    assert result == {"error": "tool command timed out after 300 ms"}
    assert time.monotonic() - started < 3
