"""One contract file -> a Contract: its sections (expected calls, arguments schema, assertions,
judges, golden cases, settings, the scenario's trajectory and tool replay) each built apart."""
from __future__ import annotations

import os
from typing import Any

from ..checks.arguments import argument_invariants, argument_problems
from ..checks.jsonpath import JSONPathError, compile_path
from ..checks.judges import Judge
from ..checks.schemas import CompiledSchema, SchemaError, compile_schema
from ..core.errors import ConfigError, Problem
from ..core.paths import display_path
from . import vocabulary as spec
from .load_cases import build_case, expected_calls
from .load_invariants import compile_invariants
from .load_problems import Built, mapping_problems, shown, utf8_name
from .load_schema import contract_fits
from .model import Case, Contract, RetrySettings, ToolReplay, Trajectory
from .servers import COMMAND_PREFIX
from .sources import Located, load_yaml


def load_contract(file: str, rel_path: str, pack: dict) -> Built[Contract]:
    """One contract file -> a Contract, or None when it has no mapping; with its problems."""
    display = display_path(file)
    found = _contract_doc(file, display)
    doc = found.value
    if doc is None:
        return found
    raw = doc.value
    contract_id = os.path.splitext(os.path.basename(file))[0]
    if not utf8_name(contract_id):
        return Built(None, (*found.problems, doc.problem((), "the file name is not valid UTF-8: rename the file "
                                                        "(reports and recordings name the contract by it)")))
    tool = raw.get("tool")
    expect_tools = _items(raw.get("expect_tools") or ())
    problems = list(found.problems)
    if "expect_tools" in raw and tool != "multi_tool_call":
        problems.append(doc.problem(("expect_tools",), "expect_tools goes with tool: multi_tool_call"))
    if tool == "multi_tool_call" and expect_tools == () and not raw.get("expected_tool_calls"):
        problems.append(doc.problem(("tool",), "multi_tool_call needs expect_tools (the tools that must all be "
                                    "called) or expected_tool_calls"))
    calls = expected_calls(doc, raw.get("expected_tool_calls"), tool)
    schema = _arguments_schema(doc, raw)
    assertions = _assertions(doc, raw.get("assertions") or {})
    cases = _cases(doc, raw.get("golden_cases"), pack)
    settings = _contract_settings(doc, raw)
    for built in (calls, schema, assertions, cases, settings):
        problems += built.problems
    if settings.value is None or expect_tools is None:
        # The pack is refused and its problems reported; a value of the wrong type is not
        # used. A bare contract keeps its cases so their fixtures' problems are listed too.
        return Built(Contract(id=contract_id, file=file, display=display, rel_path=rel_path, tool=None,
                              cases=cases.value, source=doc.source(())), tuple(problems))
    outputs, inputs, judges = assertions.value
    contract = Contract(
        id=contract_id, file=file, display=display, rel_path=rel_path, tool=tool,
        expect_tools=expect_tools, expected_tool_calls=calls.value,
        arguments_schema=schema.value, arguments_schema_source=doc.source(("arguments_schema",)),
        output_invariants=outputs, input_invariants=inputs, judges=judges, cases=cases.value,
        source=doc.source(()), **settings.value,
    )
    if schema.value is not None and isinstance(tool, str):
        problems += argument_problems_of(contract, contract.cases, {tool: schema.value.schema})
    return Built(contract, tuple(problems))


def _assertions(doc: Located, assertions: Any) -> Built[tuple]:
    """A contract's `assertions`: (output invariants, input invariants, judges)."""
    if not isinstance(assertions, dict):
        return Built(((), (), ()))
    built = (compile_invariants(doc, ("assertions", "output_invariants"), assertions.get("output_invariants")),
             compile_invariants(doc, ("assertions", "input_invariants"), assertions.get("input_invariants")),
             _judges(doc, assertions.get("judges")))
    return Built(tuple(b.value for b in built), tuple(p for b in built for p in b.problems))


