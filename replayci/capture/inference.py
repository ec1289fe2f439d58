"""What a recorded answer says a contract should check: the inference that `observe`, the proxy and
`import` share."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

CASE_ID = "observed"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"), (type(None), "null"))


@dataclass
class Observation:
    """One spec, what the provider answered, and the contract inferred from it."""

    name: str  # the contract id
    display: str  # the spec file, as shown
    request: dict
    description: str | None = None
    response: dict | None = None  # normalized
    raw: dict | None = None
    latency_ms: int = 0
    attempts: int = 0
    error: str | None = None
    contract: dict | None = None


def json_type(value: Any) -> str:
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return "string"


def member_path(key: str) -> str:
    """The RFC 9535 path of a top-level member of the arguments."""
    if _NAME.match(key):
        return f"$.{key}"
    return "$[" + json.dumps(key, ensure_ascii=False) + "]"


def _tool_params(request: dict) -> dict[str, dict]:
    out = {}
    for t in request.get("tools") or []:
        fn = t.get("function") or {}
        if isinstance(fn.get("parameters"), dict):
            out[fn["name"]] = fn["parameters"]
    return out


def argument_invariants(arguments: Any, schema: dict | None) -> list[dict]:
    """Each argument present, with its type; `one_of` for enum-like values (the schema's enum
    or const) — what a reviewer then tightens or loosens."""
    if not isinstance(arguments, dict):
        return []
    props = (schema or {}).get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    out = []
    for key, value in arguments.items():
        inv: dict[str, Any] = {"path": member_path(key), "type": json_type(value)}
        prop = props.get(key) if isinstance(props.get(key), dict) else {}
        enum = prop.get("enum")
        if "const" in prop and prop["const"] == value:
            inv["one_of"] = [prop["const"]]
        elif isinstance(enum, list) and value in enum:
            inv["one_of"] = list(enum)
        out.append(inv)
    return out


def infer_contract(obs: Observation, provider: str, model: str, when: str) -> dict:
    """The draft contract for one observed response."""
    response = obs.response or {}
    calls = response.get("tool_calls") or []
    params = _tool_params(obs.request)
    names = list(dict.fromkeys(c.get("name") for c in calls))
    contract: dict[str, Any] = {
        "description": obs.description or f"Observed from {provider} {model} on {when} ({obs.display}).",
        "status": "observed",
    }
    if len(names) == 1:
        contract["tool"] = names[0]
    elif names:
        contract["tool"] = "multi_tool_call"
        contract["expect_tools"] = names
    expected = []
    for c in calls:
        entry: dict[str, Any] = {"name": c.get("name")}
        invs = argument_invariants(c.get("arguments"), params.get(c.get("name")))
        if invs:
            entry["argument_invariants"] = invs
        expected.append(entry)
    if expected:
        contract["expected_tool_calls"] = expected
    outputs: list[dict] = []
    if not calls:
        outputs.append({"path": "$.tool_calls", "length_eq": 0})
        if isinstance(response.get("content"), str):
            outputs.append({"path": "$.content", "type": "string"})
    if outputs:
        contract["assertions"] = {"output_invariants": outputs}
    contract["golden_cases"] = [{"id": CASE_ID, "input_ref": f"{obs.name}.json", "category": "happy_path"}]
    return contract
