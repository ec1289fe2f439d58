"""What a recorded answer says a contract should check: the inference that `observe`, the proxy and
`import` share."""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from ..checks.failure import Classification
from ..checks.schemas import SchemaError, shared_schema
from ..formats.output import output_schema, with_output

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
    tools = request.get("tools")
    for t in tools if isinstance(tools, list) else ():
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("parameters"), dict) and isinstance(fn.get("name"), str):
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
    for key, value in sorted(arguments.items()):  # (key order: the wire's and a fixture's differ)
        inv: dict[str, Any] = {"path": member_path(key), "type": json_type(value)}
        prop = props.get(key) if isinstance(props.get(key), dict) else {}
        enum = prop.get("enum")
        if "const" in prop and prop["const"] == value:
            inv["one_of"] = [prop["const"]]
        elif isinstance(enum, list) and value in enum:
            inv["one_of"] = list(enum)
        out.append(inv)
    return out


def infer_contract(obs: Observation, provider: str, model: str, when: str, *, draft: bool = False) -> dict:
    """The contract for one observed response: its checks on the case (a draft, `status:
    observed`, with the looser checks at the contract's level when *draft*)."""
    if draft:
        return infer_draft(obs, provider, model, when)
    response = obs.response or {}
    contract: dict[str, Any] = {
        "description": obs.description or f"Observed from {provider} {model} on {when} ({obs.display})."}
    contract.update(contract_fields([response] if pinned_failure(response, obs.request) is None else []))
    case: dict[str, Any] = {"id": CASE_ID, "input_ref": f"{obs.name}.json", "category": "happy_path"}
    expectations = case_expectations(response, obs.request)
    if expectations.get("expect_ok") is False:
        case["category"] = "edge_case"
    case.update(expectations)
    contract["golden_cases"] = [case]
    return contract


MULTI = "multi_tool_call"  # the contract's `tool` value that stands for its `expect_tools`


def tool_fields(names: list) -> dict:
    """A contract's `tool` for the tools every answer calls: the one tool, or `multi_tool_call` and
    `expect_tools` (so also for a tool that is itself named multi_tool_call)."""
    if len(names) == 1 and names[0] != MULTI:
        return {"tool": names[0]}
    return {"tool": MULTI, "expect_tools": list(names)}


def contract_fields(responses: list[dict]) -> dict:
    """What a contract says over its cases' answers (those no check fails whatever the contract
    says, see `pinned_failure`): `tool` when every answer calls that one tool (`multi_tool_call`
    and `expect_tools` when every answer calls the same several tools), `tool_order: strict`
    when some answer made two calls or more."""
    answers = [r.get("tool_calls") or [] for r in responses if r.get("success")]
    out: dict[str, Any] = {}
    called = [list(dict.fromkeys(c.get("name") for c in calls)) for calls in answers]
    if called and all(called) and all(isinstance(n, str) for names in called for n in names) \
            and all(set(names) == set(called[0]) for names in called):
        out.update(tool_fields(called[0]))
    if any(len(calls) > 1 for calls in answers):
        out["tool_order"] = "strict"
    return out


def infer_draft(obs: Observation, provider: str, model: str, when: str) -> dict:
    """The draft contract for one observed response."""
    response = obs.response or {}
    calls = response.get("tool_calls") or []
    params = _tool_params(obs.request)
    names = list(dict.fromkeys(c.get("name") for c in calls))
    contract: dict[str, Any] = {
        "description": obs.description or f"Observed from {provider} {model} on {when} ({obs.display}).",
        "status": "observed",
    }
    if names:
        contract.update(tool_fields(names))
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
        answered = with_output(response, obs.request)
        if "output" in answered:  # a structured answer: each field present, with its type
            schema = output_schema(obs.request)
            fields = argument_invariants(answered["output"], schema if isinstance(schema, dict) else None)
            outputs += [{**inv, "path": f"$.output{inv['path'][1:]}"} for inv in fields]
        elif isinstance(response.get("content"), str):
            outputs.append({"path": "$.content", "type": "string"})
    if outputs:
        contract["assertions"] = {"output_invariants": outputs}
    contract["golden_cases"] = [{"id": CASE_ID, "input_ref": f"{obs.name}.json", "category": "happy_path"}]
    return contract


# ----------------------------------------------------------------------------- contracts, per case

