"""The command line: flags -> settings -> API -> reports -> exit code."""
from __future__ import annotations

from .commands import cli, main

__all__ = ["cli", "main"]
