"""The vocabulary of replayci's files: one table per section, from which the loader's
validation messages and the published JSON Schemas are both derived."""
from __future__ import annotations

import re
from typing import Any

from ..checks.failure import CHECK_KINDS, CLASSIFICATION_ORDER, Classification
from ..core.enums import TextEnum
from ..core.errors import did_you_mean, one_of
from ..core.memo import Memo
from ..core.provider_table import LIVE_PROVIDERS, PROVIDERS

CATEGORIES = ("happy_path", "edge_case", "adversarial", "multi_step", "regression")
NR_REASONS = (
    "recording_not_found",
    "context_variance",
    "stale_recording",
    "missing_prerequisites",
    "model_nondeterminism",
    "tool_result_not_recorded",
    "judgement_not_recorded",
    "batch_incomplete",
)
RETRY_KINDS = ("429", "5xx", "timeout", "connection")


class ReplayMode(TextEnum):
    """How a live run uses recordings: play them only (strict), play a usable one else call and
    record (auto), call and record every case (record), call without recording (off)."""

    AUTO = "auto"
    RECORD = "record"
    OFF = "off"
    STRICT = "strict"


REPLAY_MODES = tuple(m.value for m in ReplayMode)
PACK_ID_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*\Z")


def _t(type_: str | list, expected: str, **extra) -> dict:
    return {"type": type_, "x-expected": expected, **extra}


def _enum(values, expected: str | None = None) -> dict:
    return {"enum": list(values), "x-expected": expected or one_of(values)}


_STR = _t("string", "a string")
_BOOL = _t("boolean", "true or false")
_STRS = _t("array", "a list of strings", items={"type": "string"})
# At most a day: a longer wait is a typo, and the socket layer cannot hold 1e20 s.
_MS = _t("integer", "a whole number of milliseconds > 0 (at most 86400000, a day)", minimum=1, maximum=86_400_000)
# A model call's, a tool command's and an MCP server's time limit, unless the pack or config sets one.
_TIMEOUT_MS = {**_MS, "default": 30_000}
TIMEOUT_MS: int = _TIMEOUT_MS["default"]

_RATE = _t("number", "a number from 0 to 1", minimum=0, maximum=1)
# A file a report is written to: no NUL (no file system takes one).
_REPORT_PATH = _t(["string", "null"], "a file path (without a NUL character)", pattern=r"^[^\x00]*$")
GATES_KEYS = {
    "pass_rate": _RATE,
    "max_non_reproducible": _t("integer", "a whole number >= 0", minimum=0),
    "max_cost_usd": _t("number", "a number of US dollars >= 0 (the run's total cost)", minimum=0),
    "p95_latency_ms": _t("number", "a number of milliseconds >= 0", minimum=0),
    "max_total_tokens": _t("integer", "a whole number of tokens >= 0", minimum=0),
    "min_pass_rate_lower_bound": _t("number", "a number from 0 to 1 (under --repeat: every case's "
                                    "Wilson 95% lower bound)", minimum=0, maximum=1),
    "baseline": _enum(["no_new_failures"], "no_new_failures (with --baseline: fail only for new, changed "
                      "and regressed failures)"),
    "flaky": _enum(["fail", "quarantine"], "fail or quarantine (under --repeat: flaky cases listed apart, "
                   "never failing the run)"),
}
# The sequential test of --repeat auto: its error rates, and the pass probabilities it tells apart.
_OPEN_RATE = _t("number", "a number between 0 and 1 (exclusive)", minimum=0, maximum=1)
STATS_KEYS = {
    "alpha": _t("number", "an error rate between 0 and 0.5 (a stable case called flaky or failing)",
                minimum=0, maximum=0.5),
    "beta": _t("number", "an error rate between 0 and 0.5 (a flaky case called stable)",
               minimum=0, maximum=0.5),
    "ok": _OPEN_RATE,
    "bad": _OPEN_RATE,
}

_PER_MTOK = _t("number", "US dollars per million tokens (>= 0)", minimum=0)
PRICE_KEYS = {
    "input_per_mtok": _PER_MTOK,
    "output_per_mtok": _PER_MTOK,
    "cached_input_per_mtok": _PER_MTOK,
    "batch_discount": _t("number", "the share of the price batch runs take off, from 0 to 1 (default 0.5)",
                         minimum=0, maximum=1),
}

PATHS_KEYS = {
    "contracts_dir": _STR,
    "golden_dir": _STR,
    "negative_golden_dir": _STR,
    "recordings_dir": _STR,
}

