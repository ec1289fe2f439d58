"""Latency, cost and tokens: prices, the documents invariants see, reports and gates."""
from __future__ import annotations

import datetime
import json

import pytest
from builders import SIMPLE, call, fixture, request, response
from click.testing import CliRunner

import replayci
from replayci.cli.main import cli
from replayci.core.hashing import boundary_hashes
from replayci.core.prices import BUILT_IN, Price, cost_of, price_of, price_table, usage_tokens
from replayci.engine.summary import percentile, totals


def measured(model="gpt-4o-mini", input_tokens=1000, output_tokens=100):
    out = response(call("get_weather", {"location": "Paris"}))
    out["usage"] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if model:
        out["model"] = model
    return out


def rec(req, resp, *, latency_ms=840, model="gpt-4o-mini"):
    return {"meta": {"schema_version": 1, "pack_id": "demo", "contract": "weather", "case_id": "c",
                     "provider": "openai", "model": model,
                     "recorded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                     "replayci_version": "0.1.0", "latency_ms": latency_ms},
            "boundary": {"model": model, **boundary_hashes(req)}, "response": resp}


def one(pack, **kw):
    return replayci.run([str(pack.dir)], **kw).cases[0]


# ----------------------------------------------------------------------------- prices


def test_a_dated_snapshot_takes_the_longest_key_that_prefixes_it():
    assert price_of("gpt-4o-mini-2024-07-18") == BUILT_IN["gpt-4o-mini"]
    assert price_of("gpt-4o-2024-08-06") == BUILT_IN["gpt-4o"]
    assert price_of("gpt-4o-2024-05-13") == Price(5, 15, None)  # a snapshot with its own price
    assert price_of("claude-sonnet-4-5-20250929") == BUILT_IN["claude-sonnet-4-5"]
    assert price_of("claude-sonnet-4-20250514") == BUILT_IN["claude-sonnet-4"]
    assert price_of("claude-sonnet-4-5@20250929") == BUILT_IN["claude-sonnet-4-5"]  # Vertex
    assert price_of("models/gemini-2.5-flash") == BUILT_IN["gemini-2.5-flash"]
    assert price_of("gemini-2.5-flash-lite-preview-06-17") == BUILT_IN["gemini-2.5-flash-lite"]


def test_an_unknown_model_has_no_price():
    # gpt-5 prefixes gpt-5.9 as text, but a new version is another model, not a snapshot.
    for model in ("gpt-5.9", "llama3.1:8b", "ft:gpt-4o-mini:org::abc", "", None, 42):
        assert price_of(model) is None, model


def test_current_models_of_each_provider_are_priced():
    for model in ("gpt-4o-mini", "gpt-4.1", "gpt-5-mini", "o4-mini", "claude-haiku-4-5",
                  "claude-opus-4-1-20250805", "gemini-2.5-pro", "gemini-2.0-flash-001"):
        assert price_of(model) is not None, model


def test_overrides_replace_and_add_prices():
    table = price_table({"gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 2},
                         "my-finetune": {"input_per_mtok": 3, "output_per_mtok": 4,
                                         "cached_input_per_mtok": 0.5}})
    assert price_of("gpt-4o-2024-08-06", table) == Price(1, 2, None)
    assert price_of("gpt-4o-mini", table) == BUILT_IN["gpt-4o-mini"]  # the longer built-in key
    assert price_of("My-Finetune", table) == Price(3, 4, 0.5)
    assert price_table(None) is BUILT_IN


def test_cost_of_a_usage():
    price = Price(2.5, 10, 1.25)
    assert cost_of({"input_tokens": 1000, "output_tokens": 100}, price) == pytest.approx(0.0035)
    # cached input tokens are part of the input and cost the cache price
    assert cost_of({"input_tokens": 1000, "output_tokens": 0, "cached_input_tokens": 400}, price) \
        == pytest.approx((600 * 2.5 + 400 * 1.25) / 1e6)
    assert cost_of({"input_tokens": 1000, "output_tokens": 0, "cached_input_tokens": 400},
                   Price(2.5, 10, None)) == pytest.approx(0.0025)
    assert cost_of(None, price) is None and cost_of({"input_tokens": 5}, None) is None
    assert cost_of({"input_tokens": None, "output_tokens": None}, price) is None
    assert usage_tokens({"input_tokens": 7, "output_tokens": None}) == 7
    assert usage_tokens(None) is None


def test_percentile_is_nearest_rank_and_totals_skip_unknowns():
    assert percentile([], 95) is None
    assert percentile([5], 95) == 5
    assert percentile(list(range(1, 21)), 95) == 19
    assert percentile(list(range(1, 101)), 95) == 95
    cases = [{"cost_usd": 0.5, "tokens": 10, "latency_ms": 100}, {"cost_usd": None, "tokens": None,
                                                                   "latency_ms": None}]
    assert totals(cases) == {"cost_usd": 0.5, "tokens": 10, "p95_latency_ms": 100}
    assert totals([{}]) == {"cost_usd": None, "tokens": None, "p95_latency_ms": None}


# ----------------------------------------------------------------------------- the documents


def test_a_recording_gives_latency_and_cost(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), None))
    pack.recording("weather", "c", rec(request(), measured(model=None), latency_ms=840))
    r = one(pack)
    assert (r.latency_ms, r.tokens) == (840, 1100)
    assert r.cost_usd == pytest.approx((1000 * 0.15 + 100 * 0.6) / 1e6)  # priced as the recording's model
    assert (r.response["latency_ms"], r.response["cost_usd"]) == (840, r.cost_usd)


