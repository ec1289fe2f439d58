"""Contract mutation testing: what would each contract catch?

Every passing ``expect_ok: true`` case's normalized response is mutated deterministically
(the tool call dropped, renamed, its arguments broken, dropped, retyped or changed within
the schema, a call added, the calls reordered, the provider failing). Each mutant is
evaluated by the same contract with the engine's own ``evaluate_response``: *killed* when a
check fails, *survived* when the contract still passes it. Survivors say what no check
constrains; killed mutants can be written back as negative golden cases.
"""
from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...checks.failure import Failure
from ...checks.response import tool_schemas
from ...checks.schemas import validator_for
from ...config import Settings
from ...core.errors import ConfigError, Problem
from ...core.hashing import boundary_hashes
from ...core.jsonvalue import json_type, show
from ...engine.cases import Item, boundary_change, evaluate_response, select, skipped
from ...engine.recorded import RecordedSource
from ...formats.canonical import fixture_response, stable_response
from ...pack.fixtures import Fixture, load_fixture
from ...pack.model import Contract, Pack

FORMAT_VERSION = 1

# The mutation operators, in the order their mutants are generated and reported.
KINDS = (
    "text_instead_of_call",
    "rename",
    "rename_undeclared",
    "invalid_json",
    "drop_required",
    "drop_optional",
    "enum_outside",
    "type_change",
    "value_change",
    "extra_call",
    "reorder",
    "provider_error",
)

TEXT_ANSWER = "I can answer that without calling a tool."
MAX_VALUE_CANDIDATES = 40


# ------------------------------------------------------------------ values


@dataclass(frozen=True)
class Mutant:
    """One mutated response: its id (``kind:detail``), what it changed, and the document."""

    kind: str
    name: str
    what: str  # "dropping it", "\"Parit\" instead of \"Paris\"": the change, in words
    hint: str  # what no check constrains, when the mutant survives
    response: dict


@dataclass(frozen=True)
class MutantOutcome:
    """A mutant's verdict under its contract: killed, survived, or error (not evaluable)."""

    case: str
    mutant: Mutant
    status: str  # killed | survived | error
    classification: str | None = None
    failures: tuple[Failure, ...] = ()
    reason: str | None = None


@dataclass
class ContractMutation:
    """The mutants of one contract's passing cases and their outcomes."""

    pack: Pack
    contract: Contract
    outcomes: list[MutantOutcome] = field(default_factory=list)
    bases: dict[str, Fixture] = field(default_factory=dict)  # case id -> fixture mutated
    not_mutated: list[tuple[str, str]] = field(default_factory=list)  # (case, why)

    @property
    def counted(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.status != "error"]

    @property
    def mutants(self) -> int:
        return len(self.counted)

    @property
    def killed(self) -> int:
        return sum(1 for o in self.counted if o.status == "killed")

    @property
    def kill_rate(self) -> float | None:
        """killed / mutants, or None when no passing case could be mutated."""
        return self.killed / self.mutants if self.mutants else None

    @property
    def survivors(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.status == "survived"]

    def to_dict(self) -> dict:
        rate = self.kill_rate
        return {
            "pack": self.pack.pack_id,
            "contract": self.contract.id,
            "mutants": self.mutants,
            "killed": self.killed,
            "kill_rate": round(rate, 4) if rate is not None else None,
            "survivors": [{"case": o.case, "mutant": o.mutant.name, "hint": o.mutant.hint}
                          for o in self.survivors],
        }


@dataclass
class MutationReport:
    contracts: list[ContractMutation]
    packs: list[Pack]
    warnings: list[str] = field(default_factory=list)
    not_mutated: list[tuple[str, str, str]] = field(default_factory=list)  # (pack, contract, why)

    @property
    def mutants(self) -> int:
        return sum(c.mutants for c in self.contracts)

    @property
    def killed(self) -> int:
        return sum(c.killed for c in self.contracts)

    def below(self, min_kill_rate: float) -> list[ContractMutation]:
        """The contracts whose kill rate is under *min_kill_rate* (unmeasured ones never are)."""
        return [c for c in self.contracts
                if c.kill_rate is not None and c.kill_rate < min_kill_rate - 1e-12]

    def to_dict(self) -> dict:
        return {"version": FORMAT_VERSION, "contracts": [c.to_dict() for c in self.contracts]}


