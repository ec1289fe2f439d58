"""Test support for measuring what generated contracts catch: a multi-turn travel agent on the
real openai and anthropic SDKs (run under `replayci proxy`), the fake model's script for it, the
agent sessions built from the captured fixtures, and the fixture edits — regressions that must
fail a run and faithful re-recordings that must not."""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakeserver import Conversation, Reply, first_user_text

from replayci.core.hashing import h
from replayci.formats import normalize

# --------------------------------------------------------------------------- the agent

AGENT = r'''
import json, os, sys

import anthropic, openai

P = lambda props, required: {"type": "object", "properties": props, "required": required}
S, I, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
TOOLS = [
    ("search_flights", "Find flights.", P({"to": S, "date": S, "passengers": I}, ["to", "date", "passengers"])),
    ("get_weather", "Current weather.", P({"city": S, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                                           "requested_at": S}, ["city"])),
    ("book_flight", "Book a flight.", P({"flight_id": S, "request_id": S, "seats": {"type": "array", "items": S},
                                         "notes": S}, ["flight_id", "request_id", "seats"])),
    ("search_hotels", "Find hotels.", P({"city": S, "max_price": N, "filters": P(
        {"breakfast": B, "stars": {"type": "array", "items": I}}, [])}, ["city", "max_price"])),
]
OPENAI_TOOLS = [{"type": "function", "function": {"name": n, "description": d, "parameters": p}} for n, d, p in TOOLS]
ANTHROPIC_TOOLS = [{"name": n, "description": d, "input_schema": p} for n, d, p in TOOLS]
RESULTS = {"search_flights": {"flights": [{"id": "TP1234", "price": 129}]},
           "get_weather": {"temp_c": 14, "sky": "cloudy"},
           "book_flight": {"confirmation": "BK-778812", "status": "confirmed"},
           "search_hotels": {"hotels": [{"name": "Casa Azul", "price": 120}]}}
SYSTEM = "You are a travel agent. Use the tools."


def openai_turn(question, stream=False, **kw):
    client = openai.OpenAI(api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    while True:
        args = dict(model="gpt-4o-mini", messages=messages, tools=OPENAI_TOOLS, **kw)
        if stream:
            text, calls = "", {}
            for chunk in client.chat.completions.create(stream=True, **args):
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for d in delta.tool_calls or []:
                    c = calls.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
                    c["id"] += d.id or ""
                    c["name"] += (d.function.name or "") if d.function else ""
                    c["arguments"] += (d.function.arguments or "") if d.function else ""
            calls = [calls[i] for i in sorted(calls)]
        else:
            msg = client.chat.completions.create(**args).choices[0].message
            text = msg.content or ""
            calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                     for c in msg.tool_calls or []]
        if not calls:
            return text
        messages.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls]})
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(RESULTS[c["name"]])})


def anthropic_turn(question, stream=False, **kw):
    client = anthropic.Anthropic(api_key=os.environ["ANTHROPIC_API_KEY"], max_retries=0)
    messages = [{"role": "user", "content": question}]
    while True:
        args = dict(model="claude-sonnet-4-5", max_tokens=512, system=SYSTEM, messages=messages,
                    tools=ANTHROPIC_TOOLS, **kw)
        if stream:
            with client.messages.stream(**args) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**args)
        blocks = [b.model_dump(exclude_none=True) for b in message.content]
        uses = [b for b in blocks if b["type"] == "tool_use"]
        if not uses:
            return "".join(b.get("text", "") for b in blocks)
        messages.append({"role": "assistant", "content": blocks})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"], "content": json.dumps(RESULTS[b["name"]])}
            for b in uses]})
        kw.pop("tool_choice", None)  # forced once: the answer that follows is free


print(openai_turn("Plan a trip to Lisbon on 2026-12-03 for 2 people"), flush=True)
print(anthropic_turn("What is the weather in Oslo tomorrow morning?"), flush=True)
print(openai_turn("Find hotels in Porto under 150 euros with breakfast", stream=True), flush=True)
print(openai_turn("Thanks, that is all for today"), flush=True)
print(anthropic_turn("Check the weather in Rome", stream=True, tool_choice={"type": "tool", "name": "get_weather"}),
      flush=True)
'''

