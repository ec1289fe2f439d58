"""What import writes stays inside the pack, and the user's files survive it: a golden or
contracts folder that leads out of the pack, two imports at once, a fixture being edited, a
contract the user took over (saved with a byte-order mark), values YAML cannot hold bare."""
from __future__ import annotations

import os

import pytest
from cassettes import completion, first_request, interaction, write_cassette
from click.testing import CliRunner

from replayci.cli import cli


def _source(tmp_path):
    return write_cassette(tmp_path / "src" / "c.yaml", [interaction(first_request(), completion(call=True))])


OUTSIDE = {
    "golden symlinked out": lambda pack, out: os.symlink(out, pack / "golden"),
    "contracts symlinked out": lambda pack, out: os.symlink(out, pack / "contracts"),
    "golden_dir ../../x": lambda pack, out: (pack / "pack.yaml").write_text(
        (pack / "pack.yaml").read_text() + f"paths:\n  golden_dir: {os.path.relpath(out, pack)}\n"),
    "golden_dir absolute": lambda pack, out: (pack / "pack.yaml").write_text(
        (pack / "pack.yaml").read_text() + f"paths:\n  golden_dir: {out}\n"),
    "contracts_dir absolute": lambda pack, out: (pack / "pack.yaml").write_text(
        (pack / "pack.yaml").read_text() + f"paths:\n  contracts_dir: {out}\n"),
}


@pytest.mark.parametrize("how", list(OUTSIDE), ids=list(OUTSIDE))
def test_import_never_writes_outside_the_pack(tmp_path, how):
    pack, out = tmp_path / "pack", tmp_path / "elsewhere" / "x"
    out.mkdir(parents=True)
    pack.mkdir()
    (pack / "pack.yaml").write_text("id: app\nname: App\ndefault_model: gpt-4o-mini\n")
    OUTSIDE[how](pack, out)
    res = CliRunner().invoke(cli, ["import", str(_source(tmp_path)), "--pack", str(pack)])
    assert res.exit_code == 2 and "leaves the pack" in res.output and "pack.yaml" in res.output, res.output
    assert not any(out.iterdir())


def _imported(tmp_path, source, pack):
    return CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack)])


def test_a_fixture_mid_edit_is_never_replaced_by_a_new_import(tmp_path):
    pack, source = tmp_path / "pack", _source(tmp_path)
    assert _imported(tmp_path, source, pack).exit_code == 0
    (fixture,) = (pack / "golden").rglob("*.json")
    half = fixture.read_text()[: len(fixture.read_text()) // 2]  # saved mid-edit: no longer JSON
    fixture.write_text(half)
    res = _imported(tmp_path, source, pack)
    assert res.exit_code == 2 and fixture.name in res.output and "finish the edit" in res.output, res.output
    assert fixture.read_text() == half


def _taken_over(tmp_path, text_of):
    """A pack whose contract the user took over (its marker removed), saved by *text_of*; then
    a second exchange imported, whose case is appended to it."""
    pack = tmp_path / "pack"
    assert _imported(tmp_path, _source(tmp_path), pack).exit_code == 0
    (contract,) = (pack / "contracts").glob("*.yaml")
    text = "\n".join(ln for ln in contract.read_text().splitlines() if not ln.startswith("# replayci: generated"))
    contract.write_bytes(text_of(text + "\n"))
    return pack, contract


@pytest.mark.parametrize("saved", ["with a BOM", "with a BOM and CRLF"])
def test_a_case_appended_to_a_contract_saved_with_a_bom_is_indented_as_the_others(tmp_path, saved):
    import yaml

    crlf = "CRLF" in saved
    pack, contract = _taken_over(tmp_path, lambda t: b"\xef\xbb\xbf" + (t.replace("\n", "\r\n") if crlf else t)
                                 .encode())
    request = first_request()
    request["messages"][1]["content"] = "And in Rome?"
    source = write_cassette(tmp_path / "src2" / "c.yaml", [interaction(request, completion(call=True))])
    res = _imported(tmp_path, source, pack)
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(contract.read_bytes().decode("utf-8-sig"))
    assert len(doc["golden_cases"]) == 2 and all("id" in c for c in doc["golden_cases"]), doc
    assert contract.read_bytes().startswith(b"\xef\xbb\xbf")
    ran = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded"])
    assert ran.exit_code == 0, ran.output


@pytest.mark.parametrize("char", ["\x7f", "\x85", "\u2028", "\x9f"])
def test_a_case_appended_with_a_character_yaml_escapes_leaves_the_contract_readable(tmp_path, char):
    import json

    from cassettes import completion as answer

    pack, contract = _taken_over(tmp_path, lambda t: t.encode())
    doc = answer(call=True)
    doc["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps({"location": f"Ro{char}me"})
    request = first_request()
    request["messages"][1]["content"] = "And in Rome?"
    source = write_cassette(tmp_path / "src2" / "c.yaml", [interaction(request, doc)])
    assert _imported(tmp_path, source, pack).exit_code == 0
    ran = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded"])
    assert ran.exit_code == 0, ran.output
    assert "2/2 passed" in ran.output or "2 passed" in ran.output, ran.output


def test_two_imports_into_one_pack_at_once_lose_no_case(tmp_path):
    """Two imports started together into one pack take turns: every case of both is in the pack,
    its contract lists them all, and it runs."""
    import subprocess
    import sys

    import yaml

    pack = tmp_path / "pack"
    sources = []
    for side in ("a", "b"):
        exchanges = []
        for n in range(40):
            request = first_request()
            request["messages"][1]["content"] = f"Weather in city {side}{n}?"
            exchanges.append(interaction(request, completion(call=True)))
        sources.append(write_cassette(tmp_path / side / "c.json", exchanges, as_json=True))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [subprocess.Popen([sys.executable, "-m", "replayci", "import", str(s), "--pack", str(pack)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) for s in sources]
    for run in runs:
        out = run.communicate(timeout=120)[0].decode()
        assert run.returncode == 0, out
    (contract,) = (pack / "contracts").glob("*.yaml")
    assert len(yaml.safe_load(contract.read_text())["golden_cases"]) == 80
    assert len(list((pack / "golden").rglob("*.json"))) == 80
    ran = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded"])
    assert ran.exit_code == 0 and "80/80 passed" in ran.output, ran.output