def test_a_hand_written_fixture_has_no_latency(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), measured(model="gpt-4.1-2025-04-14")))
    r = one(pack)
    assert r.latency_ms is None and r.response["latency_ms"] is None
    assert r.cost_usd == pytest.approx((1000 * 2 + 100 * 8) / 1e6)  # the response's own model
    entry = r.to_dict()
    assert (entry["latency_ms"], entry["tokens"]) == (None, 1100)
    assert entry["response"]["cost_usd"] == r.cost_usd


def test_the_run_model_prices_a_response_that_names_none(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), measured(model=None)))
    assert one(pack).cost_usd == pytest.approx(0.00021)  # pack.yaml default_model gpt-4o-mini
    assert one(pack, model="gpt-4.1").cost_usd == pytest.approx(0.0028)


def test_unknown_price_or_usage_is_null(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), measured(model="my-own-model")))
    r = one(pack)
    assert r.cost_usd is None and r.tokens == 1100
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    r = one(pack)
    assert (r.cost_usd, r.tokens, r.latency_ms) == (None, None, None)


def test_pricing_in_the_config_overrides_the_table(pack, project):
    (project / ".replayci.yml").write_text(
        "provider: recorded\npricing:\n  my-own-model: {input_per_mtok: 1, output_per_mtok: 10}\n", "utf-8")
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), measured(model="my-own-model-2025-01-01")))
    res = CliRunner().invoke(cli, ["--json"])
    assert res.exit_code == 0, res.output
    case = json.loads(res.stdout)["cases"][0]
    assert case["cost_usd"] == pytest.approx(0.002)


@pytest.mark.parametrize("entry, expected", [
    ("{input_per_mtok: 1}", "missing required key 'output_per_mtok'"),
    ("{input_per_mtok: 1, output_per_mtok: 2, cache_per_mtok: 1}", "did you mean 'cached_input_per_mtok'"),
    ("{input_per_mtok: -1, output_per_mtok: 2}", "US dollars per million tokens"),
    ("3", "expected a mapping {input_per_mtok"),
])
def test_a_bad_price_entry_is_a_config_error(pack, project, entry, expected):
    (project / ".replayci.yml").write_text(f"provider: recorded\npricing:\n  gpt-4o: {entry}\n", "utf-8")
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), measured()))
    res = CliRunner().invoke(cli, [])
    assert res.exit_code == 2
    assert expected in res.output and ".replayci.yml:3" in res.output


