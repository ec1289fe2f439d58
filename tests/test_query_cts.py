"""replayci.query against the RFC 9535 JSONPath compliance test suite (all 703 tests)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replayci.query import JSONPathError, query

CTS = json.loads((Path(__file__).parent / "data" / "jsonpath-cts.json").read_text("utf-8"))["tests"]


def test_suite_is_complete():
    assert len(CTS) == 703


@pytest.mark.parametrize("case", CTS, ids=[c["name"] for c in CTS])
def test_compliance(case):
    if case.get("invalid_selector"):
        with pytest.raises(JSONPathError):
            query(case["selector"], case.get("document", {}))
        return
    got = query(case["selector"], case["document"])
    if "result" in case:
        assert got == case["result"]
    else:
        assert got in case["results"]
