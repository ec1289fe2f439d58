"""Agent sessions in recorded traffic: the calls of one file (or one trace) where each request's
conversation extends the previous request's by that call's answer — its tool calls, in order —
and the tool results (then, maybe, the agent's own follow-up user turn). The system prompt and the
tools offered may change between steps (agents add loaded artifacts to their instructions, and
drop the tools for a final answer): the conversation decides. A session is written as a scenario:
its first request, the recorded trajectory (each step's normalized response and the results of
its tool calls, read from the next request) and the tool table a live replay answers from."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.hashing import args_hash, h
from ..formats.canonical import stable_response
from ..pack.fixtures import boundary_of

_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Call:
    """What grouping needs of one model exchange: its neutral request and normalized answer."""

    neutral: dict
    response: dict
    api: str = ""  # its wire format: a loop stays with one API


@dataclass
class Session:
    """Calls (indices into the list grouped) forming one agent loop, and per step the results of
    its tool calls: [{call_id, tool, args_hash, arguments, result}]."""

    members: list[int]
    results: list[list[dict]] = field(default_factory=list)


def _arguments(value: Any) -> Any:
    """Arguments as the normalized document holds them: parsed JSON text, {} for none."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _calls_of(message: dict) -> list[tuple[Any, str, Any]]:
    """(id, name, arguments) of each tool call of an assistant message in the neutral form."""
    out = []
    calls = message.get("tool_calls")
    for c in calls if isinstance(calls, list) else ():
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict):
            out.append((c.get("id"), fn.get("name"), _arguments(fn.get("arguments"))))
    return out


