"""Multi-step scenarios judged as a trajectory: the loop's outcome, and the checks on it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.hashing import tools_key_of
from ..core.jsonvalue import show
from ..formats.output import with_output
from .failure import RANK, Classification, Failure
from .grounding import ungrounded_numbers
from .response import (
    argument_mismatches,
    invariant_failures,
    malformed_arguments,
    malformed_output,
    named_calls,
    named_response,
    output_outcome,
    output_violations,
    schema_violations,
    strict_matches,
    undeclared_tools,
)
from .schemas import CompiledSchema, tool_table

if TYPE_CHECKING:
    from ..pack.model import Contract


class ToolResultMissing(Exception):
    """A tool call with no recorded result under tool_replay: strict."""

    def __init__(self, tool: str, arguments: Any, key: str, hint: str = ""):
        super().__init__(f"no recorded result for {tool}({show(arguments, 120)}) (args_hash {key})"
                         + (f"; {hint}" if hint else ""))
        self.tool, self.arguments, self.key = tool, arguments, key


@dataclass
class Loop:
    """The outcome of driving (or replaying) an agent loop."""

    steps: list[dict]
    missing: ToolResultMissing | None = None
    limit_reached: bool = False
    diverged: tuple[Failure, ...] = ()  # what the last step did that the contract forbids: the loop stopped there


def calls_of(steps: list[dict]) -> list[dict]:
    """Every tool call of every step, in order."""
    return [c for s in steps for c in s["response"].get("tool_calls") or []]


def step_failures(contract: Contract, request: dict, loop: Loop,
                  tools: dict[str, CompiledSchema]) -> list[Failure]:
    """Each step's response on its own: a provider error, malformed arguments, schema violations."""
    failures: list[Failure] = []
    for n, step in enumerate(loop.steps, 1):
        response = step["response"]
        if not response.get("success", True):
            err = response.get("error") or {}
            failures.append(Failure(Classification.UNEXPECTED_ERROR,
                                    f"step {n}: provider error {err.get('type') or 'error'}"
                                    + (f" (HTTP {err['status']})" if err.get("status") else "")
                                    + (f": {err.get('message')}" if err.get("message") else ""),
                                    path="$.error", operator="success", source=contract.source))
            continue
        retried = contract.trajectory.retried_steps  # (the recorded step's failure: not the run's)
        failures += [_at_step(f, n) for f in _call_failures(contract, request, response.get("tool_calls") or [], tools)
                     if (n, f.kind) not in retried]
        failures += [_at_step(f, n) for f in malformed_output(contract, request, response)
                     + output_violations(contract, request, response)]
    return failures


def _call_failures(contract: Contract, request: dict, calls: list[dict],
                   tools: dict[str, CompiledSchema]) -> list[Failure]:
    """One step's calls on their own: a tool the request does not offer, arguments that are
    no object or break the tool's schema."""
    return (undeclared_tools(contract, calls, tools, request) + malformed_arguments(contract, calls)
            + schema_violations(contract, calls, tools))


def missing_tools(contract: Contract, loop: Loop, called: list) -> list[Failure]:
    """tool_not_invoked when the run called nothing, else wrong_tool per expected tool never called."""
    expected = contract.expected_names
    if expected and not called:
        return [Failure(Classification.TOOL_NOT_INVOKED, f"no tool call in {len(loop.steps)} steps; expected "
                        + ", ".join(expected), path="$.tool_calls", operator="called",
                        source=contract.source)]
    shown = ", ".join(map(str, called)) or "none"
    return [Failure(Classification.WRONG_TOOL, f"{name} was never called (calls: {shown})",
                    path="$.trajectory[*].tool_calls[*].name", operator="called",
                    expected=name, source=contract.source)
            for name in expected if name not in called]


def whole_run_matches(contract: Contract, all_calls: list[dict], called: list) -> list[Failure]:
    """tool_call_match_mode: strict, expected_tool_calls and tool_order: strict over the whole run."""
    if not called:
        return []
    failures: list[Failure] = []
    if contract.match_mode == "strict" and contract.expected_names:
        failures += strict_matches(contract, called)
    if contract.expected_tool_calls or contract.tool_order == "strict":
        failures += argument_mismatches(contract, all_calls)
    return failures


