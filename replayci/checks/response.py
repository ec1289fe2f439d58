"""One response against one contract: checks in classification order, classification, verdict."""
from __future__ import annotations

import json
from typing import Any

from ..core.hashing import short_hash, tools_key_of
from ..core.jsonvalue import show
from ..engine.results import Failure
from ..pack.model import Contract
from .operators import Invariant, evaluate
from .schemas import CompiledSchema, tool_table

MAX_SCHEMA_ERRORS = 3


def _invariant_failures(kind: str, invariants: tuple[Invariant, ...], document: Any) -> list[Failure]:
    out = []
    for inv in invariants:
        for f in evaluate(inv, document):
            out.append(Failure(kind, f.message, f.path, f.operator, None, f.expected, f.actual, f.source))
    return out


def tool_schemas(request: dict | None) -> dict[str, Any]:
    """The parameter schemas the request declares, by tool name (OpenAI or flat form)."""
    req = request or {}
    return {name: c.schema for name, c in tool_table(tools_key_of(req), req.get("tools")).items()}


def _names(calls: list[dict]) -> str:
    return ", ".join(str(c.get("name")) for c in calls) or "none"


def _wrong_tool(contract: Contract, calls: list[dict]) -> list[Failure]:
    out: list[Failure] = []
    expected = contract.expected_names
    if not expected:
        return out
    called = [c.get("name") for c in calls]
    for name in expected:
        if name not in called:
            out.append(Failure("wrong_tool", f"expected a call to {name}, got {_names(calls)}",
                               path="$.tool_calls[*].name", operator="called", expected=name,
                               actual=show(called), source=contract.source))
    if contract.match_mode == "strict":
        allowed: dict[str, int] = {}
        entries = ([c.name for c in contract.expected_tool_calls] or list(contract.expect_tools)
                   or list(expected))
        for name in entries:
            allowed[name] = allowed.get(name, 0) + 1
        counts: dict[str, int] = {}
        for name in called:
            counts[name] = counts.get(name, 0) + 1
        for name, n in counts.items():
            if name not in allowed:
                out.append(Failure("wrong_tool",
                                   f"unexpected call to {name} (tool_call_match_mode: strict allows "
                                   f"only {', '.join(allowed)})",
                                   path="$.tool_calls[*].name", operator="strict_match",
                                   expected=sorted(allowed), actual=show(name), source=contract.source))
            elif n > allowed[name]:
                out.append(Failure("wrong_tool",
                                   f"{n} calls to {name}, at most {allowed[name]} expected "
                                   "(tool_call_match_mode: strict)",
                                   path="$.tool_calls[*].name", operator="strict_count",
                                   expected=allowed[name], actual=str(n), source=contract.source))
    return out


def _malformed(contract: Contract, calls: list[dict]) -> list[Failure]:
    expected = set(contract.expected_names)
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
                parsed = json.loads(raw)
                why = f"arguments are a JSON {type(parsed).__name__ if parsed is not None else 'null'}, not an object"
                why = why.replace("dict", "object").replace("list", "array").replace("str", "string")
            except ValueError as exc:
                why = f"arguments are not valid JSON ({exc})"
        else:
            why = "arguments are missing" if raw is None else "arguments are not an object"
        out.append(Failure("malformed_arguments", f"{call.get('name')}: {why}: {show(raw, 80)}",
                           path=f"$.tool_calls[{i}].arguments", operator="json_object",
                           actual=show(raw), source=contract.source))
    return out


def _schema(contract: Contract, calls: list[dict], declared: dict[str, CompiledSchema]) -> list[Failure]:
    expected = set(contract.expected_names)
    out = []
    for i, call in enumerate(calls):
        name = call.get("name")
        args = call.get("arguments")
        if not isinstance(args, dict) and (not expected or name in expected):
            continue  # already malformed_arguments
        if contract.arguments_schema is not None and name == contract.tool:
            compiled, source = contract.arguments_schema, contract.arguments_schema_source
        elif name in declared:
            compiled, source = declared[name], contract.source
        else:
            continue
        if compiled.is_valid(args):
            continue
        for err in compiled.errors(args)[:MAX_SCHEMA_ERRORS]:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
            schema_path = "/".join(str(p) for p in err.absolute_schema_path)
            out.append(Failure(
                "schema_violation",
                f"{name}: $" + where + f" {err.message} (schema {schema_path or '/'}, {err.validator})",
                path=f"{name}:${where}", operator=str(err.validator), schema_path=schema_path,
                expected=None, actual=show(err.instance), source=source))
    return out


