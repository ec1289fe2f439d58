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
from ..formats import to_neutral
from ..formats.nulls import neutral_without_nulls, request_without_nulls
from ..pack.fixtures import boundary_of
from ..pack.sources import load_yaml
from ..providers.errors import REDACTED, appears_in, scrub
from . import contracts
from .packfiles import pack_id_for, write_pack_files
from .yamledit import InsertError, append_golden_cases

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


def contract_text(path: str, render: Callable[[], str], new_cases: list, log: Callable[[str], None]) -> str | None:
    """What a tool set's contract file becomes: rendered while it is generated (or missing), else
    the one its owner keeps with the *new_cases* appended. None when it stays as it is."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        text = None
    if text is None or contracts.owned(text):
        rendered = render()
        return None if rendered == text else rendered
    listed = contracts.listed_case_ids(text)
    new = [c for c in new_cases if c.id not in listed and c.normalized is not None]
    if not new:
        return None
    try:
        return append_golden_cases(text, [contracts.entry_fields(c) for c in new], path)
    except InsertError as exc:
        log(f"replayci: {exc}: add the cases of {os.path.dirname(new[0].input_ref)}/ by hand")
        return None


def render_scenario_contract(fixture: dict, case_id: str, input_ref: str, draft: bool) -> str:
    """The scenario contract of one recorded session (the contract writer's scenario renderer)."""
    origin = "replayci import" if isinstance((fixture.get("meta") or {}).get("imported_from"), dict) \
        else contracts.CAPTURED_BY
    name = os.path.dirname(input_ref) or None
    return contracts.render_scenario(fixture, input_ref, case_id=case_id, name=name, writer=origin, draft=draft).text