REQUEST_ID = "3f1c2b9a-8d7e-4f60-9a1b-2c3d4e5f6a7b"
NOTES = "Two adjacent seats requested by the traveller, window preferred if possible."
SCRIPT = {
    "Plan a trip": Conversation({
        0: Reply.tool_calls([("search_flights", {"to": "Lisbon", "date": "2026-12-03", "passengers": 2}),
                             ("get_weather", {"city": "Lisbon", "unit": "celsius"})],
                            text="Let me check flights and the weather."),
        2: Reply.tool_call("book_flight", {"flight_id": "TP1234", "request_id": REQUEST_ID, "seats": ["12A", "12B"],
                                           "notes": NOTES}),
        3: Reply.plain_text("Booked TP1234 for two; Lisbon will be 14 degrees and cloudy.")}),
    "What is the weather": Conversation({
        0: Reply.tool_call("get_weather", {"city": "Oslo", "unit": "celsius", "requested_at": "2026-11-27T09:00:00Z"},
                           text="Checking Oslo."),
        1: Reply.plain_text("Oslo will be 14 degrees and cloudy.")}),
    "Find hotels": Conversation({
        0: Reply.tool_call("search_hotels", {"city": "Porto", "max_price": 150,
                                             "filters": {"breakfast": True, "stars": [4, 5]}}, text="Searching."),
        1: Reply.plain_text("Casa Azul, 120 euros a night.")}),
    "Thanks": Reply.plain_text("You are welcome, have a great trip!"),
    "Check the weather": Conversation({
        0: Reply.tool_call("get_weather", {"city": "Rome", "unit": "fahrenheit"}),
        1: Reply.plain_text("Rome: 57 F, cloudy.")}),
}


def model_script(req):
    """The fake model's answer to one request of the agent: by its question, then by its step."""
    question = first_user_text(req) or ""
    return next(action for start, action in SCRIPT.items() if question.startswith(start))


# --------------------------------------------------------------------------- sessions


def _results_after(calls: list[dict], next_request: dict) -> list[dict]:
    """The tool results the next request carries for *calls* (neutral: role tool messages)."""
    by_id = {m.get("tool_call_id"): m.get("content") for m in next_request.get("messages") or ()
             if m.get("role") == "tool"}
    out = []
    for call in calls:
        content = by_id.get(call["id"])
        try:
            result = json.loads(content) if isinstance(content, str) else content
        except ValueError:
            result = content
        out.append({"call_id": call["id"], "tool": call["name"], "args_hash": h(call["arguments"]),
                    "result": result})
    return out


def sessions(golden: Path) -> dict[str, dict]:
    """The captured exchanges as agent sessions (grouped by their first user words, in the order
    their conversations grow): a scenario fixture per session of two model calls or more."""
    groups: dict[str, list[dict]] = {}
    for path in sorted(golden.rglob("*.json")):
        doc = json.loads(path.read_text("utf-8"))
        if "meta" not in doc or "trajectory" in doc:
            continue
        user = next(m["content"] for m in doc["request"]["messages"] if m["role"] == "user")
        groups.setdefault(json.dumps(user), []).append(doc)
    out = {}
    for user, docs in groups.items():
        docs.sort(key=lambda d: len(d["request"]["messages"]))
        if len(docs) < 2:
            continue
        steps, table = [], []
        for n, doc in enumerate(docs):
            response = normalize(doc["response"], status=doc.get("status", 200))
            calls = response.get("tool_calls") or []
            results = _results_after(calls, docs[n + 1]["request"]) if n + 1 < len(docs) else []
            steps.append({"response": response, "tool_results": results})
            table += [{"tool": r["tool"], "args_hash": r["args_hash"], "arguments": c["arguments"],
                       "result": r["result"]} for r, c in zip(results, calls, strict=True)]
        first = docs[0]
        out[json.loads(user)] = {"boundary": first["boundary"], "request": first["request"], "tool_results": table,
                                 "trajectory": steps}
    return out


# --------------------------------------------------------------------------- fixture edits


@dataclass
class Edit:
    """One edit of one fixture: its kind, the fixture, and the change (of the fixture document)."""

    kind: str
    fixture: Path
    what: str
    apply: Callable[[dict], None]


def _text_of(doc: dict) -> dict:
    return normalize(doc["response"], status=doc.get("status", 200))


def _set_response(doc: dict, response: dict) -> None:
    for call in response.get("tool_calls") or ():
        call["arguments_raw"] = json.dumps(call["arguments"])
    doc["response"] = response
    doc.pop("status", None)


def _declared(doc: dict) -> list[str]:
    return [t["function"]["name"] for t in doc["request"].get("tools") or ()]


def _schema(doc: dict, name: str) -> dict:
    return next((t["function"].get("parameters") or {} for t in doc["request"].get("tools") or ()
                 if t["function"]["name"] == name), {})


