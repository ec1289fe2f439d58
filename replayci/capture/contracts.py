"""The contracts of captured traffic: one per tool set, each captured answer a case with its own
checks (`inference.case_expectations`), or with `--draft` a draft whose checks are those every
answer satisfies; and a scenario contract per agent session."""
from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..checks.failure import RANK, Classification
from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..core.hashing import h
from ..formats import NormalizeError, normalize
from ..formats.canonical import unnamed_call
from ..pack.sources import parse_yaml
from . import budget
from .budget import scenario_within_budget, split
from .inference import (
    Observation,
    case_expectations,
    contract_fields,
    first_user_text,
    infer_contract,
    pinned_failure,
    retried_errors,
    slug_words,
    step_invariants,
    tool_fields,
)
from .packfiles import yaml_text
from .yamledit import append_golden_cases

CAPTURED_BY = "replayci proxy"
WRITERS = ("replayci proxy", "replayci import")
MARKER = "# replayci: generated"
_MARKER_LINE = (MARKER + " (rewritten on every capture or import while this line and the first stay;\n"
                "# remove either to keep your edits: new cases are then appended)\n")


def header(writer: str = CAPTURED_BY, scenario: bool = False) -> str:
    """The first lines of a generated contract: who wrote it, and the generated marker."""
    what = ("one agent session, replayed step by step" if scenario
            else "one case per exchange whose request offers these tools")
    return f"# Written by `{writer}`: {what}.\n" + _MARKER_LINE


HEADER = header()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_MAX_NAME = 60
_PART = re.compile(r"\.part\d+\Z")  # how a contract's second, third... file is named (`part_path`)


@dataclass(frozen=True)
class Known:
    """What was worked out for a case when its exchange was read: its answer as a run reads it
    (None: it cannot) and its own checks (None: not worked out)."""

    normalized: dict | None
    expectations: dict | None = None


@dataclass
class Case:
    """One captured exchange as a golden case of its contract."""

    id: str
    input_ref: str
    description: str
    captured_at: str
    upstream: str
    neutral: dict  # the request, neutral form
    response: Any  # the answer as the fixture holds it
    status: int
    headers: dict | None = None  # the answer's kept headers (an error's type may be in one)
    known: Known | None = None  # worked out already, when its exchange was read

    @functools.cached_property
    def normalized(self) -> dict | None:
        """The answer's normalized document; None when replayci cannot read it (no case then), as
        when a tool call's name is no string (a pack refuses such a fixture)."""
        if self.known is not None:
            return self.known.normalized
        try:
            doc = normalize(self.response, status=self.status, headers=self.headers)
        except NormalizeError:
            return None
        return doc if unnamed_call(doc) is None else None

    @functools.cached_property
    def inferred(self) -> dict | None:
        """observe's contract for this one answer; None for an error answer."""
        doc = self.normalized
        if doc is None or not doc.get("success"):
            return None
        obs = Observation(self.id, self.input_ref, self.neutral, description="-", response=doc)
        out = infer_contract(obs, self.upstream, str(self.neutral.get("model") or ""), "")
        out.pop("golden_cases", None)
        return out

    @functools.cached_property
    def expectations(self) -> dict:
        """The case's own checks, or its pinned failure (worked out once: a contract lists every
        case each time it is written)."""
        if self.known is not None and self.known.expectations is not None:
            return self.known.expectations
        return case_expectations(self.normalized, self.neutral)

    def entry(self, draft: bool = False) -> dict:
        """The golden case as the contract lists it: an answer that fails whatever is checked (an
        error) is a pinned negative case; other answers carry their own checks (unless *draft*)."""
        out: dict[str, Any] = {"id": self.id, "input_ref": self.input_ref, "description": self.description}
        if draft:
            if self.inferred is None:
                out.update({"expect_ok": False, "expected_error": Classification.UNEXPECTED_ERROR.value,
                            "category": "edge_case"})
            else:
                out["category"] = "happy_path"
            return out
        expectations = self.expectations
        out["category"] = "edge_case" if expectations.get("expect_ok") is False else "happy_path"
        out.update(expectations)
        return out


