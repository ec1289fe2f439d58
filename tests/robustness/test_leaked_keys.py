"""The API key never leaks, however a provider or an SDK spells it back."""
from __future__ import annotations

import json

import pytest

from replayci.capture.writer import scrub_all
from replayci.engine import recordings
from replayci.providers.errors import REDACTED, redact, scrub

KEY = "sk-test-éß\"/1234"
SPELLINGS = [
    lambda k: k,
    lambda k: json.dumps(k)[1:-1],
    lambda k: json.dumps(k, ensure_ascii=True)[1:-1],
    lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    lambda k: "".join(f"\\u{ord(c):04X}" for c in k),
]


@pytest.mark.parametrize("given", [KEY, KEY + "\n", KEY + "  ", " " + KEY + "\r\n"])
@pytest.mark.parametrize("spell", SPELLINGS)
def test_every_spelling_is_scrubbed(given, spell):
    text = spell(KEY)
    doc = {"message": f"Error code: 401 - headers {{'Authorization': 'Bearer {text}'}}",
           text: [{"echo": text}], "n": 1}
    out = scrub(doc, given)
    dumped = json.dumps(out, ensure_ascii=False)
    assert "1234" not in dumped and REDACTED in dumped
    assert out["n"] == 1
    assert "1234" not in redact(f"x {text} y", given)


@pytest.mark.parametrize("given", [KEY, " " + KEY + "\r\n"])
@pytest.mark.parametrize("spell", SPELLINGS)
def test_the_capture_writer_scrubs_every_spelling_as_scrub_does(given, spell):
    """It looks for the key in the document's JSON first: a spelling is found there escaped."""
    doc = {"message": f"said {spell(KEY)}!", spell(KEY): [{"echo": [spell(KEY), 1.5]}], "n": None}
    assert scrub_all(doc, ("other-key-1", given)) == scrub(doc, given)
    clean = {"message": "nothing to hide", "n": [1]}
    assert scrub_all(clean, (given,)) == clean


def test_recordings_stay_valid_json_after_scrubbing():
    raw = {"body": json.dumps({"key": KEY}), KEY: "v"}
    written = recordings.dumps(scrub(raw, KEY))
    assert "1234" not in written
    assert json.loads(written)["body"] == json.dumps({"key": REDACTED})


def test_short_keys_from_four_characters_are_scrubbed():
    assert scrub({"a": "use abcd now"}, "abcd") == {"a": f"use {REDACTED} now"}
    assert scrub("abc", "abc") == "abc"  # under four characters: ordinary text
    assert scrub("text", None) == "text"


@pytest.mark.parametrize("shape", ["sk-" + "a" * 24, "sk-proj-" + "B1_-" * 6, "AIza" + "x" * 35, "gsk_" + "Q" * 20,
                                   "xai-" + "z9" * 10, "AKIA" + "ABCDEFGH23456789"])
def test_the_capture_writer_blanks_every_key_shape_it_was_not_told(shape):
    doc = {"error": {"message": f"Incorrect API key provided: {shape}."}, "echo": [shape]}
    assert scrub_all(doc, ()) == {"error": {"message": f"Incorrect API key provided: {REDACTED}."},
                                  "echo": [REDACTED]}
