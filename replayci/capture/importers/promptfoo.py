"""promptfoo's eval output (`promptfoo eval -o results.json`): each result that holds its
provider's answer becomes an exchange — the request rebuilt from the rendered prompt and the
provider's config (`fidelity: reconstructed`), the answer as an OpenAI chat completion or an
Anthropic message, as its provider gave it — and its
tool-call assertions become the case's checks (`promptfoo_asserts`); the rest are listed as not
translated, with the reason. A result promptfoo failed is kept as a pinned negative case: the
pack passes at once, and the case says what promptfoo saw."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from . import Exchange, Passed, Reading
from ._tracefiles import fail, read_documents
from .promptfoo_asserts import translate

NAME = "promptfoo"

# promptfoo provider ids whose output is an OpenAI chat completion's message: the id's prefix
# and where the model name starts. Others are listed as unsupported, naming the provider.
_CHAT_PREFIXES = ("openai:chat:", "azure:chat:", "azureopenai:chat:")
_NOT_CHAT = ("openai:responses:", "openai:assistant:", "openai:embedding:", "openai:embeddings:",
             "openai:completion:", "openai:image:", "openai:realtime:", "openai:transcription:")
# Request settings promptfoo's OpenAI provider sends as the same field of the chat request.
_REQUEST_FIELDS = ("temperature", "max_tokens", "max_completion_tokens", "top_p", "frequency_penalty",
                   "presence_penalty", "seed", "stop", "tool_choice", "parallel_tool_calls", "response_format",
                   "reasoning_effort")


def detect(path: str, head: bytes) -> bool:
    """promptfoo's output file: a JSON object with its evalId and results."""
    text = head.lstrip()
    return text.startswith(b"{") and b'"evalId"' in head and b'"results"' in head


def read(path: str, display: str) -> Reading:
    docs = read_documents(path, display)
    doc = docs[0][1] if len(docs) == 1 else None
    results = doc.get("results") if isinstance(doc, dict) else None
    entries = results.get("results") if isinstance(results, dict) else None
    if not isinstance(entries, list):
        raise fail(display, "not promptfoo's eval output: expected {evalId, results: {results: [...]}}")
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    reading = Reading(file=display, format=NAME)
    for n, result in enumerate(entries):
        got = _exchange(n, result, config) if isinstance(result, dict) else \
            Passed(n, "unreadable", "a result that is not an object")
        if isinstance(got, tuple):
            exchange, notes = got
            reading.exchanges.append(exchange)
            reading.passed.extend(notes)
        else:
            reading.passed.append(got)
    return reading


def _exchange(n: int, result: dict, config: dict) -> tuple[Exchange, list[Passed]] | Passed:
    provider = result.get("provider") if isinstance(result.get("provider"), dict) else {}
    provider_id = str(provider.get("id") or result.get("provider") or "")
    model, api = _chat_model(provider_id), "openai"
    if model is None:
        model, api = _anthropic_model(provider_id), "anthropic"
    if model is None:
        return Passed(n, "unsupported", f"provider {provider_id or '(none)'}: promptfoo's output of this "
                      "provider is neither an OpenAI-style chat message nor an Anthropic message")
    response = result.get("response") if isinstance(result.get("response"), dict) else {}
    output = response.get("output")
    if output is None or response.get("error"):
        why = response.get("error") or result.get("error") or "no output"
        return Passed(n, "not_captured", f"promptfoo recorded no answer: {str(why)[:200]}")
    settings = {**_provider_config(config, provider), **_mapping((result.get("prompt") or {}).get("config"))}
    built = (_openai if api == "openai" else _anthropic)(result, response, model, settings)
    if built is None:
        return Passed(n, "unsupported", f"an output of type {type(output).__name__} that is no {api} message")
    endpoint, request, answer, calls, inferred = built
    test = result.get("testCase") if isinstance(result.get("testCase"), dict) else {}
    translated = translate(test.get("assert"), text=not calls)
    checks: dict[str, Any] = {}
    if translated.assertions():
        checks["assertions"] = translated.assertions()
    if _failed(result, translated.translated):
        checks["expect_ok"] = False  # promptfoo failed it on a translated check: kept as the known failure
    label = test.get("description") if isinstance(test.get("description"), str) else ""
    notes = [Passed(n, "not_translated", f"{label + ': ' if label else ''}{why}") for why in translated.not_translated]
    return Exchange(entry=n, endpoint=endpoint, request=request, response=answer,
                    host=_host(settings, "api.openai.com" if api == "openai" else "api.anthropic.com"),
                    fidelity="reconstructed", tools_inferred=inferred, group=f"promptfoo:{n}",
                    checks=checks, label=label), notes


