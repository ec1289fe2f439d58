"""Interrupted writes leave nothing the next run skips: `mutate --write-negatives` stopped by
SIGINT or SIGTERM leaves each negative whole and listed, or absent, and a run after one that was
cut short (a file empty, half-written, or written before its contract) repairs it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warmed
from test_bad_inputs import CONTRACT, PACK, edit, invoke
from test_bad_inputs import make_project as starter_project

NEGATIVES = f"{PACK}/golden/negative"
MUTANT = "get_weather.tool_call_success.mutant.value_change.get_weather.location.json"
CASE_ID = "tool_call_success.mutant.value_change.get_weather.location"


LOCATION = '    - path: "$.tool_calls[0].arguments.location"\n      type: string\n'


def make_project(root: Path) -> Path:
    """The starter project, its contract checking the location itself (so a changed location is
    caught by the contract alone, and --write-negatives writes a negative case for it)."""
    starter_project(root)
    edit(root, CONTRACT, LOCATION, LOCATION + '    - path: "$.tool_calls[0].arguments.location"\n'
         "      equals: San Francisco\n")
    return root


def test_every_negative_written_passes_at_the_next_run(tmp_path, monkeypatch):
    for root in (starter_project(tmp_path / "starter"), make_project(tmp_path / "checked")):
        code, out = invoke(root, ["mutate", "--write-negatives"], monkeypatch)
        assert code == 0, out
        code, out = invoke(root, [], monkeypatch)
        assert code == 0 and "FAIL" not in out, out


@pytest.fixture
def written(tmp_path_factory, monkeypatch) -> str:
    """The negative fixture an uninterrupted --write-negatives writes for the starter pack."""
    root = make_project(tmp_path_factory.mktemp("whole"))
    code, out = invoke(root, ["mutate", "--write-negatives"], monkeypatch)
    assert code == 0 and CASE_ID in out, out
    return (root / NEGATIVES / MUTANT).read_text("utf-8")


@pytest.mark.parametrize("left", ["empty", "half", "whole-but-unlisted"])
def test_what_a_cut_run_left_is_repaired_by_the_next(tmp_path, monkeypatch, written, left):
    root = make_project(tmp_path)
    target = root / NEGATIVES / MUTANT
    target.write_text({"empty": "", "half": written[: len(written) // 2],
                       "whole-but-unlisted": written}[left], "utf-8")
    code, out = invoke(root, ["mutate", "--write-negatives"], monkeypatch)
    assert code == 0, out
    assert "not overwritten" not in out and CASE_ID in out, out
    assert target.read_text("utf-8") == written
    assert CASE_ID in (root / CONTRACT).read_text("utf-8")
    code, out = invoke(root, [], monkeypatch)
    assert code == 0 and "7/7 passed" in out, out


def test_a_file_of_someone_elses_is_still_not_overwritten(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    target = root / NEGATIVES / MUTANT
    target.write_text('{"mine": true}\n', "utf-8")
    code, out = invoke(root, ["mutate", "--write-negatives"], monkeypatch)
    assert "exists; not overwritten" in out, out
    assert target.read_text("utf-8") == '{"mine": true}\n'
    assert CASE_ID not in (root / CONTRACT).read_text("utf-8")


def _many_contracts(root: Path, n: int) -> None:
    """*n* copies of the starter contract (each gets one negative)."""
    text = (root / CONTRACT).read_text("utf-8")
    for i in range(n):
        (root / PACK / "contracts" / f"weather_{i:03d}.yaml").write_text(text, "utf-8")
    pack_yaml = root / PACK / "pack.yaml"
    pack_text = pack_yaml.read_text("utf-8")
    if "contracts:" in pack_text:
        pytest.skip("the starter pack lists its contracts")


def _consistent(root: Path) -> list[str]:
    """Every mutant negative on disk is whole JSON and listed in its contract; returns them."""
    found = []
    for path in sorted((root / NEGATIVES).glob("*.mutant.*.json")):
        json.loads(path.read_text("utf-8"))  # whole
        contract, case = path.name.split(".", 1)
        case = case[: -len(".json")]
        assert case in (root / PACK / "contracts" / f"{contract}.yaml").read_text("utf-8"), path.name
        found.append(path.name)
    assert not list((root / NEGATIVES).glob(".*.tmp"))
    return found


@pytest.mark.skipif(os.name != "posix", reason="signals")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_write_leaves_every_negative_whole_and_listed_or_absent(tmp_path, sig):
    root = make_project(tmp_path)
    _many_contracts(root, 60)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAYCI_", "GITHUB_"))}
    proc = subprocess.Popen([*warmed.cli(env), "mutate", "--write-negatives"], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list((root / NEGATIVES).glob("weather_*.mutant.*"))) >= 3:
            break
        time.sleep(0.002)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, 0), (proc.returncode, err)
    assert b"Traceback" not in err
    _consistent(root)
    # The next run completes the job: one negative per contract, every one whole and listed.
    done = subprocess.run([*warmed.cli(env), "mutate", "--write-negatives"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_consistent(root)) == 61
    final = subprocess.run(warmed.cli(env), cwd=root, env=env, capture_output=True, text=True,
                           timeout=120)
    assert final.returncode == 0, final.stdout[-2000:] + final.stderr


# ------------------------------------------------------------------ SIGTERM, and interrupts inside a write

@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="threads have no signal mask here")
@pytest.mark.parametrize("which", ["write_all_atomic", "write_atomic"])
def test_an_interrupt_as_files_are_put_in_place_takes_effect_after(tmp_path, monkeypatch, which):
    from replayci.core import files

    targets = {str(tmp_path / "a.json"): "[1]\n", str(tmp_path / "b.yaml"): "b: 2\n"}
    real = os.replace
    calls = []

    def interrupted_replace(src, dst):
        calls.append(dst)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C as the first file is put in place
        return real(src, dst)

    monkeypatch.setattr(files.os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        if which == "write_all_atomic":
            files.write_all_atomic(targets)
        else:
            for path, text in targets.items():
                files.write_atomic(path, text)
    written = {str(p): p.read_text("utf-8") for p in tmp_path.iterdir()}
    expected = targets if which == "write_all_atomic" else dict(list(targets.items())[:1])
    assert written == expected  # every file of the step in place, whole; no temp file beside them


def _cassettes(folder: Path, n: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    from cassettes import completion, first_request, interaction, write_cassette

    folder.mkdir()
    for i in range(n):
        req = first_request()
        req["messages"][1]["content"] = f"What is the weather in city {i}?"
        req["tools"][0]["function"]["name"] = f"get_weather_{i % 30}"
        write_cassette(folder / f"c{i:03d}.yaml", [interaction(req, completion(call=False))])


def _whole(pack: Path) -> int:
    """Every file of *pack* whole (JSON or YAML that parses), none a temp file; their count."""
    import yaml

    count = 0
    for path in pack.rglob("*"):
        if path.is_file():
            assert not path.name.endswith(".tmp"), path
            text = path.read_text("utf-8")
            json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
            count += 1
    return count


@pytest.mark.skipif(os.name != "posix", reason="signals")
@pytest.mark.parametrize("at", [60])
def test_sigterm_during_import_stops_it_as_ctrl_c_does_and_the_next_import_completes(tmp_path, at):
    _cassettes(tmp_path / "cassettes", 120)
    (tmp_path / ".replayci.yml").write_text("provider: recorded\n", "utf-8")
    pack = tmp_path / "packs" / "imported"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAYCI_", "GITHUB_"))}
    command = [*warmed.cli(env), "import", "cassettes", "--pack", str(pack)]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if pack.exists() and sum(1 for _ in pack.rglob("*")) >= at:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (130, 0), (proc.returncode, err)  # 0: it had finished
    assert b"Traceback" not in err
    if pack.exists():
        _whole(pack)
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _whole(pack) == 120 + 30 + 2  # fixtures, contracts, pack.yaml and its allowlist
    run = subprocess.run([*warmed.cli(env), "--pack", str(pack)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "120/120 passed" in run.stdout, run.stdout[-2000:] + run.stderr


def test_two_write_negatives_at_once_leave_a_pack_that_loads(tmp_path):
    """Two `mutate --write-negatives` started together take turns on the pack: each negative
    case is written and listed once, and the pack runs."""
    import os
    import subprocess
    import sys

    root = make_project(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for var in ("REPLAYCI_PROVIDER", "REPLAYCI_MODEL", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        env.pop(var, None)
    runs = [subprocess.Popen([*warmed.cli(env), "mutate", "--write-negatives"], cwd=root,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) for _ in range(2)]
    outs = [run.communicate(timeout=120)[0].decode() for run in runs]
    assert all(run.returncode in (0, 1) for run in runs), outs
    assert (root / CONTRACT).read_text("utf-8").count(f"id: {CASE_ID}") == 1
    code = subprocess.run(warmed.cli(env), cwd=root, env=env, capture_output=True, text=True)
    assert code.returncode == 0, code.stdout + code.stderr