def _conversation(neutral: dict) -> list:
    """A request's messages other than its system prompt."""
    messages = neutral.get("messages")
    return [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")] \
        if isinstance(messages, list) else []


def _answered_calls(response: dict) -> list:
    calls = response.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def link(prev: Call, nxt: Call) -> list[dict] | None:
    """The results of *prev*'s tool calls when *nxt* continues its loop, else None."""
    calls = _answered_calls(prev.response)
    if not calls or not prev.response.get("success", True) or prev.api != nxt.api:
        return None
    a, b = _conversation(prev.neutral), _conversation(nxt.neutral)
    n = len(a)
    if len(b) < n + 2 or b[:n] != a or not isinstance(b[n], dict) or b[n].get("role") != "assistant":
        return None
    sent = _calls_of(b[n])
    if [(name, args) for _, name, args in sent] != [(c.get("name"), c.get("arguments")) for c in calls]:
        return None
    rest = b[n + 1:]
    answered = next((k for k, m in enumerate(rest) if not isinstance(m, dict) or m.get("role") != "tool"), len(rest))
    if answered == 0 or not all(isinstance(m, dict) and m.get("role") == "user" for m in rest[answered:]):
        return None
    rest = rest[:answered]
    # Results are matched to the calls by call id (parallel calls' results may come back in any
    # order), by position only when the ids say nothing; an id that is no string names no call.
    position = {call_id: k for k, (call_id, _, _) in enumerate(sent) if isinstance(call_id, str)}
    results = []
    for k, message in enumerate(rest):
        result_id = message.get("tool_call_id")
        at = position.get(result_id, k) if isinstance(result_id, str) else k
        if at >= len(calls):
            return None
        call = calls[at]
        results.append({"call_id": call.get("id"), "tool": call.get("name"),
                        "args_hash": args_hash(call.get("arguments")), "arguments": call.get("arguments"),
                        "result": message.get("content")})
    return results


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def _keys(call: Call) -> tuple[str | None, list[str]]:
    """(the key under which *call* waits for its loop's next call — None when it has no tool call
    to answer —, the keys of the loops it may continue). A key is the API, a conversation's digest
    and the calls an assistant turn made: what `link` asks of two calls before anything else."""
    conversation = _conversation(call.neutral)
    digest = hashlib.sha256()
    continues = []
    for n, message in enumerate(conversation):
        if n + 2 <= len(conversation) and isinstance(message, dict) and message.get("role") == "assistant":
            made = [[name, args] for _, name, args in _calls_of(message)]
            continues.append(f"{call.api}\x00{digest.hexdigest()}\x00{_text(made)}")
        digest.update(_text(message).encode("utf-8", "surrogatepass") + b"\x1e")
    calls = _answered_calls(call.response)
    if not calls or not call.response.get("success", True):
        return None, continues
    made = [[c.get("name"), c.get("arguments")] for c in calls]
    return f"{call.api}\x00{digest.hexdigest()}\x00{_text(made)}", continues


def group(calls: list[Call]) -> list[Session]:
    """The sessions of two or more calls among *calls* (in recorded order). Each call continues
    the latest open loop it extends; a call that extends none starts its own. Open loops are
    found by key (`_keys`), so grouping takes time in proportion to the messages read: of the
    loops waiting under one key, `link` accepts all or none, so only the latest is asked."""
    chains: list[Session] = []
    open_tails: dict[int, Session] = {}  # index of a chain's last call -> the chain
    waiting: dict[str, list[int]] = {}  # key -> open tails under it, in recorded order
    for j, call in enumerate(calls):
        key, continues = _keys(call)
        candidates = []
        for wanted in dict.fromkeys(continues):
            tails = waiting.get(wanted, [])
            while tails and tails[-1] not in open_tails:
                tails.pop()
            if tails:
                candidates.append(tails[-1])
        for i in sorted(candidates, reverse=True):
            results = link(calls[i], call)
            if results is not None:
                chain = open_tails.pop(i)
                chain.members.append(j)
                chain.results.append(results)
                break
        else:
            chain = Session([j])
            chains.append(chain)
        if key is not None:
            open_tails[j] = chain
            waiting.setdefault(key, []).append(j)
    return [c for c in chains if len(c.members) >= 2]


def trajectory(calls: list[Call], session: Session) -> list[dict]:
    """The recorded trajectory: each step's normalized response and its tool results."""
    steps = []
    for k, member in enumerate(session.members):
        results = session.results[k] if k < len(session.results) else []
        steps.append({"response": calls[member].response,
                      "tool_results": [{key: r[key] for key in ("call_id", "tool", "args_hash", "result")}
                                       for r in results]})
    return steps


def tool_results(session: Session) -> list[dict]:
    """The tool table of a session: {tool, args_hash, arguments, result} per call, in order."""
    return [{key: r[key] for key in ("tool", "args_hash", "arguments", "result")}
            for step in session.results for r in step]


_CALL_ID = re.compile(r'"(?:id|call_id|tool_call_id|tool_use_id|toolUseId)":\s*"([^"]+)"')


def session_key(calls: list[Call], session: Session) -> str:
    """What identifies a session whatever ids its provider minted: its requests and stable answers
    with every call id replaced by its order of appearance."""
    text = json.dumps([[calls[m].neutral, stable_response(calls[m].response)] for m in session.members],
                      sort_keys=True, ensure_ascii=False)
    order: dict[str, str] = {}
    for found in _CALL_ID.findall(text):
        order.setdefault(found, f"id_{len(order) + 1}")
    for minted, stand_in in sorted(order.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f'"{minted}"', f'"{stand_in}"')
    return h(text)


def scenario_document(calls: list[Call], session: Session, original: dict, meta: dict) -> dict:
    """The scenario fixture of a session: its first request (*original*: as sent, credentials out),
    the recorded trajectory and the tool table."""
    neutral = calls[session.members[0]].neutral
    return {"boundary": boundary_of(neutral), "meta": meta,
            "original_request": original, "request": neutral, "trajectory": trajectory(calls, session),
            "tool_results": tool_results(session)}


def scenario_name(document: dict, key: str, taken: Callable[[str], bool]) -> str:
    """A session's contract: `session_`, the tools the loop called and the user's first words, as
    its scenario *document* holds them (redacted: what it does not keep, no name spells); the
    key's start added when *taken* says another has that name."""
    tools = list(dict.fromkeys(str(r.get("tool")) for r in document.get("tool_results") or ()))
    words = _WORD.findall(first_user_text(document["request"]).lower())[:5]
    name = ("session_" + "_".join(_WORD.findall("_".join(tools).lower()))[:30]).strip("_")
    name = f"{name}__{'_'.join(words)}"[:60].rstrip("_") if words else name
    return f"{name}_{key[:8]}" if taken(name) else name


def first_user_text(neutral: dict) -> str:
    """The text of a request's first user message ("" when it has none)."""
    for message in neutral.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""
