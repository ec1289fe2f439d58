"""OpenAI chat completions and every OpenAI-compatible server (the neutral request form)."""
from __future__ import annotations

from typing import Any

from ..core.jsonvalue import json_copy
from . import errors
from ._common import (
    Document,
    NormalizeError,
    Pieces,
    add_piece,
    as_dict,
    as_list,
    call,
    document,
    incomplete,
    join_pieces,
    map_stop,
    text_or_none,
    usage,
)
from ._streams import DONE

NAME = "openai-chat"
STREAM_END = "data: [DONE]"


def refuse(p: Any) -> str | None:
    """The name of a known OpenAI payload replayci does not check, or None."""
    if not isinstance(p, dict):
        return None
    if p.get("object") == "text_completion":
        return "a legacy OpenAI text completion (object: text_completion)"
    choices = p.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        first = choices[0]
        if "text" in first and "message" not in first and "delta" not in first:
            return "a legacy text completion (choices[].text)"
    return None


def detect(p: Any) -> bool:
    """Whether *p* is a chat completion."""
    return isinstance(p, dict) and "choices" in p


def _parts(content: Any, texts: list, refusals: list, reasoning: list) -> None:
    """Sort a message's content (a string or a list of parts) into text, refusal and reasoning."""
    if isinstance(content, str):
        texts.append(content)
        return
    for part in as_list(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        part = as_dict(part)
        kind = part.get("type")
        if kind in ("text", "output_text"):
            texts.append(part.get("text") or "")
        elif kind == "refusal":
            refusals.append(part.get("refusal") or part.get("text") or "")
        elif kind in ("thinking", "reasoning"):
            inner = part.get("thinking", part.get("text"))
            _parts(inner, reasoning, reasoning, reasoning)


def _calls(msg: dict) -> list[dict]:
    calls = []
    for i, tc in enumerate(as_list(msg.get("tool_calls"))):
        tc = as_dict(tc)
        id_ = tc.get("id") or f"call_{i + 1}"
        if tc.get("type") == "custom" or "custom" in tc:
            custom = as_dict(tc.get("custom"))
            calls.append(call(id_, custom.get("name"), custom.get("input")))
        else:
            fn = as_dict(tc.get("function"))
            calls.append(call(id_, fn.get("name"), fn.get("arguments")))
    fc = as_dict(msg.get("function_call"))
    if not calls and fc.get("name"):
        calls.append(call("call_1", fc.get("name"), fc.get("arguments")))
    return calls


def _usage(u: Any) -> dict | None:
    u = as_dict(u)
    return usage(u.get("prompt_tokens", u.get("input_tokens")), u.get("completion_tokens", u.get("output_tokens")),
                 as_dict(u.get("prompt_tokens_details")).get("cached_tokens"))


def normalize(p: dict) -> Document:
    """The normalized document of a chat completion."""
    choices = as_list(p.get("choices"))
    if not choices:
        raise NormalizeError("an OpenAI chat completion with no choices")
    choice = as_dict(choices[0])
    if isinstance(choice.get("error"), dict):  # a provider failure reported inside the choice
        return errors.normalize({"error": choice["error"]})
    msg = as_dict(choice.get("message"))
    texts: list[str] = []
    refusals: list[str] = []
    reasoning: list[str] = []
    _parts(msg.get("content"), texts, refusals, reasoning)
    if isinstance(msg.get("refusal"), str):
        refusals.append(msg["refusal"])
    for key in ("reasoning_content", "reasoning"):
        if isinstance(msg.get(key), str):
            reasoning.append(msg[key])
            break
    calls = _calls(msg)
    refusal = text_or_none(refusals)
    return document(
        calls,
        text_or_none(texts + refusals),
        map_stop(choice.get("finish_reason"), bool(calls)),
        _usage(p.get("usage")),
        reasoning=text_or_none(reasoning),
        refusal=refusal,
        model=p.get("model"),
    )


def detect_stream(events: list) -> bool:
    """Whether parsed stream events are chat.completion.chunk deltas."""
    for _, obj in events:
        if isinstance(obj, dict) and not errors.detect(obj):
            choices = as_list(obj.get("choices"))
            if not choices and "prompt_filter_results" in obj:
                continue  # Azure's first chunk: the prompt's content-filter results, no choice yet
            return obj.get("object") == "chat.completion.chunk" or any(
                isinstance(c, dict) and "delta" in c for c in choices
            )
    return False


def _find_call(calls: list[dict], delta: dict) -> dict:
    """The accumulated call a tool-call delta continues (a new one when it starts a call)."""
    index, id_ = delta.get("index"), delta.get("id")
    for c in calls:
        if (isinstance(index, int) and c["_index"] == index) or (index is None and id_ and c["id"] == id_):
            return c
    if index is None and not id_ and calls:
        return calls[-1]
    c = {"_index": index if isinstance(index, int) else len(calls), "id": None, "type": None,
         "name": "", "arguments": "", "custom": False}
    calls.append(c)
    return c


def _merge_call(calls: list[dict], delta: dict) -> None:
    c = _find_call(calls, delta)
    if delta.get("id") and not c["id"]:
        c["id"] = delta["id"]
    part = as_dict(delta.get("function"))
    if delta.get("type") == "custom" or "custom" in delta:
        c["custom"] = True
        part = as_dict(delta.get("custom"))
        part = {"name": part.get("name"), "arguments": part.get("input")}
    if part.get("name") and not c["name"]:
        c["name"] = part["name"]
    args = part.get("arguments")
    if isinstance(args, str):
        c["arguments"] = add_piece(c["arguments"], args) if isinstance(c["arguments"], (str, Pieces)) else args
    elif args is not None:
        c["arguments"] = args


def _apply_delta(state: dict, delta: dict) -> None:
    _parts(delta.get("content"), state["content"], state["refusal"], state["reasoning"])
    if isinstance(delta.get("refusal"), str):
        state["refusal"].append(delta["refusal"])
    for key in ("reasoning_content", "reasoning"):
        if isinstance(delta.get(key), str):
            state["reasoning"].append(delta[key])
            break
    for tc in as_list(delta.get("tool_calls")):
        _merge_call(state["calls"], as_dict(tc))
    fc = as_dict(delta.get("function_call"))
    if fc:
        legacy = state["function_call"]
        legacy["name"] = legacy.get("name") or fc.get("name") or ""
        legacy["arguments"] = add_piece(legacy.get("arguments", ""), fc.get("arguments") or "")


def _message(state: dict) -> dict:
    """The assembled assistant message of a reassembled stream."""
    join_pieces(state)
    tool_calls = []
    for c in state["calls"]:
        if c["custom"]:
            tool_calls.append({"id": c["id"], "type": "custom",
                               "custom": {"name": c["name"], "input": c["arguments"]}})
        else:
            tool_calls.append({"id": c["id"], "type": "function",
                               "function": {"name": c["name"], "arguments": c["arguments"]}})
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(state["content"]) or None,
                           "tool_calls": tool_calls}
    if state["refusal"]:
        msg["refusal"] = "".join(state["refusal"])
    if state["reasoning"]:
        msg["reasoning_content"] = "".join(state["reasoning"])
    if state["function_call"]:
        msg["function_call"] = state["function_call"]
    return msg