def _changed(value: Any) -> Any:
    """Another value of the same JSON type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + " (changed)"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        key = next(iter(value), "x")
        return {**value, key: _changed(value.get(key, 0))}
    return "changed"


def _retyped(value: Any) -> Any:
    """The value as another JSON type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return 7
    if isinstance(value, list):
        return {"items": value}
    return json.dumps(value)


_MINTED = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-|\d{4}-\d{2}-\d{2}T")


def _single(kind: str, fixture: Path, what: str, change: Callable[[dict, dict], None]) -> Edit:
    def apply(doc: dict) -> None:
        response = _text_of(doc)
        change(response, doc)
        _set_response(doc, response)
    return Edit(kind, fixture, what, apply)


def _call_edits(fixture: Path, doc: dict, response: dict) -> Iterator[Edit]:
    calls = response["tool_calls"]
    declared = _declared(doc)

    def prose(r, _d):
        r.update(tool_calls=[], content="I would rather explain it in words.", stop_reason="stop")
    yield _single("prose instead of calls", fixture, "all calls", prose)
    for i, call in enumerate(calls):
        other = next((t for t in declared if t != call["name"]), "other_tool")
        yield _single("another tool", fixture, f"call {i} {call['name']} -> {other}",
                      lambda r, _d, i=i, other=other: r["tool_calls"][i].update(name=other))
        args = call["arguments"]
        required = _schema(doc, call["name"]).get("required") or list(args)
        for key in [k for k in required if k in args]:
            yield _single("required argument dropped", fixture, f"{call['name']}.{key}",
                          lambda r, _d, i=i, key=key: r["tool_calls"][i]["arguments"].pop(key))
        for key, value in args.items():
            if not (isinstance(value, str) and _MINTED.match(value)):  # a minted value changes on every run
                yield _single("argument value changed", fixture, f"{call['name']}.{key}",
                              lambda r, _d, i=i, key=key: r["tool_calls"][i]["arguments"].update(
                                  {key: _changed(r["tool_calls"][i]["arguments"][key])}))
            yield _single("argument type changed", fixture, f"{call['name']}.{key}",
                          lambda r, _d, i=i, key=key: r["tool_calls"][i]["arguments"].update(
                              {key: _retyped(r["tool_calls"][i]["arguments"][key])}))
    yield _single("extra call", fixture, f"another {calls[-1]['name']}",
                  lambda r, _d: r["tool_calls"].append({**copy.deepcopy(r["tool_calls"][-1]), "id": "call_extra"}))


def single_edits(fixture: Path) -> Iterator[Edit]:
    """The regressions of one captured exchange."""
    doc = json.loads(fixture.read_text("utf-8"))
    response = _text_of(doc)
    if response.get("tool_calls"):
        yield from _call_edits(fixture, doc, response)
    elif response.get("success"):
        tool = (_declared(doc) or ["get_weather"])[0]
        yield _single("call added to a text answer", fixture, tool, lambda r, _d: r.update(
            tool_calls=[{"id": "call_added", "name": tool, "arguments": {}}], stop_reason="tool_calls"))


def _step_edit(kind: str, fixture: Path, what: str, change: Callable[[list], None]) -> Edit:
    return Edit(kind, fixture, what, lambda doc: change(doc["trajectory"]))


def scenario_edits(fixture: Path) -> Iterator[Edit]:
    """The regressions of one session: steps swapped, a step's call renamed, a step answering in
    prose, a step's argument changed."""
    doc = json.loads(fixture.read_text("utf-8"))
    steps = doc["trajectory"]
    declared = _declared(doc)
    for n in range(len(steps) - 1):
        def swap(t, n=n):
            t[n], t[n + 1] = t[n + 1], t[n]
        yield _step_edit("two trajectory steps swapped", fixture, f"steps {n + 1} and {n + 2}", swap)
    for n, step in enumerate(steps):
        calls = step["response"].get("tool_calls") or []
        if not calls:
            continue
        other = next((t for t in declared if t != calls[0]["name"]), "other_tool")
        yield _step_edit("a step's call renamed", fixture, f"step {n + 1}: {calls[0]['name']} -> {other}",
                         lambda t, n=n, other=other: t[n]["response"]["tool_calls"][0].update(name=other))
        yield _step_edit("prose instead of calls", fixture, f"step {n + 1}",
                         lambda t, n=n: t[n]["response"].update(tool_calls=[], content="In words.", stop_reason="stop"))
        key = next(iter(calls[0]["arguments"]))
        yield _step_edit("argument value changed", fixture, f"step {n + 1}: {calls[0]['name']}.{key}",
                         lambda t, n=n, key=key: _set_argument(t[n]["response"]["tool_calls"][0], key))