def test_invariants_check_cost_and_latency(pack):
    pack.contract("weather", SIMPLE + """
assertions:
  output_invariants:
    - {path: $.cost_usd, lte: 0.0001}
    - {path: $.latency_ms, lt: 500}
""")
    pack.fixture("c.json", fixture(request(), None))
    pack.recording("weather", "c", rec(request(), measured(), latency_ms=840))
    r = one(pack)
    assert (r.status, r.classification) == ("fail", "invariant_violation")
    assert [f.path for f in r.failures] == ["$.cost_usd", "$.latency_ms"]


def test_cost_and_latency_do_not_change_the_fingerprint(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), measured()))
    cheap = one(pack).fingerprint
    pack.fixture("c.json", fixture(request(), measured(input_tokens=9, output_tokens=9)))
    assert one(pack).fingerprint == cheap


# ----------------------------------------------------------------------------- gates


def gated(pack, project, gates: str, n=3):
    (project / ".replayci.yml").write_text(f"provider: recorded\ngates:\n{gates}", "utf-8")
    cases = "\n".join(f"  - {{id: c{i}, input_ref: c{i}.json}}" for i in range(n))
    pack.contract("weather", f"tool: get_weather\ngolden_cases:\n{cases}\n")
    for i in range(n):
        pack.fixture(f"c{i}.json", fixture(request(), None))
        pack.recording("weather", f"c{i}", rec(request(), measured(), latency_ms=100 * (i + 1)))
    res = CliRunner().invoke(cli, ["--json"])
    assert res.stdout, res.output
    return res.exit_code, json.loads(res.stdout)["summary"]


def test_cost_token_and_latency_gates(pack, project):
    code, summary = gated(pack, project, "  max_cost_usd: 0.001\n  max_total_tokens: 4000\n"
                                         "  p95_latency_ms: 300\n")
    assert code == 0
    assert summary["totals"] == {"cost_usd": pytest.approx(0.00063), "tokens": 3300, "p95_latency_ms": 300}
    gates = summary["gates"]
    assert gates["max_cost_usd"] == {"threshold": 0.001, "actual": pytest.approx(0.00063), "passed": True,
                                     "unknown": 0}
    assert gates["max_total_tokens"]["actual"] == 3300 and gates["p95_latency_ms"]["actual"] == 300
    code, summary = gated(pack, project, "  max_cost_usd: 0.0005\n  p95_latency_ms: 250\n"
                                         "  max_total_tokens: 3000\n")
    assert code == 1
    assert [g["passed"] for g in summary["gates"].values()] == [True, True, False, False, False]


def test_metric_gates_are_absent_unless_set(pack, project):
    code, summary = gated(pack, project, "  pass_rate: 1.0\n")
    assert code == 0 and list(summary["gates"]) == ["pass_rate", "max_non_reproducible"]


def test_a_pack_gate_judges_its_own_cases(pack, project):
    pack.dir.joinpath("pack.yaml").write_text(
        "pack_id: demo\nschema_version: v0.1\ndefault_model: gpt-4o-mini\ngates: {max_cost_usd: 0.0001}\n")
    code, summary = gated(pack, project, "  pass_rate: 1.0\n")
    assert code == 1 and summary["gates"]["max_cost_usd"]["passed"] is False
    assert summary["gates_by_pack"]["demo"]["max_cost_usd"] == 0.0001


# ----------------------------------------------------------------------------- reports