def _openai(result: dict, response: dict, model: str, settings: dict) -> tuple | None:
    """(endpoint, request, answer, whether it called tools, tools inferred) of a chat completion."""
    message = _message(response.get("output"))
    if message is None:
        return None
    request, inferred = _request(result, model, settings, message)
    return ("/v1/chat/completions", request, _completion(result, response, model, message),
            bool(message.get("tool_calls")), inferred)


def _anthropic_model(provider_id: str) -> str | None:
    for prefix in ("anthropic:messages:", "anthropic:"):
        if provider_id.startswith(prefix):
            rest = provider_id[len(prefix):]
            return rest if rest and ":" not in rest else None  # anthropic:completion:... is another API
    return None


def _blocks(output: Any) -> list[dict] | None:
    """promptfoo's Anthropic output as content blocks: it joins the answer's blocks with a blank
    line, text as it is and each tool use as its JSON."""
    if not isinstance(output, str):
        return None
    blocks: list[dict] = []
    for piece in output.split("\n\n"):
        try:
            parsed = json.loads(piece) if piece.startswith("{") else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("type") == "tool_use" and isinstance(parsed.get("name"), str):
            blocks.append(parsed)
        elif blocks and blocks[-1]["type"] == "text":
            blocks[-1]["text"] += "\n\n" + piece
        else:
            blocks.append({"type": "text", "text": piece})
    return blocks


def _anthropic(result: dict, response: dict, model: str, settings: dict) -> tuple | None:
    """(endpoint, request, answer, whether it called tools, tools inferred) of a Messages call."""
    blocks = _blocks(response.get("output"))
    if blocks is None:
        return None
    prompt = result.get("prompt") if isinstance(result.get("prompt"), dict) else {}
    messages = _messages(prompt.get("raw"))
    system = "\n\n".join(m["content"] for m in messages
                         if m.get("role") == "system" and isinstance(m.get("content"), str))
    request: dict[str, Any] = {"model": model, "max_tokens": settings.get("max_tokens") or 1024,
                               "messages": [m for m in messages if m.get("role") != "system"]}
    if system:
        request["system"] = system
    tools = settings.get("tools")
    called = sorted({b["name"] for b in blocks if b["type"] == "tool_use"})
    inferred = not (isinstance(tools, list) and all(isinstance(t, dict) and "name" in t for t in tools))
    if inferred:
        tools = [{"name": name, "input_schema": {"type": "object"}} for name in called]
    if tools:
        request["tools"] = tools
    request.update({k: settings[k] for k in ("temperature", "top_p", "top_k", "tool_choice", "stop_sequences")
                    if k in settings})
    usage = response.get("tokenUsage") if isinstance(response.get("tokenUsage"), dict) else {}
    answer: dict[str, Any] = {"type": "message", "role": "assistant", "model": model, "content": blocks,
                              "stop_reason": "tool_use" if called else "end_turn", "stop_sequence": None}
    if isinstance(usage.get("prompt"), int) and isinstance(usage.get("completion"), int):
        answer["usage"] = {"input_tokens": usage["prompt"], "output_tokens": usage["completion"]}
    return "/v1/messages", request, answer, bool(called), inferred and bool(called)


