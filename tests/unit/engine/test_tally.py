"""The run's summary as a handler: it reads the judged results themselves, and gives what the
same summary of their report entries gives (as `replayci merge` reads them)."""
from __future__ import annotations

import json

from replayci.checks.failure import CLASSIFICATION_ORDER, Classification, Failure, Status
from replayci.engine.events import CaseJudged, RunStarted
from replayci.engine.results import CaseResult
from replayci.engine.summary import repeat_summary
from replayci.engine.summary import summarize as summarize_cases
from replayci.engine.tally import Tally
from replayci.formats import DOCUMENT_KEYS, Document
from replayci.formats._common import DOCUMENT_DEFAULTS, document, error_document


def _result(case: str, status: Status, **values) -> CaseResult:
    failed = status in (Status.FAIL, Status.ERROR)
    kind = Classification.WRONG_TOOL if failed else None
    return CaseResult("demo", values.pop("contract", "weather"), case, status, kind, "why" if failed else None,
                      "0123abcd", failures=(Failure(kind, "wrong"),) if failed else (), **values)


RESULTS = [
    _result("a", Status.PASS, category="happy_path", cost_usd=0.002, tokens=120, latency_ms=800.0),
    _result("b", Status.FAIL, category="edge_case", tokens=80, latency_ms=1200.0),
    _result("c", Status.NON_REPRODUCIBLE, allowlisted=True),
    _result("d", Status.SKIPPED, draft=True, contract="draft"),
    _result("e", Status.ERROR, category="happy_path"),
    _result("f", Status.PASS, details={"repeat": 5, "passes": 3, "labels": ["flaky"], "wilson": [0.23, 0.88],
                                      "run_counts": {"pass": 3, "fail": 2}}),
]
GATES = {"demo": {"pass_rate": 0.5, "max_non_reproducible": 1, "max_total_tokens": 150,
                  "min_pass_rate_lower_bound": 0.2, "flaky": "quarantine"}}


def _entries(results: list[CaseResult]) -> list[dict]:
    """The results as a JSON report holds them, read back."""
    return json.loads(json.dumps([r.to_dict() for r in results]))


def test_the_summary_of_results_is_the_summary_of_their_report_entries():
    from_results = summarize_cases(RESULTS, GATES)
    assert json.dumps(from_results) == json.dumps(summarize_cases(_entries(RESULTS), GATES))
    assert (from_results["pass"], from_results["fail"], from_results["draft"]) == (2, 1, 1)
    assert from_results["quarantined"][0]["case"] == "f"
    assert from_results["gates"]["max_total_tokens"] == {"threshold": 150, "actual": 200, "passed": False,
                                                        "unknown": 0}
    assert repeat_summary(RESULTS, 5) == repeat_summary(_entries(RESULTS), 5)


def test_the_tally_keeps_what_the_run_judged_in_order():
    tally = Tally()
    tally.handle(RunStarted(len(RESULTS)))
    for r in RESULTS:
        tally.handle(CaseJudged(r))
    assert tally.results == RESULTS


def test_a_result_reads_as_its_report_entry():
    r = RESULTS[-1]
    entry = r.to_dict()
    for key in ("pack", "contract", "case", "status", "category", "draft", "allowlisted", "tokens", "repeat",
                "passes", "wilson", "run_counts"):
        assert r.get(key) == entry.get(key) and r[key] == entry[key] and key in r
    assert r.get("baseline") is None and "baseline" not in r


def test_classifications_read_as_their_names():
    assert CLASSIFICATION_ORDER == tuple(c.value for c in Classification)
    assert json.dumps({"kind": Classification.SCHEMA_VIOLATION}) == '{"kind": "schema_violation"}'
    assert f"{Classification.WRONG_TOOL}" == "wrong_tool" == Classification.WRONG_TOOL


def test_the_normalized_document_has_the_typed_keys():
    said = document([], "hi", "stop", None)
    failed = error_document("error", 500, "boom")
    typed = set(Document.__annotations__)
    assert set(said) == set(failed) == typed - {"latency_ms", "cost_usd"}
    assert DOCUMENT_KEYS == tuple(Document.__annotations__)
    assert set(DOCUMENT_DEFAULTS) == typed - {"success", "tool_calls"}