_SHORT = 40  # strings up to this many characters are pinned by value
# Shapes of values a system mints (ids, timestamps): pinned by their shape, never by value,
# unless the request's messages hold them. (name, recognizer, the regex written)
_HEX = "[0-9a-fA-F]"
_SHAPES = (
    ("uuid", re.compile(rf"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\Z"),
     rf"^{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}$"),
    ("timestamp", re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\Z"),
     r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$"),
    ("date", re.compile(r"\d{4}-\d{2}-\d{2}\Z"), r"^\d{4}-\d{2}-\d{2}$"),
    ("hex", re.compile(rf"{_HEX}{{16,}}\Z"), rf"^{_HEX}{{16,}}$"),
)
# An id with a word prefix and a minted tail holding a digit: call_8fJ2kq, req-01HZX9...
_PREFIXED_ID = re.compile(r"([A-Za-z]{2,12})([_-])(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{6,}\Z")


def generated_shape(value: str) -> str | None:
    """The regex of a value that looks minted (a UUID, a timestamp, an id), else None."""
    for _name, recognizer, pattern in _SHAPES:
        if recognizer.match(value):
            return pattern
    m = _PREFIXED_ID.match(value)
    if m:
        return f"^{re.escape(m.group(1))}{re.escape(m.group(2))}[A-Za-z0-9]+$"
    return None


def message_text(request: dict) -> str:
    """Every text of the request's messages (the user's words, earlier calls and tool results),
    one per line: what a value is looked up in."""
    out: list[str] = []

    def walk(value: Any, key: str | None = None) -> None:
        if isinstance(value, str):
            if key not in ("role", "type", "id", "tool_call_id", "call_id"):
                out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)

    walk(request.get("messages") or [])
    if isinstance(request.get("system"), str):
        out.append(request["system"])
    return "\n".join(out)


def _schema_at(schema: Any, key: str | int) -> dict:
    """The sub-schema of a property (a str key) or an array item (an int)."""
    if not isinstance(schema, dict):
        return {}
    if isinstance(key, int):
        sub = schema.get("items")
    else:
        props = schema.get("properties")
        sub = props.get(key) if isinstance(props, dict) else None
    return sub if isinstance(sub, dict) else {}


def _enum_member(value: Any, schema: dict) -> bool:
    enum = schema.get("enum")
    return ("const" in schema and schema["const"] == value and type(schema["const"]) is type(value)) or (
        isinstance(enum, list) and any(e == value and type(e) is type(value) for e in enum))


def _string_invariant(path: str, value: str, schema: dict, said: str) -> dict:
    if _enum_member(value, schema) or (value and value in said):
        return {"path": path, "equals": value}
    shape = generated_shape(value)
    if shape is not None:
        return {"path": path, "regex": shape}
    if len(value) <= _SHORT:
        return {"path": path, "equals": value}
    return {"path": path, "type": "string", "length_gte": 1}


def value_invariants(path: str, value: Any, schema: dict, said: str) -> list[dict]:
    """What a faithful answer keeps of one argument value at *path* (see `call_invariants`)."""
    if isinstance(value, bool) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return [{"path": path, "equals": value}]
    if value is None:
        return [{"path": path, "type": "null"}]
    if isinstance(value, str):
        return [_string_invariant(path, value, schema, said)]
    if isinstance(value, list):
        out = [{"path": path, "type": "array", "length_eq": len(value)}]
        kinds = [json_type(v) for v in value]
        if kinds and len(set(kinds)) == 1:
            out.append({"path": f"{path}[*]", "type": kinds[0]})
        else:
            out += [{"path": f"{path}[{i}]", "type": k} for i, k in enumerate(kinds)]
        return out
    out = [{"path": path, "type": "object"}]
    for key, sub in sorted(value.items()):
        out += value_invariants(_member(path, key), sub, _schema_at(schema, key), said)
    return out


def _member(path: str, key: str) -> str:
    return path + member_path(key)[1:]


def call_invariants(arguments: Any, schema: dict | None, said: str) -> list[dict]:
    """A call's argument invariants: every argument it passed must be present; a value the
    messages (*said*) hold, a boolean, a number, an enum member or a short string is pinned by
    value; a longer string by type and non-empty; an array by its length and its items' types;
    an object walked the same way; a minted-looking value (UUID, timestamp, id) by its shape."""
    if not isinstance(arguments, dict):
        return []
    schema = schema if isinstance(schema, dict) else {}
    out: list[dict] = []
    # By key: an answer read off the wire keeps the model's order, its fixture (keys sorted) may
    # not, and the contract is the same whichever it is written from.
    for key, value in sorted(arguments.items()):
        out += value_invariants(member_path(key), value, _schema_at(schema, key), said)
    return out


def tool_parameters(request: dict) -> dict[str, dict]:
    """Each declared tool's parameter schema, by tool name (neutral request)."""
    return _tool_params(request)


def expected_calls(response: dict, request: dict) -> list[dict]:
    """`expected_tool_calls` of an answer: each call's name, in order, with its argument invariants."""
    params, said = _tool_params(request), message_text(request)
    out = []
    for call in response.get("tool_calls") or []:
        entry: dict[str, Any] = {"name": call.get("name")}
        invs = call_invariants(call.get("arguments"), params.get(call.get("name")), said)
        if invs:
            entry["argument_invariants"] = invs
        out.append(entry)
    return out


