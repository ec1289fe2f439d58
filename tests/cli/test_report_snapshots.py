"""The JSON, JUnit and Markdown reports of three real workloads stay byte-identical.

The example packs, a 2,000-case generated pack and the pack `replayci import` writes from the
traffic-dev recordings: each report (start time and durations blanked) must equal the snapshot
held in tests/snapshots/reports. REPLAYCI_UPDATE_SNAPSHOTS=1 accepts new output; to read a
change, see tests/support/report_snapshots.py.
"""
from __future__ import annotations

import os

import pytest
import report_snapshots as snap

UPDATE = bool(os.environ.get("REPLAYCI_UPDATE_SNAPSHOTS"))


def _held(workload: str, artifacts: dict[str, str]) -> None:
    problems = snap.check(workload, artifacts, update=UPDATE)
    assert not problems, "\n\n".join(problems)


def test_example_packs_reports(tmp_path):
    _held("examples", snap.examples(tmp_path))


def test_generated_pack_reports(tmp_path):
    _held("generated", snap.generated(tmp_path))


@pytest.mark.skipif(not snap.TRAFFIC_DEV.is_dir(), reason="../shared/data/traffic-dev is absent")
def test_imported_traffic_dev_pack_and_reports(tmp_path):
    _held("imported", snap.imported(tmp_path))


def test_a_changed_report_line_is_named():
    text = "".join(f'{{"case": "c{n}", "status": "pass"}}\n' for n in range(200))
    held = snap.digest(text)
    changed = text.replace('"c130", "status": "pass"', '"c130", "status": "fail"')
    message = snap.mismatch("x.report.json", held, changed)
    assert "lines 129-144 changed" in message and '"c130", "status": "fail"' in message
    assert snap.normalize("json", '"duration_ms": 12.5, "started_at": "2026-01-01T00:00:00+00:00"') == \
        '"duration_ms": 0, "started_at": "-"'
    assert snap.normalize("xml", '<testcase time="0.013" name="a">') == '<testcase time="0" name="a">'