# ------------------------------------------------------------------ mutant generation


def _arg_path(name: str) -> str:
    """An argument as a JSONPath rooted at the parsed arguments: $.unit, $['first-name']."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"$.{name}"
    return "$['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


def _shown(value: Any) -> str:
    return show(value, 40)


def _raw(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def _labels(calls: list[dict]) -> list[str]:
    """How each call is named in mutant ids: its tool, with [i] when the tool is called twice."""
    names = [str(c.get("name")) for c in calls]
    return [n if names.count(n) == 1 else f"{n}[{i}]" for i, n in enumerate(names)]


class _Schemas:
    """What the schemas that apply to one call say about its arguments."""

    def __init__(self, contract: Contract, declared: dict[str, Any], name: Any, arguments: dict):
        schemas = []
        if name in declared:
            schemas.append(declared[name])
        if contract.arguments_schema is not None and name == contract.tool:
            schemas.append(getattr(contract.arguments_schema, "schema", contract.arguments_schema))
        # Only the schemas the recorded arguments satisfy: a change "staying valid" never
        # has to meet a schema the passing response itself did not.
        self.validators = [v for v in (validator_for(s) for s in schemas) if v.is_valid(arguments)]
        self.required: set[str] = set()
        self.props: dict[str, list[Any]] = {}
        for s in schemas:
            if not isinstance(s, dict):
                continue
            req = s.get("required")
            if isinstance(req, list):
                self.required.update(r for r in req if isinstance(r, str))
            props = s.get("properties")
            if isinstance(props, dict):
                for key, sub in props.items():
                    self.props.setdefault(key, []).append(sub)

    def valid(self, arguments: dict) -> bool:
        return all(v.is_valid(arguments) for v in self.validators)

    def prop(self, key: str, what: str) -> Any:
        for sub in self.props.get(key, ()):
            if isinstance(sub, dict) and what in sub:
                return sub[what]
        return None


def _outside_enum(value: Any, enum: list) -> Any:
    """A value of the same kind as *value* that the enum does not allow."""
    def fresh(candidates):
        for c in candidates:
            if not any(c == e and type(c) is type(e) for e in enum):
                return c
        return None

    if isinstance(value, str):
        return fresh([value.upper(), value.capitalize(), f"{value}_other", "other"])
    numbers = [e for e in enum if isinstance(e, (int, float)) and not isinstance(e, bool)]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and numbers:
        top = max(numbers)
        return fresh([top + 1, top + 2])
    return fresh(["other", "other_1"])


def _retyped(value: Any) -> Any:
    """*value* as another JSON type, the way models get it wrong: 2 -> "2", {...} -> "{...}"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        if re.fullmatch(r"-?[0-9]+", value.strip()):
            return int(value)
        if re.fullmatch(r"-?[0-9]*\.[0-9]+([eE][-+]?[0-9]+)?", value.strip()):
            return float(value)
        return [value]
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return ""  # null -> an empty string


def _shift(ch: str, step: int) -> str:
    for lo, n in (("a", 26), ("A", 26), ("0", 10)):
        base = ord(lo)
        if base <= ord(ch) < base + n:
            return chr(base + (ord(ch) - base + step) % n)
    return ch


def _string_candidates(value: str, enum: Any) -> Iterator[str]:
    if isinstance(enum, list):
        yield from (e for e in enum if isinstance(e, str))
    # One character moved within its class (letter, capital, digit) keeps the length and
    # usually the pattern: "LHR" -> "LHS", "2025-04-14" -> "2025-04-15".
    positions = [i for i, ch in enumerate(value) if ch.isascii() and ch.isalnum()]
    for i in reversed(positions):
        for step in (1, -1, 2):
            yield value[:i] + _shift(value[i], step) + value[i + 1:]
    yield value + "x"
    yield value[:-1] if value else "x"


