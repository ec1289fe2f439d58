"""A JSON report written from case lines spooled as cases finished is the report written from
whole results, byte for byte, in one process or two, from the library and the CLI."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from builders import call, fixture, request, response
from click.testing import CliRunner

from replayci.api import run_settings
from replayci.cli import cli as main
from replayci.config import resolve
from replayci.engine import parallel
from replayci.report import json_report
from replayci.report.spool import CaseSpool

GOOD = response(call("get_weather", {"location": "Paris", "unit": "celsius"}))
BAD = response(call("get_weather", {"location": "Paris", "unit": "kelvin"}))
PROSE = response(content="It is sunny, ça va \u2028 \"quoted\"")


def _project(pack, n_contracts=6, n_cases=9):
    for c in range(n_contracts):
        body = ("tool: get_weather\nassertions:\n  output_invariants:\n"
                "    - {path: '$.tool_calls[0].arguments.location', equals: Paris}\ngolden_cases:\n") + "".join(
            f"  - {{id: c{i:02d}, input_ref: {('ok', 'bad', 'prose')[(i + c) % 3]}.json}}\n" for i in range(n_cases))
        body += "  - {id: neg, input_ref: negative/prose.json, expect_ok: false}\n"
        pack.contract(f"k{c}", body)
    pack.fixture("ok.json", fixture(request(), GOOD))
    pack.fixture("bad.json", fixture(request(), BAD))
    pack.fixture("prose.json", fixture(request(), PROSE))
    pack.fixture("negative/prose.json", fixture(request(), PROSE))


_VOLATILE = re.compile(rb'"(duration_ms|started_at)": [^,}\n]+')


def _bytes(result, settings, spool=None) -> bytes:
    report = json_report.build(result, settings, cases=spool is None)
    lines = None if spool is None else spool.case_lines(result.cases)
    return _VOLATILE.sub(rb'"\1": 0', b"".join(json_report.chunks(report, lines)))


def test_spooled_report_is_byte_identical_in_one_process_and_two(pack):
    _project(pack)
    # The test process may hold threads other tests left (servers, exporters), and a process
    # with threads never splits a run: the comparison runs in a fresh one, where it does.
    paths = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2] / "support")]
    code = f"import sys; sys.path[:0] = {paths!r}; import test_spool; test_spool.one_and_two_processes()"
    done = subprocess.run([sys.executable, "-c", code], cwd=os.getcwd(), capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])})
    assert done.returncode == 0, done.stdout + done.stderr


def one_and_two_processes() -> None:
    """The spooled and whole reports of the project in the working directory, in one process and
    in two: all four the same bytes."""
    assert parallel.fork_safe()  # (else the two-process run would not fork and prove nothing)
    texts = []
    for processes in (1, 2):
        settings = resolve({"processes": processes})
        _, whole = run_settings(settings)
        texts.append(_bytes(whole, settings))
        with CaseSpool() as spool:
            _, light = run_settings(settings, handlers=[spool])
            assert all(c.response is None and c.stored for c in light.cases)
            texts.append(_bytes(light, settings, spool))
    assert len(set(texts)) == 1
    report = json.loads(texts[0])
    assert len(report["cases"]) == 60 and {c["status"] for c in report["cases"]} == {"pass", "fail"}
    assert "response" in report["cases"][0]
    # one case per line, between the indented run record and summary
    assert texts[0].count(b'\n    {"pack": ') == 60


def test_spool_files_go_when_it_closes(pack):
    _project(pack, 1, 3)
    with CaseSpool() as spool:
        run_settings(resolve({"processes": 1}), handlers=[spool])
        folder = spool.folder
        assert os.listdir(folder)
    assert not os.path.exists(folder)


def test_cli_report_is_the_same_with_and_without_the_spool(pack, tmp_path):
    _project(pack)
    runner = CliRunner()
    spooled = runner.invoke(main, ["--report-json", str(tmp_path / "a.json")])
    # --html reads whole cases: this run holds them and writes the JSON report from them
    whole = runner.invoke(main, ["--report-json", str(tmp_path / "b.json"), "--html", str(tmp_path / "b.html"),
                                 "--junit", str(tmp_path / "b.xml")])
    assert spooled.exit_code == whole.exit_code == 1, spooled.output + whole.output
    a, b = (_VOLATILE.sub(rb'"\1": 0', (tmp_path / f"{n}.json").read_bytes()) for n in "ab")
    assert a == b and len(json.loads(a)["cases"]) == 60
    junit = runner.invoke(main, ["--report-json", str(tmp_path / "c.json"), "--junit", str(tmp_path / "c.xml")])
    assert junit.exit_code == 1
    # the JUnit report of light results (spooled run) is the one of whole results
    assert _strip_times((tmp_path / "c.xml").read_text()) == _strip_times((tmp_path / "b.xml").read_text())


def _strip_times(xml: str) -> str:
    return re.sub(r'(time|timestamp)="[^"]*"', "", xml)


def test_the_spool_goes_when_the_report_cannot_be_written(pack, tmp_path, monkeypatch):
    import tempfile

    _project(pack, 1, 3)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    (tmp_path / "plain").write_text("a file, not a folder")
    res = CliRunner().invoke(main, ["--report-json", str(tmp_path / "plain" / "r.json")])
    assert res.exit_code == 2 and "plain" in res.output, res.output
    ok = CliRunner().invoke(main, ["--report-json", str(tmp_path / "r.json")])
    assert ok.exit_code == 1 and (tmp_path / "r.json").is_file()
    assert os.listdir(scratch) == []
