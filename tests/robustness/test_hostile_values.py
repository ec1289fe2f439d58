"""What a model or a tool says is data: NaN and Infinity never turn a case into `error`.

Python's JSON reader (and so every SDK) accepts `NaN`, `Infinity` and `-Infinity`, which JSON
has not. A model that sends them in its tool-call arguments made a malformed call (the
application's strict parser refuses it); a provider that sends them in its usage still gave
an answer. Either way the run's `--json` and `--report-json` stay strict JSON and a recording
replayci writes is one the next run reads.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

import pytest
from fakeserver import Action, RecordedRequest, Reply, Response
from livecli import PROVIDERS, add_cases, invoke, report_of


def strict(text: str):
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


@dataclass(frozen=True)
class Patched(Action):
    """*inner*'s answer with each match of *pattern* in its body replaced by *new*."""

    inner: Action
    pattern: bytes
    new: bytes

    def render(self, req: RecordedRequest) -> Response:
        out = self.inner.render(req)
        pieces = [re.subn(self.pattern, self.new, piece) for piece in (out.body, *(out.chunks or ()))]
        assert any(n for _, n in pieces), out
        chunks = tuple(p for p, _ in pieces[1:]) if out.chunks is not None else None
        return replace(out, body=pieces[0][0], chunks=chunks)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1E+400"])
def test_non_finite_arguments_are_malformed_arguments(provider, value, pack, server):
    add_cases(pack, "w", ["a"])
    # Anthropic sends the input as an object, OpenAI as a string: both hold the bare constant.
    server.set_default(Patched(Reply.tool_call("get_weather", {"location": "Paris", "days": 12345}),
                               b"12345", value.encode()))
    res = invoke(provider, server, "--json", "--record", "--report-json", "report.json")
    assert res.exit_code == 1, res.output
    (case,) = strict(res.stdout)["cases"]
    assert (case["status"], case["classification"]) == ("fail", "malformed_arguments"), case
    # (An SDK that parses the arguments itself, as Anthropic's does, has made 1e999 an infinity.)
    assert value in case["reason"] or "Infinity" in case["reason"], case["reason"]
    strict((pack.root / "report.json").read_text("utf-8"))
    # The recording written is read back, with the same verdict.
    again = invoke("recorded", None, "--json", key=False)
    assert again.exit_code == 1, again.output
    (case,) = strict(again.stdout)["cases"]
    assert (case["status"], case["classification"]) == ("fail", "malformed_arguments"), case


