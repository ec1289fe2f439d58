"""The one writer of captured and imported traffic: a pack's folders, an exchange's fixture (its
original request, neutral request, answer, status, boundary and meta), credentials kept out of
everything written, and a tool set's contract rewritten while it is generated, else appended to."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.files import write_atomic
from ..core.jsonvalue import encoder
from ..core.paths import display_path, inside
from ..engine import recordings
from ..formats import rewrite_stream_data, to_neutral
from ..formats.nulls import neutral_without_nulls, request_without_nulls
from ..pack.fixtures import boundary_of
from ..pack.sources import load_yaml
from ..providers.errors import REDACTED, appears_in, scrub, spellings
from . import contracts
from .packfiles import pack_id_for, write_pack_files
from .yamledit import InsertError

# Keys a request sends for its transport, not its content: left out of the neutral request a
# run sends again.
TRANSPORT_KEYS = ("stream", "stream_options")
CASE_PREFIX = {"openai-chat": "chat", "openai-responses": "responses", "anthropic": "messages", "gemini": "gemini",
               "bedrock": "converse", "ollama": "ollama"}
# API keys by their published shapes, wherever they appear (an error body echoing the key sent).
_KEY_SHAPES = re.compile(r"\b(?:sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|"
                         r"gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16})")
_KEY_STARTS = ("sk-", "AIza", "gsk_", "xai-", "AKIA")
_compact = encoder(separators=(",", ":"))


def pack_dirs(pack_dir: str) -> tuple[str, str]:
    """(golden directory, contracts directory) of a pack, as its pack.yaml's `paths` place them."""
    paths: dict = {}
    try:
        doc = load_yaml(os.path.join(pack_dir, "pack.yaml"), "pack.yaml").value  # as the loader reads it
        paths = doc.get("paths") or {} if isinstance(doc, dict) else {}
    except ConfigError:
        pass
    out = []
    for key, default in (("golden_dir", "golden"), ("contracts_dir", "contracts")):
        value = paths.get(key) if isinstance(paths.get(key), str) else default
        folder = os.path.normpath(os.path.join(pack_dir, value))
        if not inside(pack_dir, folder):  # `../x`, an absolute path, or a symlink out of the pack
            where = f"paths.{key} {value!r}" if value != default else f"{value}/, a symlink that"
            raise ConfigError(Problem(display_path(os.path.join(pack_dir, "pack.yaml")), None, None,
                                      f"{where} leaves the pack directory: nothing is written outside "
                                      "the pack"))
        out.append(folder)
    return out[0], out[1]


def ensure_pack(pack_dir: str, model: str | None, name: str, writer: str) -> None:
    """Create the pack's pack.yaml and allowlist when it has none."""
    if not os.path.exists(os.path.join(pack_dir, "pack.yaml")):
        write_pack_files(pack_dir, pack_id_for(pack_dir), name, model, writer)


def scrub_all(value: Any, secrets: tuple[str, ...]) -> Any:
    """*value* with every one of *secrets*, and anything shaped like an API key, replaced."""
    text = _json_text(value)  # one pass of the C encoder says whether any walk is needed at all
    for secret in secrets:
        if text is None or appears_in(text, secret):
            value = scrub(value, secret)
            text = _json_text(value)
    return value if text is not None and not _has_key_shape(text) else _scrub_shapes(value)


def _has_key_shape(text: str) -> bool:
    # Every shape starts with one of these: looking for them is far quicker than the pattern.
    return any(start in text for start in _KEY_STARTS) and _KEY_SHAPES.search(text) is not None


def _json_text(value: Any) -> str | None:
    try:
        return _compact(value)
    except (TypeError, ValueError):
        return None


def _scrub_shapes(value: Any) -> Any:
    if isinstance(value, str):
        return _KEY_SHAPES.sub(REDACTED, value) if any(start in value for start in _KEY_STARTS) else value
    if isinstance(value, list):
        return [_scrub_shapes(v) for v in value]
    if isinstance(value, dict):
        return {_scrub_shapes(k) if isinstance(k, str) else k: _scrub_shapes(v) for k, v in value.items()}
    return value


def scrub_answer(response: Any, secrets: tuple[str, ...], read: Callable[[Any], Any]) -> tuple[Any, Any]:
    """(an answer as written, and as *read* reads it whole): *secrets* and key shapes replaced;
    a stream that read whole still spells one has its events taken apart (`scrub_stream`), and is
    read again. (Only then: most streams spell none, and are not parsed twice.)"""
    response = scrub_all(response, secrets)
    normalized = read(response)
    if isinstance(response, str) and spells_secret(normalized, secrets):
        response = scrub_stream(response, secrets)
        normalized = read(response)
    return response, normalized


def spells_secret(normalized: Any, secrets: tuple[str, ...]) -> bool:
    """Whether an answer read whole (*normalized*) still spells one of *secrets*: it is not written."""
    return normalized is not None and scrub_all(normalized, secrets) is not normalized


# Why such an answer is not written.
SPELLS_SECRET = ("the answer, read whole, spells a credential (split over its events in a way "
                 "replayci cannot take apart, or escaped): it cannot be written without it")


