"""The HTML report from the command line: `--html` on a run, `reports: {html}` and `replayci report`."""
from __future__ import annotations

import json

from click.testing import CliRunner
from html_support import embedded

from replayci.cli import cli


def test_a_run_writes_the_html_report_beside_the_json_one(starter, tmp_path):
    res = CliRunner().invoke(cli, ["--html", str(tmp_path / "r.html"), "--report-json", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "r.json").read_text())
    _, cases = embedded((tmp_path / "r.html").read_text())
    assert [(c["contract"], c["case"], c["status"]) for c in cases] == \
        [(c["contract"], c["case"], c["status"]) for c in report["cases"]]


def test_the_config_names_the_html_report(starter, tmp_path):
    (starter / ".replayci.yml").write_text("provider: recorded\nreports: {html: out/report.html}\n")
    res = CliRunner().invoke(cli, [])
    assert res.exit_code == 0, res.output
    assert "<!DOCTYPE html>" in (starter / "out" / "report.html").read_text()[:200]


def test_report_builds_a_history_from_several_runs_and_exits_as_merge(starter, tmp_path):
    runner = CliRunner()
    for name in ("a", "b"):
        assert runner.invoke(cli, ["--report-json", str(tmp_path / f"{name}.json")]).exit_code == 0
    b = json.loads((tmp_path / "b.json").read_text())
    b["run"]["started_at"] = "2999-01-01T00:00:00+00:00"
    b["cases"][0]["status"] = "fail"
    b["summary"]["gates"]["pass_rate"]["passed"] = False
    (tmp_path / "b.json").write_text(json.dumps(b))
    res = runner.invoke(cli, ["report", str(tmp_path / "b.json"), str(tmp_path / "a.json"),
                              "--html", str(tmp_path / "h.html")])
    assert res.exit_code == 1, res.output
    meta, _ = embedded((tmp_path / "h.html").read_text())
    assert len(meta["history"]["runs"]) == 2


def test_report_refuses_what_is_not_a_report(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"x":')
    res = CliRunner().invoke(cli, ["report", str(bad), "--html", str(tmp_path / "h.html")])
    assert res.exit_code == 2 and "not JSON" in res.output
    assert not (tmp_path / "h.html").exists()