def pinned_failure(response: dict | None, request: dict) -> str | None:
    """The classification an answer gets whatever the contract says (an error, a call to a tool
    the request does not declare, arguments that are no JSON object), else None (its plain
    text: a contract file is written from it)."""
    if response is None or not response.get("success"):
        return Classification.UNEXPECTED_ERROR.value
    calls = response.get("tool_calls") or []
    declared = tool_names_of(request)
    if declared and any(c.get("name") not in declared for c in calls):
        return Classification.WRONG_TOOL.value
    if any(not isinstance(c.get("arguments"), dict) for c in calls):
        return Classification.MALFORMED_ARGUMENTS.value
    params = _tool_params(request)
    if any(not _fits(c["arguments"], params.get(c.get("name"))) for c in calls):
        return Classification.SCHEMA_VIOLATION.value
    schema = output_schema(request) if not calls else None
    if schema is not None:
        answered = with_output(response, request)
        if "output" not in answered:
            return Classification.MALFORMED_OUTPUT.value
        if not _fits(answered["output"], schema):
            return Classification.SCHEMA_VIOLATION.value
    return None


def retried_errors(response: dict, request: dict) -> list[str]:
    """What a recorded step's calls broke that an agent retries (its arguments not a JSON object,
    or not what the tool's schema asks), in classification order: [] for a step that broke nothing."""
    calls = response.get("tool_calls") or []
    out = []
    if any(not isinstance(c.get("arguments"), dict) for c in calls):
        out.append(Classification.MALFORMED_ARGUMENTS.value)
    params = _tool_params(request)
    if any(isinstance(c.get("arguments"), dict) and not _fits(c["arguments"], params.get(c.get("name")))
           for c in calls):
        out.append(Classification.SCHEMA_VIOLATION.value)
    return out


def _fits(arguments: Any, schema: Any) -> bool:
    """Whether a call's arguments (or a structured output) satisfy their schema (an unreadable
    schema says nothing)."""
    if not isinstance(schema, (dict, bool)):
        return True
    try:
        compiled = shared_schema(schema)
        return compiled.problem() is not None or compiled.is_valid(arguments)
    except SchemaError:
        return True


def tool_names_of(request: dict) -> set[str]:
    names = set()
    for tool in request.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return names


def case_expectations(response: dict | None, request: dict) -> dict:
    """A golden case's own fields inferred from its recorded answer: an answer that fails
    whatever is checked is a pinned negative (`expect_ok: false` and its classification); any
    other answer gets `assertions`: the number of calls, and each call as `expected_call` says."""
    failure = pinned_failure(response, request)
    if failure is not None:
        return {"expect_ok": False, "expected_error": failure}
    assert response is not None
    calls = response.get("tool_calls") or []
    assertions: dict[str, Any] = {"output_invariants": [{"path": "$.tool_calls", "length_eq": len(calls)},
                                                        *output_invariants(response, request)]}
    if calls and all(isinstance(c.get("name"), str) for c in calls):  # (a call without a name names nothing)
        assertions["expected_tool_calls"] = expected_calls(response, request)
    return {"assertions": assertions}


def output_invariants(response: dict, request: dict) -> list[dict]:
    """A structured answer's `output` pinned as a call's arguments are (`call_invariants`):
    every field present, values by the same rules; [] for any other answer."""
    answered = with_output(response, request)
    if "output" not in answered:
        return []
    schema = output_schema(request)
    return value_invariants("$.output", answered["output"], schema if isinstance(schema, dict) else {},
                            message_text(request))


def step_invariants(response: dict, request: dict) -> list[dict]:
    """One step of a recorded trajectory as invariants on its response: the number of calls,
    each call's name and its argument invariants rooted at that call."""
    calls = response.get("tool_calls") or []
    out: list[dict] = [{"path": "$.tool_calls", "length_eq": len(calls)}]
    for i, entry in enumerate(expected_calls(response, request)):
        at = f"$.tool_calls[{i}]"
        out.append({"path": f"{at}.name", "equals": entry["name"]})
        out += [{**inv, "path": f"{at}.arguments{inv['path'][1:]}"} for inv in entry.get("argument_invariants", ())]
    return out + output_invariants(response, request)


def first_user_text(request: dict) -> str:
    """The first thing the user said in a (neutral) request, '' when nothing."""
    for message in request.get("messages") or ():
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                return part["text"]
    return ""


def slug_words(text: str, limit: int = 40) -> str:
    """*text*'s first words, lower case, joined by '-' (ASCII letters and digits only: accents
    dropped), at most *limit* characters, cut at a word."""
    out = ""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    for word in re.findall(r"[a-z0-9]+", ascii_text.lower()):
        nxt = f"{out}-{word}" if out else word
        if len(nxt) > limit:
            if not out:
                out = word[:limit]
            break
        out = nxt
    return out