MCP_SERVER_KEYS = {
    "command": _t("array", "a command line as a list of strings ([python, server.py])",
                  items={"type": "string"}, minItems=1),
    "url": _t("string", "a streamable HTTP URL (http://127.0.0.1:8000/mcp)", pattern=r"^https?://\S+$"),
    "timeout_ms": _TIMEOUT_MS,
}
MCP_SERVERS = _t("object", "a mapping of server name to {command} or {url}",
                 additionalProperties=_t("object", "a mapping with command or url (and timeout_ms)",
                                         properties=MCP_SERVER_KEYS))

PACK_KEYS = {
    "pack_id": _t("string", "an id of lowercase letters, digits, '_', '.', '-'",
                  pattern="^" + PACK_ID_RE.pattern.removesuffix("\\Z") + "$"),
    "name": _STR,
    "version": _t(["string", "number"], "a version string"),
    "schema_version": _enum(["v0.1"]),
    "provider": _enum(PROVIDERS),
    "default_model": _STR,
    "description": _STR,
    "paths": _t("object", "a mapping of directories", properties=PATHS_KEYS),
    "contracts": _t("array", "a list of contract file names", items={"type": "string"}),
    "gates": _t("object", "a mapping", properties=GATES_KEYS),
    # read for its keys and types only (the judge model is the configuration's): none is required
    "judge": _t("object", "a mapping {provider, model, base_url}", properties={
        "provider": _enum(PROVIDERS),
        "model": _STR,
        "base_url": _t(["string", "null"], "a URL"),
    }),
    "mcp_servers": MCP_SERVERS,
}
PACK_REQUIRED = ("pack_id",)

ASSERTIONS_KEYS = {
    "output_invariants": _t("array", "a list of invariants"),
    "input_invariants": _t("array", "a list of invariants"),
    "judges": _t("array", "a list of judges: {rubric, min}, {factuality} or {classify: {categories, expected}}"),
}
# A golden case's own assertions: the contract's kinds and its expected_tool_calls form.
CASE_ASSERTIONS_KEYS = {
    "output_invariants": ASSERTIONS_KEYS["output_invariants"],
    "input_invariants": ASSERTIONS_KEYS["input_invariants"],
    "expected_tool_calls": _t("array", "a list of {name, argument_invariants}"),
}

CASE_KEYS = {
    "id": _t("string", "a case id (it names the recording file: no '/' or '\\', not '.' or '..')",
             minLength=1, pattern=r"^(?!\.\.?$)[^/\\]+$"),
    "input_ref": _t("string", "a fixture path relative to the golden directory", minLength=1),
    "expect_ok": _BOOL,
    "expected_error": _enum(CLASSIFICATION_ORDER, "a classification (" + ", ".join(CLASSIFICATION_ORDER) + ")"),
    "expected_failure": _t(["object", "array"], "a matcher {path, operator} | {schema_path} | {check}, "
                                                "or a list of them"),
    "expected_fingerprint": _t("string", "a fingerprint: 8 hex digits", pattern=r"^[0-9a-f]{8}$"),
    "provider_modes": _t("array", "a list of providers", items={"enum": list(PROVIDERS)}),
    "category": _enum(CATEGORIES),
    "tags": _STRS,
    "description": _STR,
    "assertions": _t("object", "a mapping with output_invariants, input_invariants and "
                     "expected_tool_calls", properties=CASE_ASSERTIONS_KEYS),
}
CASE_REQUIRED = ("id", "input_ref")

# One expected_failure matcher: each key given must match the same failing check.
FAILURE_MATCHER_KEYS = {
    "check": _enum(CHECK_KINDS, "a check kind"),
    "path": _t("string", "a JSONPath, as a failure reports it"),
    "operator": _t("string", "an operator name"),
    "schema_path": _t("string", "a JSON-Schema path, as a failure reports it"),
}

# Any invariant entry, plain or composite (any_of, all_of, not), may carry these.
SCORING_KEYS = {
    "weight": _t("number", "a number >= 0 (its share of the score)", minimum=0),
    "required": _t("boolean", "true or false (under min_score: must hold whatever the score)"),
    "description": _STR,
}
INVARIANT_BASE_KEYS = {"path": _t("string", "an RFC 9535 JSONPath"), "if_present": _BOOL, **SCORING_KEYS}

EXPECTED_CALL_KEYS = {
    "name": _t("string", "a tool name", minLength=1),
    "argument_invariants": _t("array", "a list of invariants"),
}