def _arguments(contract: Contract, calls: list[dict]) -> list[Failure]:
    out: list[Failure] = []
    ecs = contract.expected_tool_calls
    if ecs:
        unmatched: list[list[Failure]] = []
        for ec in ecs:
            candidates = [c for c in calls if c.get("name") == ec.name and isinstance(c.get("arguments"), dict)]
            best: list[Failure] | None = None
            for cand in candidates:
                fails = _invariant_failures("argument_mismatch", ec.invariants, cand["arguments"])
                if not fails:
                    best = []
                    break
                if best is None or len(fails) < len(best):
                    best = fails
            if best is None:
                best = [Failure("argument_mismatch", f"no call to {ec.name} to check arguments of",
                                path=None, operator="called", expected=ec.name, source=ec.source)]
            if best:
                unmatched.append([Failure(f.kind, f"{ec.name}: {f.message}", f.path, f.operator,
                                          f.schema_path, f.expected, f.actual, f.source) for f in best])
        matched = len(ecs) - len(unmatched)
        if matched / len(ecs) < contract.pass_threshold - 1e-12:
            for fails in unmatched:
                out.extend(fails)
    if contract.tool_order == "strict":
        out.extend(_order(contract, calls))
    return out


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
        found = None
        for j in range(last + 1, len(calls)):
            if names[j] != name:
                continue
            args = calls[j].get("arguments")
            if invariants and not (isinstance(args, dict)
                                   and not _invariant_failures("x", invariants, args)):
                continue
            found = j
            break
        if found is None:
            for j in range(last + 1, len(calls)):
                if names[j] == name:
                    found = j
                    break
        if found is None:
            return [Failure("argument_mismatch",
                            f"tool_order: strict: {name} must come after {previous}, "
                            f"got the order {_names(calls)}",
                            path="$.tool_calls[*].name", operator="tool_order",
                            expected=[e[0] for e in entries], actual=show(names),
                            source=contract.source)]
        last, previous = found, name
    return []


def check(contract: Contract, request: dict | None, response: dict,
          tools: dict[str, CompiledSchema] | None = None) -> list[Failure]:
    """Every failing check for *response*, in classification order.

    *tools* is the request's compiled tool table when the caller has it already.
    """
    failures: list[Failure] = []
    inputs = _invariant_failures("input_violation", contract.input_invariants, request or {})
    if not response.get("success", True):
        err = response.get("error") or {}
        status = err.get("status")
        failures.append(Failure(
            "unexpected_error",
            f"provider error {err.get('type') or 'error'}"
            + (f" (HTTP {status})" if status is not None else "")
            + (f": {err.get('message')}" if err.get("message") else ""),
            path="$.error", operator="success", expected=True, actual=show(err.get("type")),
            source=contract.source))
        return failures + inputs
    calls = response.get("tool_calls") or []
    if not calls:
        if contract.expected_names:
            content = response.get("content")
            failures.append(Failure(
                "tool_not_invoked",
                f"no tool call; expected {', '.join(contract.expected_names)}"
                + (f", got text {show(content, 80)}" if content else ""),
                path="$.tool_calls", operator="called", expected=list(contract.expected_names),
                actual=show(content), source=contract.source))
    else:
        failures += _wrong_tool(contract, calls)
        failures += _malformed(contract, calls)
        if tools is None:
            req = request or {}
            tools = tool_table(tools_key_of(req), req.get("tools"))
        failures += _schema(contract, calls, tools)
        failures += _arguments(contract, calls)
    failures += _invariant_failures("invariant_violation", contract.output_invariants, response)
    return failures + inputs


def verdict(expect_ok: bool, expected_error: str | None, failures: list[Failure]) -> tuple[str, str | None, str | None]:
    """(status, classification, reason) from what the checks found."""
    classification = failures[0].kind if failures else None
    if expect_ok:
        if not failures:
            return "pass", None, None
        return "fail", classification, failures[0].message
    if not failures:
        return "fail", None, "negative case was not detected" + (
            f" (expected {expected_error})" if expected_error else "")
    if expected_error and classification != expected_error:
        return "fail", classification, f"expected {expected_error}, got {classification}"
    return "pass", classification, None


def fingerprint(contract_id: str, case_id: str, failures: list[Failure], response: dict | None) -> str:
    """8 hex digits: the failure pattern, or the case and its output when nothing failed."""
    if failures:
        return short_hash({
            "contract": contract_id,
            "classification": failures[0].kind,
            "checks": [list(f.key()) for f in failures],
        })
    return short_hash({"contract": contract_id, "case": case_id, "response": stable_response(response)})


def stable_response(response: dict | None) -> Any:
    """The response without what changes between identical runs (ids, usage, latency)."""
    if not response:
        return None
    out = {k: v for k, v in response.items() if k not in ("usage", "latency_ms", "raw", "id")}
    out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in response.get("tool_calls") or []]
    return out
