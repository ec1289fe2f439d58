"""Start-up stays lean: what `replayci --version` and a recorded run import (read from
`python -X importtime`, so nothing is timed here; bench/startup.py measures the time)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Loaded only when a pack, a flag or a command needs them, never by a plain recorded run.
NOT_IN_A_RECORDED_RUN = (
    "replayci.providers", "replayci.engine.live", "replayci.engine.judge_model", "replayci.tools",
    "tenacity", "logging", "concurrent.futures", "email.utils", "subprocess", "shlex", "decimal",
    "difflib", "pickle", "tempfile", "urllib.parse", "jsonschema", "jsonpath_rfc9535", "jinja2",
    "openai", "anthropic", "httpx", "boto3", "google.genai", "starlette", "uvicorn",
)


def imported(*args: str, cwd: Path | None = None) -> list[str]:
    """The modules `python -m replayci ARGS` imports beyond the interpreter's own start-up."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "replayci", *args], cwd=cwd,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")]
    return lines[lines.index("site") + 1:]  # site's own imports (.pth files) come before it


def test_version_loads_neither_click_nor_the_commands():
    modules = imported("--version")
    assert not [m for m in modules if m == "click" or m.startswith("click.")]
    assert {m for m in modules if m.startswith("replayci")} == {
        "replayci", "replayci.core", "replayci.core.version", "replayci.cli"}


def test_version_answers_as_click_does():
    from click.testing import CliRunner

    from replayci import __version__
    from replayci.cli import cli

    script = Path(sys.executable).parent / "replayci"
    fast = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert fast.returncode == 0 and fast.stderr == ""
    assert fast.stdout == CliRunner().invoke(cli, ["--version"]).output == f"replayci {__version__}\n"
    # A reader gone (click: exit 1, nothing said) and stdout closed (click: exit 0).
    read, write = os.pipe()
    os.close(read)
    try:
        gone = subprocess.run([script, "--version"], stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert (gone.returncode, gone.stderr) == (1, b"")
    closed = subprocess.run([script, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            timeout=60, preexec_fn=lambda: os.close(1))
    assert (closed.returncode, closed.stderr) == (0, b"")


def test_a_recorded_run_loads_no_live_or_optional_machinery(tmp_path):
    project = tmp_path / "project"
    made = subprocess.run([sys.executable, str(BENCH / "gen_pack.py"), "10", "--out", str(project)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    modules = imported("--provider", "recorded", cwd=project)
    assert "replayci.engine.runner" in modules and "yaml" in modules  # it did run
    loaded = [m for m in NOT_IN_A_RECORDED_RUN if any(x == m or x.startswith(m + ".") for x in modules)]
    assert not loaded, loaded
