"""The reporters are handlers of the run's events: a handler of your own, attached through
`replayci.run(handlers=...)`, hears exactly what the built-in reporters hear, their files say
no more than those events, and the command line writes its reports through the same handlers."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from builders import call, fixture, request, response
from click.testing import CliRunner

import replayci
from replayci.cli import cli as main
from replayci.engine.events import CaseJudged, Event, Handler, RunFinished, RunStarted
from replayci.report.handlers import reporters

GOOD = response(call("get_weather", {"location": "Paris", "unit": "celsius"}))
BAD = response(call("get_weather", {"location": "Paris", "unit": "kelvin"}))


def _project(pack) -> None:
    for c in range(2):
        pack.contract(f"k{c}", "tool: get_weather\ngolden_cases:\n" + "".join(
            f"  - {{id: c{i}, input_ref: {('ok', 'bad')[(i + c) % 2]}.json}}\n" for i in range(3)))
    pack.fixture("ok.json", fixture(request(), GOOD))
    pack.fixture("bad.json", fixture(request(), BAD))


class Heard(Handler):
    """Notes every event it is told, in order; *inner*, when given, hears them after it."""

    def __init__(self, inner: Handler | None = None) -> None:
        self.inner, self.events = inner, []

    def handle(self, event: Event) -> None:
        self.events.append(event)
        if self.inner is not None:
            self.inner.handle(event)


def test_a_handler_of_yours_hears_what_the_reporters_hear_and_their_files_come_from_those_events(pack, tmp_path):
    _project(pack)
    files = {"json": str(tmp_path / "r.json"), "junit": str(tmp_path / "r.xml"), "markdown": str(tmp_path / "r.md")}
    builtin = [Heard(h) for h in reporters(files)]
    mine = Heard()
    result = replayci.run(handlers=[*builtin, mine])

    kinds = [type(e) for e in mine.events]
    assert kinds == [RunStarted, *[CaseJudged] * 6, RunFinished]
    for spy in builtin:  # the same events, the same objects, in the same order
        assert len(spy.events) == len(mine.events)
        assert all(a is b for a, b in zip(spy.events, mine.events, strict=True))
    judged = [e.result for e in mine.events if type(e) is CaseJudged]
    finished = mine.events[-1].result
    assert finished is result and finished.cases == judged

    # what the reports say is what the events told: the cases judged, the finished run's summary
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["cases"] == [r.to_dict() for r in judged]
    assert report["summary"] == finished.summary and report["summary"]["fail"] == 3
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("6", "3")
    failing = [f"`demo/{r.contract}/{r.case}` | fail" for r in judged if r.status == "fail"]
    assert len(failing) == 3 and all(row in (tmp_path / "r.md").read_text() for row in failing)


def test_a_reporter_writes_nothing_before_the_run_finishes(pack, tmp_path):
    _project(pack)
    path = tmp_path / "r.json"

    class Before(Handler):
        def handle(self, event: Event) -> None:
            if type(event) is RunFinished:
                assert not path.exists()  # (a reporter that wrote before its event would be seen here)

    replayci.run(handlers=[Before(), *reporters({"json": str(path)})])
    assert json.loads(path.read_text())["summary"]["total"] == 6


_VOLATILE = re.compile(rb'"(duration_ms|started_at|jobs|config)": [^,}\n]+')


def test_the_command_line_writes_through_the_same_reporters(pack, tmp_path):
    _project(pack)
    api = {"json": str(tmp_path / "a.json"), "junit": str(tmp_path / "a.xml")}
    replayci.run(handlers=reporters(api))
    # with and without the spool (--junit alone reads light results; --html holds whole ones)
    for name, extra in (("b", []), ("c", ["--html", str(tmp_path / "c.html")])):
        done = CliRunner().invoke(main, ["--report-json", str(tmp_path / f"{name}.json"),
                                         "--junit", str(tmp_path / f"{name}.xml"), *extra])
        assert done.exit_code == 1, done.output
        for ext in ("json", "xml"):
            a = _VOLATILE.sub(b"", (tmp_path / f"a.{ext}").read_bytes())
            b = _VOLATILE.sub(b"", (tmp_path / f"{name}.{ext}").read_bytes())
            if ext == "xml":
                a, b = (re.sub(rb'(time|timestamp)="[^"]*"', b"", x) for x in (a, b))
            assert a == b, ext
