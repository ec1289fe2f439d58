"""Builders and readers for the HTML report tests."""

from __future__ import annotations

import copy
import json
import os
import re

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(HERE, "data", "reports")

_BLOCK = re.compile(
    r'<script type="application/json" (?:id="replayci-data"|class="replayci-cases")>(.*?)</script>',
    re.DOTALL,
)


def load_report(name: str) -> dict:
    """A JSON report written by `replayci --report-json` (the example packs; one run broken)."""
    with open(os.path.join(DATA, name), encoding="utf-8") as fh:
        return json.load(fh)


def embedded(html: str) -> tuple[dict, list[dict]]:
    """The page's data block and every case it embeds (first block plus the later chunks)."""
    blocks = _BLOCK.findall(html)
    meta = json.loads(blocks[0])
    cases = list(meta["cases"])
    for block in blocks[1:]:
        cases.extend(json.loads(block))
    return meta, cases


def case(pack: str, contract: str, name: str, status: str, **extra) -> dict:
    """A minimal case dict of a JSON report."""
    out = {
        "pack": pack,
        "contract": contract,
        "case": name,
        "status": status,
        "classification": extra.pop("classification", "wrong_tool" if status == "fail" else None),
        "reason": None,
        "allowlisted": False,
        "fingerprint": "0123abcd",
        "failures": [],
        "duration_ms": 1.0,
        "source": f"packs/{pack}/contracts/{contract}.yaml:3",
        "category": "happy_path",
        "expect_ok": True,
        "expected_error": None,
        "draft": False,
    }
    out.update(extra)
    return out


def report(cases: list[dict], *, started_at: str = "2026-01-01T10:00:00+00:00", **summary) -> dict:
    """A minimal report around cases, with the pass-rate gate computed as replayci does."""
    counts = {
        s: sum(1 for c in cases if c["status"] == s)
        for s in ("pass", "fail", "error", "non_reproducible", "skipped")
    }
    counted = counts["pass"] + counts["fail"] + counts["error"]
    rate = counts["pass"] / counted if counted else None
    body = {
        "total": len(cases),
        **counts,
        "allowlisted": 0,
        "draft": 0,
        "pass_rate": rate,
        "gates": {
            "pass_rate": {"threshold": 1.0, "actual": rate, "passed": rate == 1.0},
            "max_non_reproducible": {
                "threshold": 0,
                "actual": counts["non_reproducible"],
                "passed": counts["non_reproducible"] == 0,
            },
        },
    }
    body.update(summary)
    return {
        "version": 1,
        "run": {
            "provider": "recorded",
            "model": "gpt-4o-mini",
            "packs": ["p"],
            "started_at": started_at,
            "duration_ms": 12.5,
        },
        "summary": body,
        "cases": copy.deepcopy(cases),
        "warnings": [],
    }
