"""A NaN or an infinity a provider sends never makes a file replayci would refuse."""
from __future__ import annotations

import json

from replayci.engine.recordings import dumps
from replayci.pack.sources import parse_json


def test_non_finite_numbers_are_written_as_null_and_noted():
    doc = {"meta": {"model": "m"}, "response": {"tool_calls": [
        {"name": "f", "arguments": {"a": float("nan"), "b": [float("inf"), 1.5], "c": -float("inf")}}]}}
    text = dumps(doc)
    assert "NaN" not in text and "Infinity" not in text
    back = parse_json(text, "recording.json")  # the strict reader replayci loads recordings with
    assert back["response"]["tool_calls"][0]["arguments"] == {"a": None, "b": [None, 1.5], "c": None}
    assert back["meta"] == {"model": "m", "non_finite_numbers_replaced": 3}


def test_finite_documents_are_written_as_before():
    doc = {"meta": {}, "response": {"content": "x", "n": 1e300}}
    assert json.loads(dumps(doc)) == doc and "non_finite" not in dumps(doc)


def test_a_report_with_non_finite_numbers_parses():
    from replayci.report.json_report import dumps as report_dumps

    text = report_dumps({"cases": [{"response": {"tool_calls": [{"arguments": {"x": float("nan")}}]}}]})
    assert json.loads(text)["cases"][0]["response"]["tool_calls"][0]["arguments"] == {"x": None}
