"""The trace importers against real instrumentation output: ../shared/data/traces-dev holds 161
samples of four projects (Logfire, OpenInference, openllmetry, inspect_ai), each with a sidecar
naming its convention and shape. Every sample is read; every model-call span that recorded its
messages becomes an exchange whose response, read back by replayci's formats, holds the tool
calls and the text the span recorded — the expectation is taken here from the span's own
attributes, convention by convention, not from the importer."""
from __future__ import annotations

import collections
import json
import re
import zipfile
from pathlib import Path

import pytest

from replayci import formats
from replayci.capture.importers import importer

_ROOT = Path(__file__).resolve().parents[3]
_CANDIDATES = [_ROOT / ".." / "shared", _ROOT / ".." / ".." / "shared"]  # beside the repository or its worktrees
SHARED = next((p for p in _CANDIDATES if (p / "data" / "traces-dev").is_dir()), _CANDIDATES[0])
TRACES = SHARED / "data" / "traces-dev"

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/data/traces-dev is absent")


def _samples() -> list[Path]:
    if not TRACES.is_dir():
        return []
    return sorted(p for p in TRACES.glob("*.json") if not p.name.endswith(".source.json"))


def _sidecar(path: Path) -> dict:
    return json.loads(path.with_name(path.name[:-5] + ".source.json").read_text())


def _as_file(path: Path, tmp_path: Path) -> Path:
    """The sample as a user holds it: an `.eval` unpacked into one JSON object is zipped again."""
    doc = json.loads(path.read_text())
    if isinstance(doc, dict) and "header.json" in doc:
        target = tmp_path / (path.stem + ".eval")
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, member in doc.items():
                archive.writestr(name, json.dumps(member))
        return target
    return path


# ------------------------------------------------ the expectation, from the span's attributes


def _plain(value):
    """An OTLP AnyValue as a plain value."""
    if isinstance(value, dict) and len(value) == 1:
        kind, inner = next(iter(value.items()))
        if kind == "intValue":
            return int(inner)
        if kind in ("stringValue", "boolValue", "doubleValue"):
            return inner
        if kind == "arrayValue":
            return [_plain(v) for v in inner.get("values", [])]
    return None if value == {} else value


