"""A run's warnings are events: each is told to the handlers as the run finds it, and the run's
result lists them in the order told (the sources and the allowlist return or tell what they
find; nothing fills a list handed down)."""
from __future__ import annotations

import datetime

from builders import call, fixture, request, response

import replayci
from replayci.core.hashing import boundary_hashes
from replayci.engine.cases import Allowlist
from replayci.engine.events import CaseJudged, Event, Handler, RunFinished, RunStarted, Warned

GOOD = response(call("get_weather", {"location": "Paris", "unit": "celsius"}))
WEATHER = "tool: get_weather\ngolden_cases:\n" + "".join(f"  - {{id: {c}, input_ref: {c}.json}}\n" for c in "abc")


def _stale(days: int) -> dict:
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return {"meta": {"schema_version": 1, "recorded_at": when.isoformat(), "provider": "openai",
                     "model": "gpt-4o-mini"},
            "boundary": {"model": "gpt-4o-mini", **boundary_hashes(request())}, "response": GOOD}


def _project(pack) -> None:
    """Three warnings of three kinds: an allowlist entry matching no contract (known before any
    case runs), a stale recording (case a), an expired allowlist entry (case c, no recording)."""
    pack.contract("weather", WEATHER)
    pack.fixture("a.json", fixture(request(), None))
    pack.fixture("b.json", fixture(request(), GOOD))
    pack.fixture("c.json", fixture(request(), None))
    pack.recording("weather", "a", _stale(400))
    base = {"reason_code": "recording_not_found", "owner": "t", "rationale": "r"}
    pack.allowlist([{**base, "contract_path": "contracts/gone.yaml", "expiry_date": "2099-01-01"},
                    {**base, "contract_path": "contracts/weather.yaml", "case_id": "c", "expiry_date": "2020-01-01"}])


class Heard(Handler):
    def __init__(self) -> None:
        self.events: list[Event] = []

    def handle(self, event: Event) -> None:
        self.events.append(event)


def test_each_warning_is_an_event_told_when_found_in_the_order_the_result_lists(pack):
    _project(pack)
    heard = Heard()
    result = replayci.run([str(pack.dir)], handlers=[heard], processes=1)
    told = [e.text for e in heard.events if type(e) is Warned]
    assert told == result.warnings and len(told) == 3
    assert "gone.yaml matches no contract" in told[0]
    assert "400 days old" in told[1] and "expired on 2020-01-01" in told[2]
    # each when found: the stale recording before its case, the expired entry with case c
    kinds = [(type(e).__name__, getattr(getattr(e, "result", None), "case", None)) for e in heard.events]
    assert kinds == [("RunStarted", None), ("Warned", None), ("Warned", None), ("CaseJudged", "a"),
                     ("CaseJudged", "b"), ("Warned", None), ("CaseJudged", "c"), ("RunFinished", None)]
    assert type(heard.events[0]) is RunStarted and type(heard.events[-1]) is RunFinished
    assert [e.result.case for e in heard.events if type(e) is CaseJudged] == ["a", "b", "c"]


def test_an_expired_allowlist_entry_is_returned_once(pack):
    _project(pack)
    loaded = replayci.load_pack(pack.dir)
    contract = loaded.contracts[0]
    nr = replayci.run([str(pack.dir)], processes=1).cases[2]  # case c: non_reproducible
    allowlist = Allowlist(datetime.date.today())
    first, warned = allowlist.apply(nr, loaded, contract)
    again, warned_again = allowlist.apply(nr, loaded, contract)
    assert not first.allowlisted and len(warned) == 1 and "expired on 2020-01-01" in warned[0]
    assert warned_again == ()
    kept, none = Allowlist(datetime.date(2019, 1, 1)).apply(nr, loaded, contract)
    assert kept.allowlisted and none == ()