def scrub_stream(text: str, secrets: tuple[str, ...]) -> str:
    """*text*, a stream, with every secret its events spell only together (split over their
    deltas) taken out: the first piece says REDACTED in its place and the others lose their
    part, so the stream read whole says REDACTED where the key was. Framing kept byte for byte;
    *text* itself when it spells none (or is no stream)."""
    forms = tuple(f for s in secrets for f in spellings(s))
    if not forms:
        return text
    leaves: list[tuple[int, tuple, str]] = []  # (event, (its type, where in its data), text)

    def collect(data: Any) -> Any:
        event = collect.events  # type: ignore[attr-defined]
        collect.events += 1  # type: ignore[attr-defined]
        kind = data.get("type") if isinstance(data, dict) else None  # a text's deltas, apart from an argument's
        leaves.extend((event, (kind, path), value) for path, value in _strings(data, ()))
        return data

    collect.events = 0  # type: ignore[attr-defined]
    if rewrite_stream_data(text, collect) is None:
        return text
    edits = _split_edits(leaves, forms)
    if not edits:
        return text

    def change(data: Any) -> Any:
        event = change.events  # type: ignore[attr-defined]
        change.events += 1  # type: ignore[attr-defined]
        return _edited(data, (), edits, event)

    change.events = 0  # type: ignore[attr-defined]
    return rewrite_stream_data(text, change) or text


def _strings(value: Any, path: tuple) -> list[tuple[tuple, str]]:
    """Every string (not key) in an event's data, with its path."""
    if isinstance(value, str):
        return [(path, value)]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [leaf for k, v in items for leaf in _strings(v, (*path, k))]


def _split_edits(leaves: list[tuple[int, tuple, str]], forms: tuple[str, ...]) -> dict[tuple[int, tuple], str]:
    """(event, path) -> its new text, for the pieces of a secret spelled across the texts one
    path holds event after event (a delta's content, a tool call's arguments)."""
    by_path: dict[tuple, list[tuple[int, str]]] = {}
    for event, path, value in leaves:
        by_path.setdefault(path, []).append((event, value))
    edits: dict[tuple[int, tuple], str] = {}
    for path, pieces in by_path.items():
        whole = "".join(v for _, v in pieces)
        spans = _spans(whole, forms)
        if not spans:
            continue
        start = 0
        for event, value in pieces:
            end = start + len(value)
            new = _cut(value, start, spans)
            if new != value:
                edits[(event, path[1])] = new
            start = end
    return edits


def _spans(whole: str, forms: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where *forms* occur in *whole*, overlapping ones merged, in order."""
    found = sorted((m.start(), m.start() + len(form)) for form in forms
                   for m in re.finditer(re.escape(form), whole))
    merged: list[tuple[int, int]] = []
    for a, b in found:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _cut(value: str, offset: int, spans: list[tuple[int, int]]) -> str:
    """*value* (at *offset* in the whole text) without what *spans* cover; REDACTED in the piece
    where a span starts."""
    out, pos, end = [], 0, offset + len(value)
    for a, b in spans:
        if b <= offset or a >= end:
            continue
        out.append(value[pos:max(a - offset, 0)])
        if a >= offset:
            out.append(REDACTED)
        pos = min(b - offset, len(value))
    out.append(value[pos:])
    return "".join(out)


def _edited(data: Any, path: tuple, edits: dict[tuple[int, tuple], str], event: int) -> Any:
    if isinstance(data, str):
        return edits.get((event, path), data)
    if isinstance(data, dict):
        return {k: _edited(v, (*path, k), edits, event) for k, v in data.items()}
    if isinstance(data, list):
        return [_edited(v, (*path, i), edits, event) for i, v in enumerate(data)]
    return data


def neutral_request(body: dict, api: str, model: str | None, secrets: tuple[str, ...]) -> dict:
    """The request a run sends again: *body* in the neutral form, without its transport keys, with
    the model its path named, credentials left out (TranslationError when it does not convert).
    Null where the request or a tool schema holds a list or an object is read as absent (the
    original request keeps it)."""
    _, neutral = to_neutral(request_without_nulls(body), api)
    neutral = neutral_without_nulls({k: v for k, v in neutral.items() if k not in TRANSPORT_KEYS})
    if model and not neutral.get("model"):
        neutral["model"] = model
    return scrub_all(neutral, secrets)


def fixture_document(neutral: dict, original: dict, response: Any, status: int, meta: dict) -> dict:
    """The fixture of one exchange (its parts already free of credentials)."""
    return {"boundary": boundary_of(neutral), "meta": meta,
            "original_request": original, "request": neutral, "response": response, "status": status}


def write_fixture(path: str, doc: dict) -> None:
    """Write a fixture atomically (keys sorted, 2-space indent: clean diffs). Its configured
    `redact` fields are blanked first by `recordings.redact`."""
    write_atomic(path, recordings.dumps(doc))


def contract_files(path: str, render_all: Callable[[list], list[str]], cases: list, new_cases: list,
                   draft: bool, log: Callable[[str], None]) -> dict[str, str | None]:
    """What the files of a tool set's contract become (`contracts.tool_set_files`; None: removed),
    by path: none when the user's file has no golden_cases list to append to (said, with what to
    add by hand)."""
    try:
        return contracts.tool_set_files(path, render_all, cases, new_cases, draft)
    except InsertError as exc:
        log(f"replayci: {exc}: add the cases of {os.path.dirname(new_cases[0].input_ref)}/ by hand")
        return {}


def render_scenario_contract(fixture: dict, case_id: str, input_ref: str, draft: bool) -> str:
    """The scenario contract of one recorded session (the contract writer's scenario renderer)."""
    origin = "replayci import" if isinstance((fixture.get("meta") or {}).get("imported_from"), dict) \
        else contracts.CAPTURED_BY
    name = os.path.dirname(input_ref) or None
    return contracts.render_scenario(fixture, input_ref, case_id=case_id, name=name, writer=origin, draft=draft).text