def _set_argument(call: dict, key: str) -> None:
    call["arguments"][key] = _changed(call["arguments"][key])
    call["arguments_raw"] = json.dumps(call["arguments"])


# --------------------------------------------------------------------------- faithful re-recordings

_ID_KEYS = ("id", "call_id", "tool_call_id", "tool_use_id")
_TEXT_KEYS = ("content", "text")


def _walk(value: Any, fn: Callable[[str, Any], Any], key: str = "") -> Any:
    """*value* rebuilt with fn(key, leaf) for every scalar under a key; arguments left alone."""
    if isinstance(value, dict):
        return {k: (v if k in ("arguments", "arguments_raw", "input", "partial_json") else _walk(v, fn, k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, fn, key) for v in value]
    return fn(key, value)


def _on_payload(response: Any, fn: Callable[[Any], Any]) -> Any:
    """fn applied to a stored answer: a JSON document, or each JSON event of a stream."""
    if isinstance(response, str):
        def event(m: re.Match) -> str:
            try:
                return m.group(1) + json.dumps(fn(json.loads(m.group(2))))
            except ValueError:
                return m.group(0)
        return re.sub(r"(data: )(.*)", event, response)
    return fn(response)


def _new_ids(key: str, value: Any) -> Any:
    if key in _ID_KEYS and isinstance(value, str):
        prefix = re.match(r"[A-Za-z]+[_-]?", value)
        return (prefix.group(0) if prefix else "") + h(value)[:12]
    return value


def _usage(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (_usage(v) if k not in ("usage", "usageMetadata") else _more(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_usage(v) for v in value]
    return value


def _more(usage: Any) -> Any:
    if isinstance(usage, dict):
        return {k: (v * 3 + 1 if isinstance(v, int) and not isinstance(v, bool) else _more(v))
                for k, v in usage.items()}
    return usage


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _reversed_keys(value[k]) for k in reversed(list(value))}
        if isinstance(out.get("arguments"), str):  # the arguments' own key order too
            try:
                out["arguments"] = json.dumps(_reversed_keys(json.loads(out["arguments"])))
            except ValueError:
                pass
        if isinstance(out.get("arguments_raw"), str):
            out["arguments_raw"] = json.dumps(_reversed_keys(json.loads(out["arguments_raw"])))
        return out
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


def _snapshot(key: str, value: Any) -> Any:
    return value + "-2026-01-15" if key in ("model", "modelVersion") and isinstance(value, str) else value


def _reworded(key: str, value: Any) -> Any:
    if key in _TEXT_KEYS and isinstance(value, str) and value:
        return "Sure - " + " ".join(reversed(value.split()))
    return value


def _has_calls(doc: dict) -> bool:
    return bool(_text_of(doc).get("tool_calls"))


def _minted(doc: dict) -> None:
    """Minted argument values (UUIDs, timestamps) minted again."""
    response = _text_of(doc)
    changed = False
    for call in response.get("tool_calls") or ():
        for key, value in call["arguments"].items():
            if isinstance(value, str) and _MINTED.match(value):
                call["arguments"][key] = ("9b2e4c1d-0a3f-4e5b-8c7d-6e5f4a3b2c1d" if "-" in value[9:14]
                                          else "2026-12-01T17:45:12Z")
                changed = True
    if changed:
        _set_response(doc, response)


def _everywhere(fn: Callable[[Any], Any], only_with_calls: bool = False) -> Callable[[dict], None]:
    """A re-recording of a fixture: *fn* over its stored answer (single exchange) or over each
    step of its trajectory (session)."""
    def apply(doc: dict) -> None:
        if "trajectory" in doc:
            for step in doc["trajectory"]:
                if not only_with_calls or step["response"].get("tool_calls"):
                    step["response"] = fn(step["response"])
                step["tool_results"] = [fn(r) for r in step.get("tool_results") or ()] \
                    if fn is not _REWORD else step.get("tool_results")
        elif not only_with_calls or _has_calls(doc):
            doc["response"] = _on_payload(doc["response"], fn)
    return apply


_REWORD = lambda v: _walk(v, _reworded)  # noqa: E731 - compared by identity above
HARMLESS: dict[str, Callable[[dict], None]] = {
    "new ids": _everywhere(lambda v: _walk(v, _new_ids)),
    "new minted argument values": lambda doc: None if "trajectory" in doc else _minted(doc),
    "usage": _everywhere(_usage),
    "key order": _everywhere(_reversed_keys),
    "model snapshot suffix": _everywhere(lambda v: _walk(v, _snapshot)),
    "reworded text beside a call": _everywhere(_REWORD, only_with_calls=True),
}
