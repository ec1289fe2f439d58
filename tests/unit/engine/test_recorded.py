"""Outcomes of the recorded provider: recordings, boundaries, allowlist, gates."""
from __future__ import annotations

import datetime
import json

import pytest
from builders import SIMPLE, call, fixture, request, response
from properties import examples

import replayci

GOOD = response(call("get_weather", {"location": "Paris"}))
BAD = response(content="sunny")


def rec(req, resp, *, days_old=0, pinned=True):
    from replayci.core.hashing import boundary_hashes

    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days_old)
    return {"meta": {"schema_version": 1, "pack_id": "demo", "contract": "weather", "case_id": "c",
                     "provider": "openai", "model": "gpt-4o-mini", "recorded_at": when.isoformat(),
                     "replayci_version": "0.1.0", "latency_ms": 10},
            "boundary": {"model": "gpt-4o-mini", **boundary_hashes(req)} if pinned else {},
            "response": resp}


def one(pack, **kw):
    return replayci.run([str(pack.dir)], **kw).cases[0]


def test_recording_wins_over_fixture_response(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), BAD))
    pack.recording("weather", "c", rec(request(), GOOD))
    r = one(pack)
    assert r.status == "pass"
    assert r.details["response_source"] == "recording"
    assert r.details["response_origin"].endswith("recordings/weather/c.json")


def test_fixture_response_when_no_recording(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), GOOD))
    assert one(pack).status == "pass"


def test_recording_not_found(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), None))
    r = one(pack)
    assert (r.status, r.reason) == ("non_reproducible", "recording_not_found")
    assert "recordings/weather/c.json" in r.details["message"]


def test_context_variance_names_the_changed_hash(pack):
    pack.contract("weather", SIMPLE)
    doc = fixture(request("Weather in Paris?"), GOOD)
    doc["request"]["messages"][1]["content"] = "Weather in Rome?"  # edited after pinning
    pack.fixture("c.json", doc)
    r = one(pack)
    assert (r.status, r.reason) == ("non_reproducible", "context_variance")
    assert "message_hash changed" in r.details["message"]
    assert "tool_schema_hash" not in r.details["message"]


def test_context_variance_of_a_recording(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(system="Be brief."), GOOD))
    pack.recording("weather", "c", rec(request(system="Use the tools."), GOOD))
    r = one(pack)
    assert r.reason == "context_variance"
    assert "system_hash changed" in r.details["message"] and "recordings/weather/c.json" in r.details["message"]


def test_placeholder_hashes_are_not_checked(pack):
    pack.contract("weather", SIMPLE)
    doc = fixture(request(), GOOD)
    doc["boundary"] = {"model": "gpt-4o-mini", "tool_schema_hash": "starter_tool_001",
                       "message_hash": "starter_msg_001", "system_hash": "starter_sys_001"}
    pack.fixture("c.json", doc)
    assert one(pack).status == "pass"


def test_skipped_by_provider_modes(pack):
    pack.contract("weather", SIMPLE + "    provider_modes: [openai]\n")
    pack.fixture("c.json", fixture(request(), GOOD))
    r = one(pack)
    assert r.status == "skipped" and "openai" in r.reason


def test_stale_recording_warns_or_fails_under_strict(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), None))
    pack.recording("weather", "c", rec(request(), GOOD, days_old=30))
    result = replayci.run([str(pack.dir)])
    assert result.cases[0].status == "pass"
    assert any("30 days old" in w for w in result.warnings)
    r = one(pack, strict_fixtures=True)
    assert (r.status, r.reason) == ("non_reproducible", "stale_recording")


def test_allowlist_applies_and_expired_entry_warns(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), None))
    entry = {"contract_path": "contracts/weather.yaml", "case_id": "c", "reason_code": "recording_not_found",
             "owner": "team-a", "expiry_date": "2099-01-01", "rationale": "live lane only"}
    pack.allowlist([entry])
    result = replayci.run([str(pack.dir)])
    assert result.cases[0].allowlisted and result.ok
    pack.allowlist([{**entry, "expiry_date": "2020-01-01"}])
    result = replayci.run([str(pack.dir)])
    assert not result.cases[0].allowlisted and not result.ok
    assert any("expired on 2020-01-01" in w for w in result.warnings)
    pack.allowlist([{**entry, "reason_code": "context_variance"}])
    assert not replayci.run([str(pack.dir)]).cases[0].allowlisted


