"""The settings a run needs once precedence was applied, and the targets a run compares."""
from __future__ import annotations

import re
from dataclasses import field, replace

from ..core.hashing import h
from ..core.records import record
from ..pack.model import McpServer

ENV_KEYS = {
    "provider": "REPLAYCI_PROVIDER",
    "model": "REPLAYCI_MODEL",
    "base_url": "REPLAYCI_BASE_URL",
    "jobs": "REPLAYCI_JOBS",
    "processes": "REPLAYCI_PROCESSES",
    "replay": "REPLAYCI_REPLAY",
    "tool_replay_mode": "REPLAYCI_TOOL_REPLAY",
}
# The pace of a batch run's wait (seconds > 0), from the environment only.
BATCH_PACE = {"batch_poll_s": "REPLAYCI_BATCH_POLL_SECONDS", "batch_poll_max_s": "REPLAYCI_BATCH_POLL_MAX_SECONDS",
              "batch_progress_s": "REPLAYCI_BATCH_PROGRESS_SECONDS"}

AUTO_MAX = 20  # --repeat auto: the most runs a case gets unless auto:MAX says
STATS_DEFAULTS = {"alpha": 0.05, "beta": 0.05, "ok": 0.95, "bad": 0.70}


@record
class Target:
    """One provider and model a run compares (`--target PROVIDER:MODEL`, `targets:`)."""

    provider: str
    model: str
    label: str
    base_url: str | None = None

    @property
    def dir(self) -> str:
        """Its recordings' folder under the pack's recordings/: the label made file-safe."""
        return file_safe(self.label)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_MAX_NAME = 100  # far inside any file system's 255 bytes, with room for a case's file below it


def file_safe(label: str) -> str:
    """A label as a directory name: anything but letters, digits, '.', '_' and '-' becomes '_'
    (openai:gpt-4o -> openai_gpt-4o); a long one (a 300-character model name) is cut, with a
    digest of the whole label, so two labels still make two names."""
    name = _UNSAFE.sub("_", label).strip("._") or "target"
    if len(name) > _MAX_NAME:
        name = f"{name[:_MAX_NAME - 9].rstrip('._')}_{h(label)[:8]}"
    return name


@record
class Settings:
    """Everything a run needs to know, after precedence was applied."""

    project_root: str
    config_file: str | None = None
    packs: tuple[str, ...] = ()
    provider: str = "recorded"
    model: str | None = None
    base_url: str | None = None
    jobs: int = 4
    replay: str | None = None
    tool_replay_mode: str | None = None  # the tools' replay mode of live loops; None: by contract
    ttl_days: float = 14
    strict_fixtures: bool = False
    max_fixture_bytes: int = 16 * 1024 * 1024
    gates: dict = field(default_factory=dict)
    pricing: dict = field(default_factory=dict)  # model -> {input_per_mtok, output_per_mtok, ...}
    judge: dict = field(default_factory=dict)  # {provider, model, base_url}: the model that judges
    reports: dict = field(default_factory=dict)
    redact_fields: tuple[str, ...] = ()
    proxy_ignore: tuple[str, ...] | None = None  # request fields `replayci proxy` matches without; None: its default
    filters: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # a case runs when it has one of them
    repeat: int = 1  # under --repeat auto: the most runs a case gets (MAX)
    repeat_auto: bool = False  # --repeat auto[:MAX]: each case runs until its label is decided
    stats: dict = field(default_factory=dict)  # alpha, beta, ok, bad of the sequential test
    keep_raw: bool = False
    stream: bool = False  # live calls stream, and are reassembled
    shard: tuple[int, int] | None = None
    case_ids: frozenset | None = None  # exact (pack, contract, case) keys, for the pytest plugin
    unselected_packs: tuple[str, ...] = ()  # packs/*/ with a pack.yaml that the config leaves out
    processes: int | None = None  # recorded runs: 1 or 2; None chooses by the project's size
    sources: dict = field(default_factory=dict)  # setting -> "flag" | "env" | file
    mcp_servers: tuple[tuple[str, McpServer], ...] = ()  # by name, from .replayci.yml
    batch: bool = False  # live calls through the provider's batch API
    batch_timeout_s: float = 24 * 3600  # how long a batch run waits for its batches
    batch_poll_s: float = 1.0  # the first wait before a batch is polled, doubled after each poll ...
    batch_poll_max_s: float = 60.0  # ... up to this
    batch_progress_s: float = 60.0  # off a terminal: a progress line this often
    targets: tuple[Target, ...] = ()  # the providers and models a run compares
    live_targets: bool = False  # the targets are called (else their recordings replayed)
    target: Target | None = None  # the one target these settings run (a run's own per target)
    baseline: dict | None = None  # a previous JSON report every case is labelled against
    baseline_file: str | None = None
    gate_baseline: bool = False  # --gate-baseline: the run fails only for new failures

    def with_(self, **kw) -> Settings:
        return replace(self, **kw)