def _raw_spans(doc) -> list[tuple[str, dict]]:
    """(span id, flat attributes) of every span in a sample."""
    if isinstance(doc, dict) and "resourceSpans" in doc:
        return [(s["spanId"], {a["key"]: _plain(a["value"]) for a in s.get("attributes", [])})
                for r in doc["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    if isinstance(doc, list):
        return [(str(s["context"]["span_id"]), s["attributes"]) for s in doc]
    return [("0", doc)]


def _loads(value):
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _args(value):
    value = _loads(value)
    return {} if value in (None, "") else value


def _indexed(attrs: dict, pattern: str) -> dict:
    """{(index, ...): value} of the attributes matching *pattern* (groups are the indices)."""
    out = {}
    for key, value in attrs.items():
        found = re.fullmatch(pattern, key)
        if found:
            out[tuple(int(g) if g.isdigit() else g for g in found.groups())] = value
    return out


def _flat_calls(attrs: dict, pattern: str) -> list:
    names = _indexed(attrs, pattern.format(field="name"))
    args = _indexed(attrs, pattern.format(field="arguments"))
    return [(names[k], _args(args.get(k))) for k in sorted(names)]


def _expected_genai(attrs: dict):
    messages = _loads(attrs["gen_ai.output.messages"])
    parts = [p for msg in messages for p in msg.get("parts", [])]
    calls = [(p["name"], _args(p.get("arguments"))) for p in parts if p["type"] == "tool_call"]
    texts = [p["content"] for p in parts if p["type"] == "text"]
    return calls, "".join(texts) if texts else None


def _expected_openinference(attrs: dict):
    calls = _flat_calls(attrs, r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.function\.{field}")
    texts = _indexed(attrs, r"llm\.output_messages\.(\d+)\.message\.content")
    parts = _indexed(attrs, r"llm\.output_messages\.(\d+)\.message\.contents\.(\d+)\.message_content\.text")
    found = [texts[k] for k in sorted(texts)] + [parts[k] for k in sorted(parts)]
    return calls, "".join(found) if found else None


def _expected_openllmetry(attrs: dict):
    calls = _flat_calls(attrs, r"gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.{field}")
    roles = _indexed(attrs, r"gen_ai\.completion\.(\d+)\.role")
    texts = _indexed(attrs, r"gen_ai\.completion\.(\d+)\.content")
    found = [texts[k] for k in sorted(texts) if roles.get(k) != "thinking"]
    return calls, "".join(found) if found else None


def _expected_events(attrs: dict):
    events = attrs["events"]
    if "message" in events[-1]:  # a choice event (Google GenAI's instrumentation)
        message = events[-1]["message"]
        content = message.get("content")
        text = "".join(content) if isinstance(content, list) else content
        calls = [(c["function"]["name"], _args(c["function"]["arguments"])) for c in message.get("tool_calls") or []]
        return calls, text
    tail = []
    for event in reversed(events):
        if event.get("role") != "assistant":
            break
        tail.insert(0, event)
    calls = [(c["function"]["name"], _args(c["function"]["arguments"])) for e in tail for c in e.get("tool_calls", [])]
    texts = [e["content"] for e in tail if isinstance(e.get("content"), str)]
    return calls, "".join(texts) if texts else None


def _expected_logfire(attrs: dict):
    data = attrs["response_data"]
    if "combined_chunk_content" in data:
        return [], data["combined_chunk_content"] or None
    message = data["message"]
    calls = [(c["function"]["name"], _args(c["function"]["arguments"])) for c in message.get("tool_calls") or []]
    return calls, message.get("content")


def expected(attrs: dict):
    """(tool calls as (name, arguments), text) a model-call span recorded, or None without an answer."""
    if "gen_ai.output.messages" in attrs:
        return _expected_genai(attrs)
    if any(k.startswith("llm.output_messages.") for k in attrs):
        return _expected_openinference(attrs)
    if any(k.startswith("gen_ai.completion.") for k in attrs):
        return _expected_openllmetry(attrs)
    if isinstance(attrs.get("events"), list) and attrs["events"] and (
            attrs["events"][-1].get("role") == "assistant" or "message" in attrs["events"][-1]):
        return _expected_events(attrs)
    if isinstance(attrs.get("response_data"), dict) and (attrs["response_data"].get("message")
                                                         or "combined_chunk_content" in attrs["response_data"]):
        return _expected_logfire(attrs)
    output = attrs.get("output")  # the OpenAI Agents SDK's span data
    if isinstance(output, list) and output and all(isinstance(m, dict) and m.get("role") for m in output):
        return _expected_logfire({"response_data": {"message": output[-1]}})
    return None


def _normalized(exchange) -> tuple[list, str | None]:
    doc = formats.normalize(exchange.response)
    return [(c["name"], c["arguments"]) for c in doc["tool_calls"]], doc["content"] or None


_UNSUPPORTED = ("legacy text completions", "non-Claude model")


@pytest.mark.parametrize("path", _samples(), ids=lambda p: p.stem[:90])
def test_sample_reads_back_to_what_the_span_recorded(path, tmp_path):
    source = _as_file(path, tmp_path)
    name = "inspect" if _sidecar(path)["convention"] == "inspect" else "otel"
    module = importer(name)
    assert module.detect(str(source), source.read_bytes()[:65536])
    reading = module.read(str(source), source.name)
    assert reading.file == source.name and reading.format == name
    for p in reading.passed:
        assert p.kind in ("skipped", "unsupported", "not_captured") and p.reason
    if name == "inspect":
        _check_inspect(reading)
        return
    exchanges = {e.entry: e for e in reading.exchanges}
    passed = {p.entry: p for p in reading.passed}
    spans = _raw_spans(json.loads(path.read_text()))
    assert len(exchanges) + len(passed) == len(spans)  # each span accounted for once
    for span_id, attrs in spans:
        want = expected(attrs)
        if span_id in passed:
            entry = passed[span_id]
            if want is not None and "<elided>" not in json.dumps(attrs):
                if entry.kind == "not_captured":  # a streamed call kept without its arguments
                    assert (_loads(attrs.get("output.value")) or {}).get("streaming") is True
                    assert "streamed tool call's arguments" in entry.reason
                    assert any(args in ({}, "{}") for _, args in want[0]), want
                    continue
                assert entry.kind == "unsupported" and any(w in entry.reason for w in _UNSUPPORTED), entry
            continue
        exchange = exchanges[span_id]
        assert want is not None, f"span {span_id} imported without an answer"
        assert _normalized(exchange) == (want[0], want[1] or None)
        assert exchange.fidelity == "reconstructed"
        form = _form_of(exchange.endpoint)  # a body plain enough is chat-like too: the endpoint decides
        assert formats.request_format(exchange.request) in (form, "openai-chat")
        assert formats.to_neutral(exchange.request, form)[1]["messages"]
        _check_tools(exchange, attrs)


def _check_tools(exchange, attrs: dict) -> None:
    """Tools declared by name only exactly when the span recorded calls but no definitions."""
    _, neutral = formats.to_neutral(exchange.request, _form_of(exchange.endpoint))
    declared = [t["function"]["name"] for t in neutral.get("tools") or []]
    defined = any(k.startswith(("gen_ai.tool.definitions", "llm.tools.", "llm.request.functions.")) for k in attrs) or (
        isinstance(_loads(attrs.get("request_data")), dict) and _loads(attrs["request_data"]).get("tools")) or (
        isinstance(_loads(attrs.get("input.value")), dict) and (_loads(attrs["input.value"]).get("tools")
                                                                 or _loads(attrs["input.value"]).get("toolConfig")))
    called = [name for name, _ in _normalized(exchange)[0]]
    if called and not defined:
        assert exchange.tools_inferred
    if exchange.tools_inferred:
        assert not defined
        assert set(called) <= set(declared)
        assert all(t["function"]["parameters"] == {"type": "object"} for t in neutral["tools"])


def _form_of(endpoint: str) -> str:
    if endpoint.endswith(":generateContent"):
        return "gemini"
    if endpoint.endswith("/converse"):
        return "bedrock"
    return {"/v1/chat/completions": "openai-chat", "/v1/responses": "openai-responses",
            "/v1/messages": "anthropic"}[endpoint]


def _check_inspect(reading) -> None:
    for exchange in reading.exchanges:
        assert exchange.fidelity == "wire"
        assert formats.normalize(exchange.response)["success"]
        assert "extra_headers" not in exchange.request
        assert "attachment://" not in json.dumps(exchange.request)


def _tally() -> dict:
    counts: dict = collections.defaultdict(collections.Counter)
    for path in _samples():
        convention = _sidecar(path)["convention"]
        name = "inspect" if convention == "inspect" else "otel"
        if name == "inspect":
            continue
        reading = importer(name).read(str(path), path.name)
        counts[convention]["samples"] += 1
        counts[convention]["imported"] += len(reading.exchanges)
        counts[convention]["tools_inferred"] += sum(e.tools_inferred for e in reading.exchanges)
        counts[convention].update(p.kind for p in reading.passed)
    return {k: dict(v) for k, v in counts.items()}


def test_counts_per_convention():
    """What the development set holds, per convention: imported, not captured (listed with the
    reason), unsupported and skipped (non-model spans and Logfire's first record of a streamed
    call, whose answer is the next span)."""
    assert _tally() == {
        "logfire": {"samples": 45, "imported": 42, "tools_inferred": 8, "skipped": 59, "unsupported": 5,
                    "not_captured": 3},
        "openinference": {"samples": 53, "imported": 43, "tools_inferred": 1, "skipped": 3, "unsupported": 6,
                          "not_captured": 5},
        "openllmetry": {"samples": 54, "imported": 53, "tools_inferred": 2, "skipped": 2, "not_captured": 4},
        "otel-genai": {"samples": 7, "imported": 10, "tools_inferred": 3, "skipped": 17, "not_captured": 1},
    }


def test_inspect_logs(tmp_path):
    """The .json log's five model calls imported as sent; the .eval log's mock-model calls
    (no provider call recorded) listed as not captured."""
    found = {}
    for path in _samples():
        if _sidecar(path)["convention"] == "inspect":
            source = _as_file(path, tmp_path)
            reading = importer("inspect").read(str(source), source.name)
            found[source.suffix] = (len(reading.exchanges), collections.Counter(p.kind for p in reading.passed))
    assert found == {".json": (5, {}), ".eval": (0, {"not_captured": 6})}


# ------------------------------------------------ the whole folder through `replayci import`


def test_the_folder_imports_into_a_green_pack_and_again_changes_nothing(tmp_path):
    """`replayci import` of the whole folder as it is: the sidecars and the README are no
    recording and are left alone, every sample file is read, and the pack's recorded run passes
    every case; a second import writes nothing."""
    from cassettes import files_of
    from click.testing import CliRunner

    from replayci.api import run as run_packs
    from replayci.cli import cli

    pack = tmp_path / "pack"
    first = CliRunner().invoke(cli, ["import", str(TRACES), "--pack", str(pack)], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    read = [line for line in first.output.splitlines() if line.startswith(str(TRACES))]
    assert not any(".source.json" in line for line in read)
    sidecars = len(list(TRACES.glob("*.source.json")))
    # The unpacked `.eval` sample (a JSON object of the archive's members) is no file a user holds.
    assert len(read) == len(_samples()) - 1 and sidecars == len(_samples())
    assert f"{sidecars + 2} files in the folders given are no recording" in first.output
    # The streamed tool call whose arguments the instrumentation dropped is listed, not imported.
    assert "a streamed tool call's arguments were not captured" in first.output
    result = run_packs([str(pack)], provider="recorded")
    statuses = collections.Counter(case.status for case in result.cases)
    # (The sync and async variants of one test make the same exchange, ids and usage apart: one case.)
    assert statuses == {"pass": len(result.cases)} and len(result.cases) >= 120, statuses
    before = files_of(pack)
    again = CliRunner().invoke(cli, ["import", str(TRACES), "--pack", str(pack)], catch_exceptions=False)
    assert again.exit_code == 0 and "nothing new" in again.output
    assert files_of(pack) == before


def test_an_answer_cut_off_at_its_token_limit_keeps_its_stop_reason(tmp_path):
    """A span whose response body stopped at max_tokens mid-call is rebuilt with that stop
    reason, not as a finished tool call."""
    sample = TRACES / "openinference__openinference-js__bedrock__should-handle-multiple-tools-in-single-request.json"
    reading = importer("otel").read(str(sample), sample.name)
    exchange = reading.exchanges[0]
    assert exchange.response["stop_reason"] == "max_tokens"
