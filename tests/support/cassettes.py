"""Small recordings written the way vcrpy, pydantic-ai and HAR recorders write them, for the
import tests: an OpenAI chat agent loop (a tool call, its result, the answer) and its parts."""
from __future__ import annotations

import base64
import copy
import gzip
import json
import zlib
from pathlib import Path

import yaml

KEY = "sk-proj-IMPORTSECRET-0123456789abcdef"
GEMINI_KEY = "AIzaSyIMPORTSECRET0123456789abcdefghij"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                           "parameters": {"type": "object",
                                                          "properties": {"location": {"type": "string"}},
                                                          "required": ["location"]}}}]
QUESTION = "What is the weather in Paris?"
ARGS = {"location": "Paris"}
RESULT = "Sunny, 21 C"
ANSWER = "It is sunny in Paris (21 C)."
URL = "https://api.openai.com/v1/chat/completions"


def completion(*, call: bool, id_: str = "chatcmpl-1", call_id: str = "call_abc") -> dict:
    message: dict = {"role": "assistant", "content": None if call else ANSWER}
    if call:
        message["tool_calls"] = [{"id": call_id, "type": "function",
                                  "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]
    return {"id": id_, "object": "chat.completion", "created": 1, "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}


def first_request() -> dict:
    return {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "Use the tools."},
                                                 {"role": "user", "content": QUESTION}],
            "tools": copy.deepcopy(TOOLS)}  # (a test may edit its own)


def second_request(call_id: str = "call_abc") -> dict:
    req = first_request()
    req["messages"] += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]},
        {"role": "tool", "tool_call_id": call_id, "content": RESULT}]
    return req


def interaction(request: dict | None, response, *, uri: str = URL, method: str = "POST", status: int = 200,
                request_headers: dict | None = None, response_headers: dict | None = None,
                body_form=None) -> dict:
    """One vcrpy interaction; *body_form* turns the answer's bytes into what the cassette holds."""
    raw = response if isinstance(response, bytes) else (
        response.encode() if isinstance(response, str) else json.dumps(response).encode())
    headers = {"Content-Type": ["application/json"], **(response_headers or {})}
    held = body_form(raw) if body_form else raw.decode()
    return {"request": {"body": json.dumps(request) if request is not None else None,
                        "headers": {"Authorization": [f"Bearer {KEY}"], **(request_headers or {})},
                        "method": method, "uri": uri},
            "response": {"body": held if isinstance(held, dict) else {"string": held},
                         "headers": headers, "status": {"code": status, "message": "OK"}}}


def loop_interactions() -> list[dict]:
    return [interaction(first_request(), completion(call=True)),
            interaction(second_request(), completion(call=False, id_="chatcmpl-2"))]


def write_cassette(path: Path, interactions: list[dict], *, as_json: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"interactions": interactions, "version": 1}
    path.write_text(json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True))
    return path


def gzipped(raw: bytes) -> bytes:
    return gzip.compress(raw)


def deflated(raw: bytes) -> bytes:
    return zlib.compress(raw)


def base64_body(raw: bytes) -> dict:
    return {"base64_string": base64.b64encode(raw).decode()}


def har(entries: list[dict]) -> dict:
    return {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}


def har_entry(request: dict, response, *, url: str = URL, base64_answer: bool = False,
              mime: str = "application/json") -> dict:
    raw = response.encode() if isinstance(response, str) else json.dumps(response).encode()
    content = {"mimeType": mime, "size": len(raw),
               "text": base64.b64encode(raw).decode() if base64_answer else raw.decode()}
    if base64_answer:
        content["encoding"] = "base64"
    return {"request": {"method": "POST", "url": url, "headers": [{"name": "x-api-key", "value": KEY}],
                        "postData": {"mimeType": "application/json", "text": json.dumps(request)}},
            "response": {"status": 200, "headers": [{"name": "content-type", "value": mime}], "content": content}}


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under *root*, by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def rendered_from_disk(pack: Path) -> dict[str, str]:
    """Each tool-set contract of *pack* rendered again from its fixtures on disk alone (each
    case's answer read and its checks worked out anew, as Case does)."""
    from replayci.capture import contracts
    from replayci.capture.importplan import cases_on_disk, render_contract

    out = {}
    for path in sorted((pack / "contracts").glob("*.yaml")):
        if not (pack / "golden" / path.stem).is_dir() or path.stem.startswith("session_"):
            continue
        cases = cases_on_disk(str(pack / "golden"), path.stem, {}, {})
        out[path.name] = render_contract(contracts.tool_names(cases[0].neutral) if cases else [], cases, False)
    return out
