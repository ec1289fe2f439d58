"""`pytest --replayci`: golden cases as pytest items."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from builders import call, fixture, request, response


def pytest_in(cwd, *args, entry_point: bool = False):
    """pytest in a process of its own. Loading only replayci's plugin (not every installed one:
    hypothesis alone costs a second of start-up) unless *entry_point*: then as a user's pytest
    finds it, through the installed entry point."""
    env = dict(os.environ)
    if not entry_point:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args = ("-p", "replayci.pytest_plugin", *args)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args],
                          cwd=cwd, capture_output=True, text=True, check=False, env=env)


def build(pack):
    pack.contract("weather", """
tool: get_weather
golden_cases:
  - {id: good, input_ref: ok.json}
  - {id: bad_unit, input_ref: bad.json}
  - {id: live_only, input_ref: ok.json, provider_modes: [openai]}
  - {id: unrecorded, input_ref: none.json}
""")
    pack.contract("draft", """
status: observed
tool: get_weather
golden_cases:
  - {id: sketchy, input_ref: bad.json}
""")
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("bad.json", fixture(request(), response(call("get_weather", {"location": "Paris", "unit": "K"}))))
    pack.fixture("none.json", fixture(request(), None))
    (pack.root / "tests").mkdir(exist_ok=True)


def test_outcomes_map_to_pytest(pack):
    build(pack)
    proc = pytest_in(pack.root, "--replayci", "--junitxml", "out.xml", entry_point=True)
    out = proc.stdout
    assert proc.returncode == 1, out
    # node ids are the case ids, pack/contract/case
    assert "::" not in out + proc.stderr
    assert "PASSED demo/weather/good" in out
    assert "FAILED demo/weather/bad_unit" in out
    assert "SKIPPED" in out and "provider_modes" in out
    assert "FAILED demo/weather/unrecorded" in out  # non-allowlisted non_reproducible fails
    assert "XFAIL demo/draft/sketchy" in out
    # the same failure text as the CLI
    assert "get_weather: $.unit 'K' is not one of ['celsius', 'fahrenheit']" in out
    root = ET.parse(pack.root / "out.xml").getroot()
    names = [(tc.get("classname"), tc.get("name")) for tc in root.iter("testcase")]
    assert ("demo.weather", "bad_unit") in names and len(names) == 5  # as replayci's own JUnit names it


def test_collect_only_counts_and_lists_the_cases_by_their_ids(pack):
    build(pack)
    (pack.root / "tests" / "test_app.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    proc = pytest_in(pack.root, "--replayci", "--collect-only", "-q")
    lines = proc.stdout.splitlines()
    listed = [line for line in lines if line.startswith(("demo/", "tests/"))]
    assert sorted(listed) == ["demo/draft/sketchy", "demo/weather/bad_unit", "demo/weather/good",
                              "demo/weather/live_only", "demo/weather/unrecorded",
                              "tests/test_app.py::test_a", "tests/test_app.py::test_b"], proc.stdout
    assert "7 tests collected" in proc.stdout, proc.stdout
    # the ids select the cases, and a case's id selects it
    proc = pytest_in(pack.root, "--replayci", "demo/weather/good", "--collect-only", "-q")
    listed = [line for line in proc.stdout.splitlines() if line.startswith("demo/")]
    assert listed == ["demo/weather/good"] and "3 tests collected" in proc.stdout, proc.stdout


def test_keyword_and_exitfirst(pack):
    build(pack)
    proc = pytest_in(pack.root, "--replayci=packs/demo", "-k", "good")
    assert proc.returncode == 0 and "1 passed" in proc.stdout and "4 deselected" in proc.stdout
    proc = pytest_in(pack.root, "--replayci", "-x")
    assert "stopping after 1 failures" in proc.stdout


def test_error_outcome_is_a_pytest_error(pack, monkeypatch):
    pack.contract("weather", """
tool: get_weather
assertions:
  output_invariants:
    - {path: "$.tool_calls[0].arguments.location", regex: "^(a|aa)+$"}
golden_cases:
  - {id: slow, input_ref: ok.json}
""")
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "a" * 200 + "b"}))))
    (pack.root / "conftest.py").write_text("import replayci.checks.operators as m\nm.REGEX_TIMEOUT_S = 0.05\n")
    proc = pytest_in(pack.root, "--replayci")
    assert "1 error" in proc.stdout and "ERROR" in proc.stdout, proc.stdout


def test_without_the_flag_nothing_is_collected(pack):
    build(pack)
    proc = pytest_in(pack.root)
    assert "no tests ran" in proc.stdout


def test_bad_pack_is_a_usage_error(pack):
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: x, input_ref: missing.json}\n")
    proc = pytest_in(pack.root, "--replayci")
    assert proc.returncode == 4 and "missing.json" in proc.stderr and "Traceback" not in proc.stderr


def test_one_case_by_its_id_or_node_id(pack):
    build(pack)
    for selector in ("demo/weather/good", "demo/weather::good", "::demo/weather/good"):
        proc = pytest_in(pack.root, "--replayci", selector)
        assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr
    proc = pytest_in(pack.root, "--replayci", "demo/weather/*", "-q")
    assert "2 failed" in proc.stdout and "1 skipped" in proc.stdout and "1 passed" in proc.stdout


def test_with_targets_an_item_fails_when_one_target_fails(pack):
    pack.contract("weather", """
tool: get_weather
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: $.location, equals: Paris}
golden_cases:
  - {id: c, input_ref: c.json}
""")
    fx = fixture(request())
    pack.fixture("c.json", fx)
    for folder, city in (("openai_good", "Paris"), ("openai_bad", "Lyon")):
        pack.recording(f"{folder}/weather", "c", {"meta": {"provider": "openai", "model": folder[7:]},
                                                  "boundary": fx["boundary"],
                                                  "response": response(call("get_weather", {"location": city}))})
    (pack.root / "tests").mkdir(exist_ok=True)
    (pack.root / ".replayci.yml").write_text("provider: recorded\ntargets:\n  - {provider: openai, model: good}\n")
    assert pytest_in(pack.root, "--replayci").returncode == 0
    (pack.root / ".replayci.yml").write_text("provider: recorded\ntargets:\n  - {provider: openai, model: good}\n"
                                             "  - {provider: openai, model: bad}\n")
    proc = pytest_in(pack.root, "--replayci")
    assert proc.returncode == 1 and 'equals "Paris", got "Lyon"' in proc.stdout