JUDGE_KEYS = {
    "rubric": _t("string", "the rubric the answer is graded on (1..4)", minLength=1),
    "min": _t("integer", "a score from 1 to 4 (the lowest that passes)", minimum=1, maximum=4),
    "factuality": _t("string", "the reference the answer must be consistent with", minLength=1),
    "classify": _t("object", "a mapping {categories, expected}", properties={
        "categories": _t("array", "a list of category names", items={"type": "string"}),
        "expected": _t("string", "the category the answer must get"),
    }, required=["categories", "expected"]),
}

SEQUENCE_MODES = ("strict", "subset", "superset", "unordered")
TRAJECTORY_KEYS = {
    "tool_sequence": _t("object", "a mapping {mode, tools}", properties={
        "mode": _enum(SEQUENCE_MODES),
        "tools": _STRS,
    }),
    "max_tool_calls": _t("integer", "a whole number >= 0", minimum=0),
    "final_invariants": _t("array", "a list of invariants"),
    "step_invariants": _t("array", "a list of {step, invariants}"),
    "retried_steps": _t("array", "a list of {step, expected_error}"),
}
RETRIED_KINDS = (Classification.SCHEMA_VIOLATION.value, Classification.MALFORMED_ARGUMENTS.value)
RETRIED_STEP_KEYS = {
    "step": _t("integer", "a step number >= 1 (the Nth model response)", minimum=1),
    "expected_error": _enum(RETRIED_KINDS),
}
STEP_INVARIANT_KEYS = {
    "step": _t("integer", "a step number >= 1 (the Nth model response)", minimum=1),
    "invariants": _t("array", "a list of invariants"),
}

SANITIZE_KEYS = {
    "keep": _t("array", "a list of result paths to keep ($.items[*].title)", items={"type": "string"}),
    "drop": _t("array", "a list of result paths to drop ($.token)", items={"type": "string"}),
}
TOOL_REPLAY_KEYS = {
    "key": _t("array", "a list of argument paths that identify a call ($.country)", items={"type": "string"}),
    "version": _t(["string", "integer"], "a version string"),
    # keep and drop together are refused by the loader; the schema says so with oneOf (one of
    # them, or neither) in the plain subset its compiled check covers
    "sanitize": _t("object", "a mapping with keep or drop", properties=SANITIZE_KEYS,
                   oneOf=[{"required": ["keep"]}, {"required": ["drop"]}, {"const": {}}]),
}

CONTRACT_KEYS = {
    "tool": _t("string", "a tool name, or multi_tool_call", minLength=1),
    "expect_tools": _STRS,
    "expected_tool_calls": _t("array", "a list of {name, argument_invariants}"),
    "tool_order": _enum(("any", "strict")),
    "tool_call_match_mode": _enum(("lenient", "strict")),
    "pass_threshold": _t("number", "a number from 0 to 1", minimum=0, maximum=1),
    "min_score": _t("number", "a number from 0 to 1 (the weighted share of output invariants "
                    "that must hold)", minimum=0, maximum=1),
    "grounded_numbers": _BOOL,
    "arguments_schema": _t(["object", "boolean"], "a JSON Schema"),
    "assertions": _t("object", "a mapping with output_invariants and input_invariants",
                     properties=ASSERTIONS_KEYS),
    "golden_cases": _t("array", "a list of golden cases"),
    "timeouts": _t("object", "a mapping", properties={"total_ms": _TIMEOUT_MS, "tool_ms": _TIMEOUT_MS}),
    "retries": _t("object", "a mapping", properties={
        "max_attempts": _t("integer", "a whole number >= 1", minimum=1),
        "retry_on": _t("array", "a list of " + one_of(RETRY_KINDS), items={"enum": list(RETRY_KINDS)}),
    }),
    "rate_limits": _t("object", "a mapping", properties={
        "on_429": _t("object", "a mapping", properties={
            "respect_retry_after": _BOOL,
            "max_sleep_seconds": _t("number", "a number of seconds >= 0", minimum=0),
        }),
    }),
    "status": _enum(("active", "observed")),
    "description": _STR,
    # multi-step scenarios
    "scenario": _BOOL,
    "max_steps": _t("integer", "a whole number of model calls >= 1", minimum=1),
    "tool_replay": _enum(("strict", "lenient")),
    "tool_commands": _t("object", "a mapping of tool name to a command line, or mcp:SERVER",
                        additionalProperties={"type": "string"}),
    "trajectory": _t("object", "a mapping", properties=TRAJECTORY_KEYS),
    "tool_replay_config": _t("object", "a mapping of tool name to {key, version, sanitize}",
                             additionalProperties=_t("object", "a mapping with key, version, sanitize",
                                                     properties=TOOL_REPLAY_KEYS)),
}

