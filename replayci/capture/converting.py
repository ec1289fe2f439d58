"""One recorded exchange converted for a pack: its neutral request, its answer as the wire held it
and as a run reads it, the texts its fixture will hold (encoded once, checked as the pack would
read them) and its case's checks; the exchanges of a reading grouped into agent sessions.

A `Converted` is frozen: whatever reads it later (the plan, the contract writer) takes the values
worked out here instead of working them out again."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.hashing import h
from ..core.jsonvalue import indented_members, json_type, member_text
from ..engine import recordings
from ..formats import NormalizeError, TranslationError, normalize, read_stream_twice
from ..formats.canonical import stable_response, unnamed_call
from ..pack import fixtures
from . import sessions, writer
from .contracts import Known
from .endpoints import classify
from .importers import Exchange, Passed, Reading
from .inference import case_expectations
from .keys import without_minted_ids
from .proxy.routes import environment_secrets


@dataclass(frozen=True, eq=False)
class Converted:
    """One model exchange, converted: ready to be written."""

    file: str  # the source file, as displayed
    format: str  # its importer
    exchange: Exchange
    api: str
    neutral: dict
    original: dict
    response: Any
    normalized: dict
    key: str
    texts: Mapping[str, str] | None  # original, request, response as the fixture writes them (None: not kept)
    as_run: dict | None  # the answer as a run reads the fixture (Case.normalized's reading)
    expectations: dict | None = None  # its case's own checks, worked out with it (Case.expectations)

    @property
    def stream(self) -> bool:
        return isinstance(self.response, str) or self.exchange.request.get("stream") is True

    @property
    def known(self) -> Known:
        """What its case would work out again: its reading as a run reads it, and its checks."""
        return Known(self.as_run, self.expectations)


@dataclass(frozen=True)
class Group:
    """One agent's exchanges of a reading, and the sessions among them (indices into *items*)."""

    items: list[Converted]
    calls: list[sessions.Call]
    found: list[sessions.Session]


def convert_all(reading: Reading, max_bytes: int) -> tuple[list[Converted], list[Passed], int]:
    """The reading's exchanges replayci reads, converted; those it does not, as passed over
    (unsupported); and how many of the converted came without tool definitions."""
    out, passed, inferred = [], [], 0
    for ex in reading.exchanges:
        got = convert(reading, ex, max_bytes)
        if isinstance(got, Passed):
            passed.append(got)
        else:
            out.append(got)
            inferred += ex.tools_inferred
    return out, passed, inferred


def grouped(items: list[Converted], draft: bool) -> list[Group]:
    """A reading's exchanges by agent, with the sessions among them; each exchange outside a
    session (a case of its own) with its case's checks worked out (not for a draft)."""
    by_group: dict[str, list[Converted]] = {}
    for item in items:
        by_group.setdefault(item.exchange.group, []).append(item)
    out = []
    for group in by_group.values():
        calls = [sessions.Call(i.neutral, i.normalized, i.api) for i in group]
        found = sessions.group(calls)
        members = {m for s in found for m in s.members}
        if not draft:
            group = [item if n in members else dataclasses.replace(item, expectations=_expectations(item))
                     for n, item in enumerate(group)]
        out.append(Group(group, calls, found))
    return out


def _expectations(item: Converted) -> dict:
    """A case's checks: those its source stated (promptfoo's assertions), else inferred."""
    if item.exchange.checks is not None:
        return item.exchange.checks
    return case_expectations(item.as_run, item.neutral)


def convert(reading: Reading, ex: Exchange, max_bytes: int) -> Converted | Passed:
    """*ex* converted, or listed as unsupported with the reason."""
    # The environment's keys, wherever a recording holds them (a trace's span, an eval log), are
    # kept out as the entry's own credentials are.
    ex.secrets = tuple(sorted(set(ex.secrets) | set(environment_secrets()), key=len, reverse=True))
    try:
        return _converted(reading, ex, max_bytes)
    except RecursionError:  # what the pack reads it could not: a body nested too deeply
        return Passed(ex.entry, "unsupported", "not imported: it is nested too deeply for replayci to read")
    except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
        # A recording is data: a shape no reader foresaw (a list where an object belongs) is one
        # exchange passed over with the reason, never the whole import stopped.
        why = writer.scrub_all(f"{type(exc).__name__}: {exc}", tuple(ex.secrets))
        return Passed(ex.entry, "unsupported", f"not imported: a shape replayci does not read ({why})")


def _tools_refusal(neutral: dict) -> str | None:
    """Why the request's tools are not ones a provider accepts or a pack reads, or None: a list
    of objects, a function each with a name, no name offered twice, each schema a JSON Schema."""
    tools = neutral.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        return f"the request's tools are JSON {json_type(tools)}, not a list of tools"
    for n, tool in enumerate(tools):
        if not isinstance(tool, dict) or not tool:
            return f"tools[{n}] is {'an empty object' if tool == {} else 'JSON ' + json_type(tool)}, not a tool"
        fn = tool.get("function")
        if "function" in tool or tool.get("type") == "function":
            name = fn.get("name") if isinstance(fn, dict) else None
            if not isinstance(name, str) or not name:
                return f"tools[{n}] is a function without a name"
    found = fixtures.tool_schema_problems(tools)
    if found:
        where, message = found[0]
        return f"tools{''.join(f'[{k}]' if isinstance(k, int) else f'.{k}' for k in where)}: {message}"
    return None