def argument_problems_of(contract: Contract, cases, schemas: dict) -> list[Problem]:
    """The invariants of *contract* and *cases* on an argument that *schemas* (raw JSON Schemas
    by tool name) show to be a mistake, as located problems."""
    found = argument_invariants(contract, cases)
    if not found:
        return []
    out = []
    for source, message in argument_problems(found, schemas):
        where, _, line = source.rpartition(":")
        out.append(Problem(where, int(line), None, message) if line.isdigit() else Problem(source, None, None, message))
    return out


def _judges(doc: Located, value: Any) -> Built[tuple[Judge, ...]]:
    """assertions.judges -> Judges, and the problems of the others: {rubric, min}, {factuality}
    or {classify}."""
    out, problems = [], []
    for i, entry in enumerate(value if isinstance(value, list) else ()):
        path = ("assertions", "judges", i)
        kinds = [k for k in ("rubric", "factuality", "classify") if isinstance(entry, dict) and k in entry]
        if len(kinds) != 1:
            problems.append(doc.problem(path, "expected a judge: one of {rubric: TEXT, min: 1..4}, "
                                        "{factuality: REFERENCE}, {classify: {categories: [...], expected: NAME}}"))
            continue
        wrong = mapping_problems(doc, path, entry, spec.JUDGE_KEYS)
        if wrong:
            problems += wrong
            continue
        kind, source = kinds[0], doc.source(path)
        if kind != "classify":
            out.append(Judge(kind, entry[kind], source, min=entry.get("min", 3)))
            continue
        cats, expected = entry["classify"].get("categories") or [], entry["classify"].get("expected")
        if expected not in cats:
            problems.append(doc.problem(path + ("classify",), "classify needs categories and an expected category "
                                        f"among them; got {shown(expected)} of [{', '.join(cats)}]"))
            continue
        out.append(Judge(kind, ", ".join(cats), source, categories=tuple(cats), expected=expected))
    return Built(tuple(out), tuple(problems))


def _contract_doc(file: str, display: str) -> Built[Located]:
    """The parsed contract file when it holds a mapping (else None), and its problems."""
    try:
        doc = load_yaml(file, display)
    except ConfigError as exc:
        return Built(None, tuple(exc.problems))
    if doc.value is None:
        return Built(None, (*doc.problems, Problem(display, 1, 1, "the contract is empty; expected a mapping "
                                                   "with tool, assertions and golden_cases")))
    doc.checked = contract_fits(doc.value)
    problems = (*doc.problems, *mapping_problems(doc, (), doc.value, spec.CONTRACT_KEYS))
    return Built(doc if isinstance(doc.value, dict) else None, problems)


def _arguments_schema(doc: Located, raw: dict) -> Built[CompiledSchema]:
    """The contract's own arguments_schema, checked (None: the request's tool schema is used)."""
    if "arguments_schema" not in raw:
        return Built(None)
    try:
        return Built(compile_schema(raw["arguments_schema"], check=True))
    except SchemaError as exc:
        return Built.refused(doc, ("arguments_schema",), f"invalid JSON Schema: {exc}")


def _cases(doc: Located, raw_cases: Any, pack: dict) -> Built[tuple[Case, ...]]:
    """A contract's golden cases, and the problems of the others (the required key's absence
    is reported here)."""
    if raw_cases is None:
        return Built((), (doc.problem((), "missing required key 'golden_cases'"),))
    if not isinstance(raw_cases, list):
        return Built(())
    seen: dict = {}
    built = [build_case(doc, ("golden_cases", i), entry, pack, seen) for i, entry in enumerate(raw_cases)]
    return Built(tuple(b.value for b in built if b.value is not None), [p for b in built for p in b.problems])