def test_gates_default_and_relaxed(pack):
    pack.contract("weather", """
tool: get_weather
golden_cases:
  - {id: a, input_ref: a.json}
  - {id: b, input_ref: b.json}
  - {id: c, input_ref: c.json}
  - {id: d, input_ref: d.json}
""")
    for name in "abc":
        pack.fixture(f"{name}.json", fixture(request(), GOOD))
    pack.fixture("d.json", fixture(request(), BAD))
    result = replayci.run([str(pack.dir)])
    assert result.summary["pass_rate"] == 0.75 and not result.ok
    assert result.summary["gates"]["pass_rate"] == {"threshold": 1.0, "actual": 0.75, "passed": False}
    (pack.dir / "pack.yaml").write_text("pack_id: demo\ngates: {pass_rate: 0.7}\n")
    assert replayci.run([str(pack.dir)]).ok
    (pack.root / ".replayci.yml").write_text("gates: {pass_rate: 0.8}\n")
    assert not replayci.run([str(pack.dir)]).ok  # .replayci.yml wins over pack.yaml


def test_draft_contracts_never_fail_the_run(pack):
    pack.contract("weather", "status: observed\n" + SIMPLE)
    pack.fixture("c.json", fixture(request(), BAD))
    result = replayci.run([str(pack.dir)])
    assert result.cases[0].status == "fail" and result.cases[0].draft
    assert result.ok


def test_filter_and_category(pack):
    pack.contract("weather", """
tool: get_weather
golden_cases:
  - {id: alpha, input_ref: a.json, category: happy_path}
  - {id: beta, input_ref: a.json, category: edge_case}
""")
    pack.fixture("a.json", fixture(request(), GOOD))
    assert [c.case for c in replayci.run([str(pack.dir)], filters=["weather/b*"]).cases] == ["beta"]
    assert [c.case for c in replayci.run([str(pack.dir)], filters=["demo/weather/a*"]).cases] == ["alpha"]
    assert [c.case for c in replayci.run([str(pack.dir)], categories=["happy_path"]).cases] == ["alpha"]
    summary = replayci.run([str(pack.dir)]).summary
    assert summary["by_category"]["happy_path"]["pass_rate"] == 1.0


