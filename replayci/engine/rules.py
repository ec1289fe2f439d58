"""The rules a run's options obey, whoever gives them: the command line (`cli/run.py`, which
shows a broken one as a usage error) and the Python API (`api.run`) apply the same ones, with
the same messages, as ConfigError (exit 2)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..config import Settings
from ..core.errors import ConfigError, did_you_mean
from ..core.provider_table import LIVE_PROVIDERS
from ..pack.vocabulary import CATEGORIES, PROVIDERS, REPLAY_MODES, ReplayMode

# option -> (its flag, the values it takes)
_CHOICES = {"provider": ("--provider", PROVIDERS), "replay": ("--replay", REPLAY_MODES),
            "tool_replay_mode": ("--tool-replay", REPLAY_MODES)}


def choice(value: Any, choices: tuple[str, ...], flag: str) -> None:
    """ConfigError unless *value* is one of *choices* (or unset), naming the nearest."""
    if value is not None and value not in choices:
        raise ConfigError(f"{flag} {value!r} is not one of {', '.join(choices)}" + did_you_mean(value, choices))


def check_options(options: Mapping[str, Any]) -> None:
    """The options of a run as given (before the config file fills the rest): each value one
    the option takes, and no option that needs another one missing."""
    for name, (flag, choices) in _CHOICES.items():
        choice(options.get(name), choices, flag)
    for name in ("jobs", "repeat"):
        value = options.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ConfigError(f"--{name} {value!r}: expected a whole number >= 1")
    for category in options.get("categories") or ():
        choice(category, CATEGORIES, "--category")
    shard = options.get("shard")
    if shard is not None:
        k, n = shard
        if not (n >= 1 and 1 <= k <= n):
            raise ConfigError(f"--shard '{k}/{n}': expected 1 <= K <= N")
    if options.get("batch_timeout_s") is not None:
        check_batch_timeout(options["batch_timeout_s"], batch=bool(options.get("batch")))
    if options.get("gate_baseline") and options.get("baseline") is None:
        raise ConfigError("--gate-baseline needs --baseline REPORT.json (e.g. main's report)")


def check_batch_timeout(seconds: float, *, batch: bool, given: Any = None) -> None:
    """--batch-timeout (*given*: as typed, when it was) bounds a batch run's wait: > 0 seconds."""
    if not batch:
        raise ConfigError("--batch-timeout bounds the wait of a batch run: add --batch")
    if not (0 < seconds < math.inf):
        raise ConfigError(f"--batch-timeout {seconds if given is None else given!r}: expected a duration > 0 "
                          "such as 90s, 30m, 12h or 1d")


def check_settings(settings: Settings, *, provider: str | None = None, model: str | None = None) -> None:
    """The resolved settings of a run (*provider*, *model*: as the caller named them, not as
    the config file or the pack did): targets, the recorded provider's one replay mode, batches."""
    if settings.targets:
        if model:
            raise ConfigError(f"--model {model} does not apply to a comparison: each target names its model "
                              "(--target PROVIDER:MODEL)")
        if provider == "recorded" and settings.replay not in (None, ReplayMode.STRICT):
            raise ConfigError(f"--provider recorded replays the targets' recordings; --replay {settings.replay} "
                              "calls them: leave out --provider recorded to call the targets")
    if settings.provider == "recorded" and settings.replay not in (None, ReplayMode.STRICT):
        raise ConfigError(f"--provider recorded replays only (strict); --replay {settings.replay} "
                          f"needs a live provider (--provider {' or '.join(LIVE_PROVIDERS)})")
    if settings.batch:
        _check_batch(settings)


def _check_batch(settings: Settings) -> None:
    """--batch needs a provider with a batch API, and answers whole responses only."""
    from ..providers.batch import refusal, supports_batch  # --batch only (plain data, no SDK)

    for target in settings.targets if settings.live_targets else ():  # every target is sent in batches
        if not supports_batch(target.provider):
            raise ConfigError(f"target {target.label}: {refusal(target.provider)}")
    if not supports_batch(settings.provider):
        raise ConfigError(refusal(settings.provider))
    if settings.stream:
        raise ConfigError("--stream and --batch: a batch answers whole responses, never streams; drop one")
