"""A live answer larger than the size replayci reads recordings under is not recorded: the
case keeps its verdict and says why. Real CLI, real SDKs, fake server."""
from __future__ import annotations

import json

import pytest
from fakeserver import Reply
from livecli import add_cases, cases_by_id, invoke

from replayci.engine import recordings

LIMIT = 20_000


def test_an_answer_over_the_recording_limit_is_not_recorded(pack, server, project):
    provider = "openai"  # the rule is the runner's, whichever provider answered
    (project / ".replayci.yml").write_text(f"provider: recorded\nfixtures:\n  max_bytes: {LIMIT}\n", "utf-8")
    add_cases(pack, "w", ["big", "small"])
    big = Reply.tool_call("get_weather", {"location": "Paris"}, text="x" * (2 * LIMIT))
    server.set_default(lambda req: big if req.turns.last_user == "q:big" else Reply.tool_call(
        "get_weather", {"location": "Paris"}))
    res = invoke(provider, server, "--record", "-v", "--report-json", "out.json")
    assert res.exit_code == 0, res.output
    assert not (pack.dir / "recordings" / "w" / "big.json").exists()
    assert (pack.dir / "recordings" / "w" / "small.json").exists()
    cases = cases_by_id(json.loads((project / "out.json").read_text("utf-8")))
    assert cases["big"]["status"] == "pass" and cases["small"]["status"] == "pass"
    note = cases["big"]["note"]
    assert note.startswith("recording not written: it would be ") and f"over the limit of {LIMIT:,} bytes" in note
    assert "note" not in cases["small"]
    assert f"note: {note}" in res.output
    # What was written replays.
    offline = invoke("recorded", None, "--json", key=False)
    assert cases_by_id(json.loads(offline.stdout))["small"]["status"] == "pass"


def test_an_answer_that_is_not_unicode_is_not_recorded(pack, server, project):
    add_cases(pack, "w", ["odd"])
    server.set_default(Reply.tool_call("get_weather", '{"location": "Paris \\ud800"}'))
    res = invoke("openai", server, "--record", "-v", "--report-json", "out.json", "--junit", "out.xml")
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    (case,) = json.loads((project / "out.json").read_text("utf-8"))["cases"]
    assert case["status"] == "pass"
    assert case["note"].startswith("recording not written: it holds text that is not Unicode"), case
    assert '"location": "Paris \\ud800"' in (project / "out.json").read_text("utf-8")  # escaped: valid JSON
    assert not (pack.dir / "recordings" / "w" / "odd.json").exists()


def test_a_recording_replayci_could_not_read_back_is_not_written(tmp_path):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    for doc, why in (({"response": {"content": deep}}, "nested too deeply"),
                     ({"response": {"content": "x\ud800"}}, "not Unicode")):
        with pytest.raises(recordings.NotWritten, match=why):
            recordings.write(str(tmp_path / "r.json"), doc, max_bytes=1 << 20)
    assert not (tmp_path / "r.json").exists()


def test_observe_writes_no_spec_whose_answer_is_not_unicode(server, project):
    from builders import WEATHER_TOOLS
    from click.testing import CliRunner
    from livecli import live_env

    from replayci.cli import cli

    server.set_default(Reply.tool_call("get_weather", '{"location": "Paris \\ud800"}', text="odd \ud800 text"))
    (project / "observe").mkdir()
    (project / "observe" / "odd.json").write_text(json.dumps({
        "messages": [{"role": "user", "content": "q:odd"}], "tools": WEATHER_TOOLS}), "utf-8")
    res = CliRunner().invoke(cli, ["observe", "--provider", "openai", "--model", "model-o", "--base-url",
                                   server.base_url_for("openai"), "--input", "observe", "--output",
                                   "packs/observed", "--no-color"], env=live_env("openai"), catch_exceptions=False)
    assert res.exit_code in (0, 1) and "Traceback" not in res.output, res.output
    assert "not Unicode" in res.output and "could not be observed" in res.output, res.output
    assert not (project / "packs" / "observed" / "recordings").exists()
    written = [p for p in (project / "packs" / "observed").rglob("*.json") if p.is_file()]
    assert written
    for path in written:
        json.loads(path.read_text("utf-8"))  # every file stays valid JSON (UTF-8, the half pair escaped)