def test_regex_timeout_is_an_error_not_a_verdict(pack, monkeypatch):
    import replayci.checks.operators as mod

    monkeypatch.setattr(mod, "REGEX_TIMEOUT_S", 0.05)
    pack.contract("weather", """
tool: get_weather
assertions:
  output_invariants:
    - path: "$.tool_calls[0].arguments.location"
      regex: "^(a|aa)+$"
golden_cases:
  - {id: c, input_ref: c.json}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "a" * 60 + "b"}))))
    r = one(pack)
    assert r.status == "error" and "longer than" in r.reason


def test_large_runs_on_two_processes_match_a_sequential_run(pack):
    body = "tool: get_weather\ngolden_cases:\n" + "".join(
        f"  - {{id: c{i:03d}, input_ref: {('ok', 'bad', 'none')[i % 3]}.json}}\n" for i in range(60))
    pack.contract("weather", body)
    pack.fixture("ok.json", fixture(request(), GOOD))
    pack.fixture("bad.json", fixture(request(), BAD))
    pack.fixture("none.json", fixture(request(), None))
    # The test process may hold threads other tests left (servers, exporters), and a process
    # with threads never splits a run: the comparison runs in a fresh one, where it does.
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve()
    paths = [str(here.parent), str(here.parents[2] / "support")]
    code = (f"import sys; sys.path[:0] = {paths!r}; import test_recorded; "
            f"test_recorded.two_processes_and_one({str(pack.dir)!r})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(here.parents[3])})
    assert done.returncode == 0, done.stdout + done.stderr


def two_processes_and_one(pack_dir: str) -> None:
    """The pack at *pack_dir* run in two processes and in one: the same cases and summary."""
    from replayci.engine import parallel

    assert parallel.fork_safe()  # (else this run would not fork and the test would prove nothing)
    loaded = replayci.load_pack(pack_dir)
    forked = replayci.run([loaded], processes=2)
    sequential = replayci.run([loaded], processes=1)
    strip = lambda r: [(c.case, c.status, c.reason, c.fingerprint, c.failures) for c in r.cases]  # noqa: E731
    assert strip(forked) == strip(sequential) and len(forked.cases) == 60
    assert forked.summary == sequential.summary


@examples(500)
def test_fast_schema_check_agrees_with_jsonschema(examples):
    import jsonschema
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from replayci.checks.schemas import CompiledSchema

    schema = {"type": "object", "properties": {
        "city": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[A-Z]"},
        "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "x": {"type": ["number", "null"]},
        "tags": {"type": "array", "items": {"enum": ["a", "b", 1]}, "uniqueItems": True, "maxItems": 3},
        "unit": {"const": "c"}},
        "required": ["city"], "additionalProperties": {"type": "boolean"}}
    compiled = CompiledSchema(schema)
    assert compiled.fast is not None
    reference = jsonschema.Draft202012Validator(schema)
    scalars = st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-3, 12, allow_nan=False) | \
        st.sampled_from(["", "A", "Ab", "Abcdef", "ab", "c", "a", "b"])
    values = st.recursive(scalars, lambda c: st.lists(c, max_size=4), max_leaves=6)
    docs = st.dictionaries(st.sampled_from(["city", "n", "x", "tags", "unit", "other"]), values, max_size=6)

    @settings(max_examples=examples, deadline=None)
    @given(docs)
    def agree(doc):
        assert compiled.is_valid(doc) == reference.is_valid(doc)

    agree()


# As pydantic writes a model's schema: optional fields as anyOf with null, nested models under
# $defs by reference; and the other combinators.
COMBINED = {
    "type": "object", "$defs": {
        "Author": {"type": "object", "properties": {"first": {"type": "string", "minLength": 1}},
                   "required": ["first"], "additionalProperties": False},
        "Tag": {"enum": ["a", "b"]}},
    "properties": {
        "title": {"type": "string"},
        "author": {"$ref": "#/$defs/Author"},
        "country": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
        "n": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2}]},
        "both": {"allOf": [{"type": "string"}, {"minLength": 2}, {"$ref": "#/properties/title"}]},
        "self": {"$ref": "#/properties/country", "type": "string"}},
    "required": ["title", "author"]}


@examples(800)
def test_combined_schemas_are_checked_without_jsonschema_as_it_checks_them(examples):
    import subprocess
    import sys

    import jsonschema
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from replayci.checks.schemas import CompiledSchema

    compiled = CompiledSchema(COMBINED)
    assert compiled.fast is not None and compiled.problem() is None
    reference = jsonschema.Draft202012Validator(COMBINED)
    scalars = st.none() | st.booleans() | st.integers(-1, 4) | st.sampled_from([1.5, 2.5, 2.0]) | \
        st.sampled_from(["", "a", "b", "ab", "c"])
    authors = st.dictionaries(st.sampled_from(["first", "last"]), scalars, max_size=2)
    values = scalars | authors | st.lists(scalars, max_size=3)
    fields = st.dictionaries(st.sampled_from(["title", "author", "country", "tags", "n", "both", "self"]),
                             values, max_size=4)
    # Mostly a valid title and author with other fields drawn, so each field's own check decides.
    docs = st.tuples(st.booleans(), fields).map(
        lambda pair: ({"title": "t", "author": {"first": "a"}} if pair[0] else {}) | pair[1])

    @settings(max_examples=examples, deadline=None, derandomize=True)
    @given(docs)
    def agree(doc):
        assert compiled.is_valid(doc) == reference.is_valid(doc), doc

    agree()
    # A run whose tool schemas are of this kind never loads jsonschema to check them.
    code = ("import json, sys; from replayci.checks.schemas import compile_schema; "
            f"c = compile_schema(json.loads({json.dumps(json.dumps(COMBINED))}), check=True); "
            "print(c.is_valid({'title': 'x', 'author': {'first': 'y'}}), 'jsonschema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("schema", [
    {"$ref": "#/$defs/missing"}, {"$ref": "https://example.com/s.json"}, {"$ref": "#anchor", "$defs": {}},
    {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},  # a loop that never reaches the value
    {"properties": {"child": {"$ref": "#"}}},  # recursive: left to jsonschema
    {"$id": "https://example.com/root", "$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"},
    {"anyOf": []}, {"oneOf": {"type": "string"}},
    {"$defs": {f"a{i}": {"anyOf": [{"$ref": f"#/$defs/a{i + 1}"}] * 2} for i in range(40)}, "$ref": "#/$defs/a0"},
])
def test_what_is_not_plain_among_combined_schemas_goes_to_jsonschema(schema):
    from replayci.checks.schemas import CompiledSchema, plain_schema

    assert not plain_schema(schema) and CompiledSchema(schema).fast is None
    assert not plain_schema({"allOf": [{"type": "strung"}]})  # a subschema that is no schema


def _plain_schema_strategies():
    """(scalars, values, schemas): random schemas of the plain subset and values to try."""
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers(-3, 4) | st.sampled_from([0.5, 2.0, -1.5]) | \
        st.sampled_from(["", "a", "ab", "B", "abc d", "x"])
    values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]), c, max_size=3), max_leaves=8)
    names = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])
    count = st.integers(0, 3)

    def keywords(sub):
        return st.fixed_dictionaries({}, optional={
            "type": names | st.lists(names, min_size=1, max_size=3, unique=True),
            "enum": st.lists(scalars, min_size=1, max_size=3), "const": scalars,
            "minimum": st.integers(-2, 2), "maximum": st.integers(-2, 3) | st.just(2.5),
            "exclusiveMinimum": st.integers(-2, 2), "exclusiveMaximum": st.integers(0, 3),
            "minLength": count, "maxLength": count, "pattern": st.sampled_from(["^a", "b", "[0-9]"]),
            "items": sub, "minItems": count, "maxItems": count, "uniqueItems": st.booleans(),
            "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), sub, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3, unique=True),
            "additionalProperties": sub, "description": st.just("d")})

    return scalars, values, st.recursive(st.booleans() | keywords(st.just({})), keywords, max_leaves=6)


@pytest.mark.slow  # thousands of random schemas: a soak of the generated checks
def test_generated_schema_checks_agree_with_jsonschema_on_random_schemas():
    import jsonschema
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from replayci.checks.schemas import CompiledSchema

    scalars, values, schemas = _plain_schema_strategies()

    def constants(schema):
        """The schema's own numbers, strings and enum members, and their neighbours."""
        if isinstance(schema, dict):
            for key, v in schema.items():
                if key in ("properties", "items", "additionalProperties"):
                    for sub in (v.values() if key == "properties" else [v]):
                        yield from constants(sub)
                elif isinstance(v, list):
                    yield from v
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    yield from (v, v - 1, v + 1, v - 0.5, "x" * max(0, int(v)), [0] * max(0, int(v)))
                else:
                    yield v

    def near(schema):
        yield from ({}, [], {"z": 1}, {"a": "a", "b": [1, 1], "c": None}, {"a": {"z": []}})
        for c in constants(schema):
            yield from (c, [c], [c, c], {"a": c}, {"a": c, "b": c, "c": [c]}, {"b": {"a": c}}, [{"a": c}])

    @settings(max_examples=600, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(schemas, st.lists(values, min_size=1, max_size=6))
    def agree(schema, instances):
        compiled = CompiledSchema(schema)
        assert compiled.fast is not None  # all of these are in the plain subset
        reference = jsonschema.Draft202012Validator(schema)
        for value in [*instances, *near(schema)]:
            assert compiled.is_valid(value) == reference.is_valid(value), (schema, value)

    agree()


@pytest.mark.slow  # thousands of random schemas: a soak of the generated checks
def test_generated_checks_of_combined_schemas_agree_with_jsonschema():
    import jsonschema
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from replayci.checks.schemas import CompiledSchema, plain_schema

    _, values, plain = _plain_schema_strategies()
    refs = st.sampled_from(["#/$defs/a", "#/$defs/b"]).map(lambda ref: {"$ref": ref})

    def combined(sub):
        return st.one_of(
            st.fixed_dictionaries({}, optional={"anyOf": st.lists(sub, min_size=1, max_size=3),
                                                "oneOf": st.lists(sub, min_size=1, max_size=3),
                                                "allOf": st.lists(sub, min_size=1, max_size=2),
                                                "properties": st.dictionaries(st.sampled_from(["a", "b"]), sub,
                                                                              max_size=2)}),
            sub)

    schemas = st.tuples(st.recursive(plain | refs, combined, max_leaves=6), plain, plain).map(
        lambda t: ({"$defs": {"a": t[1], "b": t[2]}} | t[0]) if isinstance(t[0], dict) else t[0])

    @settings(max_examples=600, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(schemas, st.lists(values, min_size=1, max_size=6))
    def agree(schema, instances):
        compiled = CompiledSchema(schema)
        assert plain_schema(schema) and compiled.fast is not None, schema
        reference = jsonschema.Draft202012Validator(schema)
        for value in instances:
            assert compiled.is_valid(value) == reference.is_valid(value), (schema, value)

    agree()


@pytest.mark.slow  # thousands of random schemas and documents
def test_failures_are_explained_as_jsonschema_does_without_loading_it():
    """The plain subset's failures: the same errors, order and wording as jsonschema's."""
    import importlib.metadata

    import jsonschema
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from replayci.checks.schemas import CompiledSchema, compile_schema, explain, first_errors

    # The wording and order matched are jsonschema 4.26's; other versions are held to the same
    # errors (paths, keywords, instances) in any order.
    same_wording = importlib.metadata.version("jsonschema").startswith("4.26.")
    _, values, schemas = _plain_schema_strategies()

    def shown(errors):
        return [(list(e.absolute_path), list(e.absolute_schema_path), e.validator, repr(e.instance))
                + ((e.message,) if same_wording else ()) for e in errors]

    def extra_schemas(schema):
        """additionalProperties with a schema somewhere (jsonschema's order there varies)."""
        if isinstance(schema, dict):
            return isinstance(schema.get("additionalProperties"), dict) or any(
                extra_schemas(v) for k, v in schema.items() if k in ("items", "additionalProperties")) \
                or any(extra_schemas(v) for v in (schema.get("properties") or {}).values())
        return False

    @settings(max_examples=1500, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(schemas, st.lists(values, min_size=1, max_size=4))
    def agree(schema, instances):
        reference = jsonschema.Draft202012Validator(schema)
        for value in instances:
            ours, theirs = explain(schema, value), first_errors(reference, value)
            assert ours is not None
            if extra_schemas(schema) or not same_wording:  # (other versions may order otherwise)
                assert sorted(shown(ours), key=repr) == sorted(shown(theirs), key=repr), (schema, value)
            else:
                assert shown(ours) == shown(theirs), (schema, value)
            assert shown(CompiledSchema(schema).errors(value)) == shown(ours)
            # matches_schema reports the first error in the schema's own order
            first = compile_schema(schema).first_error(value)
            reference_first = next(iter(reference.iter_errors(value)), None)
            if extra_schemas(schema) and len(ours) > 1:
                assert shown([first]) in [shown([e]) for e in theirs]
            else:
                assert shown([first] if first else []) == shown([reference_first] if reference_first else [])

    agree()


def _many(pack, n_contracts=5, n_cases=8):
    for c in range(n_contracts):
        body = "tool: get_weather\ngolden_cases:\n" + "".join(
            f"  - {{id: c{i:02d}, input_ref: {('ok', 'bad', 'none')[(i + c) % 3]}.json, "
            f"category: {('happy_path', 'edge_case')[i % 2]}}}\n" for i in range(n_cases))
        pack.contract(f"k{c}", body)
    pack.fixture("ok.json", fixture(request(), GOOD))
    pack.fixture("bad.json", fixture(request(), BAD))
    pack.fixture("none.json", fixture(request(), None))


def test_split_runs_match_a_single_process_run(pack):
    from replayci.api import run_settings
    from replayci.config import resolve

    _many(pack)
    pack.allowlist([{"contract_path": "contracts/k1.yaml", "reason_code": "recording_not_found",
                     "owner": "t", "expiry_date": "2099-01-01", "rationale": "live only"}])
    _, single = run_settings(resolve({"processes": 1}))
    _, split = run_settings(resolve({"processes": 2}))
    strip = lambda r: [(c.pack, c.contract, c.case, c.status, c.reason, c.fingerprint, c.allowlisted,  # noqa: E731
                        c.failures, c.order) for c in r.cases]
    assert strip(split) == strip(single) and len(split.cases) == 40
    assert split.summary == single.summary and split.warnings == single.warnings
    as_json = lambda r: [{k: v for k, v in c.to_dict().items() if k != "duration_ms"} for c in r.cases]  # noqa: E731
    assert as_json(split) == as_json(single)
    _, filtered = run_settings(resolve({"filters": ("k3/*",), "processes": 2}))
    assert {c.contract for c in filtered.cases} == {"k3"}


def test_split_runs_of_several_packs_match_a_single_process_run(project):
    """Units of work span packs; warnings (stale recordings, an allowlist entry that matches
    nothing) come in the order one process gives, whichever process ran which unit."""
    from builders import PackBuilder

    from replayci.api import run_settings
    from replayci.config import resolve

    packs = [PackBuilder(project, name) for name in ("alpha", "beta", "gamma")]
    for n, pack in enumerate(packs):
        _many(pack, n_contracts=4 + 3 * n, n_cases=5)
        for c in range(0, 4 + 3 * n, 2):
            pack.recording(f"k{c}", "c01", rec(request(), GOOD, days_old=400))
    packs[1].allowlist([{"contract_path": "contracts/k99.yaml", "reason_code": "recording_not_found",
                         "owner": "t", "expiry_date": "2099-01-01", "rationale": "gone"}])
    (project / ".replayci.yml").write_text("provider: recorded\npacks: [packs/*]\n", "utf-8")
    _, single = run_settings(resolve({"processes": 1}))
    _, split = run_settings(resolve({"processes": 2}))
    assert [c.to_dict() | {"duration_ms": 0} for c in split.cases] == \
        [c.to_dict() | {"duration_ms": 0} for c in single.cases]
    assert len(split.cases) == 5 * (4 + 7 + 10) and split.summary == single.summary
    assert split.warnings == single.warnings
    assert len([w for w in split.warnings if "days old" in w]) == 2 + 4 + 5
    assert "k99.yaml matches no contract" in " ".join(split.warnings)


def test_the_library_and_the_cli_split_a_large_project_alike(pack):

    _many(pack)
    by_api = replayci.run([str(pack.dir)], processes=2)
    by_cli = replayci.run(processes=2)
    assert [(c.contract, c.case, c.status, c.fingerprint) for c in by_api.cases] == \
        [(c.contract, c.case, c.status, c.fingerprint) for c in by_cli.cases]


def test_split_runs_report_every_problem(pack):
    import pytest

    from replayci.api import run_settings
    from replayci.config import resolve
    from replayci.core.errors import ConfigError

    _many(pack)
    (pack.dir / "contracts" / "k0.yaml").write_text("tool: get_weather\nbogus: 1\ngolden_cases: []\n")
    (pack.dir / "contracts" / "k1.yaml").write_text("tool: get_weather\nbogus2: 1\ngolden_cases: []\n")
    with pytest.raises(ConfigError) as err:
        run_settings(resolve({"processes": 2}))
    text = str(err.value)
    assert "k0.yaml:2" in text and "k1.yaml:2" in text


def test_a_failed_child_is_made_up_for_in_the_parent(pack, monkeypatch):
    import os
    import pickle

    from replayci.api import run_settings
    from replayci.config import resolve

    _many(pack)
    _, normal = run_settings(resolve({"processes": 2}))
    parent = os.getpid()
    dumps = pickle.dumps

    def dies_in_the_child(*a, **kw):  # the child cannot send its results back
        if os.getpid() != parent:
            raise MemoryError("out of memory")
        return dumps(*a, **kw)

    monkeypatch.setattr(pickle, "dumps", dies_in_the_child)
    _, recovered = run_settings(resolve({"processes": 2}))
    assert [(c.contract, c.case, c.status, c.fingerprint) for c in recovered.cases] == \
        [(c.contract, c.case, c.status, c.fingerprint) for c in normal.cases]
    forked = replayci.run([replayci.load_pack(pack.dir)], processes=2)
    assert [(c.contract, c.case, c.status) for c in forked.cases] == \
        [(c.contract, c.case, c.status) for c in normal.cases]


def test_no_fork_while_other_threads_run(pack):
    import threading

    from replayci.engine import parallel

    assert parallel.fork_safe()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not parallel.fork_safe()
    finally:
        release.set()
        other.join()


# --------------------------------------------------------------- why a negative case fails

NEGATIVE = """
tool: get_weather
golden_cases:
  - id: c
    input_ref: negative/c.json
    expect_ok: false
"""
UNDECLARED = response(call("get_wether", {"location": "Paris"}))


def negative(pack, fixture_response, extra: str = "") -> None:
    pack.contract("weather", NEGATIVE + "".join(f"    {line}\n" for line in extra.splitlines()))
    pack.fixture("negative/c.json", fixture(request(), fixture_response))


def test_expected_failure_names_the_check_that_must_fire(pack):
    negative(pack, UNDECLARED, "expected_failure: {check: undeclared_tool}")
    assert one(pack).status == "pass"
    negative(pack, UNDECLARED, "expected_failure: [{check: wrong_tool}, {path: '$.tool_calls[0].name'}]")
    assert one(pack).status == "pass"


def test_a_negative_case_failing_for_another_reason_fails_naming_what_fired(pack):
    negative(pack, UNDECLARED, "expected_failure: {schema_path: properties/unit/enum}")
    r = one(pack)
    assert (r.status, r.classification) == ("fail", "wrong_tool")
    assert r.reason.startswith("failed for another reason: wrong_tool (")
    assert "undeclared_tool" in r.reason and "expected schema_path properties/unit/enum" in r.reason


def test_expected_fingerprint_pins_the_exact_failure(pack):
    negative(pack, UNDECLARED)
    fp = one(pack).fingerprint
    negative(pack, UNDECLARED, f"expected_fingerprint: '{fp}'")
    assert one(pack).status == "pass"
    negative(pack, UNDECLARED, "expected_fingerprint: 'deadbeef'")
    r = one(pack)
    assert r.status == "fail" and f"failed for another reason: fingerprint {fp}" in r.reason
    assert "expected deadbeef" in r.reason


def test_an_undetected_negative_shows_what_slipped_through(pack, project):
    from click.testing import CliRunner

    from replayci.cli import cli

    negative(pack, GOOD)
    r = one(pack)
    assert r.status == "fail"
    assert r.reason == 'negative case was not detected; slipped through: get_weather({"location": "Paris"})'
    res = CliRunner().invoke(cli, ["--no-color", "--report-json", "r.json", "--junit", "r.xml"])
    assert 'slipped through: get_weather({"location": "Paris"})' in res.stdout
    report = json.loads((project / "r.json").read_text())
    assert report["cases"][0]["reason"] == r.reason
    assert "slipped through: get_weather(" in (project / "r.xml").read_text()
    from replayci.engine.cases import slipped_through
    assert slipped_through(BAD) == 'text "sunny"'  # a response without tool calls: its text


def test_expected_failure_is_checked_at_load(pack):
    import pytest

    from replayci.core.errors import ConfigError

    negative(pack, UNDECLARED, "expected_failure: {check: undeclared}")
    with pytest.raises(ConfigError, match="a check kind"):
        one(pack)
    pack.contract("weather", NEGATIVE.replace("expect_ok: false", "expected_failure: {check: wrong_tool}"))
    with pytest.raises(ConfigError, match="expected_failure is for expect_ok: false cases"):
        one(pack)