def _contract_settings(doc: Located, raw: dict) -> Built[dict[str, Any]]:
    """The rest of a contract's fields: scenario settings, retries, timeouts and plain values;
    None as soon as one of them has a type it cannot be read as (the vocabulary check reported
    it), the sections after it left unread."""
    trajectory = _trajectory(doc, raw)
    problems = list(trajectory.problems)
    if trajectory.value is None:
        return Built(None, tuple(problems))
    scenario_only = [k for k in ("max_steps", "tool_replay", "tool_commands", "trajectory") if k in raw]
    if scenario_only and raw.get("scenario") is not True:
        problems.append(doc.problem((scenario_only[0],),
                                    f"{scenario_only[0]} is for scenario contracts: add scenario: true"))
    commands = raw.get("tool_commands") or {}
    if isinstance(commands, dict):
        for name, line in commands.items():
            if not isinstance(line, str) or not line.strip():
                problems.append(doc.problem(("tool_commands", name), "expected a command line (a non-empty string)"))
            elif line.startswith(COMMAND_PREFIX) and not line[len(COMMAND_PREFIX):].strip():
                problems.append(doc.problem(("tool_commands", name), "expected mcp:SERVER (a name in mcp_servers)"))
    retry = _retry_settings(raw)
    pass_threshold = _float(raw.get("pass_threshold", 1.0))
    min_score = None if raw.get("min_score") is None else _float(raw["min_score"])
    if retry is None or pass_threshold is None or (min_score is None and raw.get("min_score") is not None):
        return Built(None, tuple(problems))
    replays = _tool_replay_config(doc, raw)
    problems += replays.problems
    return Built(dict(
        tool_order=raw.get("tool_order", "any"),
        match_mode=raw.get("tool_call_match_mode", "lenient"),
        pass_threshold=pass_threshold,
        min_score=min_score,
        grounded_numbers=raw.get("grounded_numbers") is True,
        retry=retry,
        status=raw.get("status", "active"),
        description=raw.get("description"),
        scenario=raw.get("scenario") is True,
        max_steps=raw.get("max_steps", 8),
        tool_replay=raw.get("tool_replay", "strict"),
        tool_commands=tuple((k, v) for k, v in commands.items() if isinstance(v, str))
        if isinstance(commands, dict) else (),
        tool_ms=(raw.get("timeouts") or {}).get("tool_ms", spec.TIMEOUT_MS),
        tool_replay_config=replays.value,
        trajectory=trajectory.value,
    ), tuple(problems))


def _retry_settings(raw: dict) -> RetrySettings | None:
    """`retries`, `timeouts.total_ms` and `rate_limits.on_429`; None when one is not a mapping
    or `retry_on` is not a list."""
    retries = raw.get("retries") or {}
    limits = raw.get("rate_limits") or {}
    on_429 = limits.get("on_429") or {} if isinstance(limits, dict) else None
    timeouts = raw.get("timeouts") or {}
    if not (isinstance(retries, dict) and isinstance(on_429, dict) and isinstance(timeouts, dict)):
        return None
    retry_on = _items(retries.get("retry_on", RetrySettings.retry_on))
    if retry_on is None:
        return None
    return RetrySettings(
        max_attempts=retries.get("max_attempts", 2),
        retry_on=retry_on,
        total_ms=timeouts.get("total_ms", spec.TIMEOUT_MS),
        respect_retry_after=on_429.get("respect_retry_after", True),
        max_sleep_seconds=on_429.get("max_sleep_seconds", 60.0),
    )


def _items(value: Any) -> tuple | None:
    """The items of a list (or of any value that has items) as a tuple; None for a value that
    has none (a number, a boolean, null)."""
    return tuple(value) if isinstance(value, (list, tuple, str, dict, bytes, set, frozenset)) else None


