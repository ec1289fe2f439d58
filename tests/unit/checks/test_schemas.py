"""Published JSON Schemas: generated from the loader's tables, shipped, and true of packs/."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import warmed
import yaml
from click.testing import CliRunner
from properties import examples

from replayci.checks.operators import OPERATORS
from replayci.cli import cli
from replayci.pack import schema_gen
from replayci.pack.vocabulary import CLASSIFICATION_ORDER

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", schema_gen.NAMES)
def test_shipped_schema_is_generated(name):
    shipped = (REPO / "replayci" / "pack" / "schemas" / f"{name}.schema.json").read_text()
    assert shipped == schema_gen.render(name), "run: python -m replayci.pack.schema_gen"
    jsonschema.Draft202012Validator.check_schema(schema_gen.build(name))


def test_schema_command_prints_it():
    res = CliRunner().invoke(cli, ["schema", "contract"])
    assert res.exit_code == 0 and res.output == schema_gen.render("contract")


def test_schema_derives_from_the_registries():
    contract = schema_gen.build("contract")
    inv = contract["$defs"]["invariant"]["oneOf"][0]["properties"]  # [1:]: any_of, all_of, not
    assert set(OPERATORS) <= set(inv)
    case = contract["properties"]["golden_cases"]["items"]["properties"]
    assert set(case["expected_error"]["enum"]) == set(CLASSIFICATION_ORDER)


def test_schema_with_no_name_lists_the_names():
    res = CliRunner().invoke(cli, ["schema"])
    assert res.exit_code == 0
    assert [line.split()[0] for line in res.output.splitlines()] == list(schema_gen.NAMES)
    assert {"allowlist", "fixture"} <= set(schema_gen.NAMES)


@pytest.mark.parametrize("name", ["allowlist", "fixture"])
def test_allowlist_and_fixture_schemas_are_printed(name):
    res = CliRunner().invoke(cli, ["schema", name])
    assert res.exit_code == 0 and res.output == schema_gen.render(name)


def test_allowlist_schema_follows_the_loader():
    validator = jsonschema.Draft202012Validator(schema_gen.build("allowlist"))
    entry = {"contract_path": "contracts/a.yaml", "reason_code": "recording_not_found", "owner": "me",
             "expiry_date": "2099-01-01", "rationale": "why"}
    assert validator.is_valid([entry, {**entry, "case_id": "c"}])
    assert not validator.is_valid([{**entry, "reason_code": "flaky"}])
    assert not validator.is_valid([{**entry, "expiry_date": "soon"}])
    assert not validator.is_valid([{k: v for k, v in entry.items() if k != "owner"}])


def test_every_example_json_file_validates():
    allowlist, fixture = schema_gen.build("allowlist"), schema_gen.build("fixture")
    for path in sorted((REPO / "packs").rglob("*.json")):
        if "tools" in path.relative_to(REPO / "packs").parts:
            continue  # a tools list that fixtures name with {"$ref": ...}, not a fixture
        jsonschema.validate(json.loads(path.read_text("utf-8")),
                            allowlist if path.name == "nr-allowlist.json" else fixture)
    assert not jsonschema.Draft202012Validator(fixture).is_valid({"request": {}, "boundary": {"hash": "x"}})


def _files():
    for path in sorted((REPO / "packs").rglob("*.yaml")):
        kind = "pack" if path.name == "pack.yaml" else "contract"
        yield pytest.param(path, kind, id=str(path.relative_to(REPO)))
    yield pytest.param(REPO / ".replayci.yml", "config", id=".replayci.yml")
    yield pytest.param(REPO / "replayci" / "tools" / "templates" / "replayci.yml", "config", id="template config")


@pytest.mark.parametrize("path, kind", list(_files()))
def test_every_example_file_validates(path, kind):
    data = yaml.safe_load(path.read_text("utf-8")) or {}
    jsonschema.validate(data, schema_gen.build(kind))


def test_schema_rejects_what_the_loader_rejects():
    validator = jsonschema.Draft202012Validator(schema_gen.build("contract"))
    bad = {"tool": "x", "golden_cases": [], "assertions": {"output_invariants": [{"path": "$.a", "equal": 1}]}}
    assert not validator.is_valid(bad)
    assert validator.is_valid({"tool": "x", "golden_cases": [{"id": "a", "input_ref": "a.json"}]})


def test_pre_commit_hooks_run_real_commands():
    import re
    import shlex
    import subprocess

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"replayci-validate", "replayci"}
    for hook in hooks:
        assert re.search(hook["files"], "packs/starter/contracts/get_weather.yaml")
        assert not re.search(hook["files"], "src/app.py")
        argv = shlex.split(hook["entry"])
        assert argv[0] == "replayci"
        proc = subprocess.run([*warmed.cli(), *argv[1:]], cwd=REPO,
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_key_table_checks_agree_with_their_explanations():
    """spec.check_value's fast predicate and the explanation it falls back to agree (a wrong
    "fits" would let bad input through; a wrong "does not fit" would only cost time)."""
    from replayci.pack import vocabulary as spec

    fragments = []

    def collect(value):
        if isinstance(value, dict):
            if "x-expected" in value and value not in fragments:
                fragments.append(value)
            for v in value.values():
                collect(v)

    for name in dir(spec):
        if name.isupper():
            collect(getattr(spec, name))
    assert len(fragments) > 20
    probes = [None, True, False, 0, 1, 2, -1, 0.5, 1.5, "", "a", "x/y", "..", ".", "a b", [], {},
              ["a"], [1], ["openai", "recorded"], {"a": 1}]
    for fragment in fragments:
        own = [fragment.get(k) for k in ("minimum", "maximum") if k in fragment]
        own += list(fragment.get("enum") or ()) + list((fragment.get("items") or {}).get("enum") or ())
        near = [v + d for v in own if isinstance(v, (int, float)) and not isinstance(v, bool)
                for d in (-1, -0.5, 0, 0.5, 1)]
        for value in probes + own + near + [own] + [[v] for v in own]:
            try:
                slow = spec._why_not(fragment, value)
            except TypeError:  # (a comparison the table's type check would have prevented)
                continue
            assert spec._fit(fragment)(value) == (slow is None), (fragment, value)
            assert (spec.check_value(fragment, value) is None) == (slow is None)


@examples(400)
def test_straight_patterns_match_as_regex_does_without_it(examples):
    import regex
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from replayci.checks.schemas import straight_pattern

    straight = [r"^[A-Z]{3}$", r"^[A-Z0-9]{10,22}$", r"^CUS-[0-9]{6}$", r"^[0-2][0-9]:[0-5][0-9]$",
                r"^\d{4}-\d{2}-\d{2}$", r"\A[^a-c]{2}.\Z", r"^[A-Z]{1,5}", "^é{2}x?$"]
    others = [r"^[a-z]+$", r"(a|b)", r"^\w{3}$", r"(?i)^[a-z]{2}$", r"[A-Z]{3}", r"^a{1,5}b{1,5}$",
              r"^(a+)+$", r"^(?=a)a{2}$", r"^a{1001}$", r"^[\s]{2}$", r"^(x){2}$", "^[", 5]
    assert all(straight_pattern(p) is not None for p in straight)
    assert all(straight_pattern(p) is None for p in others if isinstance(p, str))
    alphabet = st.sampled_from(list("ABCZaxyz019:-éCUS\n٣ ") + ["CUS-"])

    @settings(max_examples=examples, deadline=None)
    @given(st.lists(alphabet, max_size=30).map("".join))
    def agree(text):
        for p in straight:
            found, expected = straight_pattern(p).search(text), regex.search(p, text)
            assert (found and found.span()) == (expected and expected.span()), (p, text)

    agree()


def test_a_schema_with_only_straight_patterns_is_checked_without_regex(tmp_path):
    import subprocess
    import sys

    code = ("import sys\nfrom replayci.checks.schemas import CompiledSchema\n"
            "s = CompiledSchema({'type': 'object', 'properties': {'a': {'type': 'string', "
            "'pattern': '^[A-Z]{1,3}$'}}})\n"
            "assert s.is_valid({'a': 'AB'}) and not s.is_valid({'a': 'abcd'})\n"
            "assert 'regex' not in sys.modules\n"
            "s = CompiledSchema({'type': 'string', 'pattern': '^[a-z]+$'})\n"
            "assert s.is_valid('ab') and 'regex' in sys.modules\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