def tool_names(neutral: dict) -> list[str]:
    """The names of the tools a (neutral) request offers, sorted, each once."""
    names = set()
    for tool in neutral.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else (tool.get("name") if isinstance(tool, dict) else None)
        if isinstance(name, str) and name:
            names.add(name)
    return sorted(names)


def contract_name(names: list[str], prefix: str = "captured") -> str:
    """The contract of a tool set: *prefix* and the tool names (a digest when too long or ambiguous)."""
    if not names:
        return f"{prefix}_no_tools"
    joined = _UNSAFE.sub("_", "__".join(names))
    if len(joined) > _MAX_NAME or any("__" in n for n in names) or joined != "__".join(names) \
            or _PART.search(joined):  # a tool set is never named as another one's part file
        joined = f"{joined[:40].rstrip('_.-')}_{h(names)[:8]}"
    return f"{prefix}_{joined}"


def case_name(prefix: str, neutral: dict, key: str, occurrence: int | None, digits: int = 8) -> str:
    """A captured exchange's case id (its fixture's name): the API, the user's first words, the
    model call's step in its conversation when it is not the first, the request's digest (its
    first *digits*) and its occurrence (none for an imported exchange, whose digest is its
    answer's too): `chat-what-is-the-weather-in-paris-3f2a9c1b-1`, `chat-plan-a-trip-step2-9e0c4d7a-1`."""
    words = slug_words(first_user_text(neutral))
    messages = neutral.get("messages")
    answered = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant") \
        if isinstance(messages, list) else 0
    step = f"step{answered + 1}" if answered else ""
    return "-".join(p for p in (prefix, words, step, key[:digits], "" if occurrence is None else str(occurrence))
                    if p)


def _called(inferred: dict) -> list[str]:
    return list(inferred.get("expect_tools") or ([inferred["tool"]] if "tool" in inferred else []))


def _common_calls(per_case: list[list[dict]]) -> list[dict]:
    """Expected calls every case satisfies: per tool, as many as the case calling it least made,
    the k-th keeping the argument invariants all k-th calls share."""
    first, out = per_case[0], []
    seen: dict[str, int] = {}
    for entry in first:
        name = entry["name"]
        k = seen[name] = seen.get(name, 0) + 1
        nth = [[e for e in calls if e["name"] == name][k - 1:k] for calls in per_case]
        if not all(nth):
            continue
        invariants = [inv for inv in entry.get("argument_invariants") or ()
                      if all(inv in (n[0].get("argument_invariants") or ()) for n in nth)]
        out.append({"name": name, **({"argument_invariants": invariants} if invariants else {})})
    return out


def common_expectations(inferred: list[dict]) -> dict:
    """The checks of observe's inference that hold for every one of the answers."""
    if not inferred:
        return {}
    out: dict[str, Any] = {}
    tools = [t for t in _called(inferred[0]) if all(t in _called(other) for other in inferred[1:])]
    if tools:
        out.update(tool_fields(tools))
    calls = _common_calls([i.get("expected_tool_calls") or [] for i in inferred])
    if calls:
        out["expected_tool_calls"] = calls
    outputs = [inv for inv in (inferred[0].get("assertions") or {}).get("output_invariants") or ()
               if all(inv in (i.get("assertions") or {}).get("output_invariants", ()) for i in inferred[1:])]
    if outputs:
        out["assertions"] = {"output_invariants": outputs}
    return out


def render(names: list[str], cases: list[Case], *, draft: bool = False, writer: str = CAPTURED_BY) -> str:
    """The contract file for a tool set's captured cases (in capture order): each case with its
    own checks, or with *draft* a draft (`status: observed`) holding what every answer satisfies.
    (The first file only, when they need more: `render_parts`.)"""
    return render_parts(names, cases, draft=draft, writer=writer)[0]


