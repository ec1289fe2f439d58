"""Hostile files are refused quickly, in little memory, with a clear message.

Each test builds the starter project, plants one hostile thing, runs the real command line
in a child process (`python -m replayci`, forked from the warm CLI), and checks: the exit code,
that the message names the file (and line where there is one) and the limit or rule, the CPU
and wall time (generously bounded: a hang fails the test instead of the CI job), and the
command's peak memory (from wait4: a 500 MB file or an alias bomb that was read or expanded
would show).

test_bad_inputs.py already checks the wording of a few of these (an alias bomb in a
contract, 100,000-deep JSON in a fixture, a fixture symlink that leaves the pack); this file
adds the other files and shapes, the timing and memory bounds, big sparse files, non-regular
files, directory and recording symlinks, and catastrophic regular expressions.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warmed
from test_bad_inputs import (
    ALLOWLIST,
    CONFIG,
    CONTRACT,
    PACK,
    PACK_YAML,
    SUCCESS,
    WRONG_TOOL,
    append,
    at,
    edit,
    line_of,
    make_project,
)

RECORDING = f"{PACK}/recordings/get_weather/tool_call_success.json"
QUICK_S = 5.0            # CPU seconds, generous: these runs take a few hundred milliseconds
WAIT_FACTOR = 4          # wall time may stretch this much on a loaded machine before it is a hang
MAX_EXTRA_RSS_MB = 100   # over a plain run of the same project: far below any file refused here
HALF_GB = 500 * 1024 * 1024


# ------------------------------------------------------------------ running and measuring


class Run:
    def __init__(self, code: int, out: str, seconds: float, cpu: float, rss_mb: float):
        self.code, self.out, self.seconds, self.cpu, self.rss_mb = code, out, seconds, cpu, rss_mb

    def __repr__(self) -> str:
        return (f"exit {self.code} in {self.seconds:.2f} s ({self.cpu:.2f} s CPU), {self.rss_mb:.0f} MB\n"
                f"{self.out}")


def quick(run: Run, seconds: float = QUICK_S) -> None:
    """The run's work (its CPU time, which other load does not stretch) under *seconds*, and its
    wall time not past what waiting on a loaded machine explains."""
    assert run.cpu < seconds, run
    assert run.seconds < WAIT_FACTOR * seconds, run


def measured(root: Path, *args: str, timeout: float = 60) -> Run:
    """`python -m replayci ARGS` in *root*: exit code, output, wall and CPU time, peak RSS (MB).

    The command runs in a fork of the warm CLI (tests/support/warmed.py), which tells its CPU time
    and peak memory; a baseline taken the same way is what the peak is compared with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAYCI_", "GITHUB_"))}
    env.update(NO_COLOR="1", PYTHONUNBUFFERED="1")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    out_file, usage_file = root / ".out.txt", root / ".usage.json"
    env["WARM_USAGE"] = str(usage_file)  # where a warm command's CPU time and peak memory are told
    t0 = time.perf_counter()
    with open(out_file, "wb") as out:
        proc = subprocess.Popen([*warmed.cli(env), *args], cwd=root, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                text = out_file.read_bytes().decode("utf-8", "replace")
                pytest.fail(f"replayci {' '.join(args)} still running after {timeout} s (a hang)\n{text}")
            time.sleep(0.01)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_file.read_bytes().decode("utf-8", "replace")
    out_file.unlink()
    cpu, maxrss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss  # a cold run: this child's own
    if usage_file.exists():  # a warm run: the command's, from the warm server's wait4
        told = json.loads(usage_file.read_text("utf-8"))
        usage_file.unlink()
        cpu, maxrss = told["cpu"], told["ru_maxrss"]
    rss_mb = maxrss / 1024 if sys.platform != "darwin" else maxrss / 2**20
    return Run(proc.returncode, text, seconds, cpu, rss_mb)


@pytest.fixture(scope="module")
def baseline_rss(tmp_path_factory) -> float:
    """The peak memory of a plain run of the starter project."""
    root = make_project(tmp_path_factory.mktemp("baseline"))
    run = measured(root)
    assert run.code == 0, run
    return run.rss_mb


def refused(run: Run, where: list[str], words: list[str], baseline: float, *,
            seconds: float = QUICK_S) -> None:
    """Exit 2, the located message, no traceback, quick, little memory."""
    assert run.code == 2, run
    assert "Traceback" not in run.out and "internal error" not in run.out, run
    for text in where + words:
        assert text in run.out, f"{text!r} not in the output\n{run}"
    quick(run, seconds)
    assert run.rss_mb < baseline + MAX_EXTRA_RSS_MB, run


@pytest.fixture
def root(tmp_path) -> Path:
    return make_project(tmp_path)


# ------------------------------------------------------------------ alias bombs


def billion_laughs(key: str = "lol") -> str:
    """9 levels of 10 aliases each: 10**9 nodes once expanded, 1 KB of text."""
    lines = [f"{key}0: &l0 lol"]
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"{key}{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def wide_bomb(key: str = "wide") -> str:
    """One 1,000-item list, aliased 1,000 times: a million nodes from 10 KB of text."""
    items = ", ".join(str(i) for i in range(1000))
    refs = ", ".join(["*w"] * 1000)
    return f"{key}a: &w [{items}]\n{key}b: [{refs}]\n"


BOMBS = {"billion_laughs": billion_laughs, "wide": wide_bomb}
YAML_FILES = {"contract": CONTRACT, "pack_yaml": PACK_YAML, "config": CONFIG}


@pytest.mark.parametrize("bomb", list(BOMBS))
@pytest.mark.parametrize("file", list(YAML_FILES))
def test_alias_bomb_refused_quickly(root, baseline_rss, file, bomb):
    rel = YAML_FILES[file]
    append(root, rel, BOMBS[bomb]())
    run = measured(root)
    needle = "lol" if bomb == "billion_laughs" else "wideb:"
    line = line_of(root, rel, "lol6:" if bomb == "billion_laughs" else needle)
    where = f"{rel}:{line}:"
    refused(run, [where], ["alias expansion exceeds 200,000 nodes", "alias bomb"], baseline_rss)


def test_many_nodes_without_aliases_refused(root, baseline_rss):
    # 250,000 small list items (2 MB, under the 4 MB size limit): the node limit says so
    append(root, CONTRACT, "big: [" + ",".join(["1"] * 250_000) + "]\n")
    run = measured(root, "validate")
    refused(run, [at(root, CONTRACT, "big: [")], ["more than 200,000 nodes"], baseline_rss)


# ------------------------------------------------------------------ deep nesting

DEPTH = 100_000


@pytest.mark.parametrize("shape", ["flow_sequence", "flow_mapping", "block_sequence"])
@pytest.mark.parametrize("file", list(YAML_FILES))
def test_deep_yaml_refused_quickly(root, baseline_rss, file, shape):
    rel = YAML_FILES[file]
    if shape == "flow_sequence":
        value = "[" * DEPTH + "]" * DEPTH
    elif shape == "flow_mapping":
        value = "{a: " * DEPTH + "1" + "}" * DEPTH
    else:  # `- - - - x`: block sequences, each one deeper
        value = "\n  " + "- " * DEPTH + "x"
    append(root, rel, f"deep: {value}\n")
    run = measured(root)
    # the position where the 65th level starts
    where = at(root, rel, "- - - -") if shape == "block_sequence" else at(root, rel, "deep:")
    refused(run, [where], ["nesting deeper than 64 levels"], baseline_rss)


DEEP_JSON = {
    "array": lambda: "[" * DEPTH + "]" * DEPTH,
    "object": lambda: '{"a": ' * DEPTH + "1" + "}" * DEPTH,
}


def _recording(root: Path, response: str | None = None) -> None:
    fixture = json.loads((root / SUCCESS).read_text("utf-8"))
    doc = {"meta": {"recorded_at": "2099-01-01T00:00:00+00:00"}, "boundary": fixture["boundary"],
           "response": fixture["response"]}
    text = json.dumps(doc, indent=2)
    if response is not None:
        text = text.replace('"response": {', f'"deep": {response},\n  "response": {{', 1)
    (root / RECORDING).parent.mkdir(parents=True, exist_ok=True)
    (root / RECORDING).write_text(text, "utf-8")


@pytest.mark.parametrize("shape", list(DEEP_JSON))
@pytest.mark.parametrize("file", ["fixture", "recording", "allowlist"])
def test_deep_json_refused_quickly(root, baseline_rss, file, shape):
    deep = DEEP_JSON[shape]()
    if file == "fixture":
        rel = SUCCESS
        edit(root, SUCCESS, '"temperature": 0', '"temperature": 0,\n    "deep": ' + deep)
    elif file == "recording":
        rel = RECORDING
        _recording(root, deep)
    else:
        rel = ALLOWLIST
        (root / ALLOWLIST).write_text('[\n  {"deep": ' + deep + "}\n]\n", "utf-8")
    run = measured(root)
    refused(run, [at(root, rel, '"deep"')], ["nesting deeper than 512 levels"], baseline_rss)


# ------------------------------------------------------------------ big files (sparse: fast to make)


def sparse(path: Path, size: int) -> None:
    """A file of *size* bytes that takes no disk space and no time to write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)


BIG_FILES = {
    "fixture": (SUCCESS, 16 * 1024 * 1024),
    "negative_fixture": (WRONG_TOOL, 16 * 1024 * 1024),
    "recording": (RECORDING, 16 * 1024 * 1024),
    "contract": (CONTRACT, 4 * 1024 * 1024),
    "pack_yaml": (PACK_YAML, 4 * 1024 * 1024),
    "config": (CONFIG, 4 * 1024 * 1024),
    "allowlist": (ALLOWLIST, 4 * 1024 * 1024),
}


@pytest.mark.parametrize("file", list(BIG_FILES))
def test_half_gigabyte_file_refused_unread(root, baseline_rss, file):
    rel, limit = BIG_FILES[file]
    sparse(root / rel, HALF_GB)
    run = measured(root)
    # refused by its size alone: quick, and the child never held the file in memory
    refused(run, [f"{rel}: "], [f"file is {HALF_GB:,} bytes, over the limit of {limit:,} bytes"],
            baseline_rss, seconds=3.0)
    if file in ("fixture", "negative_fixture"):  # validate reads fixtures too
        refused(measured(root, "validate"), [f"{rel}: "], [f"over the limit of {limit:,} bytes"],
                baseline_rss, seconds=3.0)


def test_fixture_size_limit_is_configurable(root, baseline_rss):
    # A 20 MB fixture (valid JSON padded with spaces): refused by the default 16 MB limit,
    # accepted with fixtures.max_bytes raised; a small limit refuses the small fixtures too.
    path = root / SUCCESS
    path.write_bytes(path.read_bytes().rstrip() + b" " * (20 * 1024 * 1024) + b"\n")
    size = path.stat().st_size
    refused(measured(root), [f"{SUCCESS}: "], [f"file is {size:,} bytes, over the limit of "
                                              f"{16 * 1024 * 1024:,} bytes"], baseline_rss)
    append(root, CONFIG, "fixtures: {max_bytes: 33554432}\n")
    run = measured(root)
    assert run.code == 0 and "6/6 passed" in run.out, run
    edit(root, CONFIG, "max_bytes: 33554432", "max_bytes: 1000")
    run = measured(root, "validate")
    assert run.code == 2 and "over the limit of 1,000 bytes" in run.out, run
    assert f"{WRONG_TOOL}: " in run.out, run  # every fixture over the limit is listed


# ------------------------------------------------------------------ files that are not files


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_recording_that_is_not_a_regular_file(root, baseline_rss, kind):
    # A FIFO would block a reader forever, /dev/zero never ends, a directory is not a file.
    path = root / RECORDING
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()
    # /dev/zero is outside the pack: refused as such before anything is opened
    words = ["a symlink that leads out of the pack"] if kind == "dev_zero" else ["not a regular file"]
    for command in ("run", "validate"):
        refused(measured(root, command), [f"{RECORDING}: "], words, baseline_rss)


def test_fixture_that_is_a_fifo(root, baseline_rss):
    path = root / SUCCESS
    path.unlink()
    os.mkfifo(path)
    run = measured(root)
    refused(run, [at(root, CONTRACT, "input_ref: get_weather.success.json")], [SUCCESS], baseline_rss)


def test_symlink_loop(root, baseline_rss):
    path = root / RECORDING
    path.parent.mkdir(parents=True)
    os.symlink(path.name, path)  # points at itself
    for command in ("run", "validate"):
        refused(measured(root, command), [f"{RECORDING}: "], ["cannot read", "symbolic links"],
                baseline_rss)


# ------------------------------------------------------------------ symlinks that leave the pack


def _outside(root: Path) -> Path:
    out = root / "outside"
    out.mkdir(exist_ok=True)
    return out


def test_contract_symlink_outside_the_pack(root, baseline_rss):
    target = _outside(root) / "evil.yaml"
    shutil.copy(root / CONTRACT, target)
    os.symlink(target, root / PACK / "contracts" / "evil.yaml")
    run = measured(root)
    refused(run, [f"{PACK_YAML}:"], ["contract 'evil.yaml' leaves the pack directory"], baseline_rss)


def test_contracts_directory_symlink_outside_the_pack(root, baseline_rss):
    contracts = root / PACK / "contracts"
    shutil.move(contracts, _outside(root) / "contracts")
    os.symlink(_outside(root) / "contracts", contracts)
    run = measured(root)
    refused(run, [f"{PACK_YAML}:"], ["'get_weather.yaml' leaves the pack directory"], baseline_rss)


@pytest.mark.parametrize("folder", ["golden", "golden/negative"])
def test_fixture_directory_symlink_outside_the_pack(root, baseline_rss, folder):
    inside = root / PACK / folder
    away = _outside(root) / folder.replace("/", "_")
    shutil.move(inside, away)
    os.symlink(away, inside)
    run = measured(root)
    ref = "negative/get_weather.wrong_tool.json" if folder == "golden/negative" else "get_weather.success.json"
    refused(run, [at(root, CONTRACT, f"input_ref: {ref}")], ["leaves the pack"], baseline_rss)


@pytest.mark.parametrize("link", ["file", "contract_folder", "recordings_folder"])
def test_recording_symlink_outside_the_pack(root, baseline_rss, link):
    # a valid recording, outside the pack, reached through a symlink of the file or a folder
    _recording(root)
    outside = _outside(root)
    recordings = root / PACK / "recordings"
    shutil.move(recordings, outside / "recordings")
    if link == "recordings_folder":
        os.symlink(outside / "recordings", recordings)
    elif link == "contract_folder":
        recordings.mkdir()
        os.symlink(outside / "recordings" / "get_weather", recordings / "get_weather")
    else:
        (recordings / "get_weather").mkdir(parents=True)
        os.symlink(outside / "recordings" / "get_weather" / "tool_call_success.json", root / RECORDING)
    # a linked folder is refused when the pack loads (recordings must never be written
    # through it); a linked file when it is read
    where, why = {"recordings_folder": (f"{PACK}/recordings: ", "a symlink that leads out of the pack"),
                  "contract_folder": (f"{PACK}/recordings/get_weather: ", "a symlink that leads out of the pack"),
                  "file": (f"{RECORDING}: ", "a symlink that leads out of the pack (packs/starter)")}[link]
    for command in ("run", "validate"):
        refused(measured(root, command), [where], [why], baseline_rss)


def test_allowlist_symlink_outside_the_pack(root, baseline_rss):
    target = _outside(root) / "allow.json"
    target.write_text('[{"secret": "a file outside the pack"}]\n', "utf-8")
    (root / ALLOWLIST).unlink()
    os.symlink(target, root / ALLOWLIST)
    run = measured(root)
    refused(run, [ALLOWLIST], ["leaves the pack"], baseline_rss)
    assert "secret" not in run.out, run  # nothing of it was read


def test_symlinks_inside_the_pack_are_fine(root, baseline_rss):
    # links that stay inside the pack are followed: a recording that is a fixture's twin
    os.symlink("get_weather.success.json", root / PACK / "golden" / "alias.json")
    edit(root, CONTRACT, "input_ref: get_weather.success.json", "input_ref: alias.json")
    (root / RECORDING).parent.mkdir(parents=True)
    os.symlink("../../golden/get_weather.success.json", root / RECORDING)
    run = measured(root)
    assert run.code == 0 and "6/6 passed" in run.out, run


# ------------------------------------------------------------------ catastrophic regular expressions

LONG = "a" * 50_000 + "!"   # (a|aa)+$ on this backtracks exponentially
EVIL = "^(a|aa)+$"


PLACES = {
    "regex_on_response": 'assertions:\n  output_invariants:\n'
                         '    - path: "$.tool_calls[0].arguments.location"\n'
                         f'      regex: "{EVIL}"\n',
    "regex_on_request": 'assertions:\n  input_invariants:\n    - path: "$.messages[1].content"\n'
                        f'      regex: "{EVIL}"\n',
    "regex_on_arguments": "expected_tool_calls:\n  - name: get_weather\n    argument_invariants:\n"
                          f'      - path: "$.location"\n        regex: "{EVIL}"\n',
    "schema_pattern": "arguments_schema:\n  type: object\n  properties:\n"
                      f"    location: {{type: string, pattern: '{EVIL}'}}\n",
    "matches_schema_pattern": 'assertions:\n  output_invariants:\n'
                              '    - path: "$.tool_calls[0].arguments"\n'
                              "      matches_schema: {properties: {location: {anyOf: "
                              f"[{{pattern: '{EVIL}'}}]}}}}}}\n",
    "jsonpath_search": "assertions:\n  output_invariants:\n"
                       f"    - path: \"$.tool_calls[?search(@.arguments.location, '{EVIL}')]\"\n"
                       "      exists: false\n",
}


@pytest.mark.parametrize("place", list(PLACES))
def test_catastrophic_regex_is_bounded(root, baseline_rss, place):
    """A pattern that backtracks catastrophically on a 50,000-character string, in each place
    a contract can hold one: the case ends as `error` with a message naming the pattern and
    the time limit, the other cases still pass, the run ends in about one time limit."""
    fixture = json.loads((root / SUCCESS).read_text("utf-8"))
    fixture["request"]["messages"][1]["content"] = LONG
    fixture["response"]["tool_calls"][0]["function"]["arguments"] = json.dumps({"location": LONG})
    del fixture["boundary"]  # not pinned: the request changed
    (root / PACK / "golden" / "long.json").write_text(json.dumps(fixture, indent=2), "utf-8")
    (root / PACK / "contracts" / "evil.yaml").write_text(
        f"tool: get_weather\n{PLACES[place]}golden_cases:\n  - id: long\n    input_ref: long.json\n",
        "utf-8")
    run = measured(root, "--report-json", "report.json", timeout=30)
    assert run.code == 1, run
    assert "Traceback" not in run.out and "internal error" not in run.out, run
    report = json.loads((root / "report.json").read_text("utf-8"))
    [evil] = [c for c in report["cases"] if c["contract"] == "evil"]
    assert evil["status"] == "error", evil
    for words in ("took longer than 1 s", "50,001-character", EVIL, "simplify the pattern"):
        assert words in evil["reason"], evil
    assert evil["duration_ms"] < (1.0 + QUICK_S) * 1000, evil  # bounded: unchecked, it would run for hours
    others = [c for c in report["cases"] if c["contract"] != "evil"]
    assert len(others) == 6 and all(c["status"] == "pass" for c in others), others
    quick(run, 1.0 + QUICK_S)
    assert run.rss_mb < baseline_rss + MAX_EXTRA_RSS_MB, run


# ------------------------------------------------------------------ huge values, bounded output


def test_huge_strings_do_not_flood_the_output(root, baseline_rss):
    # a 10 MB argument that fails an invariant: the message shows at most 200 characters of it
    data = json.loads((root / SUCCESS).read_text("utf-8"))
    big = "Paris " * (10 * 1024 * 1024 // 6)
    data["response"]["tool_calls"][0]["function"]["arguments"] = json.dumps({"location": big})
    (root / SUCCESS).write_text(json.dumps(data, indent=2), "utf-8")
    edit(root, CONTRACT, "      type: string", "      type: string\n      length_lte: 100")
    run = measured(root, "-v", "--report-json", "report.json")
    assert run.code == 1 and "length <= 100" in run.out, run
    assert len(run.out) < 20_000, f"{len(run.out)} characters printed"
    assert (root / "report.json").stat().st_size < 200_000
    quick(run)


def test_a_recording_is_never_written_outside_its_pack(tmp_path):
    from replayci.engine import recordings

    pack = tmp_path / "pack"
    (pack / "recordings").mkdir(parents=True)
    away = tmp_path / "away"
    away.mkdir()
    os.symlink(away, pack / "recordings" / "weather")
    with pytest.raises(ValueError, match="outside the pack"):
        recordings.write(str(pack / "recordings" / "weather" / "c.json"), {"response": {}}, root=str(pack))
    assert list(away.iterdir()) == []
    recordings.write(str(pack / "recordings" / "other" / "c.json"), {"response": {}}, root=str(pack))
    assert (pack / "recordings" / "other" / "c.json").is_file()
