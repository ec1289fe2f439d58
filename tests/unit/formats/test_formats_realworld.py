"""Recorded provider traffic (shared/data/realworld-dev) reads as its `expected` says."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from replayci.formats import from_neutral, normalize, normalize_stream, to_neutral

# Exchanges whose `expected` contradicts the normalization rules, and why. Each is still checked:
# everything but the named field must match, and that field must read as the rules say.
# Exchanges whose `expected` is judged wrong here (field, the value replayci gives): none.
JUDGED: dict[str, tuple[str, object]] = {}


def _data_dir() -> Path | None:
    env = os.environ.get("REPLAYCI_REALWORLD_DIR")
    if env:
        return Path(env) if Path(env).is_dir() else None
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data" / "realworld-dev"
        if candidate.is_dir():
            return candidate
    return None


DATA = _data_dir()
FILES = sorted(DATA.glob("*/*.json")) if DATA else []


def _id(path: Path | None) -> str:
    return "absent" if path is None else f"{path.parent.name}/{path.name}"


def _read(exchange: dict) -> dict:
    if exchange["streaming"]:
        return normalize_stream(exchange["response"], status=exchange["status"])
    return normalize(exchange["response"], status=exchange["status"])


@pytest.mark.parametrize("path", FILES or [None], ids=_id)
def test_exchange_reads_as_expected(path):
    if path is None:
        pytest.skip("the realworld-dev data set is not here")
    exchange = json.loads(path.read_text(encoding="utf-8"))
    doc = _read(exchange)
    got = {"tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in doc["tool_calls"]],
           "content": doc["content"], "is_error": not doc["success"]}
    expected = dict(exchange["expected"])
    judged = JUDGED.get(_id(path))
    if judged:
        field, value = judged
        assert got[field] == value and expected[field] != value
        expected[field] = value
    assert got == expected


# The request forms an API's recorded requests may be read as (a Messages request with only
# string messages is also a valid chat-completions request, and its neutral form is the same).
REQUEST_FORMS = {"openai-chat": {"openai-chat"}, "openai-responses": {"openai-responses"},
                 "anthropic-messages": {"anthropic", "openai-chat"}, "gemini": {"gemini"},
                 "bedrock-converse": {"bedrock"}, "bedrock-invoke": {"bedrock"},
                 "ollama-chat": {"ollama", "openai-chat"}}


@pytest.mark.parametrize("path", FILES or [None], ids=_id)
def test_exchange_request_converts(path):
    if path is None:
        pytest.skip("the realworld-dev data set is not here")
    exchange = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(exchange.get("request"), dict):
        pytest.skip("no request recorded")
    name, neutral = to_neutral(exchange["request"])
    assert name in REQUEST_FORMS[exchange["api"]]
    assert isinstance(neutral.get("messages"), list) and neutral["messages"]
    # Written back in its own form, the request reads as the same neutral request.
    assert to_neutral(from_neutral(neutral, name), name) == (name, neutral)
