"""The loaded pack: frozen values that keep where they came from."""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..checks.judges import Judge
from ..checks.operators import Invariant
from ..core.memo import Memo
from ..core.records import record
from .vocabulary import TIMEOUT_MS


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    input_ref: str
    fixture_path: str  # absolute
    fixture_display: str  # as shown to the user
    expect_ok: bool = True
    expected_error: str | None = None
    expected_failure: tuple[dict, ...] = ()  # matchers: {check, path, operator, schema_path}
    expected_fingerprint: str | None = None
    provider_modes: tuple[str, ...] | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    description: str | None = None
    source: str = ""
    # The case's own assertions, added to its contract's for this case only.
    output_invariants: tuple[Invariant, ...] = ()
    input_invariants: tuple[Invariant, ...] = ()
    expected_tool_calls: tuple[ExpectedCall, ...] = ()


@record
class ExpectedCall:
    name: str
    invariants: tuple[Invariant, ...]
    source: str


@record
class RetrySettings:
    max_attempts: int = 2
    retry_on: tuple[str, ...] = ("429", "5xx", "timeout", "connection")
    total_ms: int = TIMEOUT_MS
    respect_retry_after: bool = True
    max_sleep_seconds: float = 60.0


@record
class Trajectory:
    """Checks on a whole scenario run."""

    sequence_mode: str | None = None
    sequence_tools: tuple[str, ...] = ()
    max_tool_calls: int | None = None
    final_invariants: tuple[Invariant, ...] = ()
    step_invariants: tuple[tuple[int, tuple[Invariant, ...]], ...] = ()
    # (step, classification): a recorded step whose calls broke their schema and that the agent
    # retried; that failure at that step is what was recorded, not a failure of the run
    retried_steps: frozenset[tuple[int, str]] = frozenset()
    source: str = ""


@record
class ToolReplay:
    """How one tool's results are replayed: the argument paths that identify a call (None:
    all the arguments), the version stored with each result, the result paths kept or
    dropped before a result is recorded."""

    key: tuple[str, ...] | None = None
    version: str | None = None
    keep: tuple[str, ...] | None = None
    drop: tuple[str, ...] = ()
    source: str = ""


NO_TOOL_REPLAY = ToolReplay()


@record
class Contract:
    id: str
    file: str  # absolute
    display: str  # as shown to the user
    rel_path: str  # relative to the pack directory: contracts/x.yaml
    tool: str | None
    expect_tools: tuple[str, ...] = ()
    expected_tool_calls: tuple[ExpectedCall, ...] = ()
    tool_order: str = "any"
    match_mode: str = "lenient"
    pass_threshold: float = 1.0
    min_score: float | None = None  # set: the output invariants are scored (weight, required)
    grounded_numbers: bool = False  # the final text's numbers must come from the inputs
    arguments_schema: Any = None  # a CompiledSchema, or None: use the request's tool schema
    arguments_schema_source: str = ""
    output_invariants: tuple[Invariant, ...] = ()
    input_invariants: tuple[Invariant, ...] = ()
    judges: tuple[Judge, ...] = ()  # model judges of the answer (assertions.judges)
    cases: tuple[Case, ...] = ()
    retry: RetrySettings = field(default_factory=RetrySettings)
    status: str = "active"
    description: str | None = None
    source: str = ""
    scenario: bool = False
    max_steps: int = 8
    tool_replay: str = "strict"
    tool_commands: tuple[tuple[str, str], ...] = ()
    tool_ms: int = TIMEOUT_MS
    tool_replay_config: tuple[tuple[str, ToolReplay], ...] = ()
    trajectory: Trajectory = field(default_factory=Trajectory)
    order: int = 0  # position in the pack's list of contracts

    @property
    def multi(self) -> bool:
        return self.tool == "multi_tool_call"

    @cached_property  # (asked several times per case; kept in the instance, not a field)
    def expected_names(self) -> tuple[str, ...]:
        """The tools this contract expects to be called."""
        if self.multi:
            if self.expect_tools:
                return self.expect_tools
            return tuple(dict.fromkeys(c.name for c in self.expected_tool_calls))
        if self.tool:
            return (self.tool,)
        return tuple(dict.fromkeys(c.name for c in self.expected_tool_calls))

    @cached_property
    def expected_set(self) -> frozenset[str]:
        """expected_names as a set."""
        return frozenset(self.expected_names)

    @property
    def tool_configs(self) -> dict[str, ToolReplay]:
        """tool_replay_config by tool name."""
        return dict(self.tool_replay_config)

    @property
    def draft(self) -> bool:
        return self.status == "observed"

    def for_case(self, case: Case) -> Contract:
        """This contract with *case*'s own assertions added (itself when the case has none); made
        once per contract and case (check mode judges a case at every exchange that reaches it)."""
        if not (case.output_invariants or case.input_invariants or case.expected_tool_calls):
            return self
        kept = _FOR_CASE.get((id(self), id(case)))
        if kept is not None and kept[0] is self and kept[1] is case:
            return kept[2]
        merged = replace(self, output_invariants=self.output_invariants + case.output_invariants,
                         input_invariants=self.input_invariants + case.input_invariants,
                         expected_tool_calls=self.expected_tool_calls + case.expected_tool_calls)
        _FOR_CASE.put((id(self), id(case)), (self, case, merged))
        return merged


# (contract id, case id) -> (contract, case, merged): the objects kept, so an id reused is no hit
_FOR_CASE = Memo(1024)


@record
class AllowEntry:
    contract_path: str
    case_id: str | None
    reason_code: str
    owner: str
    expiry_date: datetime.date
    rationale: str
    source: str


@record
class McpServer:
    """An MCP server a pack's tools come from: a command (stdio) or a streamable HTTP URL."""

    name: str
    command: tuple[str, ...] | None
    url: str | None
    cwd: str  # the directory of the file that names it: its command runs there
    timeout_ms: int = TIMEOUT_MS
    source: str = ""  # where it is named (file:line)

    @property
    def shown(self) -> str:
        """How messages name the server: its name and what starts or reaches it."""
        target = " ".join(self.command) if self.command else self.url
        return f"MCP server '{self.name}' ({target})"


@record
class Pack:
    pack_id: str
    dir: str  # absolute
    display_dir: str
    name: str | None
    version: str | None
    provider: str | None
    default_model: str | None
    contracts_dir: str
    golden_dir: str
    negative_golden_dir: str
    recordings_dir: str
    contracts: tuple[Contract, ...]
    gates: dict
    allowlist: tuple[AllowEntry, ...] = ()
    source: str = ""
    mcp_servers: tuple[tuple[str, McpServer], ...] = ()  # by name, from pack.yaml