def _converted(reading: Reading, ex: Exchange, max_bytes: int) -> Converted | Passed:
    if not 100 <= ex.status <= 599:  # what a fixture's status must be, and any HTTP answer's
        return Passed(ex.entry, "unsupported", f"not imported: status {ex.status} is no HTTP status (100 to 599)")
    endpoint = classify("POST", ex.endpoint, ex.request)
    if endpoint.api is None:
        return Passed(ex.entry, "unsupported", endpoint.unsupported or f"{ex.endpoint}: not a model API path")
    secrets = tuple(ex.secrets)
    try:
        neutral = writer.neutral_request(ex.request, endpoint.api, endpoint.model, secrets)
    except (TranslationError, AttributeError, TypeError, KeyError) as exc:  # as the fixture loader reads a request
        return Passed(ex.entry, "unsupported", f"the request does not read as {endpoint.api}: {exc}")
    refused = _tools_refusal(neutral)
    if refused is not None:  # the provider would have refused it, and a pack refuses its fixture
        return Passed(ex.entry, "unsupported", f"not imported: {refused}")
    response = writer.scrub_all(ex.response, secrets)
    try:
        normalized, as_run = _read_answer(response, endpoint.api, ex.status, ex.headers)
        if isinstance(response, str) and writer.spells_secret(normalized, secrets):  # a key split over its events
            response = writer.scrub_stream(response, secrets)
            normalized, as_run = _read_answer(response, endpoint.api, ex.status, ex.headers)
    except NormalizeError as exc:
        return Passed(ex.entry, "unsupported", f"the answer does not read as {endpoint.api}: {exc}")
    if writer.spells_secret(normalized, secrets):  # split over a stream's events past taking apart
        return Passed(ex.entry, "unsupported", f"not imported: {writer.SPELLS_SECRET}")
    odd = unnamed_call(normalized) or (unnamed_call(as_run) if as_run is not None else None)
    if odd is not None:  # what a pack refuses to read (pack.fixtures.normalized)
        return Passed(ex.entry, "unsupported", f"not imported: tool call {odd[0]} of the answer has a name "
                      f"that is no string ({json_type(odd[1])}), which a pack cannot hold")
    original = writer.scrub_all(ex.request, secrets)
    why = _refused(neutral, original, response, ex.status, f"{reading.file}: entry {ex.entry}")
    if why is not None:  # what import writes, replayci runs
        return Passed(ex.entry, "unsupported", f"not imported: replayci could not read it back: {why}")
    # What the fixture will hold, checked as the proxy checks what it records: never a file the
    # pack would refuse to read (a lone surrogate, over the size limit, nested too deeply).
    texts = member_texts({"original": original, "request": neutral, "response": response})
    why = refusal({"request": neutral, "original": original, "response": response}, texts,
                  f"{reading.file}: entry {ex.entry}", max_bytes)
    if why is not None:
        return Passed(ex.entry, "unsupported", why.replace("recording not written", "not imported", 1))
    # The same exchange whatever ids the provider minted: a loop recorded again is imported once.
    key = h({"endpoint": ex.endpoint, "query": ex.query, "request": without_minted_ids(original),
             "response": stable_response(normalized), "status": ex.status})
    return Converted(reading.file, reading.format, ex, endpoint.api, neutral, original, response, normalized, key,
                     texts, as_run)


def _read_answer(response: Any, api: str, status: int, headers: Any) -> tuple[dict, dict | None]:
    """(the answer read whole, and as a run reads it)."""
    if isinstance(response, str):
        return read_stream_twice(response, api, status=status, headers=headers)
    doc = normalize(response, status=status, headers=headers)
    return doc, doc


def _refused(neutral: dict, original: dict, response: Any, status: int, where: str) -> str | None:
    """Why a pack would refuse the fixture of this exchange: its request's shape first (the
    boundary hashes read its messages), then the whole fixture."""
    why = fixtures.refusal({"request": neutral, "original_request": original, "response": response,
                            "status": status}, where)
    return why or fixtures.refusal(writer.fixture_document(neutral, original, response, status, {}), where)


def member_texts(members: dict[str, Any]) -> dict[str, str] | None:
    """Each member's text as the fixture will hold it (encoded once, for the check on reading
    and for the fixture written), or None when one needs `recordings.dumps`'s own handling."""
    try:
        return {key: member_text(value) for key, value in members.items()}
    except (ValueError, TypeError, RecursionError):
        return None


def refusal(document: dict, texts: Mapping[str, str] | None, where: str, max_bytes: int) -> str | None:
    """`recordings.refusal` of *document*, from its members' *texts* when there are some."""
    if texts is None:
        return recordings.refusal(document, where, max_bytes)
    try:
        recordings.checked_text(indented_members(dict(texts)) + "\n", where, max_bytes)
    except recordings.NotWritten as exc:
        return str(exc)
    return None


def fixture_text(item: Converted, rest: dict) -> str | None:
    """The text of *item*'s fixture (`recordings.dumps`'s) from the texts encoded when it was
    read and the fixture's *rest* (boundary, meta, status), or None when it has none kept."""
    if item.texts is None:
        return None
    members = {"original_request": item.texts["original"], "request": item.texts["request"],
               "response": item.texts["response"]}
    try:
        members.update((key, member_text(value)) for key, value in rest.items())
    except (ValueError, TypeError, RecursionError):
        return None
    return indented_members(members) + "\n"
