"""One response against one contract: a named step per classification, run in the
classification order, so the first failure names the case."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.hashing import tools_key_of
from ..core.jsonvalue import show, strict_loads
from ..formats import Document
from ..formats.output import output_schema, parse_output, with_output
from .failure import Classification, Failure
from .grounding import ungrounded_numbers
from .operators import Invariant, evaluate
from .schemas import CompiledSchema, SchemaError, shared_schema, tool_table

if TYPE_CHECKING:
    from ..pack.model import Contract, ExpectedCall

# Every schema error of a call is reported (the terminal shows the first few); past this many a
# hostile schema or payload could only make the report huge.
MAX_SCHEMA_ERRORS = 1000


def invariant_failures(kind: Classification, invariants: tuple[Invariant, ...], document: Any) -> list[Failure]:
    """The failures of *invariants* on *document*, classified as *kind*."""
    out = []
    for inv in invariants:
        for f in evaluate(inv, document):
            out.append(Failure(kind, f.message, f.path, f.operator, None, f.expected, f.actual, f.source))
    return out


def output_outcome(contract: Contract, document: Any) -> tuple[list[Failure], float | None]:
    """The output invariants' failures and, under min_score, the weighted share that held: then
    they pass when every required one holds and that share reaches min_score."""
    if contract.min_score is None:
        return invariant_failures(Classification.INVARIANT_VIOLATION, contract.output_invariants, document), None
    results = [(inv, invariant_failures(Classification.INVARIANT_VIOLATION, (inv,), document))
               for inv in contract.output_invariants]
    total = sum(inv.weight for inv, _ in results)
    score = round(sum(inv.weight for inv, r in results if not r) / total, 4) if total else 1.0
    failures = [f for inv, r in results if inv.required for f in r]
    if score < contract.min_score:
        failures += [f for inv, r in results if not inv.required for f in r]
        failures.append(Failure(Classification.INVARIANT_VIOLATION, f"score {score:g} is below min_score "
                                f"{contract.min_score:g}", path="$", operator="min_score",
                                expected=contract.min_score, actual=f"{score:g}", source=contract.source))
    return failures, score


def case_score(contract: Contract, document: dict | None) -> float | None:
    """The score a case reports: under min_score, of a document the model gave."""
    if contract.min_score is None or not document or not document.get("success", True):
        return None
    return output_outcome(contract, document)[1]


def tool_schemas(request: dict | None, tools_key: str | None = None) -> dict[str, Any]:
    """The parameter schemas the request declares, by tool name (OpenAI or flat form);
    *tools_key* is the canonical JSON of its tools when the caller has it already."""
    req = request or {}
    key = tools_key if tools_key is not None else tools_key_of(req)
    return {name: c.schema for name, c in tool_table(key, req.get("tools")).items()}


def _names(calls: list[dict]) -> str:
    return ", ".join(str(c.get("name")) for c in calls) or "none"


def wrong_tools(contract: Contract, calls: list[dict]) -> list[Failure]:
    """wrong_tool: an expected tool not called; under strict matching, another or an extra call."""
    out: list[Failure] = []
    expected = contract.expected_names
    if not expected:
        return out
    called = [c.get("name") for c in calls]
    for name in expected:
        if name not in called:
            out.append(Failure(Classification.WRONG_TOOL, f"expected a call to {name}, got {_names(calls)}",
                               path="$.tool_calls[*].name", operator="called", expected=name,
                               actual=show(called), source=_named_at(contract, name)))
    if contract.match_mode == "strict":
        out += strict_matches(contract, called)
    return out


def _named_at(contract: Contract, name: str) -> str:
    """Where the contract or its case expects a call to *name*: its `tool`, else the first
    expected_tool_calls entry naming it (its `- name:` line)."""
    if name == contract.tool:
        return contract.source
    return next((c.source for c in contract.expected_tool_calls if c.name == name and c.source), contract.source)


def undeclared_tools(contract: Contract, calls: list[dict], declared: dict[str, CompiledSchema],
                     request: dict) -> list[Failure]:
    """wrong_tool (check undeclared_tool): a call to a tool the request does not declare — the
    model invented it. Only when the request declares tools."""
    if not request.get("tools"):
        return []
    return [Failure(Classification.WRONG_TOOL, f"{c.get('name')} is not a tool the request declares "
                    f"(declared: {', '.join(sorted(map(str, declared))) or 'none'})",
                    path=f"$.tool_calls[{i}].name", operator="undeclared_tool", expected=sorted(map(str, declared)),
                    actual=show(c.get("name")), source=contract.source)
            for i, c in enumerate(calls) if c.get("name") not in declared]


def strict_matches(contract: Contract, called: list) -> list[Failure]:
    """tool_call_match_mode: strict: only the expected tools, each at most as often as listed."""
    out: list[Failure] = []
    allowed: dict[str, int] = {}
    entries = ([c.name for c in contract.expected_tool_calls] or list(contract.expect_tools)
               or list(contract.expected_names))
    for name in entries:
        allowed[name] = allowed.get(name, 0) + 1
    counts: dict[str, int] = {}
    for name in called:
        counts[name] = counts.get(name, 0) + 1
    for name, n in counts.items():
        if name not in allowed:
            out.append(Failure(Classification.WRONG_TOOL,
                               f"unexpected call to {name} (tool_call_match_mode: strict allows "
                               f"only {', '.join(allowed)})",
                               path="$.tool_calls[*].name", operator="strict_match",
                               expected=sorted(allowed), actual=show(name), source=contract.source))
        elif n > allowed[name]:
            out.append(Failure(Classification.WRONG_TOOL,
                               f"{n} calls to {name}, at most {allowed[name]} expected "
                               "(tool_call_match_mode: strict)",
                               path="$.tool_calls[*].name", operator="strict_count",
                               expected=allowed[name], actual=str(n), source=contract.source))
    return out


def malformed_arguments(contract: Contract, calls: list[dict]) -> list[Failure]:
    """malformed_arguments: a call (to an expected tool) whose arguments are not a JSON object."""
    expected = contract.expected_set
    out = []
    for i, call in enumerate(calls):
        if expected and call.get("name") not in expected:
            continue
        args = call.get("arguments")
        if isinstance(args, dict):
            continue
        raw = call.get("arguments_raw")
        if isinstance(raw, str):
            try:
                parsed = strict_loads(raw)
                why = f"arguments are a JSON {type(parsed).__name__ if parsed is not None else 'null'}, not an object"
                why = why.replace("dict", "object").replace("list", "array").replace("str", "string")
            except ValueError as exc:
                why = f"arguments are not valid JSON ({exc})"
            except RecursionError:
                why = "arguments are nested too deeply to read"
        else:
            why = "arguments are missing" if raw is None else "arguments are not an object"
        out.append(Failure(Classification.MALFORMED_ARGUMENTS, f"{call.get('name')}: {why}: {show(raw, 80)}",
                           path=f"$.tool_calls[{i}].arguments", operator="json_object",
                           actual=show(raw), source=contract.source))
    return out


def schema_violations(contract: Contract, calls: list[dict],
                      declared: dict[str, CompiledSchema]) -> list[Failure]:
    """schema_violation: arguments that break the contract's arguments_schema or the tool's own."""
    expected = contract.expected_set
    out = []
    for call in calls:
        name = call.get("name")
        args = call.get("arguments")
        if not isinstance(args, dict) and (not expected or name in expected):
            continue  # already malformed_arguments
        if contract.arguments_schema is not None and name == contract.tool:
            compiled, source = contract.arguments_schema, contract.arguments_schema_source
            whose = "the contract's arguments_schema"
        elif name in declared:
            compiled, source, whose = declared[name], contract.source, f"{name}'s schema in the request"
        else:
            continue
        if compiled.is_valid(args):
            continue
        for err in compiled.errors(args)[:MAX_SCHEMA_ERRORS]:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            schema_path = "/".join(str(p) for p in err.absolute_schema_path)
            out.append(Failure(Classification.SCHEMA_VIOLATION,
                f"{name}: $" + where + f" {err.message} (rule #/{schema_path} of {whose})",
                path=f"{name}:${where}", operator=str(err.validator), schema_path=schema_path,
                expected=None, actual=show(err.instance), source=source))
    return out


def malformed_output(contract: Contract, request: dict, response: dict) -> list[Failure]:
    """malformed_output: the request asks for structured output and the answer's text is no
    JSON (or there is none: a refusal, an empty answer). An answer that calls tools gives none."""
    if "output" in response or not response.get("success", True) or response.get("tool_calls"):
        return []
    if output_schema(request) is None:
        return []
    content = response.get("content")
    why = parse_output(content)[2]
    if response.get("refusal"):
        why = f"the model refused: {show(response['refusal'], 80)}"
    return [Failure(Classification.MALFORMED_OUTPUT, f"structured output: {why}: {show(content, 80)}", path="$.output",
                    operator="json", actual=show(content), source=contract.source)]


def output_violations(contract: Contract, request: dict, response: dict) -> list[Failure]:
    """schema_violation: the answer's structured output breaks the schema the request gave
    (a schema that is no valid JSON Schema checks nothing: the provider would have refused it)."""
    if "output" not in response:
        return []
    schema = output_schema(request)
    if not schema or not isinstance(schema, (dict, bool)):
        return []
    output = response["output"]
    try:
        compiled = shared_schema(schema)
        if compiled.problem() is not None or compiled.is_valid(output):
            return []
        errors = compiled.errors(output)[:MAX_SCHEMA_ERRORS]
    except SchemaError:
        return []
    out = []
    for err in errors:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        schema_path = "/".join(str(p) for p in err.absolute_schema_path)
        out.append(Failure(Classification.SCHEMA_VIOLATION, "output: $" + where + f" {err.message} (schema "
                           f"{schema_path or '/'}, {err.validator})", path=f"$.output{where}",
                           operator=str(err.validator), schema_path=schema_path, actual=show(err.instance),
                           source=contract.source))
    return out


def argument_mismatches(contract: Contract, calls: list[dict]) -> list[Failure]:
    """argument_mismatch: expected_tool_calls' argument invariants unmet (under pass_threshold),
    or tool_order: strict broken."""
    out: list[Failure] = []
    ecs = contract.expected_tool_calls
    if ecs:
        unmatched = [fails for fails in (_best_match(ec, calls) for ec in ecs) if fails]
        matched = len(ecs) - len(unmatched)
        if matched / len(ecs) < contract.pass_threshold - 1e-12:
            for fails in unmatched:
                out.extend(fails)
    if contract.tool_order == "strict":
        out.extend(_order(contract, calls))
    return out


def _best_match(ec: ExpectedCall, calls: list[dict]) -> list[Failure]:
    """The fewest failures of one expected call over the calls to its tool ([] when one matches)."""
    best: list[Failure] | None = None
    for cand in calls:
        if cand.get("name") != ec.name or not isinstance(cand.get("arguments"), dict):
            continue
        fails = invariant_failures(Classification.ARGUMENT_MISMATCH, ec.invariants, cand["arguments"])
        if not fails:
            return []
        if best is None or len(fails) < len(best):
            best = fails
    if best is None:
        best = [Failure(Classification.ARGUMENT_MISMATCH, f"no call to {ec.name} to check arguments of",
                        path=None, operator="called", expected=ec.name, source=ec.source)]
    return [Failure(f.kind, f"{ec.name}: {f.message}", f.path, f.operator,
                    f.schema_path, f.expected, f.actual, f.source) for f in best]


def _order(contract: Contract, calls: list[dict]) -> list[Failure]:
    """Expected calls must appear in the listed order (a subsequence of the calls)."""
    if contract.expected_tool_calls:
        entries = [(ec.name, ec.invariants) for ec in contract.expected_tool_calls]
    else:
        entries = [(name, ()) for name in contract.expected_names]
    names = [c.get("name") for c in calls]
    last = -1
    previous = None
    for name, invariants in entries:
        if name not in names:
            continue  # missing tools are wrong_tool, not an order problem
        later = range(last + 1, len(calls))
        found = next((j for j in later if names[j] == name and _meets(invariants, calls[j])), None)
        if found is None:
            found = next((j for j in later if names[j] == name), None)
        if found is None:
            return [Failure(Classification.ARGUMENT_MISMATCH,
                            f"tool_order: strict: {name} must come after {previous}, "
                            f"got the order {_names(calls)}",
                            path="$.tool_calls[*].name", operator="tool_order",
                            expected=[e[0] for e in entries], actual=show(names),
                            source=contract.source)]
        last, previous = found, name
    return []


def _meets(invariants: tuple[Invariant, ...], call: dict) -> bool:
    args = call.get("arguments")
    return not invariants or (isinstance(args, dict) and not invariant_failures("x", invariants, args))


def provider_error(contract: Contract, response: dict) -> list[Failure]:
    """unexpected_error: the provider failed instead of answering."""
    if response.get("success", True):
        return []
    err = response.get("error") or {}
    status = err.get("status")
    return [Failure(Classification.UNEXPECTED_ERROR,
        f"provider error {err.get('type') or 'error'}"
        + (f" (HTTP {status})" if status is not None else "")
        + (f": {err.get('message')}" if err.get("message") else ""),
        path="$.error", operator="success", expected=True, actual=show(err.get("type")),
        source=contract.source)]


def tool_not_invoked(contract: Contract, response: dict) -> list[Failure]:
    """tool_not_invoked: tools were expected and the response called none."""
    if response.get("tool_calls") or not contract.expected_names:
        return []
    content = response.get("content")
    return [Failure(Classification.TOOL_NOT_INVOKED,
        f"no tool call; expected {', '.join(contract.expected_names)}"
        + (f", got text {show(content, 80)}" if content else ""),
        path="$.tool_calls", operator="called", expected=list(contract.expected_names),
        actual=show(content), source=contract.source)]


def named_calls(calls: list[dict]) -> list[dict]:
    """*calls*, each whose name is an object or an array (what a model may send) with that name
    as its JSON text: compared and reported as the model gave it, never a lookup key that breaks
    a check."""
    if not any(isinstance(c.get("name"), (dict, list)) for c in calls):
        return calls
    return [{**c, "name": json.dumps(c["name"], ensure_ascii=False, sort_keys=True)}
            if isinstance(c.get("name"), (dict, list)) else c for c in calls]


def named_response(response: dict) -> dict:
    """*response* with its calls' names as named_calls gives them."""
    calls = response.get("tool_calls") or []
    named = named_calls(calls)
    return response if named is calls else {**response, "tool_calls": named}


