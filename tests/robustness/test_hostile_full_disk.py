"""A disk that takes no more while replayci writes a report, a fixture or a contract: exit 2
naming the file that could not be written (not stdout), and nothing half-written. A report
goes to /dev/full through a symlink (a real ENOSPC); an import runs under a file-size limit
(RLIMIT_FSIZE: the kernel refuses the write with EFBIG, as it refuses a full disk's with ENOSPC)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import warmed
from cassettes import loop_interactions, write_cassette
from click.testing import CliRunner

from replayci.cli import cli

FULL = "/dev/full"
needs_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full here")


def _cli(args: list[str], cwd, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([*warmed.cli(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec)


@needs_full
@pytest.mark.parametrize("flag", ["--report-json", "--junit", "--markdown", "--html"])
def test_a_report_on_a_full_disk_is_named_exit_2(starter, flag):
    os.symlink(FULL, starter / "report.out")
    done = _cli(["--provider", "recorded", flag, "report.out"], starter)
    assert done.returncode == 2, done.stderr
    assert "report.out" in done.stderr and "No space left on device" in done.stderr, done.stderr
    assert "output was closed" not in done.stderr and "Traceback" not in done.stderr
    assert "6/6 passed" in done.stdout  # the run itself was shown


def _file_size_limit(limit: int):
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails (EFBIG) instead of killing us
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.fixture
def compiled():
    """Every replayci module's bytecode cached first: a command under a file-size limit that imports
    a module not cached yet would leave a truncated .pyc (the kernel cuts the write short, and
    Python keeps what it wrote) that every later import of it fails on."""
    import compileall

    import replayci

    assert compileall.compile_dir(os.path.dirname(replayci.__file__), quiet=1)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as Linux applies it")
def test_an_import_the_disk_refuses_names_the_file_and_writes_no_part_of_it(tmp_path, compiled):
    source = write_cassette(tmp_path / "c.yaml", loop_interactions())
    pack = tmp_path / "pack"
    done = _cli(["import", str(source), "--pack", str(pack)], tmp_path, _file_size_limit(3000))
    assert done.returncode == 2, done.stderr
    assert "File too large" in done.stderr and "output was closed" not in done.stderr, done.stderr
    named = done.stderr.split("cannot use ", 1)[1].split(": File too large")[0]
    assert named.startswith(str(pack / "golden")) and named.endswith(".json"), done.stderr
    left = [p for p in pack.rglob("*") if p.is_file()]
    # No fixture, no contract, no temp file: only the pack's own files, written whole first.
    assert sorted(p.name for p in left) == ["nr-allowlist.json", "pack.yaml"], left
    again = CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack)])  # with room, it completes
    assert again.exit_code == 0, again.output
    assert CliRunner().invoke(cli, ["validate", "--pack", str(pack)]).exit_code == 0