def render_parts(names: list[str], cases: list[Case], *, draft: bool = False,
                 writer: str = CAPTURED_BY) -> list[str]:
    """The contract files of a tool set's captured cases: one, unless the cases pinning less
    still pass what a pack reads (`budget.split`): then each file holds a part of them."""
    cases = sorted((c for c in cases if c.normalized is not None), key=lambda c: (c.captured_at, c.id))
    offered = ", ".join(names) if names else "no tools"
    doc: dict[str, Any] = {"description": f"Traffic captured by {writer} whose requests offer: {offered}."}
    if draft:
        doc.update({"status": "observed", **common_expectations([c.inferred for c in cases if c.inferred])})
    else:
        doc.update(contract_fields([c.normalized for c in cases
                                    if c.normalized is not None and "assertions" in c.expectations]))
    parts = split([c.entry(draft) for c in cases], doc)
    return [yaml_text({**doc, "golden_cases": part}, header(writer)) for part in parts]


def part_path(path: str, k: int) -> str:
    """The file of a tool set's contract holding its *k*-th part of cases (the first: *path*)."""
    return path if k == 1 else f"{path[:-len('.yaml')]}.part{k}.yaml"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _parts_on_disk(path: str) -> dict[int, str]:
    """The texts of the part files (2, 3, ...) a tool set's contract has."""
    out, k = {}, 2
    while (text := _read(part_path(path, k))) is not None:
        out[k] = text
        k += 1
    return out


def tool_set_files(path: str, render_all: Callable[[list[Case]], list[str]], cases: list[Case],
                   new: list[Case], draft: bool = False) -> dict[str, str | None]:
    """What the files of a tool set's contract at *path* become (those that change, None for a
    generated part file no case is left for): while
    capture owns it, every one of *cases* rendered (*render_all*: `render_parts`), over as many
    files as they need; in a file the user took over, the *new* cases it does not list yet
    appended, or, when that would pass what a pack reads, written to generated part files
    beside it. A part file the user took over is kept, its cases listed nowhere else.
    Raises InsertError when the user's file has no golden_cases list to append to."""
    main, parts = _read(path), _parts_on_disk(path)
    theirs = {k for k, text in parts.items() if not owned(text)}
    taken = set().union(*(listed_case_ids(parts[k]) for k in theirs))
    if main is None or owned(main):
        return _placed(path, render_all([c for c in cases if c.id not in taken]), theirs, parts, main)
    listed = listed_case_ids(main) | taken
    in_parts = set().union(*(listed_case_ids(text) for k, text in parts.items() if k not in theirs))
    fresh = [c for c in new if c.id not in listed | in_parts and c.normalized is not None]
    if not fresh:
        return {}
    if not in_parts:
        appended = _appended(main, fresh, path, draft)
        if appended is not None:
            return {path: appended}
    kept = [c for c in cases if c.id in in_parts and c.id not in {f.id for f in fresh}]
    return _placed(path, render_all(kept + fresh), {1} | theirs, parts, main)


def _appended(text: str, cases: list[Case], path: str, draft: bool) -> str | None:
    """The user's contract *text* with *cases* appended, pinning less where needed; None when
    they do not fit in it."""
    try:
        doc = parse_yaml(text, "contract").value
    except ConfigError:
        doc = None
    used = budget.nodes(doc)
    entries = budget.within_budget([c.entry(draft) for c in cases], budget.NODE_BUDGET - used)
    if not budget.fits(entries, used, len(text.encode("utf-8", "surrogatepass"))):
        return None
    return append_golden_cases(text, [fields_of(e) for e in entries], path)


def _placed(path: str, texts: list[str], skip: set[int], parts: dict[int, str],
            main: str | None) -> dict[str, str | None]:
    """*texts* written to the files of the contract at *path* in order, past those in *skip*
    (the user's): only the files whose text changes, and None for a generated part to remove."""
    out: dict[str, str | None] = {}
    k = 1
    for text in texts:
        while k in skip:
            k += 1
        current = main if k == 1 else parts.get(k)
        if text != current:
            out[part_path(path, k)] = text
        k += 1
    # Generated parts past the last one written hold cases now listed elsewhere or gone: removed,
    # unless a part of the user's comes after them (the parts are read in an unbroken row).
    last_theirs = max((n for n in skip if n in parts), default=0)
    for n in parts:
        if n >= k and n > last_theirs and n not in skip:
            out[part_path(path, n)] = None
    return out