class Subject:
    """One response under check, with what its steps share."""

    __slots__ = ("calls", "contract", "ok", "request", "response", "tools")

    def __init__(self, contract: Contract, request: dict, response: dict,
                 tools: dict[str, CompiledSchema] | None = None) -> None:
        self.contract, self.request, self.response, self.tools = contract, request, response, tools
        self.ok = ok = bool(response.get("success", True))
        self.calls: list[dict] = named_calls(response.get("tool_calls") or []) if ok else []

    def declared(self) -> dict[str, CompiledSchema]:
        """The request's compiled tool table, built on first use."""
        if self.tools is None:
            self.tools = tool_table(tools_key_of(self.request), self.request.get("tools"))
        return self.tools


# The single-response step of each classification. A failed provider call is checked for
# unexpected_error and its input only; the tool checks need calls (none is tool_not_invoked).
STEPS: dict[Classification, Callable[[Subject], list[Failure]]] = {
    Classification.UNEXPECTED_ERROR: lambda s: provider_error(s.contract, s.response),
    Classification.TOOL_NOT_INVOKED: lambda s: tool_not_invoked(s.contract, s.response) if s.ok else [],
    Classification.WRONG_TOOL: lambda s: (wrong_tools(s.contract, s.calls)
                             + undeclared_tools(s.contract, s.calls, s.declared(), s.request)) if s.calls else [],
    Classification.MALFORMED_ARGUMENTS: lambda s: malformed_arguments(s.contract, s.calls),
    Classification.MALFORMED_OUTPUT: lambda s: malformed_output(s.contract, s.request, s.response),
    Classification.SCHEMA_VIOLATION: lambda s: (schema_violations(s.contract, s.calls, s.declared()) if s.calls
                                   else output_violations(s.contract, s.request, s.response)),
    Classification.ARGUMENT_MISMATCH: lambda s: argument_mismatches(s.contract, s.calls) if s.calls else [],
    Classification.INVARIANT_VIOLATION: lambda s: (output_outcome(s.contract, s.response)[0] + (ungrounded_numbers(
        s.response, s.request, [], s.contract.source) if s.contract.grounded_numbers else [])) if s.ok else [],
    Classification.INPUT_VIOLATION: lambda s: invariant_failures(Classification.INPUT_VIOLATION,
                                                                 s.contract.input_invariants, s.request),
}

_ORDERED_STEPS = tuple(STEPS[kind] for kind in Classification if kind in STEPS)


def check(contract: Contract, request: dict | None, response: Document,
          tools: dict[str, CompiledSchema] | None = None) -> list[Failure]:
    """Every failing check for *response*, in classification order.

    *tools* is the request's compiled tool table when the caller has it already. An answer
    to a request that asks for structured output is judged with its JSON as `output`.
    """
    subject = Subject(contract, request or {}, with_output(response, request), tools)
    failures: list[Failure] = []
    for step in _ORDERED_STEPS:
        found = step(subject)
        if found:
            failures += found
    return failures
