"""One case: what to run (selection), what a source knows of it before it is judged, and the
allowlist applied after."""
from __future__ import annotations

import datetime
import fnmatch
import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..checks.failure import Status
from ..checks.response import tool_schemas
from ..checks.trajectory import ToolResultMissing
from ..config import Settings
from ..core.errors import ConfigError, did_you_mean
from ..core.hashing import boundary_hashes, h, is_pinned
from ..core.jsonvalue import show
from ..core.memo import fast_paths, on_clear
from ..pack.fixtures import Fixture
from ..pack.load_contract import argument_problems_of
from ..pack.loader import contract_files
from ..pack.model import Case, Contract, Pack
from .answers import NotReproducible, Skip
from .results import CaseResult, RunResult

HASH_NAMES = ("tool_schema_hash", "message_hash", "system_hash")


HASH_WHAT = {"tool_schema_hash": "tools", "message_hash": "messages", "system_hash": "system prompt"}


Listener = Callable[[CaseResult], None]


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


def tool_result_missing(miss: ToolResultMissing) -> NotReproducible:
    """A scenario stopped at a tool call with no usable recorded result."""
    return NotReproducible("tool_result_not_recorded", str(miss), detail=f"{miss.tool}:{miss.key}")


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


def pinned(item: Item, fixture: Fixture) -> bool:
    """A negative case whose fixture holds a response: that response is the test, so it is
    never called live, recorded, or replaced by a recording."""
    return not item.case.expect_ok and fixture.response is not None


def source_details(kind: str, origin: str) -> dict:
    """What a result says of its response: the kind (fixture, recording, live) and where from."""
    return {"response_source": kind, "response_origin": origin}


def skipped(item: Item, provider: str) -> Skip | None:
    """Skip a case whose provider_modes leave out *provider*."""
    modes = item.case.provider_modes
    if modes is not None and provider not in modes:
        return Skip(f"provider_modes {list(modes)} excludes {provider}")
    return None


class Allowlist:
    """The packs' allowlists applied to each non-reproducible result: an entry that covers it
    marks it allowlisted; an expired one is ignored, with a warning the first time."""

    def __init__(self, today: datetime.date) -> None:
        self.today = today
        self.warned: set = set()

    def apply(self, result: CaseResult, pack: Pack, contract: Contract) -> tuple[CaseResult, tuple[str, ...]]:
        """(*result*, allowlisted when an entry covers it; the warnings of the expired entries
        first met here)."""
        if result.status != Status.NON_REPRODUCIBLE:
            return result, ()
        warnings: tuple[str, ...] = ()
        for entry in pack.allowlist:
            if entry.contract_path != contract.rel_path:
                continue
            if entry.case_id not in (None, result.case) or entry.reason_code != result.reason:
                continue
            if entry.expiry_date < self.today:
                if entry.source not in self.warned:
                    self.warned.add(entry.source)
                    warnings += (f"{entry.source}: allowlist entry for {entry.contract_path}"
                                 f"{' ' + entry.case_id if entry.case_id else ''} expired on "
                                 f"{entry.expiry_date.isoformat()}; it is ignored",)
                continue
            return replace(result, allowlisted=True), warnings
        return result, warnings


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
