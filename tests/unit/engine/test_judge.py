"""The one judge: every source's answer becomes a case result there, and a case that could not
be evaluated is the same error result (with its fingerprint) whichever source it came from."""
from __future__ import annotations

import replayci
from replayci.core.hashing import short_hash
from replayci.engine import recorded
from replayci.engine.answers import Errored, NotReproducible, Response, Skip
from replayci.engine.cases import Item
from replayci.engine.judge import judge


def _item(starter) -> Item:
    pack = replayci.load_pack(starter / "packs" / "starter")
    contract = pack.contracts[0]
    return Item(pack, contract, contract.cases[0])


def test_an_error_carries_the_fingerprint_of_its_kind(starter):
    item = _item(starter)
    result = judge(item, Errored(RuntimeError("boom")))
    assert (result.status, result.reason) == ("error", "could not evaluate: RuntimeError: boom")
    assert result.fingerprint == short_hash({"contract": item.contract.id, "error": "RuntimeError"})


def test_a_recorded_case_that_cannot_be_evaluated_has_the_live_error_fingerprint(starter, monkeypatch):
    def broken(self, item, fixture, **_):
        raise OSError("disk went away")

    monkeypatch.setattr(recorded.RecordedSource, "answer", broken)
    result = replayci.run(["packs/starter"], provider="recorded", filters=("get_weather/*",))
    errors = [c for c in result.cases if c.status == "error"]
    assert errors and all(c.fingerprint == short_hash({"contract": c.contract, "error": "OSError"})
                          for c in errors)
    assert errors[0].reason == "could not evaluate: OSError: disk went away"


def test_skips_and_non_reproducible_answers_become_their_results(starter):
    item = _item(starter)
    skipped = judge(item, Skip("not today"))
    assert (skipped.status, skipped.reason, skipped.fingerprint) == ("skipped", "not today", None)
    nr = judge(item, NotReproducible("recording_not_found", "no recording", detail="x"))
    assert (nr.status, nr.reason, nr.details["message"]) == ("non_reproducible", "recording_not_found",
                                                             "no recording")
    assert nr.fingerprint == short_hash({"contract": item.contract.id, "non_reproducible": "recording_not_found",
                                         "detail": "x"})


def test_a_response_is_checked_by_the_same_judge_as_check_response(starter):
    item = _item(starter)
    text_only = {"content": "it is sunny", "tool_calls": [], "stop_reason": "stop", "success": True}
    judged = judge(item, Response({}, text_only))
    assert judged.status == "fail" and judged.classification == "tool_not_invoked"
    api = replayci.check_response(item.contract, text_only)
    assert (api.status, api.classification) == (judged.status, judged.classification)