TARGET_KEYS = {
    "provider": _enum(tuple(LIVE_PROVIDERS)),
    "model": _t("string", "a model name", minLength=1),
    "base_url": _t(["string", "null"], "a URL"),
    "label": _t("string", "a label (letters, digits and . _ : / @ + -)", pattern=r"^[A-Za-z0-9._:/@+-]+$"),
}

CONFIG_KEYS = {
    "pack": _STR,
    "packs": _STRS,
    "provider": _enum(PROVIDERS),
    "model": _STR,
    "base_url": _t(["string", "null"], "a URL"),
    "jobs": _t("integer", "a whole number >= 1", minimum=1),
    "processes": _t("integer", "a whole number >= 1", minimum=1),
    "replay": _enum(REPLAY_MODES),
    "stream": _BOOL,
    "tool_replay_mode": _enum(REPLAY_MODES),
    "fixtures": _t("object", "a mapping", properties={
        "ttl_days": _t("number", "a number of days > 0", minimum=0),
        "strict": _BOOL,
        "max_bytes": _t("integer", "a number of bytes", minimum=1),
    }),
    "gates": _t("object", "a mapping", properties=GATES_KEYS),
    "judge": _t("object", "a mapping {provider, model, base_url}", properties={
        "provider": _enum(PROVIDERS),
        "model": _STR,
        "base_url": _t(["string", "null"], "a URL"),
    }, required=["provider", "model"]),
    "pricing": _t("object", "a mapping of model name to {input_per_mtok, output_per_mtok, "
                  "cached_input_per_mtok, batch_discount}", additionalProperties=_t(
                      "object", "a mapping {input_per_mtok, output_per_mtok, cached_input_per_mtok, "
                      "batch_discount}",
                      properties=PRICE_KEYS, required=["input_per_mtok", "output_per_mtok"])),
    "reports": _t("object", "a mapping", properties={
        "json": _REPORT_PATH,
        "junit": _REPORT_PATH,
        "markdown": _REPORT_PATH,
        "html": _REPORT_PATH,
        "otlp": _REPORT_PATH,
    }),
    "redact": _t("object", "a mapping", properties={
        "fields": _t("array", "a list of JSONPaths", items={"type": "string"}),
    }),
    "proxy": _t("object", "a mapping", properties={
        "ignore": _t("array", "a list of request fields", items={"type": "string"}),
    }),
    "mcp_servers": MCP_SERVERS,
    "stats": _t("object", "a mapping {alpha, beta, ok, bad}", properties=STATS_KEYS),
    "targets": _t("array", "a list of targets {provider, model, base_url, label}", minItems=1,
                  items=_t("object", "a target {provider, model, base_url, label}", properties=TARGET_KEYS,
                           required=["provider", "model"])),
}

_HASH = _t(["string", "null"], "16 hex digits of the hash (another string: not pinned)")
BOUNDARY_KEYS = {
    "model": _t(["string", "null"], "the model recorded (informational)"),
    "tool_schema_hash": _HASH,
    "message_hash": _HASH,
    "system_hash": _HASH,
}
_OBJ = _t("object", "an object")
FIXTURE_KEYS = {
    "boundary": _t("object", "the hashes of the request the response answers", properties=BOUNDARY_KEYS),
    "request": _t("object", "the request: messages, tools, system, model, ..."),
    "response": _t(["object", "array", "string"],
                   "the response: an object, a JSON array of stream chunks or a stream's text"),
    "tool_results": _t("array", "a scenario's recorded tool results {tool, args_hash, arguments, result}"),
    "trajectory": _t("array", "a scenario's recorded steps {response, tool_results}"),
    "meta": _OBJ,
    "judgements": _t("object", "judges' answers by judge prompt (recordings)"),
    "description": _STR,
    "raw": _t(["object", "array", "string"], "the provider's payload (recordings made with --keep-raw)"),
    "status": _t("integer", "the response's HTTP status (100 to 599)", minimum=100, maximum=599),
    "original_request": _t("object", "the request as the application sent it"),
}

ALLOWLIST_KEYS = {
    "contract_path": _t("string", "the contract file's path in the pack (contracts/flaky.yaml)"),
    "case_id": _t(["string", "null"], "a case id (none: every case of the contract)"),
    "reason_code": _enum(NR_REASONS),
    "owner": _STR,
    "expiry_date": _t("string", "a date YYYY-MM-DD", pattern=r"^\d{4}-\d{2}-\d{2}$"),
    "rationale": _STR,
}
ALLOWLIST_REQUIRED = ("contract_path", "reason_code", "owner", "expiry_date", "rationale")

