"""YAML is read with YAML 1.2 core-schema scalars: only true/false are booleans."""
from __future__ import annotations

import pytest
from builders import call, fixture, request, response

import replayci
from replayci.config import resolve
from replayci.pack.sources import parse_yaml


@pytest.mark.parametrize("text", ["NO", "no", "yes", "Yes", "on", "off", "ON", "y", "n", "Y", "N", "tRuE"])
def test_yaml_1_1_booleans_are_strings(text):
    assert parse_yaml(f"v: {text}\n", "x.yaml").value == {"v": text}


@pytest.mark.parametrize("text,value", [("true", True), ("True", True), ("TRUE", True),
                                        ("false", False), ("False", False), ("FALSE", False)])
def test_only_true_and_false_are_booleans(text, value):
    assert parse_yaml(f"v: {text}\n", "x.yaml").value["v"] is value


@pytest.mark.parametrize("text", ["017", "0777", "1:30", "190:20:30", "1_000", "0b101", "2001-12-14",
                                  "+0x1F", "1.5.2"])
def test_yaml_1_1_numbers_and_dates_are_strings(text):
    assert parse_yaml(f"v: {text}\n", "x.yaml").value == {"v": text}


@pytest.mark.parametrize("text,value", [("17", 17), ("-3", -3), ("0", 0), ("0o17", 15), ("0x1F", 31),
                                        ("1.5", 1.5), (".5", 0.5), ("1e3", 1000.0), ("-2.5E-1", -0.25),
                                        ("~", None), ("null", None), ("NULL", None), ("", None)])
def test_core_schema_numbers_and_null(text, value):
    got = parse_yaml(f"v: {text}\n", "x.yaml").value["v"]
    assert got == value and type(got) is type(value)


def test_quoted_and_tagged_scalars_keep_their_meaning():
    doc = parse_yaml("a: 'true'\nb: !!str 12\nc: !!bool true\n", "x.yaml").value
    assert doc == {"a": "true", "b": "12", "c": True}


def test_equals_no_is_the_string_no(pack):
    pack.contract("weather", """
        tool: get_weather
        expected_tool_calls:
          - name: get_weather
            argument_invariants:
              - {path: $.location, equals: NO}
        golden_cases:
          - id: norway
            input_ref: c.json
    """)
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "NO"}))))
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"


def test_replay_off_in_the_config_is_the_mode_off(tmp_path):
    (tmp_path / ".replayci.yml").write_text("provider: openai\nreplay: off\n")
    assert resolve({}, cwd=str(tmp_path), environ={}).replay == "off"


def test_written_yaml_reads_back_as_written():
    from replayci.capture.packfiles import yaml_text

    doc = {"a": "1e3", "b": "0o17", "c": "no", "d": "017", "e": "1:30", "f": 1e3, "g": 17, "h": "off",
           "i": "0x1F", "j": ".5", "k": True, "l": None, "m": "2025-04-14"}
    assert parse_yaml(yaml_text(doc), "x.yaml").value == doc


# Nesting: 64 levels are read, the 65th is refused on its own line with replayci's message,
# whichever PyYAML release is installed (6.0.4 and later refuse very deep flow collections in
# their scanner, before the builder sees the events; that refusal reads the same).
@pytest.mark.parametrize("shape", ["flow_sequence", "flow_mapping", "block_sequence"])
@pytest.mark.parametrize("depth,ok", [(63, True), (64, False), (2_000, False), (100_000, False)])
def test_nesting_limit_is_replaycis_whatever_the_pyyaml_release(shape, depth, ok):
    from replayci.core.errors import ConfigError

    if shape == "flow_sequence":
        value = "[" * depth + "]" * depth
    elif shape == "flow_mapping":
        value = "{a: " * depth + "1" + "}" * depth
    else:
        value = "\n  " + "- " * depth + "x"
    text = f"name: x\ndeep: {value}\n"
    if ok:
        assert parse_yaml(text, "x.yaml").value["deep"] is not None
        return
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "x.yaml")
    [problem] = info.value.problems
    assert problem.file == "x.yaml"
    assert problem.line == (3 if shape == "block_sequence" else 2)
    assert problem.message == "nesting deeper than 64 levels"
