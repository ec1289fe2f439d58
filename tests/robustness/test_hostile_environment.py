"""The environment a run meets: special files as outputs and as configuration, folders whose
names are not UTF-8. Each works or is refused clearly (exit 2, naming it), never a hang."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
import warmed
from test_bad_inputs import invoke, make_project

from replayci.core import files

pytestmark = pytest.mark.skipif(os.name != "posix", reason="FIFOs")


@pytest.fixture
def short_wait(monkeypatch):
    monkeypatch.setattr(files, "FIFO_WAIT_S", 0.5)


def test_a_report_into_a_fifo_nobody_reads_is_a_bounded_wait_then_a_clear_error(tmp_path, monkeypatch,
                                                                               short_wait):
    root = make_project(tmp_path)
    os.mkfifo(root / "report.json")
    started = time.monotonic()
    code, out = invoke(root, ["--report-json", "report.json"], monkeypatch)
    assert time.monotonic() - started < 5
    assert code == 2, out
    assert "report.json" in out and "FIFO" in out and "Traceback" not in out
    assert (root / "report.json").is_fifo()  # never replaced by a file


def test_a_report_into_a_fifo_with_a_reader_is_written_through(tmp_path, monkeypatch, short_wait):
    root = make_project(tmp_path)
    fifo = root / "report.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text("utf-8")), daemon=True)
    reader.start()
    code, out = invoke(root, ["--report-json", "report.json"], monkeypatch)
    reader.join(5)
    assert code == 0, out
    assert json.loads(got[0])["summary"]["total"] == 6 and fifo.is_fifo()


def test_a_fifo_reader_that_stops_reading_is_not_waited_for_forever(tmp_path, short_wait):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    fd = []
    opener = threading.Thread(target=lambda: fd.append(os.open(fifo, os.O_RDONLY)), daemon=True)
    opener.start()
    started = time.monotonic()
    with pytest.raises(OSError, match="took nothing for 0.5 s") as caught:
        files.write_atomic(str(fifo), b"x" * (4 * 1024 * 1024))  # far over a pipe's buffer
    assert caught.value.filename == str(fifo)
    assert time.monotonic() - started < 5
    opener.join(1)
    os.close(fd[0])


def test_a_fifo_whose_reader_closes_early_is_a_clear_error(tmp_path, short_wait):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)

    def read_a_little():
        with open(fifo, "rb") as fh:
            fh.read(10)

    reader = threading.Thread(target=read_a_little, daemon=True)
    reader.start()
    with pytest.raises(OSError, match="closed it before everything was written"):
        files.write_atomic(str(fifo), b"x" * (4 * 1024 * 1024))
    reader.join(1)


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling-link", "device-link"])
@pytest.mark.parametrize("command", [[], ["validate"]])
def test_a_config_that_is_not_a_regular_file_is_refused_not_ignored(tmp_path, monkeypatch, kind, command):
    root = make_project(tmp_path)
    config = root / ".replayci.yml"
    config.unlink()
    {"fifo": lambda: os.mkfifo(config), "folder": config.mkdir,
     "dangling-link": lambda: config.symlink_to(root / "nowhere.yml"),
     "device-link": lambda: config.symlink_to("/dev/zero")}[kind]()
    started = time.monotonic()
    code, out = invoke(root, command, monkeypatch)
    assert time.monotonic() - started < 5
    assert code == 2, out
    assert ".replayci.yml" in out and "regular file" in out and "Traceback" not in out


def _multiplied(scalar_kb: int, copies: int) -> str:
    """A contract-sized YAML text: one large scalar anchored once and aliased *copies* times."""
    big = "x" * (scalar_kb * 1024)
    return f"big: &big {big}\ncopies:\n" + "".join("  - *big\n" for _ in range(copies))


@pytest.mark.parametrize("scalar_kb, copies", [(1024, 2000), (64, 20_000), (3000, 100)])
def test_aliases_that_multiply_a_large_value_are_bounded_by_size(scalar_kb, copies):
    from replayci.core.errors import ConfigError
    from replayci.pack.sources import MAX_EXPANDED_BYTES, MAX_NODES, parse_yaml

    assert copies < MAX_NODES  # the node count alone lets these through
    text = _multiplied(scalar_kb, copies)
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "packs/p/contracts/bomb.yaml")
    message = str(caught.value)
    assert "packs/p/contracts/bomb.yaml:" in message and f"{MAX_EXPANDED_BYTES:,} bytes" in message


def test_aliases_within_the_size_bound_are_read():
    from replayci.pack.sources import parse_yaml

    doc = parse_yaml(_multiplied(1, 100), "ok.yaml").value
    assert len(doc["copies"]) == 100 and doc["copies"][0] == "x" * 1024


def test_an_alias_bomb_in_a_config_is_refused_quickly(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    with open(root / ".replayci.yml", "a", encoding="utf-8") as fh:
        fh.write("\n" + _multiplied(1024, 1000).replace("big:", "x-big:").replace("copies:", "x-copies:"))
    started = time.monotonic()
    code, out = invoke(root, [], monkeypatch)
    assert time.monotonic() - started < 5
    assert code == 2 and ".replayci.yml:" in out and "alias expansion" in out, out


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses file names that are not UTF-8")
@pytest.mark.parametrize("command", [[], ["validate"], ["--report-json", "r.json", "--html", "r.html"]])
def test_a_pack_folder_whose_name_is_not_utf8_is_refused_naming_it(tmp_path, command):
    root = make_project(tmp_path)
    bad = os.fsencode(str(root / "packs")) + b"/st\xffarter"
    os.rename(root / "packs" / "starter", bad)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAYCI_", "GITHUB_"))}
    done = subprocess.run([*warmed.cli(env), *command], cwd=root, env=env, capture_output=True,
                          timeout=60)
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    assert done.returncode == 2, out
    assert "packs/st" in out and "not valid UTF-8" in out and "Traceback" not in out
    assert not (root / "r.json").exists() and not (root / "r.html").exists()


# ------------------------------------------------------------------ hostile configuration files

CONFIG_BASE = "provider: recorded\n"
CONFIGS = {
    "duplicate-key": (CONFIG_BASE + "provider: recorded\n", [".replayci.yml:2:1:", "duplicate key 'provider'"]),
    "duplicate-nested": (CONFIG_BASE + "fixtures:\n  ttl_days: 3\n  ttl_days: 4\n",
                         [".replayci.yml:4:3:", "duplicate key 'ttl_days'"]),
    "tab-indented": (CONFIG_BASE + "fixtures:\n\tttl_days: 3\n", [".replayci.yml:3:1:", "tab", "spaces"]),
    "utf16-bom": (("\ufeff" + CONFIG_BASE).encode("utf-16"), [".replayci.yml:", "UTF-16", "save it as UTF-8"]),
    "utf16-no-bom": (CONFIG_BASE.encode("utf-16-le"), [".replayci.yml:", "UTF-16", "save it as UTF-8"]),
    "utf32": (("\ufeff" + CONFIG_BASE).encode("utf-32"), [".replayci.yml:", "UTF-32"]),
    "latin1": ((CONFIG_BASE + "model: caf\xe9\n").encode("latin-1"), [".replayci.yml:2:11:", "not valid UTF-8"]),
    "50-mb": (CONFIG_BASE + "model: " + "x" * 50_000_000 + "\n", [".replayci.yml:", "over the limit"]),
    "report-path-nul": (CONFIG_BASE + 'reports:\n  json: "r\\0.json"\n', [".replayci.yml:3:3:", "reports.json",
                                                                        "NUL"]),
}


@pytest.mark.parametrize("kind", CONFIGS)
def test_a_hostile_config_is_a_located_exit_2(tmp_path, monkeypatch, kind):
    root = make_project(tmp_path)
    text, words = CONFIGS[kind]
    (root / ".replayci.yml").write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    for command in ([], ["validate"]):
        started = time.monotonic()
        code, out = invoke(root, command, monkeypatch)
        assert time.monotonic() - started < 5
        assert code == 2 and "Traceback" not in out and "internal error" not in out, out
        for word in words:
            assert word in out, (word, out)
    assert not list(root.glob("r*.json"))


# Every key of .replayci.yml, given values of the wrong type (or a NUL where a file name goes).
CONFIG_PATHS = ["pack", "packs", "provider", "model", "base_url", "jobs", "processes", "replay", "stream",
                "tool_replay_mode", "fixtures", "fixtures.ttl_days", "fixtures.strict", "fixtures.max_bytes", "gates",
                "gates.pass_rate", "judge", "judge.model", "pricing", "pricing.m", "pricing.m.input", "reports",
                "reports.json", "reports.junit", "reports.markdown", "reports.html", "redact", "redact.fields",
                "proxy", "proxy.ignore", "mcp_servers", "mcp_servers.w", "mcp_servers.w.command",
                "mcp_servers.w.timeout_ms", "targets", "targets.a"]
WRONG_VALUES = ["[1, [2]]", "{a: {b: 1}}", "-1", ".nan", "null", "\"a\\0b\""]


def test_wrong_typed_values_everywhere_are_located_or_accepted(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    for key in CONFIG_PATHS:
        *parents, last = key.split(".")
        head = "".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parents))
        for value in WRONG_VALUES:
            text = ("" if key == "provider" else CONFIG_BASE) + head + f"{'  ' * len(parents)}{last}: {value}\n"
            (root / ".replayci.yml").write_text(text, "utf-8")
            code, out = invoke(root, ["validate"], monkeypatch)
            assert code in (0, 2) and "Traceback" not in out and "internal error" not in out, (key, value, out)
            if code == 2 and key != "fixtures.max_bytes":  # (a tiny limit refuses the fixtures themselves)
                assert ".replayci.yml:" in out, (key, value, out)
            if key.startswith("reports.") and "\\0" in value:
                assert code == 2 and "NUL" in out, out