def sequence_violations(contract: Contract, names: list) -> list[Failure]:
    """sequence_violation: the tools called break the trajectory's tool_sequence."""
    t = contract.trajectory
    mode, tools = t.sequence_mode, list(t.sequence_tools)
    if mode is None:
        return []
    ok = True
    if mode == "strict":
        ok = names == tools
    elif mode == "unordered":
        ok = Counter(names) == Counter(tools)
    elif mode == "superset":
        ok = all(n in tools for n in names)
    elif mode == "subset":
        it = iter(names)
        ok = all(any(n == want for n in it) for want in tools)
    if ok:
        return []
    return [Failure(Classification.SEQUENCE_VIOLATION,
                    f"tool sequence {names} breaks tool_sequence {mode} {tools}",
                    path="$.trajectory[*].tool_calls[*].name", operator=f"tool_sequence:{mode}",
                    expected=tools, actual=show(names), source=t.source)]


def step_limit(contract: Contract, loop: Loop) -> list[Failure]:
    """step_limit_exceeded: the model still called tools when max_steps ran out."""
    if not loop.limit_reached:
        return []
    return [Failure(Classification.STEP_LIMIT_EXCEEDED,
                    f"still calling tools after max_steps ({contract.max_steps}) model calls",
                    path="$.trajectory", operator="max_steps", expected=contract.max_steps,
                    actual=str(len(loop.steps)), source=contract.source)]


def trajectory_invariants(contract: Contract, request: dict, loop: Loop, called: list) -> list[Failure]:
    """invariant_violation: max_tool_calls, final and per-step invariants, output invariants,
    grounded numbers."""
    t = contract.trajectory
    failures: list[Failure] = []
    if t.max_tool_calls is not None and len(called) > t.max_tool_calls:
        failures.append(Failure(Classification.INVARIANT_VIOLATION,
                                f"{len(called)} tool calls, at most {t.max_tool_calls} (max_tool_calls)",
                                path="$.trajectory[*].tool_calls", operator="max_tool_calls",
                                expected=t.max_tool_calls, actual=str(len(called)), source=t.source))
    final = loop.steps[-1]["response"] if loop.steps else {}
    failures += invariant_failures(Classification.INVARIANT_VIOLATION, t.final_invariants, final)
    for step_no, invariants in t.step_invariants:
        doc = loop.steps[step_no - 1]["response"] if step_no <= len(loop.steps) else None
        if doc is None:
            failures.append(Failure(Classification.INVARIANT_VIOLATION, f"step {step_no} never happened "
                                    f"({len(loop.steps)} steps)", path=f"$.trajectory[{step_no - 1}]",
                                    operator="step", source=t.source))
            continue
        failures += [_at_step(f, step_no)
                     for f in invariant_failures(Classification.INVARIANT_VIOLATION, invariants, doc)]
    failures += output_outcome(contract, final)[0]
    if contract.grounded_numbers:
        failures += ungrounded_numbers(final, request, [s.get("tool_results") for s in loop.steps], contract.source)
    return failures


def check_trajectory(contract: Contract, request: dict, loop: Loop) -> list[Failure]:
    """Every failing check of a scenario run, ranked so the first classifies."""
    loop = Loop([{**s, "response": with_output(named_response(s["response"]), request)} for s in loop.steps],
                loop.missing, loop.limit_reached, loop.diverged)
    tools = tool_table(tools_key_of(request), request.get("tools"))
    all_calls = calls_of(loop.steps)
    called = [c.get("name") for c in all_calls]
    if loop.diverged:  # the run stopped there: what it forbids is the case's failure, not what never came
        forbidden = invariant_failures(Classification.INPUT_VIOLATION, contract.input_invariants, request)
        return sorted([*loop.diverged, *forbidden],
                      key=lambda f: RANK.get(f.kind, 99))
    failures = (step_failures(contract, request, loop, tools) + missing_tools(contract, loop, called)
                + whole_run_matches(contract, all_calls, called) + sequence_violations(contract, called)
                + step_limit(contract, loop) + trajectory_invariants(contract, request, loop, called)
                + invariant_failures(Classification.INPUT_VIOLATION, contract.input_invariants, request))
    failures.sort(key=lambda f: RANK.get(f.kind, 99))  # stable: keeps step order within a kind
    return failures