USAGE = {"openai": (b"prompt_tokens", b"completion_tokens"), "anthropic": (b"input_tokens", b"output_tokens")}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("which", [0, 1], ids=["input", "output"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_non_finite_usage_keeps_every_report_strict_json(provider, which, stream, pack, server):
    add_cases(pack, "w", ["a"])
    field = USAGE[provider][which]
    server.set_default(Patched(Reply.tool_call("get_weather", {"location": "Paris"}),
                               b'"' + field + rb'": ?\d+', b'"' + field + b'": NaN'))
    flags = ["--stream"] if stream else []
    res = invoke(provider, server, "--json", "--record", "--report-json", "report.json", *flags)
    assert res.exit_code == 0, res.output
    (case,) = strict(res.stdout)["cases"]
    assert case["status"] == "pass", case
    strict((pack.root / "report.json").read_text("utf-8"))
    again = invoke("recorded", None, "--json", key=False)
    assert again.exit_code == 0, again.output
    assert report_of(again)["cases"][0]["status"] == "pass"


# ------------------------------------------------------------------ redact.fields the loader accepts

# Path -> whether it matches some text to blank (meta and boundary, replayci's own, are kept).
REDACT_PATHS = {"$..*": True, "$.meta": False, "$.boundary": False, "$.response": True, "$..tool_calls": True,
                "$.response.tool_calls[0]": True, "$..arguments": True, "$.*": True, "$..usage": False,
                "$.response.success": True, "$..id": True}


@pytest.mark.parametrize("path", REDACT_PATHS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_accepted_redact_path_keeps_cases_and_recordings_readable(provider, path, pack, server):
    (pack.root / ".replayci.yml").write_text(f"provider: recorded\nredact:\n  fields: ['{path}']\n", "utf-8")
    add_cases(pack, "w", ["a"])
    server.set_default(Reply.tool_call("get_weather", {"location": "Paris"}, text="On it"))
    res = invoke(provider, server, "--json", "--record")
    assert res.exit_code in (0, 1), res.output
    (case,) = strict(res.stdout)["cases"]
    assert case["status"] in ("pass", "fail"), case
    written = pack.dir / "recordings" / "w" / "a.json"
    assert written.exists(), res.output
    doc = json.loads(written.read_text("utf-8"))
    assert ("[REDACTED]" in json.dumps(doc)) is REDACT_PATHS[path]
    if path in ("$..*", "$..arguments", "$.response.tool_calls[0]", "$..tool_calls", "$.response"):
        assert "Paris" not in written.read_text("utf-8")  # nor in arguments_raw
    assert doc["meta"]["contract"] == "w" and doc["meta"]["case_id"] == "a" and "message_hash" in doc["boundary"]
    again = invoke("recorded", None, "--json", key=False)
    assert again.exit_code in (0, 1), again.output
    (case,) = strict(again.stdout)["cases"]
    assert case["status"] in ("pass", "fail"), case
    assert case["response_source"] == "recording", case


# ------------------------------------------------------------------ half of a surrogate pair

LONE = "\ud800"  # JSON may escape it ("\ud800"); it is no character, and no UTF-8 can hold it


def test_a_model_answer_with_half_a_surrogate_pair_never_crashes_the_run(pack, server):
    provider = "openai"  # (the terminal and the reports read the normalized answer, the same for every API)
    add_cases(pack, "w", ["a", "b"])
    server.script([Reply.plain_text(f"bad {LONE} text"),
                   Reply.tool_call("get_weather", {"location": f"Par{LONE}is"}, text=f"see {LONE}")])
    res = invoke(provider, server, "--record", "--report-json", "r.json", "--html", "r.html", "--junit", "j.xml",
                 "--markdown", "r.md")
    assert res.exit_code == 1 and "internal error" not in res.output, res.output  # a failing case, never exit 3
    assert "\\ud800" in res.output or "FAIL" in res.output
    for name in ("r.json", "r.html", "j.xml", "r.md"):
        (pack.root / name).read_bytes().decode("utf-8")  # written, and valid UTF-8
    statuses = [c["status"] for c in strict((pack.root / "r.json").read_text("utf-8"))["cases"]]
    assert "error" not in statuses, statuses


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_holding_half_a_surrogate_pair_still_goes_out(provider, server):
    from livecli import KEYS, MODELS

    from replayci import providers
    from replayci.providers.call import call_once
    from replayci.providers.retry import RetryPolicy

    request = {"model": MODELS[provider], "max_tokens": 50, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": f"The model said {LONE}", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"note": f"a tool said {LONE}"},
                                                                          ensure_ascii=False)}]}
    provider_ = providers.create(provider, api_key=KEYS[provider], base_url=server.base_url_for(provider))
    try:
        answer = call_once(provider_, request, model=MODELS[provider], key=KEYS[provider],
                           policy=RetryPolicy(total_ms=5000, max_attempts=1))
    finally:
        provider_.close()
    assert answer.problem is None and answer.response["success"], answer.problem
    sent = json.dumps(server.requests[-1].body, ensure_ascii=False)
    assert "The model said \ufffd" in sent and "a tool said \ufffd" in sent


@pytest.mark.parametrize("how", ["--model", "--target"])
def test_a_300_character_model_name_keeps_the_verdict_under_record(how, pack, server):
    """A model name far longer than a file name may be: the recording is written (its folder
    name cut, with a digest), and the case keeps its verdict, never `error`."""
    from livecli import add_cases, invoke, report_of

    add_cases(pack, "w", ["a"])
    server.set_default(Reply.tool_call("get_weather", {"location": "Paris"}))
    model = "gpt-4o-mini-" + "x" * 288
    args = ["--model", model] if how == "--model" else ["--target", f"openai:{model}"]
    res = invoke("openai", server, "--record", "--json", *args)
    assert res.exit_code in (0, 1), res.output
    (case,) = report_of(res)["cases"]
    assert case["status"] != "error", case
    written = list((pack.dir / "recordings").rglob("*.json"))
    assert written and all(len(part) < 255 for p in written for part in p.parts), written
