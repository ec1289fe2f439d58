"""The benchmark tools keep working: a small generated project is valid, replayci passes it, the
floor parses exactly its files, the varied generator changes bytes but no verdict, bench/recorded.py,
bench/startup.py and bench/import.py measure in alternating rounds end to end (these runs are soak
tests, `-m slow`), and bench/vs_promptfoo.py writes matching case sets (promptfoo itself is never
installed or run here)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=300)


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


@pytest.mark.slow  # runs a benchmark end to end: a soak test
def test_generated_project_checks_passes_and_floors(tmp_path):
    project = tmp_path / "project"
    made = run(BENCH / "gen_pack.py", 40, "--out", project)
    assert made.returncode == 0, made.stderr
    checked = run(BENCH / "check_gen.py", project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    replay = run("-m", "replayci", "--provider", "recorded", "--json", cwd=project)
    assert replay.returncode == 0, replay.stderr
    report = json.loads(replay.stdout)
    assert report["summary"]["total"] == 40 and report["summary"]["pass"] == 40
    negatives = [c for c in report["cases"] if not c["expect_ok"]]
    assert negatives and all(c["classification"] == c["expected_error"] for c in negatives)
    floor = run(BENCH / "floor.py", project)
    assert floor.returncode == 0, floor.stderr
    contracts = len(list((project / "packs" / "bench" / "contracts").glob("*.yaml")))
    assert floor.stdout.strip() == f"floor: {contracts} contracts, 40 fixtures parsed"


@pytest.mark.slow  # runs a benchmark end to end: a soak test
def test_varied_generator_changes_bytes_not_verdicts(tmp_path):
    plain, varied = tmp_path / "plain", tmp_path / "varied"
    for out, extra in ((plain, ()), (varied, ("--vary",))):
        made = run(BENCH / "gen_pack.py", 40, "--contracts", 4, "--out", out, *extra)
        assert made.returncode == 0, made.stderr
    # Same case files, different bytes: per-fixture tools, half pretty-printed, half compact.
    files = sorted(p.relative_to(varied) for p in varied.rglob("*.json") if "golden" in p.parts)
    assert files == sorted(p.relative_to(plain) for p in plain.rglob("*.json") if "golden" in p.parts)
    layouts = {"pretty": 0, "compact": 0}
    tools_by_contract: dict[str, set[str]] = {}
    for rel in files:
        raw = (varied / rel).read_text(encoding="utf-8")
        layouts["compact" if raw.count("\n") == 1 else "pretty"] += 1
        fx = json.loads(raw)
        same = json.loads((plain / rel).read_text(encoding="utf-8"))
        # The same response but for its token counts (the varied request has another size).
        assert {**fx["response"], "usage": None} == {**same["response"], "usage": None}
        contract = rel.parent.name
        tools_by_contract.setdefault(contract, set()).add(json.dumps(fx["request"]["tools"], sort_keys=True))
    assert layouts == {"pretty": 20, "compact": 20}
    assert sum(len(t) for t in tools_by_contract.values()) == 40  # no two fixtures share tools bytes
    checked = run(BENCH / "check_gen.py", varied)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "tools vary per fixture" in checked.stdout
    compared = run(BENCH / "check_gen.py", "--compare", plain, varied)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "40 cases" in compared.stdout and "the same" in compared.stdout
    floor = run(BENCH / "floor.py", varied)
    assert floor.returncode == 0, floor.stderr
    assert floor.stdout.strip() == "floor: 4 contracts, 40 fixtures parsed"


@pytest.mark.slow  # runs a benchmark end to end: a soak test
def test_recorded_benchmark_alternating_end_to_end(tmp_path):
    saved = tmp_path / "bench.json"
    res = run(BENCH / "recorded.py", "--sizes", "10", "--small", "0", "--repeat", "1", "--vary",
              "--out-dir", tmp_path / "out", "--save", saved,
              "--replayci", Path(sys.executable).parent / "replayci",
              "--before", Path(sys.executable).parent / "replayci")
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(saved.read_text())
    assert data["replayci_version_run"]["rc"] == [0] and data["python_startup"]["rc"] == [0]
    rows = {(row["n"], row["vary"]): row for row in data["rows"]}
    assert sorted(rows) == [(10, False), (10, True)]
    for row in rows.values():
        for name in ("floor", "replayci", "replayci_report"):
            assert row[name]["rc"] == [0] and len(row[name]["wall_all_s"]) == 1
            assert row[name]["wall_s"] > 0 and row[name]["rss_mb"] > 0
        assert row["ratio"]["median"] > 0 and row["ratio_report"]["median"] > 0
        assert row["verify"]["cases"] == 10 and row["verify"]["statuses"] == {"pass": 10}
        assert row["before"]["rc"] == [0] and row["before_report"]["rc"] == [0]
        assert row["vs_before"]["median"] > 0 and row["vs_before_report"]["median"] > 0
    assert "| 10 | same tools" in res.stdout and "| 10 | varied" in res.stdout
    assert "now / before (paired)" in res.stdout


@pytest.mark.slow  # runs a benchmark end to end: a soak test
def test_startup_benchmark_alternating_end_to_end(tmp_path):
    res = run(BENCH / "startup.py", "--repeat", "1", "--out-dir", tmp_path / "out", "--json",
              "--baseline", BENCH.parent, "--replayci", Path(sys.executable).parent / "replayci")
    assert res.returncode == 0, res.stdout + res.stderr
    results = json.loads(res.stdout)["results"]
    ours = ("version", "version_m", "run", "run_report")
    assert sorted(results) == sorted(["floor", "floor_no_site", *ours, *(f"{name} (baseline)" for name in ours)])
    for name, r in results.items():
        assert r["rc"] == [0] and r["crash"] is None and r["median_ms"] > 0, name
    assert all(results[name]["vs_baseline"] > 0 for name in ours)


@pytest.mark.slow  # runs a benchmark end to end: a soak test
def test_import_benchmark_alternating_end_to_end(tmp_path):
    from cassettes import completion, first_request, gzipped, interaction, loop_interactions, write_cassette

    source = tmp_path / "recordings"
    write_cassette(source / "loop.yaml", loop_interactions())
    write_cassette(source / "zipped.yaml", [interaction(first_request(), completion(call=True), body_form=gzipped,
                                                        response_headers={"Content-Encoding": ["gzip"]})])
    floor = run(BENCH / "import.py", "--floor", source)
    assert floor.returncode == 0, floor.stderr
    # Each request and answer body, the gzip-compressed answer unpacked: 2 + 2 + 2 texts.
    assert floor.stdout.strip() == "floor: 2 files, 6 JSON texts inside them parsed"
    res = run(BENCH / "import.py", source, "--repeat", "1", "--json", "--before", BENCH.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert sorted(out["commands"]) == sorted(["floor", "import", "pack floor", "run", "import (before)",
                                              "run (before)"])
    assert out["crashed"] == [] and out["pack"] == {"fixtures": 3, "contracts": 1}
    assert all(s["rc"] == [0] and s["wall_s"] > 0 and s["cpu_s"] > 0 for s in out["commands"].values())
    for name in ("import / floor", "run / pack floor", "import / import (before)", "run / run (before)"):
        assert out["ratios"][name]["wall"]["median"] > 0 and out["ratios"][name]["cpu"]["median"] > 0, name
    text = run(BENCH / "import.py", source, "--repeat", "1")
    assert text.returncode == 0 and "import / floor" in text.stdout and "run / pack floor" in text.stdout


def test_medians_and_paired_ratio():
    recorded = load("recorded")
    runs = [{"wall_s": w, "cpu_s": c, "rss_kb": 1024 * m, "rc": 0, "stderr_tail": ""}
            for w, c, m in ((2.0, 4.0, 30), (3.0, 2.0, 40), (9.0, 8.0, 35))]
    base = [{"wall_s": w, "cpu_s": c, "rss_kb": 1024, "rc": 0, "stderr_tail": ""}
            for w, c in ((1.0, 1.0), (1.0, 2.0), (6.0, 2.0))]
    s = recorded.summarize(runs)
    assert s["wall_s"] == 3.0 and s["rss_mb"] == 35 and s["rss_max_mb"] == 40 and s["rc"] == [0]
    assert s["cpu_s"] == 4.0 and s["cpu_range_s"] == [2.0, 8.0]
    p = recorded.paired(runs, base)
    assert p["median"] == 2.0 and p["min"] == 1.5 and p["max"] == 3.0  # 2/1, 3/1, 9/6: paired, not 3/1
    c = recorded.paired(runs, base, "cpu_s")  # 4/1, 2/2, 8/2
    assert c["median"] == 4.0 and c["min"] == 1.0 and c["max"] == 4.0
    # Exit 1 is a verdict, unless Python died with a traceback.
    assert not recorded.crashed({"rc": 1, "stderr_tail": "1 failed"})
    assert recorded.crashed({"rc": 1, "stderr_tail": "Traceback (most recent call last):\n ImportError"})
    assert recorded.crashed({"rc": 2, "stderr_tail": ""})


def test_vs_promptfoo_writes_the_same_cases_for_both(tmp_path):
    made = run(BENCH / "vs_promptfoo.py", "--generate-only", "--sizes", "30", "--out-dir", tmp_path,
               "--scratch", tmp_path / "no-promptfoo")
    assert made.returncode == 0, made.stderr
    root = tmp_path / "vs-30"
    replay = run("-m", "replayci", "--provider", "recorded", "--json", cwd=root / "replayci")
    assert replay.returncode == 0, replay.stderr
    cases = json.loads(replay.stdout)["cases"]
    assert len(cases) == 30 and all(c["status"] == "pass" for c in cases)
    negatives = sorted(f"{c['contract']}/{c['case']}" for c in cases if not c["expect_ok"])
    assert negatives and negatives == json.loads((root / "negatives.json").read_text())
    assert {c["expected_error"] for c in cases if not c["expect_ok"]} == {
        "tool_not_invoked", "malformed_arguments", "schema_violation"}
    for assertion in ("builtin", "javascript"):
        pf = root / f"promptfoo-{assertion}"
        tests = json.loads((pf / "tests.json").read_text())
        assert sorted(t["description"] for t in tests) == sorted(f"{c['contract']}/{c['case']}" for c in cases)
        for t in tests:  # the same recorded response as replayci's fixture
            contract, case = t["description"].split("/")
            ref = "negative/" if t["description"] in negatives else ""
            fixture = json.loads((root / "replayci" / "packs" / "vs" / "golden" / ref / contract
                                  / f"{case}.json").read_text())
            assert json.loads(t["vars"]["response"]) == fixture["response"]
            tools = json.loads((pf / "tools" / f"{contract}.json").read_text())
            assert tools == fixture["request"]["tools"]
        config = (pf / "promptfooconfig.yaml").read_text()
        assert "id: echo" in config and "tests: file://tests.json" in config
        assert ("is-valid-openai-tools-call" in config) == (assertion == "builtin")
    # Without promptfoo installed it stops and says so; it never installs on its own.
    missing = run(BENCH / "vs_promptfoo.py", "--sizes", "10", "--out-dir", tmp_path,
                  "--scratch", tmp_path / "no-promptfoo")
    assert missing.returncode == 2 and "--install" in missing.stderr
    assert not (tmp_path / "no-promptfoo").exists()


def test_the_sequential_bench_labels_within_the_stated_rates_under_half_the_calls():
    bench = load("sequential")
    out = bench.measure(400, 3, 20)
    rated = [r for r in out["rows"] if r["wrong_exact"] is not None]
    assert [r["p"] for r in rated] == [1.0, 0.97, 0.7, 0.5, 0.0]  # 0.9 lies between bad and ok
    assert all(r["wrong_exact"] <= 0.05 for r in rated) and all(r["wrong"] <= 0.09 for r in rated)
    assert out["fixed_same_rates"] == {"n": 24, "failures_allowed": 3}
    assert out["mixes"]["realistic"]["share_of_fixed_20"] < 0.5