def _number_candidates(value: float, sub: dict) -> Iterator[int | float]:
    enum = sub.get("enum")
    if isinstance(enum, list):
        yield from (e for e in enum if isinstance(e, (int, float)) and not isinstance(e, bool))
    step = sub.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        yield value + step
        yield value - step
    if isinstance(value, int):
        yield from (value + 1, value - 1, value + 2, value - 2, value * 2, value // 2, value + 10)
    else:
        yield from (value + 1.0, value - 1.0, value + 0.5, value - 0.5, value * 2, value / 2,
                    round(value + 0.01, 10), round(value - 0.01, 10))
    bounds = [sub.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
    bounds = [b for b in bounds if isinstance(b, (int, float)) and not isinstance(b, bool)]
    yield from bounds
    if len(bounds) >= 2:
        yield (min(bounds) + max(bounds)) / 2
    if isinstance(value, int):  # a whole number in a "number" field may move by a fraction
        yield from (value + 0.5, value - 0.5, value / 2)


def _changed_value(key: str, value: Any, arguments: dict, schemas: _Schemas) -> Any:
    """A different value for arguments[key] that keeps the arguments schema-valid, or None."""
    subs = [s for s in schemas.props.get(key, ()) if isinstance(s, dict)]
    merged: dict = {}
    for s in subs:
        for k, v in s.items():
            merged.setdefault(k, v)
    if isinstance(value, str):
        candidates: Iterator[Any] = _string_candidates(value, merged.get("enum"))
    else:
        candidates = _number_candidates(value, merged)
    tried = 0
    for cand in candidates:
        if cand == value and type(cand) is type(value):
            continue
        tried += 1
        if tried > MAX_VALUE_CANDIDATES:
            break
        trial = {**arguments, key: cand}
        if schemas.valid(trial):
            return cand
    return None


def mutants_of(contract: Contract, request: dict | None, response: dict) -> list[Mutant]:
    """Every mutant of one normalized response, in a fixed order (no randomness)."""
    out: list[Mutant] = []
    base = response
    calls: list[dict] = list(base.get("tool_calls") or [])
    declared = tool_schemas(request)
    labels = _labels(calls)

    def doc(**changes) -> dict:
        new = copy.deepcopy(base)
        new.update(copy.deepcopy(changes))
        return new

    def with_call(i: int, call: dict) -> dict:
        new = doc()
        new["tool_calls"][i] = call
        return new

    def add(kind: str, detail: str | None, what: str, hint: str, document: dict) -> None:
        if stable_response(document) == stable_response(base):
            return  # not a mutant: the response did not change
        out.append(Mutant(kind, f"{kind}:{detail}" if detail else kind, what, hint, document))

    expected = ", ".join(contract.expected_names) or ", ".join(labels) or "a tool"
    if calls:
        add("text_instead_of_call", None, "a text answer instead of the call",
            f"nothing requires a tool call: a text answer instead of calling {expected} went unnoticed",
            doc(tool_calls=[], content=base.get("content") or TEXT_ANSWER, stop_reason="stop"))

    for i, call in enumerate(calls):
        name = call.get("name")
        for other in declared:
            if other == name:
                continue
            add("rename", f"{labels[i]}->{other}", f"{other} instead of {name}",
                f"nothing checks which tool is called: {other} instead of {name} went unnoticed",
                with_call(i, {**copy.deepcopy(call), "name": other}))
        undeclared = f"{name}_undeclared"
        while undeclared in declared:
            undeclared += "_"
        add("rename_undeclared", f"{labels[i]}->{undeclared}", f"undeclared tool {undeclared}",
            f"nothing checks the tool name: the undeclared {undeclared} instead of {name} went unnoticed",
            with_call(i, {**copy.deepcopy(call), "name": undeclared}))

    for i, call in enumerate(calls):
        raw = call.get("arguments_raw")
        text = raw if isinstance(raw, str) else _raw(call.get("arguments"))
        broken = text.rstrip()[:-1] if text.rstrip() else "{"
        try:
            json.loads(broken)
            broken = "{" + text  # a cut that still parsed (a bare number): break it for sure
        except ValueError:
            pass
        add("invalid_json", labels[i], "truncated, invalid JSON arguments",
            f"nothing checks that the arguments of {name_of(call)} parse: invalid JSON went unnoticed",
            with_call(i, {**copy.deepcopy(call), "arguments": broken, "arguments_raw": broken}))

    argument_mutants: dict[str, list[tuple]] = {k: [] for k in
                                                ("drop_required", "drop_optional", "enum_outside",
                                                 "type_change", "value_change")}
    for i, call in enumerate(calls):
        args = call.get("arguments")
        if not isinstance(args, dict):
            continue
        name = name_of(call)
        schemas = _Schemas(contract, declared, call.get("name"), args)

        def changed(key: str, value: Any = None, *, drop: bool = False, _i=i, _call=call, _args=args) -> dict:
            new_args = {k: v for k, v in _args.items() if k != key}
            if not drop:
                new_args = {**_args, key: value}
            return with_call(_i, {**copy.deepcopy(_call), "arguments": new_args,
                                  "arguments_raw": _raw(new_args)})

        for key, value in args.items():
            path, detail = _arg_path(key), f"{labels[i]}.{key}"
            if key in schemas.required:
                argument_mutants["drop_required"].append((
                    detail, f"{path} of {name} dropped",
                    f"nothing checks {path} of {name}: dropping it (required) went unnoticed",
                    changed(key, drop=True)))
            else:
                argument_mutants["drop_optional"].append((
                    detail, f"{path} of {name} dropped",
                    f"nothing checks {path} of {name}: dropping it went unnoticed",
                    changed(key, drop=True)))
            enum = schemas.prop(key, "enum")
            if isinstance(enum, list) and enum:
                bad = _outside_enum(value, enum)
                if bad is not None:
                    argument_mutants["enum_outside"].append((
                        detail, f"{path} of {name} = {_shown(bad)}, outside its enum",
                        f"nothing checks {path} of {name} against its enum: {_shown(bad)} went unnoticed",
                        changed(key, bad)))
            other = _retyped(value)
            argument_mutants["type_change"].append((
                detail, f"{path} of {name} as {json_type(other)} {_shown(other)}",
                (f"nothing checks the type of {path} of {name}: {_shown(other)} ({json_type(other)}) "
                 f"instead of {_shown(value)} ({json_type(value)}) went unnoticed"),
                changed(key, other)))
            if isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
                new = _changed_value(key, value, args, schemas)
                if new is not None:
                    argument_mutants["value_change"].append((
                        detail, f"{path} of {name} = {_shown(new)} instead of {_shown(value)}",
                        (f"nothing checks the value of {path} of {name}: {_shown(new)} instead of "
                         f"{_shown(value)} went unnoticed"),
                        changed(key, new)))
    for kind, entries in argument_mutants.items():
        for detail, what, hint, document in entries:
            add(kind, detail, what, hint, document)

    if calls:
        extra = copy.deepcopy(calls[0])
        first_id = extra.get("id")
        extra["id"] = f"{first_id}_extra" if isinstance(first_id, str) else "call_extra"
        add("extra_call", labels[0], f"a second {name_of(calls[0])} call",
            f"nothing limits the calls: a second {name_of(calls[0])} call went unnoticed",
            doc(tool_calls=calls + [extra]))
    elif declared:
        tool = next(iter(declared))
        add("extra_call", tool, f"a call to {tool}",
            f"nothing forbids a tool call: a call to {tool} went unnoticed",
            doc(tool_calls=[{"id": "call_extra", "name": tool, "arguments": {}, "arguments_raw": "{}"}],
                stop_reason="tool_calls"))

    if len(calls) > 1:
        reordered = list(reversed(calls))
        add("reorder", None, "the calls in reverse order",
            "nothing checks the order of the calls: "
            f"{', '.join(name_of(c) for c in reordered)} (reversed) went unnoticed",
            doc(tool_calls=reordered))

    add("provider_error", None, "a provider error (HTTP 500)",
        "nothing checks success: a provider error went unnoticed",
        {"success": False, "tool_calls": [], "content": None, "stop_reason": None, "usage": None,
         "error": {"type": "server_error", "status": 500,
                   "message": "The server had an error (a replayci mutant)"}})
    order = {k: n for n, k in enumerate(KINDS)}
    return sorted(out, key=lambda m: order[m.kind])  # stable: generation order within a kind


def name_of(call: dict) -> str:
    return str(call.get("name"))


# ------------------------------------------------------------------ running


def _outcome(item: Item, request: dict, mutant: Mutant) -> MutantOutcome:
    result = evaluate_response(item, request, mutant.response, time.perf_counter())
    if result.status == "error":
        return MutantOutcome(item.case.id, mutant, "error", reason=result.reason)
    if result.failures:
        return MutantOutcome(item.case.id, mutant, "killed", result.classification, result.failures)
    return MutantOutcome(item.case.id, mutant, "survived")


def mutate_packs(packs: list[Pack], settings: Settings) -> MutationReport:
    """Mutate every passing expect_ok case of *packs* (after --filter) and evaluate the mutants."""
    items = select(packs, settings)
    if settings.filters and not items:
        raise ConfigError("no case matches " + " ".join(f"--filter {f}" for f in settings.filters))
    warnings: list[str] = []
    source = RecordedSource(settings, warnings)
    problems: list[Problem] = []
    by_contract: dict[tuple[str, str], ContractMutation] = {}
    scenarios: dict[tuple[str, str], None] = {}
    for item in items:
        key = (item.pack.pack_id, item.contract.id)
        if getattr(item.contract, "scenario", False):
            scenarios[key] = None  # a trajectory, not one response: not mutated (yet)
            continue
        entry = by_contract.get(key)
        if entry is None:
            entry = by_contract[key] = ContractMutation(item.pack, item.contract)
        if not item.case.expect_ok:
            continue
        started = time.perf_counter()
        if skipped(item, "recorded", started) is not None:
            entry.not_mutated.append((item.case.id, "skipped (provider_modes)"))
            continue
        try:
            fixture = load_fixture(item.case.fixture_path, item.case.fixture_display,
                                   max_bytes=settings.max_fixture_bytes)
            base = source.run(item, fixture, started)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        if base.status != "pass" or base.response is None:
            why = base.status + (f" ({base.reason})" if base.status == "non_reproducible" else "")
            entry.not_mutated.append((item.case.id, why))
            continue
        entry.bases[item.case.id] = fixture
        for mutant in mutants_of(item.contract, fixture.request, base.response):
            entry.outcomes.append(_outcome(item, fixture.request, mutant))
    if problems:
        raise ConfigError(problems)
    return MutationReport(list(by_contract.values()), packs, warnings,
                          [(p, c, "a multi-step scenario") for p, c in scenarios])


def mutate(settings: Settings) -> MutationReport:
    """Load the packs of resolved settings and mutate them (used by the CLI)."""
    from ...pack.loader import load_packs

    if not settings.packs:
        raise ConfigError("no packs found: looked for packs/*/pack.yaml under "
                          f"{settings.project_root}; pass --pack DIR or run `replayci init`")
    packs = load_packs(list(settings.packs), project_root=settings.project_root)
    return mutate_packs(packs, settings)


# ------------------------------------------------------------------ terminal output


def _plain(text: str, **_: object) -> str:
    return text


def percent(rate: float | None) -> str:
    """0.857 -> "85.7%", 1.0 -> "100%", None -> "-"."""
    if rate is None:
        return "-"
    text = f"{rate * 100:.1f}"
    if rate < 1 and text == "100.0":
        text = "99.9"
    return text.removesuffix(".0") + "%"


def render(report: MutationReport, *, min_kill_rate: float | None = None, verbosity: int = 0,
           style: Callable[..., str] = _plain) -> str:
    """The human-readable report: one aligned line per contract, its survivors beneath."""
    cases = sum(len(c.bases) for c in report.contracts)
    packs = len(report.packs)
    n = len(report.contracts)
    lines = [" · ".join(["replayci mutate", f"{packs} pack{'s' if packs != 1 else ''}",
                         f"{n} contract{'s' if n != 1 else ''}",
                         f"{cases} passing case{'s' if cases != 1 else ''} mutated"]), ""]
    if report.contracts:
        w_name = max(len(f"{c.pack.pack_id}/{c.contract.id}") for c in report.contracts)
        w_num = max(len(str(c.mutants)) for c in report.contracts)
    for c in report.contracts:
        rate = c.kill_rate
        low = rate is not None and min_kill_rate is not None and rate < min_kill_rate - 1e-12
        colour = "red" if low else ("green" if rate == 1 else ("yellow" if rate is not None else None))
        shown = style(f"{percent(rate):>6}", fg=colour, bold=low) if colour else f"{percent(rate):>6}"
        line = (f"  {c.pack.pack_id + '/' + c.contract.id:<{w_name}}   {c.mutants:>{w_num}} mutants"
                f"   {c.killed:>{w_num}} killed   {shown}")
        if rate is None:
            line += "   no passing expect_ok case to mutate"
        elif low:
            line += f"   below --min-kill-rate {min_kill_rate:g}"
        lines.append(line.rstrip())
        # The same survivor in several cases is one line (the first case's hint), unless -v.
        groups: dict[str, list[MutantOutcome]] = {}
        for o in c.survivors:
            groups.setdefault(o.mutant.name if verbosity <= 0 else f"{o.case}\0{o.mutant.name}", []).append(o)
        rows = [(g[0].case + (f" +{len(g) - 1}" if len(g) > 1 else ""), g[0].mutant.name, g[0].mutant.hint)
                for g in groups.values()]
        if rows:
            w_case = max(len(r[0]) for r in rows)
            w_mut = max(len(r[1]) for r in rows)
            for case, name, hint in rows:
                lines.append(f"      {case:<{w_case}}  {style(f'{name:<{w_mut}}', fg='yellow')}  {hint}")
        for o in c.outcomes:
            if o.status == "error":
                lines.append(f"      {o.case}  {o.mutant.name}  could not be evaluated: {o.reason}")
        if verbosity > 0:
            for o in c.outcomes:
                if o.status == "killed":
                    lines.append(f"      {o.case}  {o.mutant.name}  killed: {o.classification}")
        for case, why in c.not_mutated:
            lines.append(f"      {case}: not mutated, the case is {why}")
    for pack_id, contract_id, why in report.not_mutated:
        lines.append(f"  {pack_id}/{contract_id}: not mutated ({why})")
    total, killed = report.mutants, report.killed
    tail = [f"{total} mutant{'s' if total != 1 else ''}", f"{killed} killed",
            f"{total - killed} survived", f"kill rate {percent(killed / total if total else None)}"]
    if min_kill_rate is not None:
        below = report.below(min_kill_rate)
        tail.append(f"{len(below)} contract{'s' if len(below) != 1 else ''} below {min_kill_rate:g}")
    lines += ["", "  " + " · ".join(tail), ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ --write-negatives


@dataclass(frozen=True)
class Written:
    """A negative golden case written (or not) from a killed mutant."""

    contract: str  # the contract file as shown to the user
    case: str
    fixture: str | None  # the fixture file as shown, None when nothing was written
    classification: str | None
    note: str = ""  # why nothing was written


def render_written(written: list[Written]) -> str:
    """What --write-negatives did, grouped by contract file."""
    if not written:
        return "  no new negative case: every classification caught has one already\n"
    lines: list[str] = []
    by_contract: dict[str, list[Written]] = {}
    for w in written:
        by_contract.setdefault(w.contract, []).append(w)
    for contract, ws in by_contract.items():
        new = [w for w in ws if w.fixture]
        lines.append(f"  {contract}: {len(new)} negative case{'s' if len(new) != 1 else ''} added")
        w_case = max(len(w.case) for w in ws)
        w_cls = max(len(w.classification or "") for w in ws)
        for w in ws:
            tail = w.fixture if w.fixture else f"skipped: {w.note}"
            lines.append(f"      {w.case:<{w_case}}  {w.classification or '':<{w_cls}}  {tail}")
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    """A mutant id as part of a case id and file name: rename:a->b -> rename.a-to-b."""
    text = text.replace("->", "-to-").replace(":", ".")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "mutant"


def choose_negatives(entry: ContractMutation) -> list[MutantOutcome]:
    """One killed mutant per classification the contract has no negative case for yet."""
    covered = {c.expected_error for c in entry.contract.cases if not c.expect_ok and c.expected_error}
    chosen: dict[str, MutantOutcome] = {}
    for o in entry.outcomes:
        if o.status == "killed" and o.classification not in covered and o.classification not in chosen:
            chosen[o.classification] = o
    return list(chosen.values())


_PLAIN_SCALAR = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


def _yaml_scalar(text: str) -> str:
    if _PLAIN_SCALAR.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _case_entry(case_id: str, ref: str, classification: str, description: str) -> list[tuple[str, str]]:
    return [("id", _yaml_scalar(case_id)), ("input_ref", _yaml_scalar(ref)), ("expect_ok", "false"),
            ("expected_error", classification), ("provider_modes", "[recorded]"),
            ("tags", "[mutant]"), ("description", json.dumps(description, ensure_ascii=False))]


class InsertError(Exception):
    """The golden_cases list could not be extended at the text level."""


def append_golden_cases(text: str, entries: list[list[tuple[str, str]]], display: str) -> str:
    """*text* with *entries* appended to its golden_cases list; every other byte unchanged.

    The new entries follow the list's own style: block (its dash and key indentation, blank
    lines between entries when it has them) or flow (``[{...}, {...}]``).
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    in_root_key = True  # the next root-level scalar is a key
    seq_depth = None
    start = None
    flow = []  # flow_style of the open collections inside the list
    items: list[list[int]] = []  # per item: [start index, end index of its last content]
    end_mark = None
    try:
        events = list(yaml.parse(text, Loader=loader))
    except yaml.YAMLError as exc:
        raise InsertError(f"{display} does not parse: {exc}") from None
    pending_key = None
    for ev in events:
        cls = type(ev).__name__
        if seq_depth is None:
            if cls in ("MappingStartEvent", "SequenceStartEvent"):
                depth += 1
                if depth == 2 and pending_key == "golden_cases" and cls == "SequenceStartEvent":
                    seq_depth, start = depth, ev
                    continue
                if depth == 2:
                    pending_key = None
                    in_root_key = True
                continue
            if cls in ("MappingEndEvent", "SequenceEndEvent"):
                depth -= 1
                continue
            if depth == 1 and cls in ("ScalarEvent", "AliasEvent"):
                if in_root_key:
                    pending_key = ev.value if cls == "ScalarEvent" else None
                    in_root_key = False
                else:
                    pending_key = None
                    in_root_key = True
            continue
        # inside golden_cases
        if cls in ("MappingStartEvent", "SequenceStartEvent"):
            if not flow:
                items.append([ev.start_mark.index, ev.end_mark.index])
            flow.append(bool(ev.flow_style))
            continue
        if cls in ("MappingEndEvent", "SequenceEndEvent"):
            if not flow:
                end_mark = ev.start_mark
                break
            was_flow = flow.pop()
            if was_flow and items:
                items[-1][1] = max(items[-1][1], ev.end_mark.index)
            continue
        if cls in ("ScalarEvent", "AliasEvent"):
            if not flow:
                items.append([ev.start_mark.index, ev.end_mark.index])
            else:
                items[-1][1] = max(items[-1][1], ev.end_mark.index)
    if start is None or end_mark is None:
        raise InsertError(f"{display}: no golden_cases list at the top level")
    newline = "\r\n" if "\r\n" in text else "\n"

    if start.flow_style:
        rendered = ["{" + ", ".join(f"{k}: {v}" for k, v in entry) + "}" for entry in entries]
        if items:
            pos = items[-1][1]
            insert = "".join(", " + r for r in rendered)
        else:
            pos = end_mark.index  # the closing bracket of []
            insert = ", ".join(rendered)
        return text[:pos] + insert + text[pos:]

    if not items:
        raise InsertError(f"{display}: golden_cases is an empty block list")

    def line_start(index: int) -> int:
        return text.rfind("\n", 0, index) + 1

    last_start, last_end = items[-1]
    key_col = last_start - line_start(last_start)
    dash_col = text.rfind("-", line_start(last_start), last_start) - line_start(last_start)
    if dash_col < 0:
        raise InsertError(f"{display}: cannot find the '-' of the last golden case")
    # Blank lines between entries? Look above the second entry, past its comments.
    blank = False
    if len(items) > 1:
        ls = line_start(items[1][0])
        prev_lines = text[items[0][1]:ls].split("\n")[1:-1]
        blank = any(not ln.strip() for ln in prev_lines)
    # After the last line of the last entry (block scalars end past their trailing newlines).
    p = last_end
    while p > 0 and text[p - 1] in " \t\r\n":
        p -= 1
    nl = text.find("\n", p)
    pos = len(text) if nl == -1 else nl + 1
    prefix = newline if nl == -1 else ""
    chunks = []
    for entry in entries:
        lines = []
        for j, (k, v) in enumerate(entry):
            indent = " " * dash_col + "- " + " " * (key_col - dash_col - 2) if j == 0 else " " * key_col
            lines.append(f"{indent}{k}: {v}")
        chunks.append((newline if blank else "") + newline.join(lines) + newline)
    return text[:pos] + prefix + "".join(chunks) + text[pos:]


def _checked_insert(contract: Contract, entries: list[list[tuple[str, str]]]) -> tuple[bytes, bytes]:
    """(old bytes, new bytes) of the contract file; the new one verified by re-parsing."""
    from ...core.paths import display_path
    from ...pack.sources import parse_yaml

    display = display_path(contract.file)
    with open(contract.file, "rb") as fh:
        old = fh.read()
    try:
        text = old.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(Problem(display, None, None, "not valid UTF-8; cannot add negative cases")) from None
    bom = text.startswith("\ufeff")
    body = text[1:] if bom else text
    try:
        new_body = append_golden_cases(body, entries, display)
    except InsertError as exc:
        raise ConfigError(Problem(display, None, None, f"cannot add negative cases: {exc}")) from None
    # Only an insertion: the old text is the new one with one contiguous block taken out.
    p = len(os.path.commonprefix([body, new_body]))
    if not (len(new_body) > len(body) and new_body.endswith(body[p:])):
        raise ConfigError(Problem(display, None, None, "cannot add negative cases: the insertion "
                                  "would change other text; add them by hand"))
    # Every existing value is unchanged and the new cases parse back exactly as meant.
    before = parse_yaml(body, display).value
    after = parse_yaml(new_body, display).value
    wanted = [{k: _scalar_value(v) for k, v in entry} for entry in entries]
    expected = {**before, "golden_cases": list(before["golden_cases"]) + wanted}
    if after != expected:
        raise ConfigError(Problem(display, None, None, "cannot add negative cases: the file's layout "
                                  "defeats a text-level insertion; add them by hand"))
    return old, (("\ufeff" if bom else "") + new_body).encode("utf-8")


def _scalar_value(v: str) -> Any:
    if v == "false":
        return False
    if v == "[recorded]":
        return ["recorded"]
    if v == "[mutant]":
        return ["mutant"]
    if v.startswith('"'):
        return json.loads(v)
    return v


def _write_atomic(path: str, data: bytes) -> None:
    import shutil
    import tempfile

    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".replayci-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_negatives(report: MutationReport) -> list[Written]:
    """Write chosen killed mutants as negative golden cases; never overwrites a file.

    Per contract, one killed mutant per classification it has no negative case for: a
    fixture (the case's request, a matching boundary, the mutated response) in the pack's
    negative golden directory, and an ``expect_ok: false`` entry with that
    ``expected_error`` appended to the contract's golden_cases.
    """
    from ...core.paths import display_path

    written: list[Written] = []
    for entry in report.contracts:
        contract, pack = entry.contract, entry.pack
        plan = []
        existing = {c.id for c in contract.cases}
        for o in choose_negatives(entry):
            case_id = f"{o.case}.mutant.{_slug(o.mutant.name)}"
            file_name = f"{contract.id}.{case_id}.json"
            path = os.path.join(pack.negative_golden_dir, file_name)
            if case_id in existing:
                written.append(Written(contract.display, case_id, None, o.classification,
                                       "already a golden case"))
                continue
            if os.path.exists(path):
                written.append(Written(contract.display, case_id, None, o.classification,
                                       f"{display_path(path)} exists; not overwritten"))
                continue
            fixture = entry.bases[o.case]
            boundary = dict(fixture.boundary or {})
            if not boundary or boundary_change(boundary, fixture.request):
                boundary = {"model": boundary.get("model") or fixture.request.get("model"),
                            **boundary_hashes(fixture.request)}
            description = (f"replayci mutate: {o.case} with {o.mutant.what} "
                           f"({o.mutant.name}), caught as {o.classification}")
            doc = {"description": description, "boundary": boundary, "request": fixture.request,
                   "response": fixture_response(o.mutant.response)}
            plan.append((o, case_id, path, doc,
                         _case_entry(case_id, f"negative/{file_name}", o.classification,
                                     f"mutant of {o.case}: {o.mutant.what}")))
        if not plan:
            continue
        old, new = _checked_insert(contract, [p[4] for p in plan])
        os.makedirs(pack.negative_golden_dir, exist_ok=True)
        done = []
        try:
            for o, case_id, path, doc, _ in plan:
                with open(path, "x", encoding="utf-8") as fh:  # "x": never overwrite
                    fh.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
                done.append(path)
            with open(contract.file, "rb") as fh:
                if fh.read() != old:
                    raise ConfigError(Problem(contract.display, None, None,
                                              "changed while mutate ran; run it again"))
            _write_atomic(contract.file, new)
        except BaseException:
            for path in done:  # all or nothing per contract
                os.unlink(path)
            raise
        for o, case_id, path, _, _ in plan:
            written.append(Written(contract.display, case_id, display_path(path), o.classification))
    return written
