"""The benchmark tools keep working: a small generated project is valid, replayci passes it,
the floor parses exactly its files, and bench/recorded.py measures it end to end."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=300)


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


def test_recorded_benchmark_end_to_end(tmp_path):
    saved = tmp_path / "bench.json"
    res = run(BENCH / "recorded.py", "--sizes", "30", "--small", "5", "--repeat", "1",
              "--out-dir", tmp_path / "out", "--save", saved,
              "--replayci", Path(sys.executable).parent / "replayci")
    assert res.returncode == 0, res.stdout + res.stderr
    rows = {row["n"]: row for row in json.loads(saved.read_text())["rows"]}
    assert sorted(rows) == [5, 30]
    for n, row in rows.items():
        assert row["replayci"]["rc"] == [0] and row["floor"]["rc"] == [0]
        assert row["replayci"]["wall_s"] > 0 and row["floor"]["rss_mb"] > 0
        assert row["verify"]["cases"] == n and row["verify"]["statuses"] == {"pass": n}
    assert "| 30 |" in res.stdout