_fits: Memo = Memo()  # id of a table entry -> (the entry, its predicate)

# The Python types of each table type; `integer` and `number` leave out booleans (bool is an int).
_PY_TYPES = {"string": (str,), "boolean": (bool,), "integer": (int,), "number": (int, float),
             "array": (list,), "object": (dict,), "null": (type(None),)}


def _type_test(kinds: str | list):
    """A predicate true for the values of the table type (or types) *kinds*."""
    kinds = [kinds] if isinstance(kinds, str) else kinds
    accepted = tuple(t for k in kinds for t in _PY_TYPES[k])
    if "boolean" in kinds or not ({"integer", "number"} & set(kinds)):
        return lambda value: isinstance(value, accepted)  # bool fits only where boolean does
    return lambda value: isinstance(value, accepted) and value.__class__ is not bool


def _fit(fragment: dict):
    """A predicate for *fragment*'s checks (no messages): built once per table entry."""
    kinds = fragment.get("type")
    typed = _type_test(kinds) if kinds is not None else None
    enum = fragment.get("enum")
    low, high, shortest = fragment.get("minimum"), fragment.get("maximum"), fragment.get("minLength")
    pattern = re.compile(fragment["pattern"]) if "pattern" in fragment else None
    items = fragment.get("items")
    if typed is not None and all(c is None for c in (enum, low, high, shortest, pattern, items)):
        return typed  # most entries: a type alone

    def fits(value: Any) -> bool:
        if typed is not None and not typed(value):
            return False
        if enum is not None and value not in enum:
            return False
        if low is not None and value < low:
            return False
        if high is not None and value > high:
            return False
        if shortest is not None and len(value) < shortest:
            return False
        if pattern is not None and isinstance(value, str) and not pattern.fullmatch(value):
            return False
        if items is not None and isinstance(value, list):
            return all(check_value(items, item) is None for item in value)
        return True

    return fits


def check_value(fragment: dict, value: Any) -> str | None:
    """None when *value* fits the table entry, else what was expected (flat checks only)."""
    known = _fits.get(id(fragment))
    if known is None or known[0] is not fragment:
        known = _fits.put(id(fragment), (fragment, _fit(fragment)))
    if known[1](value):
        return None
    return _why_not(fragment, value)


def _why_not(fragment: dict, value: Any) -> str | None:
    expected = fragment.get("x-expected", "a valid value")
    if "type" in fragment and not _type_test(fragment["type"])(value):
        return expected
    if "enum" in fragment and value not in fragment["enum"]:
        choices = [str(e) for e in fragment["enum"]]
        return expected + (did_you_mean(str(value), choices) or _same_first_word(str(value), choices))
    if "minimum" in fragment and value < fragment["minimum"]:
        return expected
    if "maximum" in fragment and value > fragment["maximum"]:
        return expected
    if "minLength" in fragment and len(value) < fragment["minLength"]:
        return expected
    if "pattern" in fragment and isinstance(value, str) and not re.fullmatch(fragment["pattern"], value):
        return expected
    items = fragment.get("items")
    if items is not None and isinstance(value, list):
        for item in value:
            if check_value(items, item) is not None:
                enum = items.get("enum")
                hint = did_you_mean(str(item), [str(e) for e in enum]) if enum else ""
                return f"{expected} ({item!r} is not allowed){hint}"
    return None


def _same_first_word(value: str, choices: list[str]) -> str:
    """A "did you mean" for the one choice whose first word (before '_') is *value*'s:
    'schema_error' -> 'schema_violation', which difflib finds too far."""
    head = value.split("_", 1)[0].lower()
    same = [c for c in choices if "_" in value and c.split("_", 1)[0] == head]
    return f"; did you mean '{same[0]}'?" if len(same) == 1 else ""


def mismatch(why: str, shown: str) -> str:
    """'expected X, got Y' with check_value's "did you mean" moved to the end."""
    head, sep, hint = why.partition("; did you mean")
    return f"expected {head}, got {shown}" + (sep + hint if sep else "")


def unknown_key_message(key: Any, table) -> str:
    known = sorted(table)
    head = f"unknown key '{key}'; expected one of {', '.join(known)}"
    # A key of one of this mapping's own sections, written a level too high: say where it goes.
    home = [name for name, fragment in table.items()
            if isinstance(fragment, dict) and key in (fragment.get("properties") or {})]
    if home:
        return f"{head}; put it under `{home[0]}:`"
    return head + did_you_mean(str(key), known)