def judge_step(contract: Contract, step: int, request: dict, response: dict,
               previous: list[dict]) -> list[Failure]:
    """What the contract forbids in the answer of step *step* (from 1), judged as it arrives,
    before its tool results are looked up: a tool *request* does not offer, arguments that are
    no object or break the schema, a call tool_sequence cannot accept at this point, more calls
    than max_tool_calls (or than tool_call_match_mode: strict allows), a failed step
    invariant. *previous* are the steps before it ({"response": ...}). Each failure names the
    step, ranked so the first classifies; [] when the loop may go on."""
    response = named_response(response)
    if not response.get("success", True):
        return []  # a failed call ends the loop: judged with the rest of the run
    calls = response.get("tool_calls") or []
    before = [c.get("name") for c in named_calls(calls_of(previous))]
    names = before + [c.get("name") for c in calls]
    tools = tool_table(tools_key_of(request), request.get("tools"))
    failures = [f for f in _call_failures(contract, request, calls, tools)
                if (step, f.kind) not in contract.trajectory.retried_steps]
    if contract.match_mode == "strict" and contract.expected_names:
        failures += strict_matches(contract, names)
    t = contract.trajectory
    if t.max_tool_calls is not None and len(names) > t.max_tool_calls:
        failures.append(Failure(Classification.INVARIANT_VIOLATION,
                                f"{len(names)} tool calls, at most {t.max_tool_calls} (max_tool_calls)",
                                path="$.trajectory[*].tool_calls", operator="max_tool_calls",
                                expected=t.max_tool_calls, actual=str(len(names)), source=t.source))
    failures += sequence_departure(contract, names, len(before))
    for step_no, invariants in t.step_invariants:
        if step_no == step:
            failures += invariant_failures(Classification.INVARIANT_VIOLATION, invariants, response)
    failures = [_at_step(f, step) for f in failures]
    failures.sort(key=lambda f: RANK.get(f.kind, 99))
    return failures


def sequence_departure(contract: Contract, names: list, start: int) -> list[Failure]:
    """sequence_violation when the calls so far (*names*, the step's own from *start*) can no
    longer become a sequence tool_sequence accepts: strict, a call out of its place or past
    the list; unordered, a tool called more often than listed; superset, a tool not listed.
    (subset allows other calls between: only the run's end can break it.)"""
    t = contract.trajectory
    mode, tools = t.sequence_mode, list(t.sequence_tools)
    why = None
    for i in range(start, len(names)):
        name = names[i]
        if mode == "strict" and (i >= len(tools) or tools[i] != name):
            why = (f"call {i + 1} is {name}, the list has {len(tools)}" if i >= len(tools)
                   else f"call {i + 1} is {name}, expected {tools[i]}")
        elif mode == "unordered" and names[:i + 1].count(name) > tools.count(name):
            why = f"{name} called {names[:i + 1].count(name)} times, listed {tools.count(name)}"
        elif mode == "superset" and name not in tools:
            why = f"{name} is not listed"
        if why:
            break
    if why is None:
        return []
    return [Failure(Classification.SEQUENCE_VIOLATION,
                    f"tool sequence {names} breaks tool_sequence {mode} {tools}: {why}",
                    path="$.trajectory[*].tool_calls[*].name", operator=f"tool_sequence:{mode}",
                    expected=tools, actual=show(names), source=t.source)]


def _at_step(f: Failure, n: int) -> Failure:
    return Failure(f.kind, f"step {n}: {f.message}", f"step{n}:{f.path}", f.operator, f.schema_path,
                   f.expected, f.actual, f.source)
