"""The command line: flags -> settings -> API -> reports -> exit code."""
from __future__ import annotations

from .main import cli, main

__all__ = ["cli", "main"]
