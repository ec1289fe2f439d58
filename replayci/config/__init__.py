"""`.replayci.yml` discovery, validation and precedence.

Precedence: command-line flag > environment (REPLAYCI_*) > .replayci.yml > pack.yaml > default.
The frozen `Settings` and `Target`, the environment's variables and the defaults
(`settings.py`), the file found and checked (`file.py`), precedence applied (`resolve.py`).
"""
from __future__ import annotations

from .file import CONFIG_NAMES, find_config, read_config
from .resolve import batch_pace, parse_repeat, parse_target, project_packs, resolve
from .settings import AUTO_MAX, BATCH_PACE, ENV_KEYS, STATS_DEFAULTS, Settings, Target, file_safe

__all__ = ["AUTO_MAX", "BATCH_PACE", "CONFIG_NAMES", "ENV_KEYS", "STATS_DEFAULTS", "Settings", "Target",
           "batch_pace", "file_safe", "find_config", "parse_repeat", "parse_target", "project_packs",
           "read_config", "resolve"]