def _float(value: Any) -> float | None:
    """*value* as a float (a number, or a string that spells one); None when it is neither."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _tool_replay_config(doc: Located, raw: dict) -> Built[tuple]:
    """A scenario contract's `tool_replay_config`: per tool its key paths, version and
    sanitize paths, each path compiled; keep and drop together are refused."""
    table = raw.get("tool_replay_config")
    if not isinstance(table, dict):
        return Built(())  # absent, or reported by the contract's own mapping check
    problems = []
    if raw.get("scenario") is not True:
        problems.append(doc.problem(("tool_replay_config",),
                                    "tool_replay_config is for scenario contracts: add scenario: true"))
    out = []
    for tool, entry in table.items():
        where = ("tool_replay_config", tool)
        problems += mapping_problems(doc, where, entry, spec.TOOL_REPLAY_KEYS)
        if not isinstance(entry, dict):
            continue
        sanitize = entry.get("sanitize") if isinstance(entry.get("sanitize"), dict) else {}
        if "keep" in sanitize and "drop" in sanitize:
            problems.append(doc.problem(where + ("sanitize",), "give either keep or drop, not both"))
        version = entry.get("version")
        key, keep, drop = (_json_paths(doc, where + part, value) for part, value in (
            (("key",), entry.get("key")), (("sanitize", "keep"), sanitize.get("keep")),
            (("sanitize", "drop"), sanitize.get("drop"))))
        problems += key.problems + keep.problems + drop.problems
        out.append((str(tool), ToolReplay(key=key.value,
                                          version=str(version) if isinstance(version, (str, int)) else None,
                                          keep=keep.value, drop=drop.value or (), source=doc.source(where))))
    return Built(tuple(out), tuple(problems))


def _json_paths(doc: Located, path: tuple, value: Any) -> Built[tuple[str, ...]]:
    """The valid JSONPaths of a list (None when there is no list), and the problem of each invalid one."""
    if not isinstance(value, list):
        return Built(None)
    good, problems = [], []
    for i, text in enumerate(value):
        if not isinstance(text, str):
            continue  # reported by the mapping check (a list of strings)
        try:
            compile_path(text)
        except JSONPathError as exc:
            problems.append(doc.problem(path + (i,), f"invalid JSONPath {text!r}: {exc}"))
            continue
        good.append(text)
    return Built(tuple(good), tuple(problems))


def _trajectory(doc: Located, raw: dict) -> Built[Trajectory]:
    """The `trajectory` checks of a scenario contract; None when its tool_sequence's tools has
    no items (a number: reported by the vocabulary check)."""
    t = raw.get("trajectory")
    if not isinstance(t, dict):
        return Built(Trajectory())
    problems = []
    seq = t.get("tool_sequence") if isinstance(t.get("tool_sequence"), dict) else {}
    if seq and ("mode" not in seq or "tools" not in seq):
        problems.append(doc.problem(("trajectory", "tool_sequence"), "tool_sequence needs both mode and tools"))
    steps = []
    for i, entry in enumerate(t.get("step_invariants") or [] if isinstance(t.get("step_invariants"), list) else []):
        p = ("trajectory", "step_invariants", i)
        problems += mapping_problems(doc, p, entry, spec.STEP_INVARIANT_KEYS, ("step", "invariants"))
        if isinstance(entry, dict) and isinstance(entry.get("step"), int):
            invariants = compile_invariants(doc, p + ("invariants",), entry.get("invariants"))
            problems += invariants.problems
            steps.append((entry["step"], invariants.value))
    retried = []
    for i, entry in enumerate(t.get("retried_steps") or [] if isinstance(t.get("retried_steps"), list) else []):
        wrong = mapping_problems(doc, ("trajectory", "retried_steps", i), entry, spec.RETRIED_STEP_KEYS,
                                 ("step", "expected_error"))
        problems += wrong
        if isinstance(entry, dict) and not wrong:  # (a list as its step cannot go into the set)
            retried.append((entry.get("step"), entry.get("expected_error")))
    tools = _items(seq.get("tools") or ())
    if tools is None:
        return Built(None, tuple(problems))
    final = compile_invariants(doc, ("trajectory", "final_invariants"), t.get("final_invariants"))
    return Built(Trajectory(
        sequence_mode=seq.get("mode") if isinstance(seq.get("mode"), str) else None,
        sequence_tools=tuple(x for x in tools if isinstance(x, str)),
        max_tool_calls=t.get("max_tool_calls") if isinstance(t.get("max_tool_calls"), int) else None,
        final_invariants=final.value,
        step_invariants=tuple(steps),
        retried_steps=frozenset(retried),
        source=doc.source(("trajectory",)),
    ), tuple(problems) + final.problems)
