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
    plain = {"type": "object", "properties": props, "required": ["path"], "minProperties": 2,
             "additionalProperties": False}
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
    props["assertions"]["properties"] = {k: {"type": "array", "items": inv} for k in spec.ASSERTIONS_KEYS}
    props["assertions"]["properties"]["judges"] = {"type": "array", "items": {
        **_object(spec.JUDGE_KEYS), "minProperties": 1}}
    call = _object(spec.EXPECTED_CALL_KEYS, ["name"])
    call["properties"]["argument_invariants"] = {"type": "array", "items": inv}
    props["expected_tool_calls"] = {"type": "array", "items": call}
    case = _object(spec.CASE_KEYS, spec.CASE_REQUIRED)
    case["properties"]["assertions"]["properties"] = {
        **props["assertions"]["properties"], "expected_tool_calls": props["expected_tool_calls"]}
    props["golden_cases"] = {"type": "array", "items": case}
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
