"""--tag selects cases by their tags, and every report shows each case's tags."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from builders import call, fixture, request, response
from click.testing import CliRunner

import replayci
from replayci.cli import cli

CONTRACT = """
tool: get_weather
golden_cases:
  - id: smoke_case
    input_ref: a.json
    tags: [smoke, geo]
  - id: slow_case
    input_ref: b.json
    tags: [slow]
  - id: untagged
    input_ref: c.json
"""


@pytest.fixture
def tagged(pack):
    for ref in ("a", "b", "c"):
        pack.fixture(f"{ref}.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.contract("weather", CONTRACT)
    return pack


def invoke(*args):
    return CliRunner().invoke(cli, ["run", "--no-color", *args], catch_exceptions=False)


def test_tag_selects_the_cases_with_any_given_tag(tagged):
    one = invoke("--json", "--tag", "smoke")
    assert one.exit_code == 0, one.output
    report = json.loads(one.stdout)
    assert [c["case"] for c in report["cases"]] == ["smoke_case"]
    assert report["run"]["tags"] == ["smoke"]
    two = json.loads(invoke("--json", "--tag", "smoke", "--tag", "slow").stdout)
    assert [c["case"] for c in two["cases"]] == ["smoke_case", "slow_case"]


def test_a_tag_no_case_has_is_a_usage_error(tagged):
    res = invoke("--tag", "nope")
    assert res.exit_code == 2
    assert "no case matches --tag nope" in res.stderr


def test_every_report_shows_the_tags(tagged, tmp_path):
    res = invoke("--json", "--junit", str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "s.md"),
                 "--html", str(tmp_path / "r.html"))
    assert res.exit_code == 0, res.output
    cases = {c["case"]: c for c in json.loads(res.stdout)["cases"]}
    assert cases["smoke_case"]["tags"] == ["smoke", "geo"] and cases["untagged"]["tags"] == []
    props = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(tmp_path / "j.xml").iter("testcase")}
    assert any(p.get("tags") == "smoke, geo" for p in props.values())
    assert not any("tags" in p for name, p in props.items() if "untagged" in name)
    html = (tmp_path / "r.html").read_text()
    assert '<option value="smoke">smoke (1)</option>' in html


def test_markdown_lists_tags_where_it_lists_cases(tagged, tmp_path):
    contract = tagged.dir / "contracts" / "weather.yaml"
    contract.write_text(contract.read_text().replace("tool: get_weather", "tool: other_tool"))
    res = invoke("--markdown", str(tmp_path / "s.md"))
    assert res.exit_code == 1
    assert "| `demo/weather/smoke_case` · tags: smoke, geo | fail |" in (tmp_path / "s.md").read_text()


def test_the_api_takes_tags(tagged):
    result = replayci.run(provider="recorded", tags=["slow"])
    assert [(c.case, c.tags) for c in result.cases] == [("slow_case", ("slow",))]