def read_stream(events: list) -> Document:
    """Reassemble chat.completion.chunk events into the non-streamed document."""
    state: dict[str, Any] = {"content": [], "refusal": [], "reasoning": [], "calls": [],
                             "function_call": {}, "finish": None, "usage": None, "model": None}
    done = False
    for name, obj in events:
        if obj == DONE:
            done = True
            break
        if not isinstance(obj, dict):
            continue
        if name == "error" or errors.detect(obj):
            return errors.normalize(obj)
        state["model"] = obj.get("model") or state["model"]
        if isinstance(obj.get("usage"), dict):
            state["usage"] = obj["usage"]
        for choice in as_list(obj.get("choices")):
            choice = as_dict(choice)
            if choice.get("index", 0) not in (0, None):
                continue
            if isinstance(choice.get("error"), dict):
                return errors.normalize({"error": choice["error"]})
            _apply_delta(state, as_dict(choice.get("delta") or choice.get("message")))
            state["finish"] = choice.get("finish_reason") or state["finish"]
    if not done:
        return incomplete(STREAM_END)
    body = {"choices": [{"message": _message(state), "finish_reason": state["finish"]}],
            "usage": state["usage"], "model": state["model"]}
    return normalize(body)


def detect_request(r: dict) -> bool:
    """Whether a request is in chat-completions form (the neutral form)."""
    return isinstance(r.get("messages"), list)


def to_neutral(r: dict) -> dict:
    """A chat-completions request is already neutral."""
    return json_copy(r)


def from_neutral(n: dict) -> dict:
    """The neutral request is already a chat-completions request."""
    return json_copy(n)
