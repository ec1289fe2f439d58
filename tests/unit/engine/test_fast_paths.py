"""The per-case shortcuts change no byte of a report: a generated pack (shared tools, and
fixtures that each carry their own tools, negative cases included) gives the same JSON
report with replayci.core.memo.use_fast_paths(True) and (False)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from builders import strict_and_fast

from replayci.api import run_settings
from replayci.config import resolve
from replayci.core.hashing import canonical_json, tools_key
from replayci.core.memo import fast_paths
from replayci.pack.sources import parse_json
from replayci.report import json_report

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _gen_pack():
    spec = importlib.util.spec_from_file_location("bench_gen_pack", BENCH / "gen_pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    gen = _gen_pack()
    out = {}
    for vary in (False, True):
        project = tmp_path_factory.mktemp("varied" if vary else "plain")
        gen.generate(60, project, contracts=4, quiet=True, vary=vary)
        out[vary] = project
    return out


def _report(project: Path) -> str:
    """The JSON report of a one-process recorded run, its timings blanked."""
    settings = resolve({"provider": "recorded", "processes": 1}, cwd=str(project))
    _, result = run_settings(settings)
    report = json_report.build(result, settings)
    for case in report["cases"]:
        case["duration_ms"] = None
    report["run"] = {k: v for k, v in report["run"].items() if "time" not in k and "_at" not in k
                     and "duration" not in k}
    return json.dumps(report, indent=2, sort_keys=True)


@pytest.mark.parametrize("vary", [False, True], ids=["shared-tools", "varied-tools"])
def test_a_run_reports_the_same_bytes_with_and_without_the_fast_paths(projects, vary):
    slow, fast = strict_and_fast(lambda: _report(projects[vary]))
    again = _report(projects[vary])  # warm caches: schemas, tools texts, tables
    assert fast_paths()
    cases = json.loads(fast)["cases"]
    assert len(cases) == 60 and any(not c["expect_ok"] for c in cases)
    assert {c["status"] for c in cases} == {"pass"}
    assert fast == slow and again == slow


def test_tools_keys_built_tool_by_tool_are_the_canonical_json(projects):
    seen = 0
    for project in projects.values():
        for path in sorted(project.rglob("golden/**/*.json")):
            tools = parse_json(path.read_text(encoding="utf-8"), path.name)["request"].get("tools")
            if isinstance(tools, list):
                key = tools_key(tools)
                assert key == canonical_json(tools) and len(key.schemas) == len(tools)
                seen += 1
    assert seen >= 100
    odd = [[{"name": "a", "parameters": {"b": 1, "a": [1.5, "é", -0.0, 1e16]}}],
           [{"type": "function", "function": {"z": None, "parameters": {}, "name": "x"}}],
           [{"function": "s"}, 1, "x", None, []], [{"input_schema": {"x": True}, "name": "\u2028"}],
           [{"parameters": None}], [{"parameters": {}, "function": {"input_schema": False}}]]
    for tools in odd:
        assert tools_key(tools) == canonical_json(tools)
    for bad in ([{"parameters": float("nan")}], [{"parameters": {"a": object()}}], [{"parameters": {}, 1: 2}]):
        with pytest.raises((TypeError, ValueError)):
            canonical_json(bad)
        with pytest.raises((TypeError, ValueError)):
            tools_key(bad)