def _failed(result: dict, translated: list) -> bool:
    """Whether promptfoo failed the result on an assertion that was translated (a failure of
    an untranslated one leaves nothing in the case that fails)."""
    if result.get("success") is not False:
        return False
    grading = result.get("gradingResult") if isinstance(result.get("gradingResult"), dict) else {}
    components = grading.get("componentResults")
    if not isinstance(components, list):
        return bool(translated)
    return any(isinstance(c, dict) and c.get("pass") is False and c.get("assertion") in translated
               for c in components)


def _chat_model(provider_id: str) -> str | None:
    if provider_id.startswith(_NOT_CHAT):
        return None
    for prefix in _CHAT_PREFIXES:
        if provider_id.startswith(prefix):
            return provider_id[len(prefix):] or None
    if provider_id.startswith("openai:") and provider_id.count(":") == 1:  # openai:MODEL is the chat API
        return provider_id[len("openai:"):] or None
    return None


def _mapping(value: Any) -> dict:
    return dict(value) if isinstance(value, Mapping) else {}


def _provider_config(config: dict, provider: dict) -> dict:
    """The config of the result's provider in the eval's config (matched by label, then id)."""
    providers = config.get("providers")
    listed = [p for p in providers if isinstance(p, dict)] if isinstance(providers, list) else []
    for key in ("label", "id"):
        wanted = provider.get(key)
        for p in listed:
            if wanted and p.get(key) == wanted:
                return _mapping(p.get("config"))
    return {}


def _messages(raw: Any) -> list[dict]:
    """The rendered prompt as chat messages: a JSON list of messages, or one user message."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and parsed and all(isinstance(m, dict) and "role" in m for m in parsed):
            return parsed
        return [{"role": "user", "content": raw}]
    return [{"role": "user", "content": json.dumps(raw)}]


def _request(result: dict, model: str, settings: dict, message: dict) -> tuple[dict, bool]:
    """The chat request promptfoo sent, rebuilt; whether its tools are declared by name only
    (the output file held no definitions, e.g. tools read from a file)."""
    prompt = result.get("prompt") if isinstance(result.get("prompt"), dict) else {}
    request: dict[str, Any] = {"model": model, "messages": _messages(prompt.get("raw"))}
    tools = settings.get("tools")
    inferred = False
    if not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        called = sorted({c["function"]["name"] for c in message.get("tool_calls") or ()})
        tools, inferred = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
                           for name in called], bool(called)
    if tools:
        request["tools"] = tools
    request.update({k: settings[k] for k in _REQUEST_FIELDS if k in settings})
    return request, inferred


def _message(output: Any) -> dict | None:
    """promptfoo's output as the assistant message: text, a list of tool calls, or a message."""
    if isinstance(output, str):
        return {"role": "assistant", "content": output}
    if isinstance(output, list) and all(_is_call(c) for c in output):
        return {"role": "assistant", "content": None, "tool_calls": output}
    if isinstance(output, dict) and ("content" in output or "tool_calls" in output):
        calls = output.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(_is_call(c) for c in calls)):
            return None
        return {"role": "assistant", "content": output.get("content"), **({"tool_calls": calls} if calls else {})}
    return None


def _is_call(call: Any) -> bool:
    fn = call.get("function") if isinstance(call, dict) else None
    return isinstance(fn, dict) and isinstance(fn.get("name"), str)


def _completion(result: dict, response: dict, model: str, message: dict) -> dict:
    usage = response.get("tokenUsage") if isinstance(response.get("tokenUsage"), dict) else {}
    finish = response.get("finishReason") or ("tool_calls" if message.get("tool_calls") else "stop")
    out: dict[str, Any] = {"object": "chat.completion", "model": model,
                           "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if isinstance(usage.get("prompt"), int) and isinstance(usage.get("completion"), int):
        out["usage"] = {"prompt_tokens": usage["prompt"], "completion_tokens": usage["completion"],
                        "total_tokens": usage.get("total", usage["prompt"] + usage["completion"])}
    return out


def _host(settings: dict, default: str) -> str:
    base = settings.get("apiBaseUrl") or settings.get("apiHost")
    if isinstance(base, str) and base:
        return urlsplit(base if "//" in base else f"https://{base}").hostname or ""
    return default
