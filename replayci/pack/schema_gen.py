"""JSON Schemas of replayci's files, generated from the tables the loader validates with.

`replayci schema contract` prints one; the package ships them in replayci/schemas/ so editors
can point `# yaml-language-server: $schema=...` at them.
"""
from __future__ import annotations

import copy
import json
from typing import Any

from ..checks.operators import COMPOSITES, OPERATORS
from . import vocabulary as spec

DRAFT = "https://json-schema.org/draft/2020-12/schema"
# name -> (title, the file it describes)
SCHEMAS = {
    "config": ("replayci .replayci.yml", ".replayci.yml"),
    "pack": ("replayci pack.yaml", "a pack's pack.yaml"),
    "contract": ("replayci contract", "a contract file (contracts/*.yaml)"),
    "allowlist": ("replayci nr-allowlist.json", "a pack's nr-allowlist.json"),
    "fixture": ("replayci fixture", "a fixture or recording (golden/*.json, recordings/)"),
}
NAMES = tuple(SCHEMAS)


def _clean(fragment: Any) -> Any:
    if isinstance(fragment, dict):
        out = {k: _clean(v) for k, v in fragment.items() if k != "x-expected"}
        if "x-expected" in fragment:
            out.setdefault("description", fragment["x-expected"])
        if "properties" in out:
            out["additionalProperties"] = False
        return out
    if isinstance(fragment, list):
        return [_clean(v) for v in fragment]
    return fragment


def _object(table: dict, required=()) -> dict:
    out = {"type": "object", "properties": {k: _clean(v) for k, v in table.items()},
           "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


def invariant_schema() -> dict:
    """A plain invariant {path, operators...} or a composite {any_of | all_of | not}."""
    props = {k: _clean(v) for k, v in spec.INVARIANT_BASE_KEYS.items()}
    for name, op in OPERATORS.items():
        props[name] = {**copy.deepcopy(op.json_schema), "description": f"{op.name}: {op.value}"}
    # at least one operator beside the path and its options
    plain = {"type": "object", "properties": props, "required": ["path"],
             "anyOf": [{"required": [name]} for name in OPERATORS], "additionalProperties": False}
    ref = {"$ref": "#/$defs/invariant"}
    composites = [{"type": "object", "required": [kind], "additionalProperties": False,
                   "properties": {kind: ref if kind == "not" else {"type": "array", "items": ref, "minItems": 1},
                                  **{k: _clean(v) for k, v in spec.SCORING_KEYS.items()}}}
                  for kind in COMPOSITES]
    return {"oneOf": [plain, *composites]}


def contract_schema() -> dict:
    schema = _object(spec.CONTRACT_KEYS)
    props = schema["properties"]
    inv = {"$ref": "#/$defs/invariant"}
    invariants = {"type": "array", "items": inv}
    props["assertions"]["properties"] = {k: invariants for k in spec.ASSERTIONS_KEYS}
    # a judge is one of {rubric, min}, {factuality}, {classify}
    props["assertions"]["properties"]["judges"] = {"type": "array", "items": {
        **_object(spec.JUDGE_KEYS), "oneOf": [{"required": [kind]} for kind in ("rubric", "factuality", "classify")]}}
    call = _object(spec.EXPECTED_CALL_KEYS, ["name"])
    call["properties"]["argument_invariants"] = invariants
    props["expected_tool_calls"] = {"type": "array", "items": call}
    case = _object(spec.CASE_KEYS, spec.CASE_REQUIRED)
    case["properties"]["assertions"]["properties"] = {"output_invariants": invariants, "input_invariants": invariants,
                                                      "expected_tool_calls": props["expected_tool_calls"]}
    # a matcher names at least one part of the failing check
    matcher = {**_object(spec.FAILURE_MATCHER_KEYS), "anyOf": [{"required": [k]} for k in spec.FAILURE_MATCHER_KEYS]}
    case["properties"]["expected_failure"] = {**case["properties"]["expected_failure"], "type": ["object", "array"],
                                              "anyOf": [matcher, {"type": "array", "items": matcher}]}
    props["golden_cases"] = {"type": "array", "items": case}
    trajectory = props["trajectory"]["properties"]
    trajectory["final_invariants"] = {**trajectory["final_invariants"], "items": inv}
    step = _object(spec.STEP_INVARIANT_KEYS, ["step", "invariants"])
    step["properties"]["invariants"] = invariants
    trajectory["step_invariants"] = {**trajectory["step_invariants"], "items": step}
    trajectory["retried_steps"] = {**trajectory["retried_steps"],
                                   "items": _object(spec.RETRIED_STEP_KEYS, ["step", "expected_error"])}
    # mode and tools come together
    trajectory["tool_sequence"]["anyOf"] = [{"required": ["mode", "tools"]}, {"const": {}}]
    schema["required"] = ["golden_cases"]
    schema["$defs"] = {"invariant": invariant_schema()}
    return schema


def build(name: str) -> dict:
    """The JSON Schema named *name* (one of NAMES)."""
    if name not in SCHEMAS:
        raise ValueError(f"no schema named {name!r}; expected one of {', '.join(NAMES)}")
    body = {
        "config": lambda: _object(spec.CONFIG_KEYS),
        "pack": lambda: _object(spec.PACK_KEYS, spec.PACK_REQUIRED),
        "contract": contract_schema,
        "allowlist": lambda: {"type": "array", "items": _object(spec.ALLOWLIST_KEYS, spec.ALLOWLIST_REQUIRED)},
        "fixture": lambda: _object(spec.FIXTURE_KEYS),  # a recording may have no request
    }[name]()
    title = SCHEMAS[name][0]
    return {"$schema": DRAFT, "$id": f"https://replayci.dev/schemas/{name}.schema.json", "title": title, **body}


def render(name: str) -> str:
    return json.dumps(build(name), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # regenerate the shipped files: python -m replayci.schema_gen
    import os

    here = os.path.join(os.path.dirname(__file__), "schemas")
    os.makedirs(here, exist_ok=True)
    for n in NAMES:
        with open(os.path.join(here, f"{n}.schema.json"), "w", encoding="utf-8") as fh:
            fh.write(render(n))