def owned(text: str) -> bool:
    """Whether a contract file is still capture's to rewrite: its first line and the generated
    marker kept."""
    first, _, rest = text.partition("\n")
    if not any(first.startswith(f"# Written by `{w}`") for w in WRITERS):
        return False
    if not any(line.startswith(MARKER) for line in rest.splitlines()):
        return False
    try:
        parse_yaml(text, "contract")  # read as the loader reads it (YAML 1.2 scalars)
    except ConfigError:
        return False
    return True


def save(path: str, render_all: Callable[[list[Case]], list[str]], cases: list[Case], new: list[Case],
         draft: bool = False) -> list[str]:
    """Write a tool set's contract files (`tool_set_files`): the paths written or removed."""
    files = tool_set_files(path, render_all, cases, new, draft)
    for target, text in files.items():
        if text is None:
            remove_part(target)
        else:
            write_atomic(target, text)
    return sorted(files)


def remove_part(path: str) -> None:
    """Remove a generated part file no case is left for (gone already is as good)."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def listed_case_ids(text: str) -> set[str]:
    """The ids of the golden cases a contract file lists (none when it does not parse)."""
    try:
        doc = parse_yaml(text, "contract").value
    except ConfigError:
        return set()
    cases = doc.get("golden_cases") if isinstance(doc, dict) else None
    return {c["id"] for c in cases or () if isinstance(c, dict) and isinstance(c.get("id"), str)}


# Characters YAML holds only escaped (C1 controls, DEL, line and paragraph separators, a BOM,
# non-characters); JSON's encoder escapes the C0 controls itself.
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def entry_fields(case: Case, draft: bool = False) -> list[tuple[str, str]]:
    """A case as (key, YAML value) pairs for appending to a contract someone else keeps."""
    return fields_of(case.entry(draft))


def fields_of(entry: dict) -> list[tuple[str, str]]:
    """A case *entry* as (key, YAML value) pairs: JSON, which YAML reads, with what YAML cannot
    hold bare escaped."""
    return [(k, _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", json.dumps(v, ensure_ascii=False)))
            for k, v in entry.items()]


# ----------------------------------------------------------------------------- sessions

_DEFAULT_MAX_STEPS = 8
_SAID_CALLS = 12  # the calls a session's description names; the others are counted


@dataclass
class Scenario:
    """A scenario contract written from one session's fixture: its id and its file's text."""

    name: str
    text: str


def _step_response(step: Any, n: int, display: str) -> dict:
    response = step.get("response") if isinstance(step, dict) else None
    if not isinstance(response, dict):
        raise ConfigError(f"{display}: trajectory step {n} must be an object with a 'response'")
    try:
        return normalize(response)
    except NormalizeError as exc:
        raise ConfigError(f"{display}: trajectory step {n}: {exc}") from None


def _heard(request: dict, steps: list[dict]) -> dict:
    """*request* as the model saw it after *steps*: their calls and tool results appended, so a
    value an earlier tool returned counts as said."""
    messages = list(request.get("messages") or [])
    for step in steps:
        messages.append({"role": "assistant", "content": [c.get("arguments") for c in step["calls"]]})
        messages += [{"role": "tool", "content": r.get("result")} for r in step["results"]]
    return {**request, "messages": messages}


def _origin(doc: dict, writer: str) -> str:
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    source = meta.get("imported_from")
    if isinstance(source, dict) and isinstance(source.get("file"), str):
        return f"imported from {source['file']}"
    return f"captured by {writer}"


def scenario_name(request: dict, tools: list[str], prefix: str = "session") -> str:
    """A session's contract id: the tools it called, the user's first words and a digest of its
    first request (stable over re-recordings; letters, digits, '_' and '-' only)."""
    names = "_".join(dict.fromkeys(_UNSAFE.sub("_", t) for t in tools))[:40].strip("_.-") or "no_tools"
    words = slug_words(first_user_text(request), 30)
    digest = h({"messages": request.get("messages"), "tools": request.get("tools")})[:6]
    return "_".join(p for p in (prefix, names, words.replace("-", "_"), digest) if p)


def session_failure(request: dict, steps: list[dict]) -> str | None:
    """The classification a recorded session gets whatever its contract says (an error, a call
    to a tool not offered, arguments or a structured output that break their schema: the
    first in classification order over its steps), else None."""
    found = [pinned_failure(s["response"], _heard(request, steps[:n])) for n, s in enumerate(steps)]
    # A step whose calls broke their schema and that the agent retried (a step followed it) is
    # pinned where it happened (`retried_steps`), not as the session's failure.
    found = [None if n < len(steps) - 1 and f in retried_errors(steps[n]["response"], request) else f
             for n, f in enumerate(found)]
    ranked = sorted((RANK[f], f) for f in found if f is not None)
    return ranked[0][1] if ranked else None


def render_scenario(doc: dict, fixture_path: str, *, case_id: str = "session", name: str | None = None,
                    writer: str = CAPTURED_BY, draft: bool = False) -> Scenario:
    """The scenario contract of a session's fixture (*doc*: the first request, the recorded
    `trajectory` and `tool_results`; *fixture_path*: its `input_ref`, relative to the golden
    directory): its tool sequence, its number of calls and each step's calls checked; its one
    case *case_id*; named *name* (default: `scenario_name`); a draft (`status: observed`) with
    *draft*. Raises TooLarge when no contract a pack reads can hold the session."""
    request = doc.get("request")
    trajectory = doc.get("trajectory")
    if not isinstance(request, dict) or not isinstance(trajectory, list) or not trajectory:
        raise ConfigError(f"{fixture_path}: a scenario fixture needs a 'request' and a non-empty 'trajectory'")
    steps: list[dict] = []
    for n, raw in enumerate(trajectory, 1):
        response = _step_response(raw, n, fixture_path)
        results = raw.get("tool_results") if isinstance(raw.get("tool_results"), list) else []
        steps.append({"response": response, "calls": response.get("tool_calls") or [],
                      "results": [r for r in results if isinstance(r, dict)]})
    tools = [c.get("name") for s in steps for c in s["calls"]]
    case: dict[str, Any] = {"id": case_id, "input_ref": fixture_path, "category": "multi_step",
                            "description": f"\"{first_user_text(request)[:80]}\" ({len(steps)} model calls)"}
    trajectory_checks: dict[str, Any] = {"tool_sequence": {"mode": "strict", "tools": tools},
                                         "max_tool_calls": len(tools)}
    failed = session_failure(request, steps)
    if failed is not None:  # an answer no contract accepts: the session is a pinned negative
        case.update({"expect_ok": False, "expected_error": failed, "category": "edge_case"})
    else:
        trajectory_checks["step_invariants"] = [
            {"step": n, "invariants": step_invariants(s["response"], _heard(request, steps[:n - 1]))}
            for n, s in enumerate(steps, 1)]
        # A step whose calls broke their schema, which the agent retried: pinned as recorded, so
        # the session passes and any other change in it still fails.
        retried = [{"step": n, "expected_error": kind} for n, s in enumerate(steps[:-1], 1)
                   for kind in retried_errors(s["response"], request)]
        if retried:
            trajectory_checks["retried_steps"] = retried
    said = " -> ".join(tools[:_SAID_CALLS]) + (f" -> ... ({len(tools):,} calls)" if len(tools) > _SAID_CALLS else "")
    contract: dict[str, Any] = {"description": f"Agent session {_origin(doc, writer)}: {said or 'no tool calls'}."}
    if draft:
        contract["status"] = "observed"
    contract["scenario"] = True
    if len(steps) > _DEFAULT_MAX_STEPS:
        contract["max_steps"] = len(steps)
    contract["trajectory"] = trajectory_checks
    contract["golden_cases"] = [case]
    contract = scenario_within_budget(contract)  # TooLarge past what a pack reads, however little it pins
    return Scenario(name or scenario_name(request, tools), yaml_text(contract, header(writer, scenario=True)))
