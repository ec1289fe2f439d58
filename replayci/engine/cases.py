"""One case: what to run (selection), its result, and the checks that give its verdict."""
from __future__ import annotations

import datetime
import fnmatch
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from ..checks.failure import Failure, Pinned, fingerprint, trajectory_fingerprint, verdict
from ..checks.response import case_score, check, tool_schemas
from ..checks.trajectory import Loop, ToolResultMissing, check_trajectory
from ..config import Settings
from ..core.errors import CaseError, ConfigError, did_you_mean
from ..core.hashing import boundary_hashes, h, is_pinned, short_hash
from ..core.jsonvalue import show
from ..core.memo import fast_paths, on_clear
from ..pack.fixtures import Fixture
from ..pack.loader import argument_problems_of, contract_files
from ..pack.model import Case, Contract, Pack
from .judging import JudgementMissing, Judgements, judgement_details, with_judges
from .metrics import case_metrics
from .results import CaseResult, RunResult, report_response

HASH_NAMES = ("tool_schema_hash", "message_hash", "system_hash")


HASH_WHAT = {"tool_schema_hash": "tools", "message_hash": "messages", "system_hash": "system prompt"}


Listener = Callable[[CaseResult], None]


class Keeper(Protocol):
    """What a run keeps of each finished case: called with the result (in whichever process
    produced it) before anything else holds it, so it may change it, it returns what the run
    holds on to, e.g. a lighter result once the case's report entry is written; flush() is
    called when a process's share (or a unit of it) is done."""

    def __call__(self, result: CaseResult) -> CaseResult: ...

    def flush(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Item:
    """One case to run, with what it belongs to."""

    pack: Pack
    contract: Contract
    case: Case
    order: tuple = ()

    @property
    def key(self) -> str:
        return f"{self.contract.id}/{self.case.id}"


def select(packs: list[Pack], settings: Settings) -> list[Item]:
    """The cases to run, in stable order, after --filter, --category and --tag."""
    items = []
    for pi, pack in enumerate(packs):
        for contract in pack.contracts:
            for ci, case in enumerate(contract.cases):
                item = Item(pack, contract, case, (pi, contract.order, ci))
                if settings.case_ids is not None and (pack.pack_id, contract.id, case.id) not in settings.case_ids:
                    continue
                if settings.filters and not any(
                    fnmatch.fnmatchcase(item.key, pat) or fnmatch.fnmatchcase(f"{pack.pack_id}/{item.key}", pat)
                    for pat in settings.filters
                ):
                    continue
                if settings.categories and case.category not in settings.categories:
                    continue
                if settings.tags and not set(case.tags) & set(settings.tags):
                    continue
                items.append(item)
    if settings.shard:
        k, n = settings.shard
        items = [it for it in items if int(h(f"{it.pack.pack_id}/{it.key}"), 16) % n == k - 1]
    return items


def refuse_empty_selection(settings: Settings, selected: list) -> None:
    """--filter, --category or --tag that matches no case is a usage error, not an empty pass."""
    if (settings.filters or settings.categories or settings.tags) and not selected:
        what = " ".join([f"--filter {f}" for f in settings.filters]
                        + [f"--category {c}" for c in settings.categories]
                        + [f"--tag {t}" for t in settings.tags])
        raise ConfigError(f"no case matches {what}")


def check_arguments(item: Item, fixture: Fixture) -> None:
    """ConfigError when an invariant of the case reads an argument that the tool schema its
    fixture's request declares shows to be a mistake (a contract's own arguments_schema is
    checked when the pack loads)."""
    contract, case, key = item.contract, item.case, fixture.tools_key
    # A case with no invariants of its own gets the answer of its contract's previous such
    # case when their fixtures declare the same tools (cases run contract by contract).
    plain = fast_paths() and key is not None and not case.expected_tool_calls and not case.output_invariants
    last = _last_arguments[0]
    if plain and last is not None and last[0] is contract and last[1] == key:
        problems = last[2]
    else:
        schemas = tool_schemas(fixture.request, key)
        if contract.arguments_schema is not None:
            schemas.pop(contract.tool, None)
        problems = argument_problems_of(contract, (case,), schemas)
        if plain:
            _last_arguments[0] = (contract, key, problems)
    if problems:
        raise ConfigError(list(problems))


_last_arguments: list = [None]  # (contract, tools key, problems) of the last plain case


@on_clear
def _forget_arguments() -> None:
    _last_arguments[0] = None


def case_result(item: Item, status: str, *, classification=None, reason=None, fp=None, failures=(),
            started: float, response=None, **extra) -> CaseResult:
    return CaseResult(
        pack=item.pack.pack_id,
        contract=item.contract.id,
        case=item.case.id,
        status=status,
        classification=classification,
        reason=reason,
        fingerprint=fp,
        failures=tuple(failures),
        duration_ms=(time.perf_counter() - started) * 1000,
        source=item.case.source,
        category=item.case.category,
        tags=item.case.tags,
        expect_ok=item.case.expect_ok,
        expected_error=item.case.expected_error,
        draft=item.contract.draft,
        response=response,
        order=item.order,
        **extra,
    )


def non_reproducible(item: Item, reason: str, message: str, started: float, detail: str = "") -> CaseResult:
    fp = short_hash({"contract": item.contract.id, "non_reproducible": reason, "detail": detail})
    return case_result(item, "non_reproducible", reason=reason, fp=fp, started=started,
                   details={"message": message})


def tool_result_missing(item: Item, miss: ToolResultMissing, started: float) -> CaseResult:
    """A scenario stopped at a tool call with no usable recorded result."""
    return non_reproducible(item, "tool_result_not_recorded", str(miss), started, detail=f"{miss.tool}:{miss.key}")


def boundary_change(boundary: dict | None, request: dict,
                    tools_key: str | None = None) -> list[tuple[str, str, str]]:
    """The pinned boundary hashes that no longer match the request: (name, pinned, now)."""
    if not boundary:
        return []
    current = None
    changed = []
    for name in HASH_NAMES:
        pinned = boundary.get(name)
        if not is_pinned(pinned):
            continue
        if current is None:
            current = boundary_hashes(request, tools_key)
        if current[name] != pinned:
            changed.append((name, pinned, current[name]))
    return changed


def variance_message(changed: list[tuple[str, str, str]], origin: str, fixture: Fixture) -> str:
    """Which boundary hashes of *origin* (the fixture or its recording) changed, and the fix:
    a fixture's boundary is re-pinned, a recording is made again."""
    parts = [f"{name} changed ({HASH_WHAT[name]}): recorded {old}, request now {new}"
             for name, old, new in changed]
    fix = "run `replayci pin` if the change was intended" if origin == fixture.display else "re-record it"
    return "; ".join(parts) + f" — {origin} no longer matches its request; {fix}"


def case_error(item: Item, exc: CaseError, started: float, **extra) -> CaseResult:
    """A case its checks could not evaluate (a regex over its time limit): status error."""
    return case_result(item, "error", reason=str(exc), started=started,
                       fp=short_hash({"contract": item.contract.id, "error": "case_error"}), **extra)


def evaluate_response(item: Item, request: dict, response: dict, started: float, *,
                      tools=None, judgements: Judgements | None = None, **extra) -> CaseResult:
    """Checks, judges, verdict and fingerprint for one response."""
    contract, case = item.contract.for_case(item.case), item.case
    extra.update(case_metrics([response]))
    try:
        failures = at_case(case, contract, with_judges(contract, request, response,
                                                       check(contract, request, response, tools), judgements))
        extra["score"] = case_score(contract, response)
        extra["details"] = {**extra.get("details", {}), **judgement_details(contract, judgements)}
    except CaseError as exc:
        return case_error(item, exc, started, **extra)
    except JudgementMissing as exc:
        return non_reproducible(item, "judgement_not_recorded", str(exc), started, detail=exc.key)
    fp = fingerprint(contract.id, case.id, failures, response)
    status, classification, reason = verdict(case.expect_ok, case.expected_error, failures,
                                             pinned_by(case, fp, response))
    return case_result(item, status, classification=classification, reason=reason, fp=fp,
                   failures=failures, started=started, response=response, **extra)


def at_case(case: Case, contract: Contract, failures: list[Failure]) -> list[Failure]:
    """*failures* located at the check that failed: a failure whose check has no line of its
    own (the tool called, the stop reason, a tool's declared schema) is at the case's line."""
    if not case.source or not any(f.source == contract.source for f in failures):
        return failures
    return [replace(f, source=case.source) if f.source == contract.source else f
            for f in failures]


def pinned_by(case: Case, fp: str, response: dict | None) -> Pinned:
    """What a negative case pins beyond its classification, with the response it judged."""
    if case.expect_ok:
        return _UNPINNED
    return Pinned(case.expected_failure, case.expected_fingerprint, fp, slipped_through(response))


_UNPINNED = Pinned()


def slipped_through(response: dict | None) -> str | None:
    """A response as a person reads it: its tool calls with their arguments, else its text."""
    if not response:
        return None
    calls = response.get("tool_calls") or []
    if calls:
        return ", ".join(f"{c.get('name')}({show(c.get('arguments'), 200)})" for c in calls)
    return f"text {show(response.get('content'), 200)}"


class Interrupted(Exception):
    """Ctrl-C during a run: carries the result of the cases that finished."""

    def __init__(self, result: RunResult):
        super().__init__("interrupted")
        self.result = result


def evaluate_trajectory(item: Item, request: dict, loop: Loop, started: float, *,
                        latency_ms=None, judgements: Judgements | None = None, **extra) -> CaseResult:
    """Checks, verdict and fingerprint for a scenario run (*latency_ms*: the recorded total,
    when the steps were not timed one by one)."""
    contract, case = item.contract.for_case(item.case), item.case
    extra.update(case_metrics([s["response"] for s in loop.steps], latency_ms))
    final = loop.steps[-1]["response"] if loop.steps else None
    try:
        failures = at_case(case, contract, with_judges(contract, request, final,
                                                       check_trajectory(contract, request, loop), judgements))
        extra["score"] = case_score(contract, final)
    except CaseError as exc:
        return case_error(item, exc, started, **extra)
    except JudgementMissing as exc:
        return non_reproducible(item, "judgement_not_recorded", str(exc), started, detail=exc.key)
    fp = trajectory_fingerprint(contract.id, case.id, failures, loop.steps)
    status, classification, reason = verdict(case.expect_ok, case.expected_error, failures,
                                             pinned_by(case, fp, final))
    from .agent import trajectory_summary  # why: scenarios only; agent loads signal and threading

    details = {**extra.pop("details", {}), **judgement_details(contract, judgements),
               "trajectory": trajectory_summary(loop.steps)}
    # The steps as judged (responses and tool results), so `replayci regrade` can judge them again.
    kept = [report_response(s["response"]) for s in loop.steps]
    if all(r is not None for r in kept):
        details["steps"] = [{**s, "response": r} for s, r in zip(loop.steps, kept, strict=True)]
    return case_result(item, status, classification=classification, reason=reason, fp=fp,
                       failures=failures, started=started, response=final, details=details, **extra)


def pinned(item: Item, fixture: Fixture) -> bool:
    """A negative case whose fixture holds a response: that response is the test, so it is
    never called live, recorded, or replaced by a recording."""
    return not item.case.expect_ok and fixture.response is not None


def source_details(kind: str, origin: str) -> dict:
    """What a result says of its response: the kind (fixture, recording, live) and where from."""
    return {"response_source": kind, "response_origin": origin}


def skipped(item: Item, provider: str, started: float) -> CaseResult | None:
    modes = item.case.provider_modes
    if modes is not None and provider not in modes:
        return case_result(item, "skipped", reason=f"provider_modes {list(modes)} excludes {provider}",
                       started=started)
    return None


def apply_allowlist(result: CaseResult, pack: Pack, contract: Contract, today: datetime.date,
                    warnings: list[str], warned: set) -> CaseResult:
    if result.status != "non_reproducible":
        return result
    for entry in pack.allowlist:
        if entry.contract_path != contract.rel_path:
            continue
        if entry.case_id not in (None, result.case) or entry.reason_code != result.reason:
            continue
        if entry.expiry_date < today:
            if entry.source not in warned:
                warned.add(entry.source)
                warnings.append(f"{entry.source}: allowlist entry for {entry.contract_path}"
                                f"{' ' + entry.case_id if entry.case_id else ''} expired on "
                                f"{entry.expiry_date.isoformat()}; it is ignored")
            continue
        return replace(result, allowlisted=True)
    return result


# entry source -> (whether the pack has the contract it names, the warning)
AllowlistMisses = dict[str, tuple[bool, str]]


def allowlist_misses(packs: list[Pack]) -> AllowlistMisses:
    """The allowlist entries of *packs* that match no contract, or no case of their contract."""
    misses: AllowlistMisses = {}
    for pack in packs:
        contracts = {c.rel_path: c for c in pack.contracts}
        for entry in pack.allowlist:
            contract = contracts.get(entry.contract_path)
            if contract is None:
                misses[entry.source] = (False, f"{entry.source}: allowlist entry for {entry.contract_path} "
                                        f"matches no contract of pack {pack.pack_id}"
                                        + did_you_mean(entry.contract_path, _contract_files(pack)))
            elif entry.case_id is not None and entry.case_id not in {c.id for c in contract.cases}:
                cases = [c.id for c in contract.cases]
                misses[entry.source] = (True, f"{entry.source}: allowlist entry for {entry.contract_path} "
                                        f"{entry.case_id} matches no case of that contract"
                                        + did_you_mean(entry.case_id, cases))
    return misses


def _contract_files(pack: Pack) -> list[str]:
    """Every contract file of *pack* as an allowlist names it (a split run loads only some)."""
    return [os.path.relpath(os.path.join(pack.contracts_dir, n), pack.dir).replace(os.sep, "/")
            for n in contract_files(pack.contracts_dir)]


def unmatched_allowlist(*shares: AllowlistMisses) -> list[str]:
    """The warnings for entries no share of the contracts matches (a contract is in one share)."""
    common = set(shares[0]).intersection(*shares[1:])
    return [max((share[source] for share in shares), key=lambda miss: miss[0])[1]
            for source in shares[0] if source in common]
