"""Golden fixtures and recordings: read, checked for shape, turned into documents."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from . import spec
from .errors import ConfigError, Problem
from .normalize import NormalizeError, normalize
from .sources import DEFAULT_MAX_JSON_BYTES, load_json, locate_json, read_text


@dataclass(frozen=True)
class Fixture:
    display: str
    request: dict
    boundary: dict | None
    response: dict | None  # normalized, or None when the fixture has none
    raw: dict


def _problem_at(path: str, display: str, key: tuple, message: str) -> Problem:
    """A problem located by a slow re-read of the file (only ever on the error path)."""
    try:
        doc = locate_json(read_text(path, display, max_bytes=DEFAULT_MAX_JSON_BYTES), display)
        return doc.problem(key, message)
    except ConfigError:
        return Problem(display, None, None, message)


def check_shape(raw: Any, path: str, display: str, *, recording: bool = False) -> list[Problem]:
    """What is wrong with a fixture's (or recording's) top-level shape."""
    problems = []
    if not isinstance(raw, dict):
        return [Problem(display, 1, 1, "expected a JSON object with request and response")]
    allowed = spec.FIXTURE_KEYS
    for key in raw:
        if key not in allowed:
            problems.append(_problem_at(path, display, (key,), spec.unknown_key_message(key, allowed)))
    for key in ("request", "boundary", "response", "meta"):
        if key in raw and not isinstance(raw[key], dict):
            problems.append(_problem_at(path, display, (key,), f"'{key}' must be an object"))
    request = raw.get("request")
    if isinstance(request, dict):
        for key in ("messages", "tools"):
            if key in request and not isinstance(request[key], list):
                problems.append(_problem_at(path, display, ("request", key), f"'{key}' must be a list"))
    boundary = raw.get("boundary")
    if isinstance(boundary, dict):
        for key, value in boundary.items():
            if key not in ("model", "tool_schema_hash", "message_hash", "system_hash"):
                problems.append(_problem_at(path, display, ("boundary", key), spec.unknown_key_message(
                    key, ("model", "tool_schema_hash", "message_hash", "system_hash"))))
            elif value is not None and not isinstance(value, str):
                problems.append(_problem_at(path, display, ("boundary", key), f"'{key}' must be a string"))
    if recording and "response" not in raw and "trajectory" not in raw:
        problems.append(Problem(display, 1, 1, "a recording needs a 'response'"))
    return problems


def normalized(raw_response: Any, path: str, display: str, key: tuple = ("response",)) -> dict:
    try:
        return normalize(raw_response)
    except NormalizeError as exc:
        raise ConfigError(_problem_at(path, display, key, str(exc))) from None


def load_fixture(path: str, display: str, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Fixture:
    """Read a golden fixture; raises ConfigError with located problems."""
    raw = load_json(path, display, max_bytes=max_bytes)
    problems = check_shape(raw, path, display)
    if problems:
        raise ConfigError(problems)
    response = raw.get("response")
    return Fixture(
        display=display,
        request=raw.get("request") or {},
        boundary=raw.get("boundary"),
        response=normalized(response, path, display) if response is not None else None,
        raw=raw,
    )


@dataclass(frozen=True)
class Recording:
    path: str
    display: str
    meta: dict
    boundary: dict | None
    response: dict | None
    raw: dict


def recording_path(recordings_dir: str, contract: str, case: str) -> str:
    return os.path.join(recordings_dir, contract, f"{case}.json")


def load_recording(path: str, display: str, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Recording:
    raw = load_json(path, display, max_bytes=max_bytes)
    problems = check_shape(raw, path, display, recording=True)
    if problems:
        raise ConfigError(problems)
    response = raw.get("response")
    return Recording(path, display, raw.get("meta") or {}, raw.get("boundary"),
                     normalized(response, path, display) if response is not None else None, raw)