def test_every_report_shows_tokens_cost_and_latency(pack, project):
    pack.contract("weather", SIMPLE.replace("  - id: c\n    input_ref: c.json\n",
                                            "  - {id: c, input_ref: c.json}\n  - {id: d, input_ref: d.json}\n"))
    pack.fixture("c.json", fixture(request(), None))
    pack.recording("weather", "c", rec(request(), measured(), latency_ms=840))
    pack.fixture("d.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    res = CliRunner().invoke(cli, ["--junit", "r.xml", "--markdown", "r.md", "--report-json", "r.json"])
    assert res.exit_code == 0, res.output
    line_c = next(line for line in res.stdout.splitlines() if "   c   " in line)
    assert "1,100 tok · $0.000210 · 840 ms" in line_c
    assert "1,100 tokens · $0.000210 · p95 840 ms" in res.stdout.splitlines()[-1]
    report = json.loads((project / "r.json").read_text())
    assert [(c["tokens"], c["latency_ms"]) for c in report["cases"]] == [(1100, 840), (None, None)]
    assert report["summary"]["totals"]["tokens"] == 1100
    junit = (project / "r.xml").read_text()
    assert '<property name="latency_ms" value="840" />' in junit
    assert '<property name="cost_usd" value="0.00021" />' in junit
    assert '<property name="p95_latency_ms" value="840" />' in junit  # the pack's totals
    md = (project / "r.md").read_text()
    assert "Tokens 1,100 · cost $0.000210 · p95 latency 840 ms." in md
    assert "| `demo/weather/c` | pass | recording | 1,100 | $0.000210 | 840 ms |" in md
    assert "| `demo/weather/d` | pass | fixture | — | — | — |" in md


def test_reports_without_metrics_look_as_before(pack, project):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    res = CliRunner().invoke(cli, ["--markdown", "r.md"])
    assert res.stdout.splitlines()[2].rstrip() == "  demo/weather   c   pass     " + one(pack).fingerprint
    assert "Tokens" not in (project / "r.md").read_text() and "tok" not in res.stdout


def test_a_failed_cost_gate_is_shown_in_dollars(pack, project):
    code, _ = gated(pack, project, "  max_cost_usd: 0.0005\n")
    res = CliRunner().invoke(cli, ["--markdown", "r.md"])
    assert code == 1 and "gate max_cost_usd failed: $0.000630 against $0.000500" in res.stdout
    assert "| max_cost_usd | $0.000500 | $0.000630 | ❌ |" in (project / "r.md").read_text()


def test_the_html_report_picks_the_metrics_up(pack, project):
    pytest.importorskip("jinja2")
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), None))
    pack.recording("weather", "c", rec(request(), measured(), latency_ms=840))
    res = CliRunner().invoke(cli, ["--html", "r.html"])
    page = (project / "r.html").read_text()
    assert res.exit_code == 0
    assert ">1,100</div><div class=\"l\">tokens" in page and ">840 ms</div><div class=\"l\">p95 latency" in page
    assert ">$0.000210</div><div class=\"l\">cost" in page


def test_cached_input_tokens_are_read_and_priced_lower():
    from replayci.formats import normalize

    chat = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "model": "gpt-4o",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 10,
                      "prompt_tokens_details": {"cached_tokens": 800}}}
    responses = {"object": "response", "status": "completed", "output": [], "model": "gpt-4o",
                 "usage": {"input_tokens": 1000, "output_tokens": 10, "input_tokens_details": {"cached_tokens": 800}}}
    gemini = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
              "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 10,
                                "cachedContentTokenCount": 800}, "modelVersion": "gemini-2.5-flash"}
    for payload in (chat, responses, gemini):
        assert normalize(payload)["usage"] == {"input_tokens": 1000, "output_tokens": 10,
                                               "cached_input_tokens": 800}
    plain = {**chat, "usage": {"prompt_tokens": 1000, "completion_tokens": 10,
                               "prompt_tokens_details": {"cached_tokens": 0}}}
    assert normalize(plain)["usage"] == {"input_tokens": 1000, "output_tokens": 10}
    canonical = {"success": True, "tool_calls": [], "content": "hi",
                 "usage": {"input_tokens": 1000, "output_tokens": 10, "cached_input_tokens": 800}}
    assert normalize(canonical)["usage"]["cached_input_tokens"] == 800
    expected = (200 * 2.5 + 800 * 1.25 + 10 * 10) / 1e6
    assert cost_of(normalize(chat)["usage"], BUILT_IN["gpt-4o"]) == pytest.approx(expected)
