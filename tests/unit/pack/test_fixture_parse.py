"""A fixture whose request.tools text was seen before is parsed without re-reading that text:
the result, and every error, must be what a full parse gives."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replayci.core.errors import ConfigError
from replayci.core.hashing import canonical_json
from replayci.core.memo import clear_caches
from replayci.pack import sources
from replayci.pack.sources import parse_json, parse_request_json

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1},
                                                         "days": {"type": "integer", "minimum": 1}},
                         "required": ["city"]}}}]
TOOLS_TEXT = json.dumps(TOOLS)


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_caches()


def learn(text):
    """Parse *text* twice: a tools list is kept from its second sighting."""
    parse_request_json(text, "seen-1.json")
    parse_request_json(text, "seen-2.json")
    assert sources._tools_seen


def fixture_text(tools_text=TOOLS_TEXT, content="Weather in Paris?", extra=""):
    return ('{"request": {"model": "m", "messages": [{"role": "user", "content": ' + json.dumps(content)
            + '}], "tools": ' + tools_text + extra + '}, "response": {"content": null, "tool_calls": []}}')


def test_a_known_tools_text_is_shared_and_keyed():
    once, key1 = parse_request_json(fixture_text(), "a.json")
    assert not sources._tools_seen  # one fixture with these tools: nothing kept
    first, key2 = parse_request_json(fixture_text(content="In Oslo?"), "b.json")
    second, key3 = parse_request_json(fixture_text(content="And in Rome?"), "c.json")
    assert key1 == key2 == key3 == canonical_json(TOOLS)
    assert second["request"]["tools"] is first["request"]["tools"]  # parsed once
    assert second == json.loads(fixture_text(content="And in Rome?"))


def test_other_spacing_is_parsed_in_full():
    learn(fixture_text())
    spaced = fixture_text(tools_text=json.dumps(TOOLS, indent=2))
    doc, key = parse_request_json(spaced, "b.json")
    assert key == canonical_json(TOOLS) and doc == json.loads(spaced)


def test_the_known_text_elsewhere_in_the_document_is_not_taken_for_request_tools():
    learn(fixture_text())
    # the same characters as the value of a key ending in "tools", inside a message
    text = ('{"request": {"model": "m", "messages": [{"role": "user", "content": "x", '
            '"say \\"tools": ' + TOOLS_TEXT + '}], "tools": []}, "response": {"content": "hi", "tool_calls": []}}')
    doc, key = parse_request_json(text, "b.json")
    assert doc == json.loads(text)
    assert doc["request"]["tools"] == [] and key == "[]"


@pytest.mark.parametrize("bad, message", [
    (', "temperature": NaN', "NaN"),
    (', "model": "again"', "duplicate key"),
    (', "tools": []', "duplicate key"),
    (', "x": "\\ud800"', "surrogate"),
    (', "x": 1e999', "1e999"),
])
def test_errors_around_a_known_tools_text_are_those_of_a_full_parse(bad, message):
    learn(fixture_text())
    text = fixture_text(extra=bad)
    with pytest.raises(ConfigError) as reused:
        parse_request_json(text, "b.json")
    with pytest.raises(ConfigError) as full:
        parse_json(text, "b.json")
    assert str(reused.value) == str(full.value)
    assert message.lower() in str(full.value).lower()


def test_a_tools_text_that_only_starts_the_same_is_not_reused():
    learn(fixture_text(tools_text="[1, 2]"))
    assert "[1, 2]" in sources._tools_seen
    text = fixture_text(tools_text="[1, 2, 3]")
    doc, key = parse_request_json(text, "b.json")
    assert doc["request"]["tools"] == [1, 2, 3] and key == "[1,2,3]"


def test_types_that_compare_equal_in_python_keep_their_own_key():
    tools = [{"default": True, "minimum": 1}, {}]
    learn(fixture_text(tools_text=json.dumps(tools)))
    other = json.dumps([{"default": 1, "minimum": 1.0}, {}])
    doc, key = parse_request_json(fixture_text(tools_text=other), "b.json")
    assert key == '[{"default":1,"minimum":1.0},{}]'
    assert doc["request"]["tools"][0]["default"] is not True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12)


@pytest.mark.slow  # hundreds of random tool lists: a soak of the reuse
@settings(max_examples=300, derandomize=True, deadline=None)
@given(tools=st.lists(json_values, min_size=2, max_size=4), content=st.text(max_size=20),
       other=json_values, tools2=st.lists(json_values, max_size=4))
def test_reuse_gives_what_a_full_parse_gives(tools, content, other, tools2):
    clear_caches()
    docs = []
    for t in (tools, tools2, tools, tools):
        text = fixture_text(tools_text=json.dumps(t), content=content,
                            extra=', "other": ' + json.dumps(other))
        doc, key = parse_request_json(text, "f.json")
        assert doc == json.loads(text)
        assert key == canonical_json(t)
        docs.append(doc)
    if "\\u" not in text:  # (a \\u escape sends the text to the full parse)
        assert docs[3]["request"]["tools"] is docs[2]["request"]["tools"]  # kept at the 2nd sighting


def test_many_tools_keys_before_request_tools():
    """Only the first few "tools" keys are tried; past them the full parse answers."""
    learn(fixture_text())
    noise = ", ".join('{"tools": ' + TOOLS_TEXT + '}' for _ in range(2000))
    text = '{"meta": [' + noise + '], ' + fixture_text()[1:]
    doc, key = parse_request_json(text, "b.json")
    assert doc == json.loads(text) and key == canonical_json(TOOLS)
